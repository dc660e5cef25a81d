//! What a load reads: files, caller-supplied readers and text, and how each becomes text to
//! store (read whole, or checked on disk to be streamed; big reader input is spooled first).

use std::io::{Read, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rlm_context::chunk::{ChunkOptions, StreamChunker};
use sha2::{Digest as _, Sha256};

use super::decode::{Replacements, binary_reason, decode_whole};
use super::stream::{Scanned, Streaming, scan_file};
use crate::error::{Result, io};
use crate::store::BufferLimit;

/// Something to load.
#[non_exhaustive]
pub enum Source {
    /// A file on disk, stored under `name`.
    File {
        /// The file to read.
        path: PathBuf,
        /// The buffer name (the path as given or found while walking a directory).
        name: String,
    },
    /// Text from a reader the caller hands in (a pipe, a socket, the process's standard
    /// input). It is read once, inside the load; input over 16 MiB is copied to a spool file in
    /// the store directory and streamed from there rather than held whole.
    Reader {
        /// The buffer name.
        name: String,
        /// What the reader is, for messages (e.g. `stdin`).
        origin: String,
        /// The input.
        reader: Box<dyn Read + Send>,
    },
    /// Text already in memory.
    Text {
        /// The buffer name.
        name: String,
        /// The content.
        text: String,
    },
    /// A buffer's text read from another store, with the path it was loaded from
    /// ([`Store::copy_into`](crate::Store::copy_into)).
    Stored {
        /// The buffer name.
        name: String,
        /// The absolute path of the file it was first loaded from, if any.
        path: Option<String>,
        /// The content.
        text: String,
    },
}

impl Source {
    /// A reader stored under `origin` (for example `stdin`), which also names it in messages.
    pub fn reader(origin: impl Into<String>, reader: impl Read + Send + 'static) -> Self {
        let origin = origin.into();
        Self::Reader {
            name: origin.clone(),
            origin,
            reader: Box::new(reader),
        }
    }

    /// The buffer name this source is stored under.
    pub fn name(&self) -> &str {
        match self {
            Self::File { name, .. }
            | Self::Reader { name, .. }
            | Self::Text { name, .. }
            | Self::Stored { name, .. } => name,
        }
    }

    /// Stores the source under another name.
    pub fn rename(&mut self, new_name: impl Into<String>) {
        match self {
            Self::File { name, .. }
            | Self::Reader { name, .. }
            | Self::Text { name, .. }
            | Self::Stored { name, .. } => *name = new_name.into(),
        }
    }
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::File { path, name } => f
                .debug_struct("File")
                .field("path", path)
                .field("name", name)
                .finish(),
            Self::Reader { name, origin, .. } => f
                .debug_struct("Reader")
                .field("name", name)
                .field("origin", origin)
                .finish_non_exhaustive(),
            Self::Text { name, text } => f
                .debug_struct("Text")
                .field("name", name)
                .field("bytes", &text.len())
                .finish(),
            Self::Stored { name, path, text } => f
                .debug_struct("Stored")
                .field("name", name)
                .field("path", path)
                .field("bytes", &text.len())
                .finish(),
        }
    }
}

/// A source's text, whole in memory or still on disk.
pub(crate) enum Content {
    Whole(String),
    /// A file checked by [`scan_file`], to be read again piece by piece.
    Streamed {
        path: PathBuf,
        /// Where it is opened from again ([`super::Streaming::root`]).
        root: Option<rlm_context::root::FileRoot>,
        size: u64,
        lines: u64,
    },
}

/// A source ready to be stored.
pub(crate) struct Prepared {
    pub content: Content,
    /// Hex SHA-256 of the text.
    pub sha256: String,
    /// Invalid UTF-8 replaced while decoding.
    pub replacements: Replacements,
    /// The file's size when it was gzip-compressed (its text is the decompressed content).
    gzip_bytes: Option<u64>,
    /// The spool file the content is streamed from, removed when this is dropped.
    _spool: Option<Spool>,
}

impl Prepared {
    fn whole((text, replacements): (String, Replacements)) -> Self {
        let sha256 = hex::encode(Sha256::digest(text.as_bytes()));
        Self {
            content: Content::Whole(text),
            sha256,
            replacements,
            gzip_bytes: None,
            _spool: None,
        }
    }

    fn scanned(scanned: Scanned, spool: Option<Spool>) -> Self {
        Self {
            content: scanned.content,
            sha256: scanned.sha256,
            replacements: scanned.replacements,
            gzip_bytes: None,
            _spool: spool,
        }
    }

    /// What a user should know about how the text was read: gzip decompressed, invalid UTF-8
    /// replaced.
    pub fn notes(&self) -> impl Iterator<Item = String> {
        let gzip = self.gzip_bytes.map(|bytes| {
            format!(
                "decompressed from gzip ({} bytes compressed)",
                rlm_types::thousands(bytes)
            )
        });
        gzip.into_iter().chain(self.replacements.note())
    }
}

