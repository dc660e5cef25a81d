//! Loading into the store: read sources, chunk, write in one transaction, index.
//!
//! [`Store::load`] orchestrates; [`source`] turns files, readers and text into text to store,
//! [`stream`] handles files too big to hold, [`insert`] writes the rows and [`index_queue`]
//! records the index work that makes a crash between SQLite and tantivy repairable.

mod decode;
mod index_queue;
mod insert;
mod source;
mod stream;
mod walk;

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use rlm_context::chunk::{ChunkOptions, Strategy};
use rlm_context::root::FileRoot;
use rusqlite::Connection;
use serde::Serialize;

pub use source::Source;
pub use walk::{WalkOptions, collect_sources, collect_sources_with};

use crate::error::{Error, Result};
use crate::index::Bm25Writer;
use crate::store::{BufferLimit, IndexProgress, LocalStore};
use insert::{NewBuffer, StoredBuffer, insert_whole, remove_missing};
use source::remove_stale_spools;
pub(crate) use source::{Content, prepare};
pub(crate) use stream::Streaming;
#[cfg(feature = "postgres")]
pub(crate) use stream::for_each_piece;
use stream::{FileScan, insert_streamed};

/// Checks a buffer size limit before any store is opened (`rlm load --max-file-size`): as
/// [`Store::set_max_buffer_bytes`] will, against what this build's SQLite holds in one value.
pub fn check_max_buffer_bytes(bytes: u64) -> Result<()> {
    let ceiling = BufferLimit::of(&Connection::open_in_memory()?)?.ceiling;
    check_buffer_limit(bytes, ceiling)
}

fn check_buffer_limit(bytes: u64, ceiling: u64) -> Result<()> {
    if bytes == 0 || bytes > ceiling {
        return Err(Error::BufferLimit {
            requested: bytes,
            ceiling,
        });
    }
    Ok(())
}

/// What happens during a load, for progress display. Return `ControlFlow::Break` from the
/// callback to cancel: the transaction is rolled back and nothing is written.
#[derive(Debug)]
#[non_exhaustive]
pub enum LoadEvent<'a> {
    /// About to read source `index` (0-based) of `total`.
    Reading {
        /// Position in the list.
        index: usize,
        /// Number of sources.
        total: usize,
        /// Its buffer name.
        name: &'a str,
    },
    /// Progress through a big file that is streamed (read twice: checked and hashed, then
    /// stored), reported every few megabytes of the second pass.
    Streaming {
        /// Its buffer name.
        name: &'a str,
        /// Bytes stored so far.
        bytes: u64,
        /// The file's size.
        total: u64,
    },
    /// The source was stored.
    Loaded(&'a LoadedBuffer),
    /// Same content and options as the stored buffer: nothing to do.
    Unchanged(&'a str),
    /// The source was not loaded (binary or too large).
    Skipped(&'a SkippedSource),
    /// A buffer whose file is gone was removed (see [`Store::load_and_prune`]).
    Removed(&'a str),
    /// The BM25 index is being updated.
    Indexing(IndexProgress),
}

/// A buffer written by a load.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct LoadedBuffer {
    /// Buffer id (new on every load; a replaced buffer gets a new id).
    pub id: i64,
    /// Buffer name.
    pub name: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Number of chunks.
    pub chunks: u64,
    /// The chunker used.
    pub strategy: Strategy,
    /// Whether a buffer of the same name with different content was replaced.
    pub replaced: bool,
    /// What the user should know about how it was stored (e.g. invalid UTF-8 replaced).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A source that was not loaded, and why.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct SkippedSource {
    /// Buffer name.
    pub name: String,
    /// Why, e.g. "binary file".
    pub reason: String,
}

/// Summary of one load.
#[derive(Debug, Clone, Default, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct LoadReport {
    /// Buffers written (empty when the store was told to count them only:
    /// [`Store::set_list_loaded`](crate::Store::set_list_loaded)).
    pub loaded: Vec<LoadedBuffer>,
    /// Names whose content and options were unchanged (empty when counted only, as `loaded`).
    pub unchanged: Vec<String>,
    /// Sources not loaded.
    pub skipped: Vec<SkippedSource>,
    /// Buffers removed because their files are gone (see [`Store::load_and_prune`]).
    pub removed: Vec<String>,
    /// The buffers written and left unchanged, counted whether or not they are listed.
    #[serde(skip)]
    pub totals: LoadTotals,
}

/// What a load wrote and left alone, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadTotals {
    /// Buffers written.
    pub buffers: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Their chunks.
    pub chunks: u64,
    /// Buffers whose content and options were unchanged.
    pub unchanged: u64,
}

