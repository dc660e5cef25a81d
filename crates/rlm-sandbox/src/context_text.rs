//! A text context as the worker loads it: one owned string for the interpreter and, for the
//! native helpers, a read-only map of the same file instead of a second copy.
//!
//! Monty takes the owned string into its heap without copying it, so a 1 GiB context costs the
//! worker 1 GiB of its own memory; the helpers' view is file pages, which stay in the page cache
//! (shared, reclaimable) and become resident only while a helper reads them.

use std::fs::File;
use std::io::Read as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;
use std::sync::{Mutex, PoisonError};

/// The interpreter's string and, when possible, a map of the file holding the same bytes.
#[derive(Debug)]
pub(crate) struct LoadedText {
    /// The interpreter's copy (invalid UTF-8 read as U+FFFD).
    pub text: String,
    /// The file mapped read-only, when its bytes are exactly `text`: valid UTF-8 and the same
    /// length as what was read after mapping.
    pub map: Option<MappedFile>,
}

/// Bytes of the file each digest covers.
const DIGEST_BLOCK: usize = 1 << 20;

/// A context file mapped read-only for the helpers, with what tells whether its bytes are still
/// the interpreter's: the file's size and change times as they were before it was read, and a
/// digest of every 1 MiB of what was read (keyed per process, so nobody can aim at a
/// collision).
#[derive(Debug)]
pub(crate) struct MappedFile {
    map: memmap2::Mmap,
    /// Kept open: its size and times are asked on the open file, whatever is renamed over it.
    file: File,
    digests: Vec<u64>,
    hasher: ahash::RandomState,
    seen: Mutex<Seen>,
}

/// What the last check of a mapped file found.
#[derive(Debug)]
struct Seen {
    /// Size and change times when the map last matched the text.
    stamp: Stamp,
    /// Set once the map was found to differ from the text: every later check refuses.
    rewritten: bool,
}

/// A file's size and times, to nanoseconds: any write moves the change time (`ctime`), which
/// no process can set back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

impl Stamp {
    fn of(file: &File) -> std::io::Result<Self> {
        let metadata = file.metadata()?;
        Ok(Self {
            len: metadata.size(),
            modified: (metadata.mtime(), metadata.mtime_nsec()),
            changed: (metadata.ctime(), metadata.ctime_nsec()),
        })
    }
}

impl MappedFile {
    /// The mapped bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Whether the helpers may read the map as the interpreter's text: refused when the file
    /// shrank (reading past its new end would end the worker with SIGBUS) or when its bytes
    /// differ from those read (rewritten in place). One `fstat` while the file's size and times
    /// stay as they were; when they moved (a write, an append, a `touch`), the map is hashed
    /// again and compared block by block with what was read, so an appended log goes on while a
    /// rewritten one is refused, from then on.
    pub fn check(&self) -> Result<(), String> {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let rewritten = |seen: &mut Seen| {
            seen.rewritten = true;
            "the context file was rewritten on disk since the session started; the helpers \
             read it from disk and cannot use it now, but `context` still holds the text as it \
             was loaded: use str methods on it"
                .to_owned()
        };
        if seen.rewritten {
            return Err(rewritten(&mut seen));
        }
        let stamp = Stamp::of(&self.file)
            .map_err(|error| format!("the context file cannot be checked: {error}"))?;
        if stamp.len < self.map.len() as u64 {
            return Err(format!(
                "the context file shrank on disk since the session started ({} bytes, was {}); \
                 the helpers read it from disk and cannot use it now, but `context` still holds \
                 the text as it was loaded: use str methods on it",
                stamp.len,
                self.map.len()
            ));
        }
        if stamp == seen.stamp {
            return Ok(());
        }
        if digests(&self.hasher, &self.map) != self.digests {
            return Err(rewritten(&mut seen));
        }
        seen.stamp = stamp;
        Ok(())
    }
}

/// The digest of every [`DIGEST_BLOCK`] of `bytes`.
fn digests(hasher: &ahash::RandomState, bytes: &[u8]) -> Vec<u64> {
    bytes
        .chunks(DIGEST_BLOCK)
        .map(|block| hasher.hash_one(block))
        .collect()
}

