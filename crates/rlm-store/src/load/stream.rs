//! Streaming a big file into the store: a first pass checks, hashes and counts it, a second
//! writes, chunks and indexes it piece by piece, so neither holds the whole text.

use std::ops::ControlFlow;
use std::path::Path;

use rlm_context::chunk::{Chunk, ChunkOptions, StreamChunker};
use rlm_context::root::{FileRoot, OpenError};
use rusqlite::{Transaction, params};
use sha2::{Digest as _, Sha256};

use super::decode::{BINARY_SNIFF_BYTES, Replacements, binary_reason, decode_lossy};
use super::insert::{ChunkRows, NewBuffer, finish_buffer, insert_buffer_row};
use super::source::{Content, too_large};
use super::{LoadEvent, LoadedBuffer};
use crate::error::{Error, Result, io};
use crate::index::Bm25Writer;
use crate::store::BufferLimit;
use crate::text::TextWriter;

/// Files larger than this are read, hashed and chunked in pieces rather than held whole.
const STREAM_ABOVE_BYTES: u64 = 16 << 20;

/// Piece size of a streamed read.
const STREAM_PIECE_BYTES: usize = 4 << 20;

/// When and how to stream a file instead of reading it whole, and where files are read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Streaming<'a> {
    /// Files larger than this many bytes are streamed (when the chunk options allow it).
    pub above: u64,
    /// Bytes read at a time.
    pub piece: usize,
    /// Sources whose text is larger than this are skipped.
    pub limit: BufferLimit,
    /// The root files must lie in, each opened from it ([`FileRoot::open`]); `None` opens
    /// them by path.
    pub root: Option<&'a FileRoot>,
}

impl<'a> Streaming<'a> {
    /// Streams files over 16 MiB in 4 MiB pieces and skips sources over `limit`.
    pub(crate) fn within(limit: BufferLimit) -> Self {
        Self {
            above: STREAM_ABOVE_BYTES,
            piece: STREAM_PIECE_BYTES,
            limit,
            root: None,
        }
    }

    /// These settings, reading files below `root` when there is one.
    pub(crate) fn reading_within(mut self, root: Option<&'a FileRoot>) -> Self {
        self.root = root;
        self
    }
}

/// Opens a file to load: from `root` when there is one (refusing a path that leads, or has
/// come to lead, out of it), else by its path.
pub(crate) fn open_file(path: &Path, root: Option<&FileRoot>) -> Result<std::fs::File> {
    match root {
        None => std::fs::File::open(path).map_err(io("cannot read", path)),
        Some(root) => root.open(path).map_err(|err| match err {
            OpenError::Outside(outside) => Error::OutsideRoot(outside),
            OpenError::Io(source) => io("cannot read", path)(source),
            other => io("cannot read", path)(std::io::Error::other(other.to_string())),
        }),
    }
}

#[cfg(test)]
impl Default for Streaming<'_> {
    /// No size limit: the tests that use this are about streaming, not the limit.
    fn default() -> Self {
        Self::within(BufferLimit {
            max: u64::MAX,
            ceiling: u64::MAX,
        })
    }
}

/// A scanned file to stream into the store.
pub(super) struct FileScan<'a> {
    pub path: &'a Path,
    /// Where it is opened from ([`Streaming::root`]).
    pub root: Option<&'a FileRoot>,
    pub size: u64,
    pub lines: u64,
    pub piece: usize,
}

/// What the first pass over a big file found.
pub(super) struct Scanned {
    pub content: Content,
    /// Hex SHA-256 of the decoded text.
    pub sha256: String,
    pub replacements: Replacements,
}