/// The two bytes every gzip member starts with (RFC 1952).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Whether `file` starts as gzip data does; it is left at its start.
fn is_gzip(file: &mut std::fs::File) -> std::io::Result<bool> {
    use std::io::{Seek as _, SeekFrom};
    let mut head = Vec::with_capacity(GZIP_MAGIC.len());
    (&mut *file)
        .take(GZIP_MAGIC.len() as u64)
        .read_to_end(&mut head)?;
    file.seek(SeekFrom::Start(0))?;
    Ok(head == GZIP_MAGIC)
}

/// A reader that remembers the error a decoder gave for data it could not decompress, so a
/// damaged `.gz` file is skipped with its reason instead of failing the whole load.
struct Decoding<R> {
    inner: R,
    damaged: Option<String>,
}

impl<R: Read> Read for Decoding<R> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        use std::io::ErrorKind::{InvalidData, InvalidInput, UnexpectedEof};
        self.inner.read(buffer).inspect_err(|error| {
            if matches!(error.kind(), InvalidData | InvalidInput | UnexpectedEof) {
                self.damaged = Some(error.to_string());
            }
        })
    }
}

/// A gzip file's decompressed text, read as a reader's input is (whole, or spooled to
/// `spool_dir` when big), never more than one byte past the buffer limit, whatever the file
/// claims to hold.
fn prepare_gzip(
    file: std::fs::File,
    path: &Path,
    size: u64,
    streams: bool,
    streaming: Streaming<'_>,
    spool_dir: &Path,
) -> Result<Result<Prepared, String>> {
    let limit = streaming.limit;
    let mut decoding = Decoding {
        inner: flate2::read::MultiGzDecoder::new(std::io::BufReader::new(file)),
        damaged: None,
    };
    let read = if streams {
        let origin = path.display().to_string();
        spool(
            &mut decoding,
            &origin,
            spool_dir,
            streaming.above,
            limit.max,
        )
    } else {
        let mut bytes = Vec::new();
        (&mut decoding)
            .take(limit.max.saturating_add(1))
            .read_to_end(&mut bytes)
            .map(|_| Ok(bytes))
            .map_err(io("cannot read", path))
    };
    if let Some(damage) = decoding.damaged {
        return Ok(Err(format!(
            "gzip data that does not decompress ({damage})"
        )));
    }
    let prepared = match read? {
        Ok(bytes) => text_from_bytes(bytes, limit).map(Prepared::whole),
        Err(spool) => {
            // The spool is the load's own file, in the store directory.
            let scanned = scan_file(&spool.0, None, streaming.piece, limit)?;
            scanned.map(|scanned| Prepared::scanned(scanned, Some(spool)))
        }
    };
    Ok(prepared.map(|mut prepared| {
        prepared.gzip_bytes = Some(size);
        prepared
    }))
}

/// Reads or checks `source` so it can be stored: a big file (when the options allow streaming)
/// is scanned in pieces, a reader's input is read whole or spooled to `spool_dir` if big, the
/// rest is read whole. The inner `Err` is a reason to skip the source rather than fail the load.
pub(crate) fn prepare(
    source: &mut Source,
    options: &ChunkOptions,
    streaming: Streaming,
    spool_dir: &Path,
) -> Result<Result<Prepared, String>> {
    let streams = StreamChunker::supports(options);
    let limit = streaming.limit;
    match source {
        Source::Text { text, .. } | Source::Stored { text, .. } => {
            let text = std::mem::take(text);
            Ok(Ok(Prepared::whole((text, Replacements::default()))))
        }
        Source::File { path, .. } => {
            let mut file = super::stream::open_file(path, streaming.root)?;
            let size = file.metadata().map_err(io("cannot read", &*path))?.len();
            if is_gzip(&mut file).map_err(io("cannot read", &*path))? {
                return prepare_gzip(file, path, size, streams, streaming, spool_dir);
            }
            if streams && size > streaming.above {
                drop(file);
                let scanned = scan_file(path, streaming.root, streaming.piece, limit)?;
                return Ok(scanned.map(|scanned| Prepared::scanned(scanned, None)));
            }
            if size > limit.max {
                return Ok(Err(too_large(limit)));
            }
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes)
                .map_err(io("cannot read", &*path))?;
            Ok(text_from_bytes(bytes, limit).map(Prepared::whole))
        }
        Source::Reader { origin, reader, .. } if streams => {
            match spool(reader, origin, spool_dir, streaming.above, limit.max)? {
                Ok(bytes) => Ok(text_from_bytes(bytes, limit).map(Prepared::whole)),
                Err(spool) => {
                    // The spool is the load's own file, in the store directory.
                    let scanned = scan_file(&spool.0, None, streaming.piece, limit)?;
                    Ok(scanned.map(|scanned| Prepared::scanned(scanned, Some(spool))))
                }
            }
        }
        Source::Reader { origin, reader, .. } => {
            let mut bytes = Vec::new();
            reader
                .read_to_end(&mut bytes)
                .map_err(io("cannot read", origin.as_str()))?;
            Ok(text_from_bytes(bytes, limit).map(Prepared::whole))
        }
    }
}