/// Reads the text context at `path`; maps it too when `map` is set (the worker process only: the
/// in-process worker thread shares the host's process, which a fault on the map would end).
pub(crate) fn load(path: &Path, map: bool) -> Result<LoadedText, String> {
    let cannot_read =
        |error: std::io::Error| format!("cannot read context {}: {error}", path.display());
    let mut file = File::open(path).map_err(cannot_read)?;
    // Taken before the read: a write during it moves the times past this stamp, so the first
    // helper call compares the map with what was read.
    let stamp = Stamp::of(&file).map_err(cannot_read)?;
    let size = stamp.len;
    // Mapped first, read second: bytes changed before the read are seen alike by both.
    let mapped = if map && size > 0 {
        map_file(&file)
    } else {
        None
    };
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(usize::try_from(size).unwrap_or(0))
        .map_err(|error| format!("cannot read context {}: {error}", path.display()))?;
    file.read_to_end(&mut bytes).map_err(cannot_read)?;
    let (mut text, map) = match String::from_utf8(bytes) {
        Ok(text) => {
            let map = mapped
                .filter(|mapped| mapped.len() == text.len())
                .map(|map| {
                    let hasher = ahash::RandomState::new();
                    MappedFile {
                        digests: digests(&hasher, text.as_bytes()),
                        hasher,
                        map,
                        file,
                        seen: Mutex::new(Seen {
                            stamp,
                            rewritten: false,
                        }),
                    }
                });
            (text, map)
        }
        // Invalid sequences read as U+FFFD, as `rlm inspect` counts them: a context file with a
        // stray Latin-1 byte is still worth exploring. Positions in the replaced text differ
        // from the file's, so the helpers get a copy of it instead of the map.
        Err(error) => (String::from_utf8_lossy(error.as_bytes()).into_owned(), None),
    };
    // Monty boxes the string; with no spare capacity that moves it instead of copying it.
    text.shrink_to_fit();
    Ok(LoadedText { text, map })
}

/// A read-only private map of `file`, or `None` where the file system cannot map it (the caller
/// then gives the helpers a copy).
fn map_file(file: &File) -> Option<memmap2::Mmap> {
    #[expect(
        unsafe_code,
        reason = "mapping a file the worker does not own: see the SAFETY comment"
    )]
    // SAFETY: `Mmap::map` is unsafe because the file can change while it is mapped, and the
    // worker cannot stop the file's owner from changing it. What a change can do here:
    // - Shortened (truncated, `copytruncate` log rotation): reading a page past the new end
    //   raises SIGBUS. Each helper call first checks the file's size (`check_readable`) and
    //   refuses to read a shrunk file; shortened during a call, the worker dies of SIGBUS (it
    //   installs no handler; core dumps are off), the session reports the death to the model
    //   (`WorkerDeath` names a shortened context file) and starts a worker that reads the file
    //   as it is now. Nothing reads past the end.
    // - Rewritten in place: the map's length is fixed and every access through it is a
    //   bounds-checked byte read in `helpers` (plain loads, never decoded as `str` without
    //   lossy decoding), so nothing reads outside the map or builds an invalid `str`; and the
    //   checks before and after each helper call (`MappedFile::check`: size and change times,
    //   then digests) refuse a map whose bytes are no longer the interpreter's.
    // - Replaced (written to a new file and renamed, as editors and `sed -i` do), appended to:
    //   the mapped pages keep the bytes that were read.
    // The map is never written (read-only protection) and lives as long as the helpers' text.
    let map = unsafe { memmap2::MmapOptions::new().map(file) };
    map.ok()
}

#[cfg(test)]
mod tests {
    use regex::bytes::Regex;

    use super::*;
    use crate::helpers::{IndexedText, TextBytes};

    const TEXT: &str = "héllo wörld\nsecond line\r\nthird ERROR here\nfourth ünïcode ERROR\n";

    fn mapped(path: &Path) -> (String, IndexedText) {
        let LoadedText { text, map } = load(path, true).unwrap();
        let map = map.expect("a valid UTF-8 file is mapped");
        let helpers = IndexedText::with_bytes(TextBytes::Mapped(map), text.is_ascii());
        (text, helpers)
    }