impl LoadReport {
    /// Counts a buffer written, and lists it when `list`.
    pub(crate) fn add_loaded(&mut self, buffer: LoadedBuffer, list: bool) {
        self.totals.buffers += 1;
        self.totals.bytes += buffer.bytes;
        self.totals.chunks += buffer.chunks;
        if list {
            self.loaded.push(buffer);
        }
    }

    /// Counts a buffer left unchanged, and lists its name when `list`.
    pub(crate) fn add_unchanged(&mut self, name: &str, list: bool) {
        self.totals.unchanged += 1;
        if list {
            self.unchanged.push(name.to_owned());
        }
    }
}

/// Sources in pieces of this many: see [`in_pieces`].
const SOURCES_PIECE: usize = 1024;

/// The sources in order, held in pieces whose memory is freed as each is read: the caller's
/// list, one 72-byte slot a file, would otherwise stay whole until the load ends (5.9 MB of a
/// load of 81k files, while the index's buffers are at their fullest).
pub(crate) fn in_pieces(sources: Vec<Source>) -> impl Iterator<Item = Source> {
    let mut pieces = Vec::with_capacity(sources.len().div_ceil(SOURCES_PIECE));
    let mut sources = sources.into_iter();
    loop {
        let piece: Vec<Source> = sources.by_ref().take(SOURCES_PIECE).collect();
        if piece.is_empty() {
            break;
        }
        pieces.push(piece);
    }
    pieces.into_iter().flatten()
}

impl LocalStore {
    /// The largest source, in bytes of text, a load stores as a buffer; a larger one is skipped
    /// with a reason. By default [`Store::buffer_ceiling`].
    pub fn max_buffer_bytes(&self) -> u64 {
        self.buffer_limit.max
    }

    /// The most one buffer can hold: a buffer's text is one SQLite value, and this is the
    /// largest value this build of SQLite takes, less its record's header. 2,147,483,576 bytes
    /// (2 GiB) as this workspace builds SQLite, 999,999,936 with SQLite's default build.
    pub fn buffer_ceiling(&self) -> u64 {
        self.buffer_limit.ceiling
    }

    /// Makes later loads skip sources over `bytes` of text (`rlm load --max-file-size`).
    /// [`Error::BufferLimit`] unless `bytes` is from 1 to [`Store::buffer_ceiling`].
    pub fn set_max_buffer_bytes(&mut self, bytes: u64) -> Result<()> {
        check_buffer_limit(bytes, self.buffer_limit.ceiling)?;
        self.buffer_limit.max = bytes;
        Ok(())
    }

    /// [`LocalStore::load_and_prune`] pruning nothing and listing each buffer (tests load
    /// through it).
    #[cfg(test)]
    pub fn load(
        &mut self,
        sources: Vec<Source>,
        options: &ChunkOptions,
        progress: &mut dyn FnMut(LoadEvent<'_>) -> ControlFlow<()>,
    ) -> Result<LoadReport> {
        self.load_and_prune(Batch::from(sources), options, progress, None)
    }

    /// Loads the batch's sources in one SQLite transaction and indexes them for BM25 (see
    /// [`Store::load`](crate::Store::load)), and in the same transaction removes every buffer
    /// loaded from a file under one of its directories that no longer exists.
    /// Files are opened below `root` when one is given.
    pub(crate) fn load_and_prune(
        &mut self,
        batch: Batch<'_>,
        options: &ChunkOptions,
        progress: &mut dyn FnMut(LoadEvent<'_>) -> ControlFlow<()>,
        root: Option<&FileRoot>,
    ) -> Result<LoadReport> {
        options.validate()?;
        let _lock = self.write_lock()?;
        remove_stale_spools(&self.dir);
        // Work left by an interrupted writer goes first, so that afterwards every queued row
        // belongs to this load.
        self.sync_index(&mut |_| {})?;
        // Adding to an index that lost documents would report success for a store whose
        // search misses most of it.
        self.ensure_index_in_step()?;
        // The index is fed while the transaction runs (tokenizing on tantivy's threads overlaps
        // reading, hashing, chunking and SQLite writes on this one) but committed only after
        // SQLite: an error or a `Break` drops the writer, which discards everything it was fed.
        let writer = self.index.writer()?;
        let report = write_sources(
            &mut self.connection,
            Some(&writer),
            batch,
            options,
            Streaming::within(self.buffer_limit).reading_within(root),
            &self.dir,
            progress,
        )?;
        if report.totals.buffers == 0 && report.removed.is_empty() {
            return Ok(report);
        }
        let chunks = report.totals.chunks;
        let _ = progress(LoadEvent::Indexing(IndexProgress {
            chunks,
            total: chunks,
        }));
        writer.commit()?;
        self.index.reload()?;
        self.index_caught_up()?;
        Ok(report)
    }
}

/// What one load writes: sources to store, and directories whose deleted files' buffers go;
/// and whether its report lists each buffer written or left unchanged or only counts them.
pub(crate) struct Batch<'a> {
    pub(crate) sources: Vec<Source>,
    pub(crate) prune: &'a [PathBuf],
    pub(crate) list: bool,
}

impl From<Vec<Source>> for Batch<'_> {
    fn from(sources: Vec<Source>) -> Self {
        Self {
            sources,
            prune: &[],
            list: true,
        }
    }
}