/// First pass over a big file: checks it as a whole read does (binary, size) and hashes the
/// text it decodes to and counts its lines without holding it. The `Err` is a reason to skip it.
pub(super) fn scan_file(
    path: &Path,
    root: Option<&FileRoot>,
    piece: usize,
    limit: BufferLimit,
) -> Result<Result<Scanned, String>> {
    if open_file(path, root)?
        .metadata()
        .map_err(io("cannot read", path))?
        .len()
        > limit.max
    {
        return Ok(Err(too_large(limit)));
    }
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    let mut newlines = 0u64;
    let mut last = None;
    let scanned = for_each_piece(path, root, piece, &mut |text| {
        let bytes = text.as_bytes();
        hasher.update(bytes);
        newlines += memchr::memchr_iter(b'\n', bytes).count() as u64;
        size += bytes.len() as u64;
        last = bytes.last().copied().or(last);
        Ok(ControlFlow::Continue(()))
    })?;
    let replacements = match scanned {
        Ok(replacements) => replacements,
        Err(reason) => return Ok(Err(reason)),
    };
    // Replacement characters can make the text larger than the file.
    if size > limit.max {
        return Ok(Err(too_large(limit)));
    }
    let lines = newlines + u64::from(last.is_some_and(|byte| byte != b'\n'));
    Ok(Ok(Scanned {
        content: Content::Streamed {
            path: path.to_owned(),
            root: root.cloned(),
            size,
            lines,
        },
        sha256: hex::encode(hasher.finalize()),
        replacements,
    }))
}