    #[test]
    fn helpers_over_the_map_answer_as_over_a_copy() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("context.txt");
        std::fs::write(&path, TEXT).unwrap();
        let (text, from_map) = mapped(&path);
        assert_eq!(text, TEXT);
        assert!(from_map.is_mapped());
        assert_eq!(
            text.capacity(),
            text.len(),
            "Monty would copy spare capacity"
        );
        let copy = IndexedText::new(TEXT.to_owned());
        let pattern = Regex::new("ERROR|w.rld").unwrap();
        assert_eq!(from_map.find_all(&pattern, 10), copy.find_all(&pattern, 10));
        assert_eq!(from_map.grep(&pattern, 1, 10), copy.grep(&pattern, 1, 10));
        assert_eq!(from_map.slice(1, 11), "éllo wörld");
        assert_eq!(from_map.slice(43, 50), copy.slice(43, 50));
        assert_eq!(from_map.lines(1, 4), copy.lines(1, 4));
        assert_eq!(from_map.chunks(7, 2), copy.chunks(7, 2));
        assert_eq!(from_map.line_count(), 4);
    }

    #[test]
    fn invalid_utf8_is_replaced_and_not_mapped() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("latin1.txt");
        std::fs::write(&path, b"caf\xe9 ok\n").unwrap();
        let loaded = load(&path, true).unwrap();
        assert_eq!(loaded.text, "caf\u{fffd} ok\n");
        assert!(
            loaded.map.is_none(),
            "positions in the file differ from the text's"
        );
        let unmapped = load(&directory.path().join("latin1.txt"), false).unwrap();
        assert!(unmapped.map.is_none());
    }

    #[test]
    fn a_shrunk_file_is_refused_and_a_rewritten_one_read_safely() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("context.txt");
        std::fs::write(&path, TEXT).unwrap();
        let (_, from_map) = mapped(&path);
        assert_eq!(from_map.check_readable(), Ok(()));
        // Rewritten in place with bytes that are not UTF-8: refused, and reading the map
        // anyway breaks nothing.
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&file, b"\xff\n", 1).unwrap();
        let refused = from_map.check_readable().unwrap_err();
        assert!(refused.contains("rewritten"), "{refused}");
        assert_eq!(from_map.line_count(), 5);
        assert!(from_map.slice(0, 3).contains('\u{fffd}'));
        let pattern = Regex::new("ERROR").unwrap();
        assert_eq!(from_map.find_all(&pattern, 10).len(), 2);
        // Shortened: refused before anything reads past the new end.
        file.set_len(4).unwrap();
        let refused = from_map.check_readable().unwrap_err();
        assert!(
            refused.contains("rewritten") || refused.contains("shrank"),
            "{refused}"
        );
        std::fs::write(&path, TEXT).unwrap();
        let (_, from_map) = mapped(&path);
        file.set_len(4).unwrap();
        let refused = from_map.check_readable().unwrap_err();
        assert!(refused.contains("shrank"), "{refused}");
    }

    /// The same bytes written again, a `touch`, an append: the times move, the bytes the
    /// helpers read do not, so they go on. The same length rewritten with other bytes (the
    /// times set back, as `touch -r` can) is refused: the change time cannot be set back.
    #[test]
    fn appends_and_touches_go_on_and_a_same_size_rewrite_is_refused() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("context.txt");
        std::fs::write(&path, TEXT).unwrap();
        let (_, from_map) = mapped(&path);
        let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::fs::write(&path, TEXT).unwrap();
        let file = std::fs::File::options().append(true).open(&path).unwrap();
        std::io::Write::write_all(&mut &file, b"appended line\n").unwrap();
        assert_eq!(from_map.check_readable(), Ok(()));
        assert_eq!(from_map.line_count(), 4);
        let same_size = TEXT.replace("ERROR", "error");
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&file, same_size.as_bytes(), 0).unwrap();
        file.set_modified(modified).unwrap();
        let refused = from_map.check_readable().unwrap_err();
        assert!(refused.contains("rewritten"), "{refused}");
        // From then on, whatever the file becomes.
        std::os::unix::fs::FileExt::write_all_at(&file, TEXT.as_bytes(), 0).unwrap();
        assert!(from_map.check_readable().is_err());
    }
}
