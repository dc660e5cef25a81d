//! Loading files into the store: collect sources, chunk, write in one transaction, index.

use std::io::Read;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rlm_context::chunk::{self, Chunk, ChunkOptions, Strategy, StreamChunker};
use rusqlite::{Connection, OptionalExtension as _, Transaction, params};
use serde::Serialize;
use sha2::{Digest as _, Sha256};

use crate::error::{Error, Result, io};
use crate::index::Bm25Writer;
use crate::store::{IndexProgress, Store};

/// SQLite's default maximum size of one value; a buffer is stored as one value.
pub const MAX_BUFFER_BYTES: u64 = 1_000_000_000;

/// Bytes sniffed for NUL to call a file binary.
const BINARY_SNIFF_BYTES: usize = 8192;

/// Something to load.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// A file on disk, stored under `name`.
    File {
        /// The file to read.
        path: PathBuf,
        /// The buffer name (the path as given or found while walking a directory).
        name: String,
    },
    /// Standard input.
    Stdin {
        /// The buffer name.
        name: String,
    },
    /// Text already in memory.
    Text {
        /// The buffer name.
        name: String,
        /// The content.
        text: String,
    },
}

impl Source {
    /// The buffer name this source is stored under.
    pub fn name(&self) -> &str {
        match self {
            Self::File { name, .. } | Self::Stdin { name } | Self::Text { name, .. } => name,
        }
    }

    /// Stores the source under another name.
    pub fn rename(&mut self, new_name: impl Into<String>) {
        match self {
            Self::File { name, .. } | Self::Stdin { name } | Self::Text { name, .. } => {
                *name = new_name.into()
            }
        }
    }
}

/// Expands paths into sources: `-` is stdin, directories are walked honouring `.gitignore`,
/// `.ignore` and hidden-file rules (so the `.rlm` store itself is skipped), sorted by path.
pub fn collect_sources(paths: &[PathBuf]) -> Result<Vec<Source>> {
    let mut sources = Vec::new();
    for path in paths {
        if path.as_os_str() == "-" {
            sources.push(Source::Stdin {
                name: "stdin".to_owned(),
            });
            continue;
        }
        let metadata = std::fs::metadata(path).map_err(io("cannot read", path))?;
        if !metadata.is_dir() {
            sources.push(Source::File {
                path: path.clone(),
                name: display_name(path),
            });
            continue;
        }
        let mut found = Vec::new();
        let walker = ignore::WalkBuilder::new(path).require_git(false).build();
        for entry in walker {
            let entry = entry.map_err(|error| Error::Io {
                action: "cannot walk",
                path: path.clone(),
                source: std::io::Error::other(error.to_string()),
            })?;
            if entry.file_type().is_some_and(|kind| kind.is_file()) {
                found.push(entry.into_path());
            }
        }
        found.sort();
        sources.extend(found.into_iter().map(|path| Source::File {
            name: display_name(&path),
            path,
        }));
    }
    Ok(sources)
}

fn display_name(path: &Path) -> String {
    let text = path.to_string_lossy();
    text.strip_prefix("./").unwrap_or(&text).to_owned()
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
    /// The source was not loaded (binary, not UTF-8, too large).
    Skipped(&'a SkippedSource),
    /// The BM25 index is being updated.
    Indexing(IndexProgress),
}

/// A buffer written by a load.
#[derive(Debug, Clone, Serialize)]
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
}

/// A source that was not loaded, and why.
#[derive(Debug, Clone, Serialize)]
pub struct SkippedSource {
    /// Buffer name.
    pub name: String,
    /// Why, e.g. "binary file".
    pub reason: String,
}

/// Summary of one load.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LoadReport {
    /// Buffers written.
    pub loaded: Vec<LoadedBuffer>,
    /// Names whose content and options were unchanged.
    pub unchanged: Vec<String>,
    /// Sources not loaded.
    pub skipped: Vec<SkippedSource>,
}