/// Reads `path` in pieces of about `piece` bytes and passes each as text, never splitting a
/// character; invalid UTF-8 is replaced as a whole read replaces it. Returns what was replaced;
/// the inner `Err` says the file is binary (or why `each` broke off).
pub(crate) fn for_each_piece(
    path: &Path,
    root: Option<&FileRoot>,
    piece: usize,
    each: &mut dyn FnMut(&str) -> Result<ControlFlow<String>>,
) -> Result<Result<Replacements, String>> {
    use std::io::Read as _;
    let mut file = open_file(path, root)?;
    let mut head = Vec::with_capacity(BINARY_SNIFF_BYTES);
    (&mut file)
        .take(BINARY_SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(io("cannot read", path))?;
    if let Some(reason) = binary_reason(&head) {
        return Ok(Err(reason));
    }
    let mut input = std::io::Cursor::new(head).chain(file);
    let mut buffer = vec![0u8; piece.max(8)];
    let mut replacements = Replacements::default();
    // Bytes of a character cut at the end of the previous read.
    let mut carried = 0;
    let mut offset = 0u64;
    loop {
        let read = match input.read(&mut buffer[carried..]) {
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(io("cannot read", path)(error)),
        };
        let filled = carried + read;
        let end = read == 0;
        if filled == 0 {
            return Ok(Ok(replacements));
        }
        let (text, used) = decode_lossy(&buffer[..filled], offset, end, &mut replacements);
        if let ControlFlow::Break(reason) = each(&text)? {
            return Ok(Err(reason));
        }
        offset += used as u64;
        buffer.copy_within(used..filled, 0);
        carried = filled - used;
        if end {
            return Ok(Ok(replacements));
        }
    }
}

/// Second pass over a scanned file: writes its text in pieces (`text.rs`), chunks it and feeds the
/// index piece by piece, holding one piece and one unfinished chunk at a time. A file that
/// changed since the scan aborts the load.
pub(super) fn insert_streamed(
    transaction: &Transaction<'_>,
    writer: Option<&Bm25Writer<'_>>,
    buffer: NewBuffer<'_>,
    file: &FileScan<'_>,
    options: &ChunkOptions,
    options_key: &str,
    progress: &mut dyn FnMut(LoadEvent<'_>) -> ControlFlow<()>,
) -> Result<LoadedBuffer> {
    // The strategy is known once the stream has seen enough text; the row is fixed up after.
    let id = insert_buffer_row(
        transaction,
        &buffer,
        file.size,
        file.lines,
        options.strategy,
        options_key,
    )?;
    let mut text_writer = TextWriter::new(transaction, id);
    let mut rows = ChunkRows::new(transaction, writer, buffer.indexed(id))?;
    let mut add = |chunk: Chunk, body: &str| rows.add(chunk, body);
    let mut chunker = StreamChunker::new(Some(buffer.name), options)?;
    let mut hasher = Sha256::new();
    let mut written = 0u64;
    let changed = || Error::Io {
        action: "cannot load",
        path: file.path.to_owned(),
        source: std::io::Error::other("the file changed while it was being loaded"),
    };
    let streamed = for_each_piece(file.path, file.root, file.piece, &mut |text| {
        let end = written + text.len() as u64;
        if end > file.size {
            return Err(changed());
        }
        hasher.update(text.as_bytes());
        text_writer.write(text.as_bytes())?;
        written = end;
        chunker.push(text, &mut add)?;
        let step = LoadEvent::Streaming {
            name: buffer.name,
            bytes: written,
            total: file.size,
        };
        if progress(step).is_break() {
            return Err(Error::Interrupted);
        }
        Ok(ControlFlow::Continue(()))
    })?;
    if streamed.is_err() || written != file.size || hex::encode(hasher.finalize()) != buffer.sha256
    {
        return Err(changed());
    }
    text_writer.finish()?;
    let strategy = chunker.finish(&mut add)?;
    transaction.execute(
        "UPDATE buffers SET strategy = ?1 WHERE id = ?2",
        params![strategy.name(), id],
    )?;
    finish_buffer(transaction, buffer, id, file.size, rows.count, strategy)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::path::PathBuf;

    use super::*;
    use crate::load::{Source, write_sources};
    use crate::store::LocalStore;
    use crate::{Error, SearchRequest};

    /// Loads `files` into a fresh store with the given streaming settings; returns the store
    /// (index replayed on reopen) and its directory.
    fn load_with(files: &[PathBuf], streaming: Streaming) -> (tempfile::TempDir, LocalStore) {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut store = LocalStore::open(dir.path()).unwrap();
            let sources: Vec<Source> = files
                .iter()
                .map(|path| Source::File {
                    path: path.clone(),
                    name: path.file_name().unwrap().to_string_lossy().into_owned(),
                })
                .collect();
            let options = ChunkOptions {
                size: 300,
                ..ChunkOptions::default()
            };
            write_sources(
                &mut store.connection,
                None,
                sources,
                &options,
                streaming,
                &std::env::temp_dir(),
                &mut |_| ControlFlow::Continue(()),
            )
            .unwrap();
        }
        let store = LocalStore::open(dir.path()).unwrap();
        (dir, store)
    }

    fn stored(store: &LocalStore) -> Vec<(String, String, i64, i64, String)> {
        let mut statement = store
            .connection
            .prepare(
                "SELECT b.name, b.strategy, b.size, b.line_count, b.sha256 || ':' ||
                    group_concat(c.start || '-' || c.end || '@' || c.start_line || '-' ||
                    c.end_line || 'h' || IFNULL(c.header_start, '') || '-' ||
                    IFNULL(c.header_end, ''), ',')
                 FROM buffers b JOIN chunks c ON c.buffer_id = b.id
                 GROUP BY b.id ORDER BY b.name",
            )
            .unwrap();
        statement
            .query_map([], |row| {
                Ok((
                    row.get(0)?,
                    row.get(1)?,
                    row.get(2)?,
                    row.get(3)?,
                    row.get(4)?,
                ))
            })
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    #[test]
    fn a_streamed_file_is_stored_like_a_whole_one() {
        let dir = tempfile::tempdir().unwrap();
        let mut prose = String::new();
        let mut table = String::from("id,note\n");
        let mut events = String::new();
        for i in 0..2000 {
            prose.push_str(&format!(
                "## Part {i}\n\nSentence {i} about zebra_{i} and ünïcode 東京.\n\n"
            ));
            table.push_str(&format!("{i},\"quoted\nnewline {i}\"\n"));
            events.push_str(&format!("{{\"id\":{i},\"word\":\"kiwi{i}\"}}\n"));
        }
        let files: Vec<PathBuf> = [
            ("notes.md", &prose),
            ("table.csv", &table),
            ("events.log", &events),
        ]
        .iter()
        .map(|(name, text)| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        })
        .collect();
        let (_a, whole) = load_with(
            &files,
            Streaming {
                above: u64::MAX,
                piece: 1 << 20,
                ..Streaming::default()
            },
        );
        // Odd piece size: reads end inside multi-byte characters and inside records.
        let (_b, streamed) = load_with(
            &files,
            Streaming {
                above: 0,
                piece: 4099,
                ..Streaming::default()
            },
        );
        let expected = stored(&whole);
        assert_eq!(expected.len(), 3);
        assert_eq!(stored(&streamed), expected);
        for (name, text) in [("notes.md", &prose), ("table.csv", &table)] {
            let info = streamed.buffer(name).unwrap();
            let bytes =
                crate::read::read_blob(&streamed.connection, info.id, 0, usize::MAX).unwrap();
            assert_eq!(bytes, text.as_bytes());
        }
        for query in ["zebra_1234", "kiwi77", "newline"] {
            let hits = |store: &LocalStore| -> Vec<i64> {
                store
                    .search(&SearchRequest::new(query))
                    .unwrap()
                    .hits
                    .iter()
                    .map(|hit| hit.chunk_id)
                    .collect()
            };
            assert!(!hits(&streamed).is_empty(), "{query}");
            assert_eq!(hits(&streamed).len(), hits(&whole).len(), "{query}");
        }
    }

    #[test]
    fn streaming_decodes_and_refuses_what_reading_whole_does() {
        let dir = tempfile::tempdir().unwrap();
        let latin1 = dir.path().join("latin1.log");
        let mut bytes = "é".repeat(5000).into_bytes();
        for _ in 0..300 {
            bytes.extend_from_slice(b"caf\xe9\n");
        }
        bytes.extend_from_slice(b"ok\xC3"); // a character cut off at the end
        std::fs::write(&latin1, &bytes).unwrap();
        let binary = dir.path().join("blob.txt");
        std::fs::write(&binary, b"text\0more\xff").unwrap();
        let load = |streaming: Streaming, store: &str| {
            let mut store = LocalStore::open(dir.path().join(store)).unwrap();
            let sources = Vec::from([&latin1, &binary].map(|path| Source::File {
                name: path.file_name().unwrap().to_string_lossy().into_owned(),
                path: path.clone(),
            }));
            let report = write_sources(
                &mut store.connection,
                None,
                sources,
                &ChunkOptions::default(),
                streaming,
                &std::env::temp_dir(),
                &mut |_| ControlFlow::Continue(()),
            )
            .unwrap();
            let text = store.text(&store.buffer("latin1.log").unwrap()).unwrap();
            (report, text)
        };
        let whole = Streaming {
            above: u64::MAX,
            piece: 1 << 20,
            ..Streaming::default()
        };
        let streamed = Streaming {
            above: 0,
            piece: 1000,
            ..Streaming::default()
        };
        for (report, text) in [load(whole, "whole"), load(streamed, "streamed")] {
            assert_eq!(text, String::from_utf8_lossy(&bytes));
            assert_eq!(
                report.loaded[0].notes,
                ["invalid UTF-8: 301 sequence(s), first at byte 10003; \
                  stored with replacement characters"]
            );
            let reasons: Vec<&str> = report.skipped.iter().map(|s| s.reason.as_str()).collect();
            assert_eq!(reasons, ["binary file (NUL bytes)"]);
        }
    }

    #[test]
    fn a_streamed_file_reports_progress_and_can_be_cancelled_midway() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.log");
        let text: String = (0..3000)
            .map(|i| format!("line {i} of the log\n"))
            .collect();
        std::fs::write(&path, &text).unwrap();
        let sources = || {
            vec![Source::File {
                path: path.clone(),
                name: "big.log".into(),
            }]
        };
        let streaming = Streaming {
            above: 0,
            piece: 8192,
            ..Streaming::default()
        };
        let mut store = LocalStore::open(dir.path().join("store")).unwrap();
        let mut seen = Vec::new();
        write_sources(
            &mut store.connection,
            None,
            sources(),
            &ChunkOptions::default(),
            streaming,
            &std::env::temp_dir(),
            &mut |event| {
                if let LoadEvent::Streaming { bytes, total, .. } = event {
                    seen.push((bytes, total));
                }
                ControlFlow::Continue(())
            },
        )
        .unwrap();
        let size = text.len() as u64;
        assert_eq!(seen.len() as u64, size.div_ceil(8192));
        assert!(seen.windows(2).all(|pair| pair[0].0 < pair[1].0));
        assert_eq!(seen.last(), Some(&(size, size)));

        let mut other = LocalStore::open(dir.path().join("other")).unwrap();
        let mut pieces = 0;
        let result = write_sources(
            &mut other.connection,
            None,
            sources(),
            &ChunkOptions::default(),
            streaming,
            &std::env::temp_dir(),
            &mut |event| {
                if matches!(event, LoadEvent::Streaming { .. }) {
                    pieces += 1;
                    if pieces == 3 {
                        return ControlFlow::Break(());
                    }
                }
                ControlFlow::Continue(())
            },
        );
        assert!(matches!(result, Err(Error::Interrupted)));
        let status = other.status().unwrap();
        assert_eq!((status.buffers, status.chunks), (0, 0));
    }
}