/// The SQLite half of a load: one transaction that stores the buffers, removes those whose
/// files are gone, and queues their index work. With a `writer`, each stored chunk (and each replaced buffer's deletion) is also sent
/// to the index; the caller commits it after this returns. The caller holds the write lock.
fn write_sources<'a>(
    connection: &mut Connection,
    writer: Option<&Bm25Writer<'_>>,
    batch: impl Into<Batch<'a>>,
    options: &ChunkOptions,
    streaming: Streaming<'_>,
    spool_dir: &Path,
    progress: &mut dyn FnMut(LoadEvent<'_>) -> ControlFlow<()>,
) -> Result<LoadReport> {
    let options_key = serde_json::to_string(options).unwrap_or_default();
    let mut report = LoadReport::default();
    let transaction =
        connection.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let Batch {
        sources,
        prune,
        list,
    } = batch.into();
    let total = sources.len();
    for (index, mut source) in in_pieces(sources).enumerate() {
        if progress(LoadEvent::Reading {
            index,
            total,
            name: source.name(),
        })
        .is_break()
        {
            return Err(Error::Interrupted);
        }
        // Holds a reader's spool file, if any, until this iteration ends.
        let prepared = match prepare(&mut source, options, streaming, spool_dir)? {
            Ok(prepared) => prepared,
            Err(reason) => {
                let skipped = SkippedSource {
                    name: source.name().to_owned(),
                    reason,
                };
                let _ = progress(LoadEvent::Skipped(&skipped));
                report.skipped.push(skipped);
                continue;
            }
        };
        let name = source.name();
        let existing = StoredBuffer::find(&transaction, name)?;
        if let Some(stored) = &existing
            && stored.sha256 == prepared.sha256
            && stored.options_key == options_key
        {
            let _ = progress(LoadEvent::Unchanged(name));
            report.add_unchanged(name, list);
            continue;
        }
        if let Some(stored) = &existing {
            stored.remove(&transaction, writer)?;
        }
        let path = match &source {
            Source::File { path, .. } => std::path::absolute(path)
                .ok()
                .map(|path| path.to_string_lossy().into_owned()),
            Source::Stored { path, .. } => path.clone(),
            _ => None,
        };
        let buffer = NewBuffer {
            name,
            path: path.as_deref(),
            sha256: &prepared.sha256,
        };
        let mut loaded = match &prepared.content {
            Content::Whole(text) => {
                insert_whole(&transaction, writer, buffer, text, options, &options_key)?
            }
            Content::Streamed {
                path,
                root,
                size,
                lines,
            } => {
                let file = FileScan {
                    path,
                    root: root.as_ref(),
                    size: *size,
                    lines: *lines,
                    piece: streaming.piece,
                };
                insert_streamed(
                    &transaction,
                    writer,
                    buffer,
                    &file,
                    options,
                    &options_key,
                    progress,
                )?
            }
        };
        loaded.replaced = existing.is_some();
        loaded.notes.extend(prepared.notes());
        if progress(LoadEvent::Loaded(&loaded)).is_break() {
            return Err(Error::Interrupted);
        }
        report.add_loaded(loaded, list);
    }
    report.removed = remove_missing(&transaction, writer, prune)?;
    for name in &report.removed {
        if progress(LoadEvent::Removed(name)).is_break() {
            return Err(Error::Interrupted);
        }
    }
    transaction.commit()?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::io::{Cursor, Read};

    use super::*;

    fn keep_going(_: LoadEvent<'_>) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }

    #[test]
    fn a_load_removes_spool_files_left_by_a_killed_load() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = LocalStore::open(dir.path()).unwrap();
        let stale = dir.path().join(".reader-4242-0.spool");
        std::fs::write(&stale, "half a pipe").unwrap();
        let kept = dir.path().join("notes.spool");
        std::fs::write(&kept, "not ours").unwrap();
        store
            .load(
                vec![Source::Text {
                    name: "a".into(),
                    text: "x\n".into(),
                }],
                &ChunkOptions::default(),
                &mut keep_going,
            )
            .unwrap();
        assert!(!stale.exists());
        assert!(kept.exists());
    }

    #[test]
    fn a_caller_supplied_reader_is_loaded_under_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = LocalStore::open(dir.path()).unwrap();
        let mut source = Source::reader("pipe", Cursor::new(b"alpha from a reader\n".to_vec()));
        source.rename("piped.txt");
        let report = store
            .load(vec![source], &ChunkOptions::default(), &mut keep_going)
            .unwrap();
        assert_eq!(report.loaded[0].name, "piped.txt");
        let buffer = store.buffer("piped.txt").unwrap();
        assert_eq!(store.text(&buffer).unwrap(), "alpha from a reader\n");
        assert_eq!(buffer.path, None);
        let hits = store.search(&crate::SearchRequest::new("alpha")).unwrap();
        assert_eq!(hits.hits[0].buffer, "piped.txt");
    }

    /// A text of exactly the ceiling fits in SQLite's value limit beside its record's header,
    /// read whole or streamed; one byte more is skipped. SQLite's limit is lowered here so the
    /// texts are small; the headroom is the same at 2 GiB.
    #[test]
    fn a_text_of_exactly_the_ceiling_fits_in_sqlite_whole_and_streamed() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = LocalStore::open(dir.path().join("store")).unwrap();
        store
            .connection
            .set_limit(rusqlite::limits::Limit::SQLITE_LIMIT_LENGTH, 10_000)
            .unwrap();
        let limit = BufferLimit::of(&store.connection).unwrap();
        assert!((9_000..=10_000).contains(&limit.ceiling), "{limit:?}");
        let size = usize::try_from(limit.ceiling).unwrap();
        let line = "0123456789abcdef ".repeat(4) + "\n";
        let text: String = line.repeat(size / line.len() + 1)[..size - 1].to_owned() + "\n";
        let fits = dir.path().join("fits.log");
        std::fs::write(&fits, &text).unwrap();
        let over = dir.path().join("over.log");
        std::fs::write(&over, text.clone() + "x").unwrap();
        for above in [u64::MAX, 0] {
            let streaming = Streaming {
                above,
                piece: 4099,
                limit,
                root: None,
            };
            let sources: Vec<Source> = [&fits, &over]
                .into_iter()
                .map(|path| Source::File {
                    path: path.clone(),
                    name: format!("{above}-{}", path.file_name().unwrap().to_string_lossy()),
                })
                .collect();
            let report = write_sources(
                &mut store.connection,
                None,
                sources,
                &ChunkOptions::default(),
                streaming,
                dir.path(),
                &mut keep_going,
            )
            .unwrap();
            assert_eq!(report.loaded.len(), 1, "{above}: {report:?}");
            assert_eq!(report.loaded[0].bytes, limit.ceiling);
            assert_eq!(report.skipped.len(), 1, "{above}: {report:?}");
            let stored = store.buffer(&report.loaded[0].name).unwrap();
            assert_eq!(store.text(&stored).unwrap(), text);
        }
    }

    /// A reader that fails after some bytes, as a broken pipe does.
    struct Failing(usize);

    impl Read for Failing {
        fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
            if self.0 == 0 {
                return Err(std::io::Error::other("connection reset"));
            }
            let n = self.0.min(buffer.len());
            buffer[..n].fill(b'a');
            self.0 -= n;
            Ok(n)
        }
    }

    #[test]
    fn big_reader_input_is_streamed_from_a_spool_and_a_failing_reader_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = LocalStore::open(dir.path().join("store")).unwrap();
        let text: String = (0..500).map(|i| format!("line {i} of a pipe\n")).collect();
        let streaming = Streaming {
            above: 1000,
            piece: 777,
            ..Streaming::default()
        };
        let spool_dir = dir.path().join("spool");
        std::fs::create_dir(&spool_dir).unwrap();
        let report = write_sources(
            &mut store.connection,
            None,
            vec![Source::reader(
                "pipe",
                Cursor::new(text.clone().into_bytes()),
            )],
            &ChunkOptions::default(),
            streaming,
            &spool_dir,
            &mut keep_going,
        )
        .unwrap();
        assert_eq!(report.loaded[0].bytes, text.len() as u64);
        assert_eq!(store.text(&store.buffer("pipe").unwrap()).unwrap(), text);
        assert_eq!(std::fs::read_dir(&spool_dir).unwrap().count(), 0);

        let result = write_sources(
            &mut store.connection,
            None,
            vec![
                Source::Text {
                    name: "first".into(),
                    text: "kept only if all succeed\n".into(),
                },
                Source::reader("socket", Failing(5000)),
            ],
            &ChunkOptions::default(),
            streaming,
            &spool_dir,
            &mut keep_going,
        );
        let Err(Error::Io { path, .. }) = result else {
            panic!("{result:?}");
        };
        assert_eq!(path, Path::new("socket"));
        assert!(store.buffer("first").is_err());
        assert_eq!(std::fs::read_dir(&spool_dir).unwrap().count(), 0);
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        use std::io::Write as _;
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    /// A `.gz` file is stored as its decompressed text (whole or streamed, one member or
    /// several, as `zcat` reads it) with a note that says so; damaged gzip data, a compressed
    /// binary (a .tar.gz) and a file that decompresses past the buffer limit are skipped with
    /// their reasons, and the rest of the load goes on.
    #[test]
    fn gzip_files_are_stored_decompressed_and_bad_ones_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = LocalStore::open(dir.path().join("store")).unwrap();
        let text: String = (0..2000)
            .map(|i| format!("entry {i}: all well\n"))
            .collect();
        let (first, second) = text.split_at(text.len() / 2);
        let mut two_members = gzip(first.as_bytes());
        two_members.extend(gzip(second.as_bytes()));
        let compressed = gzip(text.as_bytes());
        let mut damaged = compressed.clone();
        let middle = damaged.len() / 2;
        damaged.truncate(middle);
        let files = [
            ("log.gz", compressed.clone()),
            ("members.gz", two_members),
            ("damaged.gz", damaged),
            ("archive.tar.gz", gzip(&[0u8; 4096])),
            ("bomb.gz", gzip(&vec![b'a'; 1 << 20])),
        ];
        for (name, bytes) in &files {
            std::fs::write(dir.path().join(name), bytes).unwrap();
        }
        let limit = BufferLimit {
            max: 100_000,
            ceiling: u64::MAX,
        };
        for above in [u64::MAX, 1000] {
            let streaming = Streaming {
                above,
                piece: 777,
                limit,
                root: None,
            };
            let sources: Vec<Source> = files
                .iter()
                .map(|(name, _)| Source::File {
                    path: dir.path().join(name),
                    name: format!("{above}/{name}"),
                })
                .collect();
            let report = write_sources(
                &mut store.connection,
                None,
                sources,
                &ChunkOptions::default(),
                streaming,
                dir.path(),
                &mut keep_going,
            )
            .unwrap();
            let loaded: Vec<&str> = report.loaded.iter().map(|b| b.name.as_str()).collect();
            assert_eq!(
                loaded,
                [format!("{above}/log.gz"), format!("{above}/members.gz")],
                "{report:?}"
            );
            for buffer in &report.loaded {
                assert_eq!(buffer.bytes, text.len() as u64);
                let stored = store.buffer(&buffer.name).unwrap();
                assert_eq!(store.text(&stored).unwrap(), text);
                assert!(
                    buffer.notes[0].starts_with("decompressed from gzip ("),
                    "{:?}",
                    buffer.notes
                );
            }
            let reason = |name: &str| {
                let name = format!("{above}/{name}");
                report
                    .skipped
                    .iter()
                    .find(|skipped| skipped.name == name)
                    .map(|skipped| skipped.reason.clone())
                    .unwrap_or_else(|| panic!("{name} not skipped: {report:?}"))
            };
            assert!(
                reason("damaged.gz").starts_with("gzip data that does not decompress"),
                "{}",
                reason("damaged.gz")
            );
            assert!(reason("archive.tar.gz").starts_with("binary file"));
            assert!(reason("bomb.gz").starts_with("larger than the 100000-byte limit"));
        }
        // Nothing spooled is left behind.
        let spools = std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|entry| {
                let name = entry.as_ref().unwrap().file_name();
                name.to_string_lossy().ends_with(".spool")
            })
            .count();
        assert_eq!(spools, 0);
    }
}