impl Store {
    /// Loads `sources` in one SQLite transaction and indexes them for BM25.
    ///
    /// Unchanged content (same SHA-256 and chunk options under the same name) is a no-op; changed
    /// content replaces the old buffer and its chunks. Binary, non-UTF-8 and over-large sources
    /// are skipped and reported. An unreadable file or a `Break` from `progress` aborts the whole
    /// load with nothing written. Files over 16 MiB are streamed in 4 MiB pieces (see
    /// [`StreamChunker`]) rather than held whole, unless the options need the whole text
    /// (`structure` or `code` with overlap); a file that changes while it is read aborts the load.
    pub fn load(
        &mut self,
        sources: &[Source],
        options: &ChunkOptions,
        progress: &mut dyn FnMut(LoadEvent<'_>) -> ControlFlow<()>,
    ) -> Result<LoadReport> {
        options.validate()?;
        let _lock = self.write_lock()?;
        remove_stale_spools(&self.dir);
        // Work left by an interrupted writer goes first, so that afterwards every queued row
        // belongs to this load.
        self.sync_index(&mut |_| {})?;
        // The index is fed while the transaction runs (tokenizing on tantivy's threads overlaps
        // reading, hashing, chunking and SQLite writes on this one) but committed only after
        // SQLite: an error or a `Break` drops the writer, which discards everything it was fed.
        let writer = self.index.writer()?;
        let report = write_sources(
            &mut self.connection,
            Some(&writer),
            sources,
            options,
            Streaming::default(),
            &self.dir,
            progress,
        )?;
        if report.loaded.is_empty() {
            return Ok(report);
        }
        let chunks = report.loaded.iter().map(|buffer| buffer.chunks).sum();
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

/// The SQLite half of a load: one transaction that stores the buffers and queues their index
/// work. With a `writer`, each stored chunk (and each replaced buffer's deletion) is also sent
/// to the index; the caller commits it after this returns. The caller holds the write lock.
fn write_sources(
    connection: &mut Connection,
    writer: Option<&Bm25Writer<'_>>,
    sources: &[Source],
    options: &ChunkOptions,
    streaming: Streaming,
    spool_dir: &Path,
    progress: &mut dyn FnMut(LoadEvent<'_>) -> ControlFlow<()>,
) -> Result<LoadReport> {
    let options_key = serde_json::to_string(options).unwrap_or_default();
    let mut report = LoadReport::default();
    let transaction =
        connection.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    for (index, source) in sources.iter().enumerate() {
        let name = source.name();
        if progress(LoadEvent::Reading {
            index,
            total: sources.len(),
            name,
        })
        .is_break()
        {
            return Err(Error::Interrupted);
        }
        // Big standard input is copied to a file in the store directory, streamed from there,
        // and removed when this iteration ends.
        let mut _spool = None;
        let prepared = match source {
            Source::File { path, .. }
                if StreamChunker::supports(options)
                    && std::fs::metadata(path)
                        .map_err(io("cannot read", path))?
                        .len()
                        > streaming.above =>
            {
                scan_file(path, streaming.piece)?
            }
            Source::Stdin { .. } if StreamChunker::supports(options) => {
                let mut stdin = std::io::stdin().lock();
                match spool_stdin(&mut stdin, spool_dir, streaming.above)? {
                    Ok(bytes) => text_from_bytes(bytes).map(whole),
                    Err(spooled) => {
                        let scanned = scan_file(&spooled.0, streaming.piece)?;
                        _spool = Some(spooled);
                        scanned
                    }
                }
            }
            _ => read_source(source)?.map(whole),
        };
        let (content, sha256) = match prepared {
            Ok(prepared) => prepared,
            Err(reason) => {
                let skipped = SkippedSource {
                    name: name.to_owned(),
                    reason,
                };
                let _ = progress(LoadEvent::Skipped(&skipped));
                report.skipped.push(skipped);
                continue;
            }
        };
        let existing: Option<(i64, String, String)> = transaction
            .query_row(
                "SELECT id, sha256, chunk_options FROM buffers WHERE name = ?1",
                [name],
                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
            )
            .optional()?;
        if let Some((_, old_sha, old_options)) = &existing
            && *old_sha == sha256
            && *old_options == options_key
        {
            let _ = progress(LoadEvent::Unchanged(name));
            report.unchanged.push(name.to_owned());
            continue;
        }
        if let Some((old_id, _, _)) = &existing {
            transaction.execute("DELETE FROM buffers WHERE id = ?1", [old_id])?;
            transaction.execute(
                "INSERT INTO index_queue (buffer_id, action) VALUES (?1, 'delete')",
                [old_id],
            )?;
            if let Some(writer) = writer {
                writer.delete_buffer(*old_id);
            }
        }
        let path = match source {
            Source::File { path, .. } => std::path::absolute(path)
                .ok()
                .map(|path| path.to_string_lossy().into_owned()),
            _ => None,
        };
        let buffer = NewBuffer {
            name,
            path: path.as_deref(),
            sha256: &sha256,
        };
        let mut loaded = match &content {
            Content::Whole(text) => {
                insert_buffer(&transaction, writer, buffer, text, options, &options_key)?
            }
            Content::Streamed { path, size, lines } => {
                let file = FileScan {
                    path,
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
        if progress(LoadEvent::Loaded(&loaded)).is_break() {
            return Err(Error::Interrupted);
        }
        report.loaded.push(loaded);
    }
    transaction.commit()?;
    Ok(report)
}

/// Reads a source; the inner `Err` is a reason to skip it rather than fail the load.
fn read_source(source: &Source) -> Result<Result<String, String>> {
    let bytes = match source {
        Source::Text { text, .. } => return Ok(Ok(text.clone())),
        Source::File { path, .. } => {
            let size = std::fs::metadata(path)
                .map_err(io("cannot read", path))?
                .len();
            if size > MAX_BUFFER_BYTES {
                return Ok(Err(format!(
                    "larger than the {MAX_BUFFER_BYTES}-byte buffer limit"
                )));
            }
            std::fs::read(path).map_err(io("cannot read", path))?
        }
        Source::Stdin { .. } => {
            let mut bytes = Vec::new();
            std::io::stdin()
                .read_to_end(&mut bytes)
                .map_err(io("cannot read", "stdin"))?;
            bytes
        }
    };
    Ok(text_from_bytes(bytes))
}

/// The text of a source read whole; `Err` is a reason to skip it.
fn text_from_bytes(bytes: Vec<u8>) -> Result<String, String> {
    if bytes.len() as u64 > MAX_BUFFER_BYTES {
        return Err(format!(
            "larger than the {MAX_BUFFER_BYTES}-byte buffer limit"
        ));
    }
    if memchr::memchr(0, &bytes[..bytes.len().min(BINARY_SNIFF_BYTES)]).is_some() {
        return Err("binary file (NUL bytes)".to_owned());
    }
    String::from_utf8(bytes).map_err(|error| {
        format!(
            "not valid UTF-8 (first bad byte at offset {})",
            error.utf8_error().valid_up_to()
        )
    })
}

/// Text read whole, with its hash.
fn whole(text: String) -> (Content, String) {
    let sha256 = hex::encode(Sha256::digest(text.as_bytes()));
    (Content::Whole(text), sha256)
}

/// A copy of standard input on disk, removed when dropped.
#[derive(Debug)]
struct Spool(PathBuf);

impl Drop for Spool {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Removes spool files a killed load left behind. Only the holder of the write lock spools, so
/// under the lock every spool file is stale.
fn remove_stale_spools(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(".stdin-") && name.ends_with(".spool") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Reads `input` whole if it is at most `above` bytes; otherwise copies it (up to one byte past
/// the buffer limit, so an endless pipe cannot fill the disk) to a file in `dir`.
fn spool_stdin(input: &mut dyn Read, dir: &Path, above: u64) -> Result<Result<Vec<u8>, Spool>> {
    use std::io::Write as _;
    let mut head = Vec::new();
    input
        .take(above.saturating_add(1))
        .read_to_end(&mut head)
        .map_err(io("cannot read", "stdin"))?;
    if head.len() as u64 <= above {
        return Ok(Ok(head));
    }
    let path = dir.join(format!(".stdin-{}.spool", std::process::id()));
    let spool = Spool(path.clone());
    let mut file = std::fs::File::create(&path).map_err(io("cannot create", &path))?;
    file.write_all(&head).map_err(io("cannot write", &path))?;
    let rest = (MAX_BUFFER_BYTES + 1).saturating_sub(head.len() as u64);
    drop(head);
    std::io::copy(&mut input.take(rest), &mut file).map_err(io("cannot write", &path))?;
    file.flush().map_err(io("cannot write", &path))?;
    Ok(Err(spool))
}

/// A buffer about to be inserted.
struct NewBuffer<'a> {
    name: &'a str,
    path: Option<&'a str>,
    sha256: &'a str,
}

fn insert_buffer(
    transaction: &Transaction<'_>,
    writer: Option<&Bm25Writer<'_>>,
    buffer: NewBuffer<'_>,
    text: &str,
    options: &ChunkOptions,
    options_key: &str,
) -> Result<LoadedBuffer> {
    let chunking = chunk::chunk(text, Some(buffer.name), options)?;
    let line_count = memchr::memchr_iter(b'\n', text.as_bytes()).count() as u64
        + u64::from(!text.is_empty() && !text.ends_with('\n'));
    let id = insert_buffer_row(
        transaction,
        &buffer,
        text.len() as u64,
        line_count,
        chunking.strategy,
        options_key,
    )?;
    crate::read::write_buffer_text(transaction, id, text)?;
    let mut rows = ChunkRows::new(transaction, writer, id)?;
    for chunk in chunking.chunks {
        let body = text.get(chunk.range.clone()).unwrap_or_default();
        rows.add(chunk, body)?;
    }
    finish_buffer(
        transaction,
        buffer,
        id,
        text.len() as u64,
        rows.count,
        chunking.strategy,
    )
}

/// Inserts the `buffers` row; returns its id.
fn insert_buffer_row(
    transaction: &Transaction<'_>,
    buffer: &NewBuffer<'_>,
    size: u64,
    line_count: u64,
    strategy: Strategy,
    options_key: &str,
) -> Result<i64> {
    let loaded_at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs() as i64);
    transaction.execute(
        "INSERT INTO buffers (name, path, sha256, size, line_count, strategy, chunk_options, loaded_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            buffer.name,
            buffer.path,
            buffer.sha256,
            size as i64,
            line_count as i64,
            strategy.name(),
            options_key,
            loaded_at
        ],
    )?;
    Ok(transaction.last_insert_rowid())
}

/// Writes a buffer's chunk rows in order and sends each chunk to the index writer, if any.
struct ChunkRows<'a> {
    statement: rusqlite::CachedStatement<'a>,
    transaction: &'a Transaction<'a>,
    writer: Option<&'a Bm25Writer<'a>>,
    buffer_id: i64,
    count: u64,
}

impl<'a> ChunkRows<'a> {
    fn new(
        transaction: &'a Transaction<'a>,
        writer: Option<&'a Bm25Writer<'a>>,
        buffer_id: i64,
    ) -> Result<Self> {
        let statement = transaction.prepare_cached(
            "INSERT INTO chunks (buffer_id, seq, start, end, start_line, end_line, header_start, header_end)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        Ok(Self {
            statement,
            transaction,
            writer,
            buffer_id,
            count: 0,
        })
    }

    /// Stores `chunk`, whose text (without header) is `body`.
    fn add(&mut self, chunk: Chunk, body: &str) -> Result<()> {
        self.statement.execute(params![
            self.buffer_id,
            self.count as i64,
            chunk.range.start as i64,
            chunk.range.end as i64,
            chunk.start_line as i64,
            chunk.end_line as i64,
            chunk.header.as_ref().map(|h| h.start as i64),
            chunk.header.as_ref().map(|h| h.end as i64),
        ])?;
        if let Some(writer) = self.writer {
            writer.add_chunk(self.transaction.last_insert_rowid(), self.buffer_id, body)?;
        }
        self.count += 1;
        Ok(())
    }
}

/// Queues the buffer's index work and describes what was stored.
fn finish_buffer(
    transaction: &Transaction<'_>,
    buffer: NewBuffer<'_>,
    id: i64,
    bytes: u64,
    chunks: u64,
    strategy: Strategy,
) -> Result<LoadedBuffer> {
    transaction.execute(
        "INSERT INTO index_queue (buffer_id, action) VALUES (?1, 'add')",
        [id],
    )?;
    Ok(LoadedBuffer {
        id,
        name: buffer.name.to_owned(),
        bytes,
        chunks,
        strategy,
        replaced: false,
    })
}

/// Files larger than this are read, hashed and chunked in pieces rather than held whole.
const STREAM_ABOVE_BYTES: u64 = 16 << 20;

/// Piece size of a streamed read.
const STREAM_PIECE_BYTES: usize = 4 << 20;

/// When and how to stream a file instead of reading it whole.
#[derive(Debug, Clone, Copy)]
struct Streaming {
    /// Files larger than this many bytes are streamed (when the chunk options allow it).
    above: u64,
    /// Bytes read at a time.
    piece: usize,
}

impl Default for Streaming {
    fn default() -> Self {
        Self {
            above: STREAM_ABOVE_BYTES,
            piece: STREAM_PIECE_BYTES,
        }
    }
}

/// A source's text, whole in memory or still on disk.
enum Content {
    Whole(String),
    /// A file checked by [`scan_file`], to be read again piece by piece.
    Streamed {
        path: PathBuf,
        size: u64,
        lines: u64,
    },
}

/// A scanned file to stream into the store.
struct FileScan<'a> {
    path: &'a Path,
    size: u64,
    lines: u64,
    piece: usize,
}

/// First pass over a big file: checks it as [`read_source`] does (NUL bytes, UTF-8) and
/// hashes and counts its lines without holding it. The inner `Err` is a reason to skip it.
fn scan_file(path: &Path, piece: usize) -> Result<Result<(Content, String), String>> {
    let too_large = || format!("larger than the {MAX_BUFFER_BYTES}-byte buffer limit");
    if std::fs::metadata(path)
        .map_err(io("cannot read", path))?
        .len()
        > MAX_BUFFER_BYTES
    {
        return Ok(Err(too_large()));
    }
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    let mut newlines = 0u64;
    let mut last = None;
    let scanned = for_each_piece(path, piece, &mut |text| {
        let bytes = text.as_bytes();
        let sniffed = (BINARY_SNIFF_BYTES as u64).saturating_sub(size) as usize;
        if memchr::memchr(0, &bytes[..bytes.len().min(sniffed)]).is_some() {
            return Ok(ControlFlow::Break("binary file (NUL bytes)".to_owned()));
        }
        hasher.update(bytes);
        newlines += memchr::memchr_iter(b'\n', bytes).count() as u64;
        size += bytes.len() as u64;
        last = bytes.last().copied().or(last);
        Ok(ControlFlow::Continue(()))
    })?;
    if let Err(reason) = scanned {
        return Ok(Err(reason));
    }
    if size > MAX_BUFFER_BYTES {
        return Ok(Err(too_large()));
    }
    let lines = newlines + u64::from(last.is_some_and(|byte| byte != b'\n'));
    let sha256 = hex::encode(hasher.finalize());
    Ok(Ok((
        Content::Streamed {
            path: path.to_owned(),
            size,
            lines,
        },
        sha256,
    )))
}

/// Reads `path` in pieces of about `piece` bytes and passes each as text, never splitting a
/// character. The inner `Err` names invalid UTF-8 (or the reason `each` broke off).
fn for_each_piece(
    path: &Path,
    piece: usize,
    each: &mut dyn FnMut(&str) -> Result<ControlFlow<String>>,
) -> Result<Result<(), String>> {
    use std::io::Read as _;
    let mut file = std::fs::File::open(path).map_err(io("cannot read", path))?;
    let mut buffer = vec![0u8; piece.max(8)];
    // Bytes of a character cut at the end of the previous read.
    let mut carried = 0;
    let mut offset = 0u64;
    loop {
        let read = match file.read(&mut buffer[carried..]) {
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(io("cannot read", path)(error)),
        };
        let filled = carried + read;
        if offset == 0 && memchr::memchr(0, &buffer[..filled.min(BINARY_SNIFF_BYTES)]).is_some() {
            // Checked before UTF-8, as for a file read whole.
            return Ok(Err("binary file (NUL bytes)".to_owned()));
        }
        if read == 0 {
            if carried > 0 {
                return Ok(Err(format!(
                    "not valid UTF-8 (first bad byte at offset {offset})"
                )));
            }
            return Ok(Ok(()));
        }
        let valid = match std::str::from_utf8(&buffer[..filled]) {
            Ok(_) => filled,
            Err(error) if error.error_len().is_none() => error.valid_up_to(),
            Err(error) => {
                return Ok(Err(format!(
                    "not valid UTF-8 (first bad byte at offset {})",
                    offset + error.valid_up_to() as u64
                )));
            }
        };
        let text = std::str::from_utf8(&buffer[..valid]).unwrap_or_default();
        if let ControlFlow::Break(reason) = each(text)? {
            return Ok(Err(reason));
        }
        offset += valid as u64;
        buffer.copy_within(valid..filled, 0);
        carried = filled - valid;
    }
}

/// Second pass over a scanned file: writes its text into the blob, chunks it and feeds the
/// index piece by piece, holding one piece and one unfinished chunk at a time. A file that
/// changed since the scan aborts the load.
fn insert_streamed(
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
    transaction.execute(
        "INSERT INTO buffer_text (buffer_id, text) VALUES (?1, ?2)",
        params![id, rusqlite::blob::ZeroBlob(file.size)],
    )?;
    let mut blob = transaction.blob_open(rusqlite::MAIN_DB, "buffer_text", "text", id, false)?;
    let mut rows = ChunkRows::new(transaction, writer, id)?;
    let mut add = |chunk: Chunk, body: &str| rows.add(chunk, body);
    let mut chunker = StreamChunker::new(Some(buffer.name), options)?;
    let mut hasher = Sha256::new();
    let mut written = 0u64;
    let changed = || Error::Io {
        action: "cannot load",
        path: file.path.to_owned(),
        source: std::io::Error::other("the file changed while it was being loaded"),
    };
    let streamed = for_each_piece(file.path, file.piece, &mut |text| {
        let end = written + text.len() as u64;
        if end > file.size {
            return Err(changed());
        }
        hasher.update(text.as_bytes());
        blob.write_at(text.as_bytes(), written as usize)?;
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
    use super::*;
    use crate::SearchRequest;

    #[test]
    fn a_crash_between_sqlite_and_the_index_is_repaired_on_open() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut store = Store::open(dir.path()).unwrap();
            let sources = [Source::Text {
                name: "a".into(),
                text: "durable words\n".into(),
            }];
            // Commit SQLite but "crash" before the index is updated.
            write_sources(
                &mut store.connection,
                None,
                &sources,
                &ChunkOptions::default(),
                Streaming::default(),
                &std::env::temp_dir(),
                &mut |_| ControlFlow::Continue(()),
            )
            .unwrap();
            let status = store.status().unwrap();
            assert_eq!(
                (
                    status.chunks,
                    status.indexed_chunks,
                    status.pending_index_work
                ),
                (1, 0, 1)
            );
        }
        let store = Store::open(dir.path()).unwrap();
        let status = store.status().unwrap();
        assert_eq!((status.indexed_chunks, status.pending_index_work), (1, 0));
        assert_eq!(
            store
                .search(&SearchRequest::new("durable"))
                .unwrap()
                .hits
                .len(),
            1
        );
    }

    #[test]
    fn replay_skips_adds_whose_buffer_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut store = Store::open(dir.path()).unwrap();
            let options = ChunkOptions::default();
            let mut keep = |_: LoadEvent<'_>| ControlFlow::Continue(());
            // Two committed loads of one name whose index work never ran: the queue holds
            // "add 1", "delete 1", "add 2", and buffer 1 no longer exists.
            for text in ["old words\n", "new words\n"] {
                let sources = [Source::Text {
                    name: "a".into(),
                    text: text.into(),
                }];
                write_sources(
                    &mut store.connection,
                    None,
                    &sources,
                    &options,
                    Streaming::default(),
                    &std::env::temp_dir(),
                    &mut keep,
                )
                .unwrap();
            }
            assert_eq!(store.status().unwrap().pending_index_work, 3);
        }
        let store = Store::open(dir.path()).unwrap();
        let status = store.status().unwrap();
        assert_eq!(
            (
                status.chunks,
                status.indexed_chunks,
                status.pending_index_work
            ),
            (1, 1, 0)
        );
        let hits = |query: &str| store.search(&SearchRequest::new(query)).unwrap().hits.len();
        assert_eq!((hits("new"), hits("old")), (1, 0));
    }

    /// Loads `files` into a fresh store with the given streaming settings; returns the store
    /// (index replayed on reopen) and its directory.
    fn load_with(files: &[PathBuf], streaming: Streaming) -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut store = Store::open(dir.path()).unwrap();
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
                &sources,
                &options,
                streaming,
                &std::env::temp_dir(),
                &mut |_| ControlFlow::Continue(()),
            )
            .unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        (dir, store)
    }