/// The skip reason of a source over `limit`, with the way past it: a lowered limit can be
/// raised; the ceiling is the most SQLite holds in one value, so a file over it is split.
pub(super) fn too_large(limit: BufferLimit) -> String {
    let BufferLimit { max, ceiling } = limit;
    if max < ceiling {
        format!(
            "larger than the {max}-byte limit set for this load (a buffer can hold up to \
             {ceiling} bytes)"
        )
    } else {
        format!(
            "larger than the {ceiling}-byte buffer limit (a buffer is one SQLite value, and that \
             is the most one holds); split it into parts under the limit, e.g. \
             `split -C 1G FILE FILE.part-`, and load those"
        )
    }
}

/// The text of a source read whole; `Err` is a reason to skip it.
fn text_from_bytes(bytes: Vec<u8>, limit: BufferLimit) -> Result<(String, Replacements), String> {
    if bytes.len() as u64 > limit.max {
        return Err(too_large(limit));
    }
    if let Some(reason) = binary_reason(&bytes) {
        return Err(reason);
    }
    let (text, replacements) = decode_whole(bytes);
    // Each replaced byte can grow to three.
    if text.len() as u64 > limit.max {
        return Err(too_large(limit));
    }
    Ok((text, replacements))
}

/// A copy of a reader's input on disk, removed when dropped.
#[derive(Debug)]
struct Spool(PathBuf);

impl Drop for Spool {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Bytes copied at a time into a spool file.
const SPOOL_PIECE_BYTES: usize = 1 << 20;

/// Spool files are hidden files in the store directory ending in this.
const SPOOL_SUFFIX: &str = ".spool";

/// Removes spool files a killed load left behind. Only the holder of the write lock spools, so
/// under the lock every spool file is stale.
pub(super) fn remove_stale_spools(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') && name.ends_with(SPOOL_SUFFIX) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Reads `input` whole if it is at most `above` bytes; otherwise copies it (up to one byte past
/// `max`, the buffer limit, so an endless pipe cannot fill the disk) to a file in `dir`.
fn spool(
    input: &mut dyn Read,
    origin: &str,
    dir: &Path,
    above: u64,
    max: u64,
) -> Result<Result<Vec<u8>, Spool>> {
    // One process may hold several stores' write locks, so the name is unique per process.
    static SPOOLS: AtomicU64 = AtomicU64::new(0);
    let mut head = Vec::new();
    input
        .take(above.saturating_add(1))
        .read_to_end(&mut head)
        .map_err(io("cannot read", origin))?;
    if head.len() as u64 <= above {
        return Ok(Ok(head));
    }
    let sequence = SPOOLS.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(format!(
        ".reader-{}-{sequence}{SPOOL_SUFFIX}",
        std::process::id()
    ));
    let spool = Spool(path.clone());
    let mut file = std::fs::File::create(&path).map_err(io("cannot create", &path))?;
    file.write_all(&head).map_err(io("cannot write", &path))?;
    let rest = max.saturating_add(1).saturating_sub(head.len() as u64);
    drop(head);
    // Not `io::copy`: a failing reader and a full disk are different errors.
    let mut input = input.take(rest);
    let mut piece = vec![0u8; SPOOL_PIECE_BYTES];
    loop {
        let read = match input.read(&mut piece) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(io("cannot read", origin)(error)),
        };
        file.write_all(&piece[..read])
            .map_err(io("cannot write", &path))?;
    }
    file.flush().map_err(io("cannot write", &path))?;
    Ok(Err(spool))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn big_reader_input_is_spooled_to_the_store_and_removed_after() {
        let dir = tempfile::tempdir().unwrap();
        let small = spool(&mut &b"short input"[..], "pipe", dir.path(), 64, 1000).unwrap();
        assert_eq!(small.unwrap(), b"short input");
        let input: Vec<u8> = (0..200u8).collect();
        let spooled = spool(&mut &input[..], "pipe", dir.path(), 64, 1000)
            .unwrap()
            .unwrap_err();
        assert!(spooled.0.starts_with(dir.path()));
        assert_eq!(std::fs::read(&spooled.0).unwrap(), input);
        let path = spooled.0.clone();
        drop(spooled);
        assert!(!path.exists());
    }
}