    fn stored(store: &Store) -> Vec<(String, String, i64, i64, String)> {
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
            },
        );
        // Odd piece size: reads end inside multi-byte characters and inside records.
        let (_b, streamed) = load_with(
            &files,
            Streaming {
                above: 0,
                piece: 4099,
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
            let hits = |store: &Store| -> Vec<i64> {
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
    fn streaming_rejects_what_reading_whole_rejects() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad.txt");
        let mut bytes = "é".repeat(5000).into_bytes();
        bytes.extend_from_slice(&[b'o', b'k', 0xC3]); // a character cut off at the end
        std::fs::write(&bad, &bytes).unwrap();
        let binary = dir.path().join("blob.txt");
        // NUL bytes and invalid UTF-8: called binary, as when read whole.
        std::fs::write(&binary, b"text\0more\xff").unwrap();
        let mut store = Store::open(dir.path().join("store")).unwrap();
        let sources = [bad, binary].map(|path| Source::File {
            name: path.file_name().unwrap().to_string_lossy().into_owned(),
            path,
        });
        let report = write_sources(
            &mut store.connection,
            None,
            &sources,
            &ChunkOptions::default(),
            Streaming {
                above: 0,
                piece: 1000,
            },
            &std::env::temp_dir(),
            &mut |_| ControlFlow::Continue(()),
        )
        .unwrap();
        let reasons: Vec<&str> = report.skipped.iter().map(|s| s.reason.as_str()).collect();
        assert_eq!(
            reasons,
            [
                "not valid UTF-8 (first bad byte at offset 10002)",
                "binary file (NUL bytes)"
            ]
        );
        assert!(report.loaded.is_empty());
    }

    #[test]
    fn a_streamed_file_reports_progress_and_can_be_cancelled_midway() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.log");
        let text: String = (0..3000)
            .map(|i| format!("line {i} of the log\n"))
            .collect();
        std::fs::write(&path, &text).unwrap();
        let sources = [Source::File {
            path,
            name: "big.log".into(),
        }];
        let streaming = Streaming {
            above: 0,
            piece: 8192,
        };
        let mut store = Store::open(dir.path().join("store")).unwrap();
        let mut seen = Vec::new();
        write_sources(
            &mut store.connection,
            None,
            &sources,
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

        let mut other = Store::open(dir.path().join("other")).unwrap();
        let mut pieces = 0;
        let result = write_sources(
            &mut other.connection,
            None,
            &sources,
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

    #[test]
    fn big_stdin_is_spooled_to_the_store_and_removed_after() {
        let dir = tempfile::tempdir().unwrap();
        let small = spool_stdin(&mut &b"short input"[..], dir.path(), 64).unwrap();
        assert_eq!(small.unwrap(), b"short input");
        let input: Vec<u8> = (0..200u8).collect();
        let spooled = spool_stdin(&mut &input[..], dir.path(), 64)
            .unwrap()
            .unwrap_err();
        assert!(spooled.0.starts_with(dir.path()));
        assert_eq!(std::fs::read(&spooled.0).unwrap(), input);
        let path = spooled.0.clone();
        drop(spooled);
        assert!(!path.exists());
    }

    #[test]
    fn a_load_removes_spool_files_left_by_a_killed_load() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        let stale = dir.path().join(".stdin-4242.spool");
        std::fs::write(&stale, "half a pipe").unwrap();
        let kept = dir.path().join("notes.spool");
        std::fs::write(&kept, "not ours").unwrap();
        store
            .load(
                &[Source::Text {
                    name: "a".into(),
                    text: "x\n".into(),
                }],
                &ChunkOptions::default(),
                &mut |_| ControlFlow::Continue(()),
            )
            .unwrap();
        assert!(!stale.exists());
        assert!(kept.exists());
    }
}
