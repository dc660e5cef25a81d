//! Loads, deletes and reindexes into PostgreSQL: one transaction each.
//!
//! A load reads, decodes, hashes and chunks exactly as the local store's does
//! ([`crate::load::prepare`], the same chunkers), then writes each buffer's row, its text as
//! segments, its chunks and their postings; rows are gathered across buffers and sent with
//! `COPY … FROM STDIN BINARY` a few megabytes at a time. Before looking a name up it takes the
//! name's advisory lock, so a second machine loading the same path waits, then finds the first
//! one's buffer (unchanged, or replaced): both converge on one copy.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use postgres::Transaction;
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::{ToSql, Type};
use rlm_context::chunk::{self, Chunk, ChunkOptions, Strategy, StreamChunker};
use rlm_context::root::FileRoot;
use sha2::{Digest as _, Sha256};
use tantivy::fieldnorm::FieldNormReader;
use tantivy::tokenizer::{MAX_TOKEN_LEN, TokenStream as _, Tokenizer as _};

use super::{NAME_LOCK, PostgresStore, STORE_LOCK, TOTALS_LOCK};
use crate::error::{Error, Result};
use crate::load::{
    Batch, Content, LoadEvent, LoadReport, LoadedBuffer, SkippedSource, Source, Streaming,
    for_each_piece, in_pieces, prepare,
};
use crate::read::BufferInfo;
use crate::store::{BufferLimit, IndexProgress};
use crate::tokenizer::{CodeTokenizer, IndexFormat};

/// A segment ends at the first line end past this many bytes.
const SEGMENT_BYTES: usize = 8 << 10;

/// A line longer than this is cut into segments of this size (at a character boundary).
const SEGMENT_MAX_BYTES: usize = 64 << 10;

/// Chunks per postings row: a term's row covers one block of one buffer's chunks.
pub(super) const BLOCK_CHUNKS: i32 = 1024;

/// Rows are sent once this many bytes of them are gathered.
const COPY_BYTES: usize = 8 << 20;

/// The most a term's frequency counts in a chunk: it is packed with the length's code
/// (`freq << 8 | fieldnorm id`) into a 32-bit integer.
const MAX_FREQ: u32 = (1 << 23) - 1;

impl PostgresStore {
    pub(crate) fn load_and_prune(
        &mut self,
        batch: Batch<'_>,
        options: &ChunkOptions,
        progress: &mut dyn FnMut(LoadEvent<'_>) -> ControlFlow<()>,
        root: Option<&FileRoot>,
    ) -> Result<LoadReport> {
        options.validate()?;
        let streaming = Streaming::within(BufferLimit {
            max: self.max_buffer_bytes,
            ceiling: super::BUFFER_CEILING,
        })
        .reading_within(root);
        let location = self.location.to_string();
        let failed = |error| {
            super::server_error(
                format!(
                    "cannot load into the store at {location}; nothing of this load was stored"
                ),
                error,
            )
        };
        let schema = self.location.schema.clone();
        let mut client = self.client()?;
        let mut transaction = client.transaction().map_err(failed)?;
        transaction
            .execute(
                "SELECT pg_advisory_xact_lock_shared($1, hashtext($2))",
                &[&STORE_LOCK, &schema],
            )
            .map_err(failed)?;
        let mut writer = Writer::new(&schema);
        let report = write_sources(
            &mut transaction,
            &mut writer,
            batch,
            options,
            streaming,
            progress,
        )
        .map_err(|error| match error {
            Error::Postgres { context, source } => Error::Postgres {
                context: format!("{context} (loading into {location}; nothing was stored)"),
                source,
            },
            other => other,
        });
        let report = report?;
        writer.flush(&mut transaction).map_err(failed)?;
        writer.totals(&mut transaction).map_err(failed)?;
        let chunks = report.totals.chunks;
        let _ = progress(LoadEvent::Indexing(IndexProgress {
            chunks,
            total: chunks,
        }));
        transaction.commit().map_err(failed)?;
        Ok(report)
    }

    pub(crate) fn delete(&mut self, patterns: &[String]) -> Result<Vec<BufferInfo>> {
        let mut buffers = Vec::new();
        for pattern in patterns {
            buffers.extend(self.select_buffers(pattern)?);
        }
        buffers.sort_by(|a, b| a.name.cmp(&b.name));
        buffers.dedup_by_key(|buffer| buffer.id);
        let schema = self.location.schema.clone();
        let failed = self.failed("delete buffers");
        let mut client = self.client()?;
        let result = (|| {
            let mut transaction = client.transaction()?;
            transaction.execute(
                "SELECT pg_advisory_xact_lock_shared($1, hashtext($2))",
                &[&STORE_LOCK, &schema],
            )?;
            let mut writer = Writer::new(&schema);
            for buffer in &buffers {
                lock_name(&mut transaction, &schema, &buffer.name)?;
                remove(&mut transaction, &mut writer, buffer.id)?;
            }
            writer.totals(&mut transaction)?;
            transaction.commit()
        })();
        result.map_err(failed)?;
        Ok(buffers)
    }
}

/// Takes the advisory lock of a buffer name until the transaction ends.
fn lock_name(
    transaction: &mut Transaction<'_>,
    schema: &str,
    name: &str,
) -> std::result::Result<(), postgres::Error> {
    transaction.execute(
        "SELECT pg_advisory_xact_lock($1, hashtext($2 || '/' || $3))",
        &[&NAME_LOCK, &schema, &name],
    )?;
    Ok(())
}

/// Deletes buffer `id` (its segments, chunks, postings and vectors go with it) and counts what
/// its chunks added to the BM25 totals; `None` when it was gone already.
fn remove(
    transaction: &mut Transaction<'_>,
    writer: &mut Writer,
    id: i64,
) -> std::result::Result<Option<()>, postgres::Error> {
    let row = transaction.query_opt(
        "DELETE FROM buffers WHERE id = $1 RETURNING chunk_count, token_count",
        &[&id],
    )?;
    Ok(row.map(|row| {
        writer.documents -= row.get::<_, i64>(0);
        writer.tokens -= row.get::<_, i64>(1);
    }))
}

/// The id, content hash and chunk options of the buffer stored under `name`, if any.
fn stored_buffer(
    transaction: &mut Transaction<'_>,
    name: &str,
) -> std::result::Result<Option<(i64, String, String)>, postgres::Error> {
    let row = transaction.query_opt(
        "SELECT id, sha256, chunk_options FROM buffers WHERE name = $1",
        &[&name],
    )?;
    Ok(row.map(|row| (row.get(0), row.get(1), row.get(2))))
}

fn write_sources(
    transaction: &mut Transaction<'_>,
    writer: &mut Writer,
    batch: Batch<'_>,
    options: &ChunkOptions,
    streaming: Streaming<'_>,
    progress: &mut dyn FnMut(LoadEvent<'_>) -> ControlFlow<()>,
) -> Result<LoadReport> {
    let options_key = serde_json::to_string(options).unwrap_or_default();
    let failed = |error| super::server_error("cannot load".into(), error);
    let mut report = LoadReport::default();
    let Batch {
        sources,
        prune: directories,
        list,
    } = batch;
    let total = sources.len();
    let spool_dir = std::env::temp_dir();
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
        let prepared = match prepare(&mut source, options, streaming, &spool_dir)? {
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
        lock_name(transaction, &writer.schema, name).map_err(failed)?;
        let existing = stored_buffer(transaction, name).map_err(failed)?;
        if let Some((_, sha256, key)) = &existing
            && *sha256 == prepared.sha256
            && *key == options_key
        {
            let _ = progress(LoadEvent::Unchanged(name));
            report.add_unchanged(name, list);
            continue;
        }
        if let Some((id, _, _)) = &existing {
            // Rows of the replaced buffer still waiting to be sent would point at nothing.
            writer.flush(transaction).map_err(failed)?;
            remove(transaction, writer, *id).map_err(failed)?;
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
            options_key: &options_key,
        };
        let mut loaded = match &prepared.content {
            Content::Whole(text) => insert_whole(transaction, writer, &buffer, text, options)?,
            Content::Streamed {
                path,
                root,
                size,
                lines,
            } => insert_streamed(
                transaction,
                writer,
                &buffer,
                (path, root.as_ref(), *size, *lines, streaming.piece),
                options,
                progress,
            )?,
        };
        loaded.replaced = existing.is_some();
        loaded.notes.extend(prepared.notes());
        if progress(LoadEvent::Loaded(&loaded)).is_break() {
            return Err(Error::Interrupted);
        }
        report.add_loaded(loaded, list);
    }
    report.removed = remove_missing(transaction, writer, directories).map_err(failed)?;
    for name in &report.removed {
        if progress(LoadEvent::Removed(name)).is_break() {
            return Err(Error::Interrupted);
        }
    }
    Ok(report)
}

/// Removes every buffer loaded from a file under one of `directories` that no longer exists.
fn remove_missing(
    transaction: &mut Transaction<'_>,
    writer: &mut Writer,
    directories: &[PathBuf],
) -> std::result::Result<Vec<String>, postgres::Error> {
    if directories.is_empty() {
        return Ok(Vec::new());
    }
    let directories: Vec<PathBuf> = directories
        .iter()
        .filter_map(|directory| std::path::absolute(directory).ok())
        .collect();
    let files = transaction.query(
        "SELECT id, name, path FROM buffers WHERE path IS NOT NULL ORDER BY name",
        &[],
    )?;
    let mut removed = Vec::new();
    for row in files {
        let (id, name, path): (i64, String, String) = (row.get(0), row.get(1), row.get(2));
        let path = Path::new(&path);
        let gone = directories
            .iter()
            .any(|directory| path.starts_with(directory))
            && matches!(path.try_exists(), Ok(false));
        if gone {
            lock_name(transaction, &writer.schema, &name)?;
            writer.flush(transaction)?;
            if remove(transaction, writer, id)?.is_some() {
                removed.push(name);
            }
        }
    }
    Ok(removed)
}

struct NewBuffer<'a> {
    name: &'a str,
    path: Option<&'a str>,
    sha256: &'a str,
    options_key: &'a str,
}

/// Inserts the buffer row; returns its id.
fn insert_buffer_row(
    transaction: &mut Transaction<'_>,
    buffer: &NewBuffer<'_>,
    size: u64,
    line_count: u64,
    strategy: Strategy,
) -> Result<i64> {
    let loaded_at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs() as i64);
    let row = transaction
        .query_one(
            "INSERT INTO buffers (name, path, sha256, size, line_count, strategy, chunk_options,
                                  loaded_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
            &[
                &buffer.name,
                &buffer.path,
                &buffer.sha256,
                &(size as i64),
                &(line_count as i64),
                &strategy.name(),
                &buffer.options_key,
                &loaded_at,
            ],
        )
        .map_err(|error| super::server_error(format!("cannot store {}", buffer.name), error))?;
    Ok(row.get(0))
}

fn insert_whole(
    transaction: &mut Transaction<'_>,
    writer: &mut Writer,
    buffer: &NewBuffer<'_>,
    text: &str,
    options: &ChunkOptions,
) -> Result<LoadedBuffer> {
    let chunking = chunk::chunk(text, Some(buffer.name), options)?;
    let line_count = memchr::memchr_iter(b'\n', text.as_bytes()).count() as u64
        + u64::from(!text.is_empty() && !text.ends_with('\n'));
    let id = insert_buffer_row(
        transaction,
        buffer,
        text.len() as u64,
        line_count,
        chunking.strategy,
    )?;
    let mut pending = writer.buffer(id);
    pending.text(writer, text.as_bytes());
    for chunk in chunking.chunks {
        let body = text.get(chunk.range.clone()).unwrap_or_default();
        pending.chunk(writer, chunk, body);
    }
    finish_buffer(
        transaction,
        writer,
        buffer,
        pending,
        chunking.strategy,
        text.len() as u64,
    )
}

fn insert_streamed(
    transaction: &mut Transaction<'_>,
    writer: &mut Writer,
    buffer: &NewBuffer<'_>,
    (path, root, size, lines, piece): (&Path, Option<&FileRoot>, u64, u64, usize),
    options: &ChunkOptions,
    progress: &mut dyn FnMut(LoadEvent<'_>) -> ControlFlow<()>,
) -> Result<LoadedBuffer> {
    let id = insert_buffer_row(transaction, buffer, size, lines, options.strategy)?;
    let mut pending = writer.buffer(id);
    let mut chunker = StreamChunker::new(Some(buffer.name), options)?;
    let mut hasher = Sha256::new();
    let mut written = 0u64;
    let changed = || Error::Io {
        action: "cannot load",
        path: path.to_owned(),
        source: std::io::Error::other("the file changed while it was being loaded"),
    };
    let failed = |error| super::server_error(format!("cannot store {}", buffer.name), error);
    let streamed = for_each_piece(path, root, piece, &mut |text| {
        let end = written + text.len() as u64;
        if end > size {
            return Err(changed());
        }
        hasher.update(text.as_bytes());
        pending.text(writer, text.as_bytes());
        written = end;
        chunker.push(text, &mut |chunk: Chunk, body: &str| {
            pending.chunk(writer, chunk, body);
            Ok::<(), Error>(())
        })?;
        if writer.full() {
            writer.flush(transaction).map_err(failed)?;
        }
        let step = LoadEvent::Streaming {
            name: buffer.name,
            bytes: written,
            total: size,
        };
        if progress(step).is_break() {
            return Err(Error::Interrupted);
        }
        Ok(ControlFlow::Continue(()))
    })?;
    if streamed.is_err() || written != size || hex::encode(hasher.finalize()) != buffer.sha256 {
        return Err(changed());
    }
    let strategy = chunker.finish(&mut |chunk: Chunk, body: &str| {
        pending.chunk(writer, chunk, body);
        Ok::<(), Error>(())
    })?;
    finish_buffer(transaction, writer, buffer, pending, strategy, size)
}

/// Sends the buffer's last rows when enough are gathered and records its counts.
fn finish_buffer(
    transaction: &mut Transaction<'_>,
    writer: &mut Writer,
    buffer: &NewBuffer<'_>,
    pending: PendingBuffer,
    strategy: Strategy,
    bytes: u64,
) -> Result<LoadedBuffer> {
    let failed = |error| super::server_error(format!("cannot store {}", buffer.name), error);
    let (id, chunks, tokens) = pending.finish(writer);
    transaction
        .execute(
            "UPDATE buffers SET chunk_count = $1, token_count = $2, strategy = $3 WHERE id = $4",
            &[&(chunks as i64), &tokens, &strategy.name(), &id],
        )
        .map_err(failed)?;
    writer.documents += chunks as i64;
    writer.tokens += tokens;
    if writer.full() {
        writer.flush(transaction).map_err(failed)?;
    }
    Ok(LoadedBuffer {
        id,
        name: buffer.name.to_owned(),
        bytes,
        chunks,
        strategy,
        replaced: false,
        notes: Vec::new(),
    })
}

/// Rows gathered for `COPY`, and the changes to the BM25 totals.
pub(super) struct Writer {
    schema: String,
    segments: Vec<SegmentRow>,
    chunks: Vec<ChunkRow>,
    postings: Vec<PostingRow>,
    bytes: usize,
    /// Chunks and tokens added (less those removed) by this transaction.
    documents: i64,
    tokens: i64,
    tokenizer: CodeTokenizer,
}

/// Buffer id, start, first line, text (or the bytes, when they hold a NUL), and whether it
/// ends inside a line.
type SegmentRow = (i64, i64, i64, Option<String>, Option<Vec<u8>>, bool);

/// Term, buffer id, block, chunks, and the chunks' sequence numbers and packed frequencies.
type PostingRow = (String, i64, i32, i32, Vec<i32>, Vec<i32>);

struct ChunkRow {
    buffer_id: i64,
    seq: i32,
    chunk: Chunk,
    tokens: i32,
}

impl Writer {
    pub(super) fn new(schema: &str) -> Self {
        Self {
            schema: schema.to_owned(),
            segments: Vec::new(),
            chunks: Vec::new(),
            postings: Vec::new(),
            bytes: 0,
            documents: 0,
            tokens: 0,
            tokenizer: CodeTokenizer::new(IndexFormat::UniqueHashed),
        }
    }

    fn buffer(&self, id: i64) -> PendingBuffer {
        PendingBuffer {
            id,
            segment: Vec::new(),
            segment_start: 0,
            segment_line: 1,
            position: 0,
            line: 1,
            seq: 0,
            tokens: 0,
            block: HashMap::new(),
        }
    }

    fn full(&self) -> bool {
        self.bytes >= COPY_BYTES
    }

    /// Sends every gathered row.
    pub(super) fn flush(
        &mut self,
        transaction: &mut Transaction<'_>,
    ) -> std::result::Result<(), postgres::Error> {
        if !self.segments.is_empty() {
            let sink = transaction.copy_in(
                "COPY segments (buffer_id, start, line, text, raw, cut) FROM STDIN BINARY",
            )?;
            let types = [
                Type::INT8,
                Type::INT8,
                Type::INT8,
                Type::TEXT,
                Type::BYTEA,
                Type::BOOL,
            ];
            let mut copy = BinaryCopyInWriter::new(sink, &types);
            for (buffer, start, line, text, raw, cut) in self.segments.drain(..) {
                copy.write(&[&buffer, &start, &line, &text, &raw, &cut])?;
            }
            copy.finish()?;
        }
        if !self.chunks.is_empty() {
            let sink = transaction.copy_in(
                "COPY chunks (buffer_id, seq, start, stop, start_line, end_line, header_start,
                              header_end, tokens) FROM STDIN BINARY",
            )?;
            let types = [
                Type::INT8,
                Type::INT4,
                Type::INT8,
                Type::INT8,
                Type::INT8,
                Type::INT8,
                Type::INT8,
                Type::INT8,
                Type::INT4,
            ];
            let mut copy = BinaryCopyInWriter::new(sink, &types);
            for row in self.chunks.drain(..) {
                let header = row.chunk.header.as_ref();
                let values: [&(dyn ToSql + Sync); 9] = [
                    &row.buffer_id,
                    &row.seq,
                    &(row.chunk.range.start as i64),
                    &(row.chunk.range.end as i64),
                    &(row.chunk.start_line as i64),
                    &(row.chunk.end_line as i64),
                    &header.map(|header| header.start as i64),
                    &header.map(|header| header.end as i64),
                    &row.tokens,
                ];
                copy.write(&values)?;
            }
            copy.finish()?;
        }
        if !self.postings.is_empty() {
            let sink = transaction.copy_in(
                "COPY postings (term, buffer_id, block, documents, seqs, freqs) FROM STDIN BINARY",
            )?;
            let types = [
                Type::TEXT,
                Type::INT8,
                Type::INT4,
                Type::INT4,
                Type::INT4_ARRAY,
                Type::INT4_ARRAY,
            ];
            let mut copy = BinaryCopyInWriter::new(sink, &types);
            for (term, buffer, block, documents, seqs, freqs) in self.postings.drain(..) {
                copy.write(&[&term, &buffer, &block, &documents, &seqs, &freqs])?;
            }
            copy.finish()?;
        }
        self.bytes = 0;
        Ok(())
    }

    /// Records this transaction's change to the BM25 totals; folds the rows into one when no
    /// other writer is doing so.
    pub(super) fn totals(
        &mut self,
        transaction: &mut Transaction<'_>,
    ) -> std::result::Result<(), postgres::Error> {
        if self.documents == 0 && self.tokens == 0 {
            return Ok(());
        }
        transaction.execute(
            "INSERT INTO bm25_totals (documents, tokens) VALUES ($1, $2)",
            &[&self.documents, &self.tokens],
        )?;
        let folding: bool = transaction
            .query_one(
                "SELECT pg_try_advisory_xact_lock($1, hashtext($2))",
                &[&TOTALS_LOCK, &self.schema],
            )?
            .get(0);
        if folding {
            transaction.batch_execute(
                "WITH gone AS (DELETE FROM bm25_totals RETURNING documents, tokens)
                 INSERT INTO bm25_totals (documents, tokens)
                 SELECT sum(documents), sum(tokens) FROM gone HAVING count(*) > 0",
            )?;
        }
        self.documents = 0;
        self.tokens = 0;
        Ok(())
    }

    /// The terms of `body` as the BM25 index of a local store holds them, with their counts,
    /// and the number of tokens (its length for BM25).
    fn terms(&mut self, body: &str) -> (HashMap<String, u32>, u32) {
        let mut terms: HashMap<String, u32> = HashMap::new();
        let mut tokens = 0u32;
        let mut stream = self.tokenizer.token_stream(body);
        while stream.advance() {
            let token = stream.token();
            if token.text.len() > MAX_TOKEN_LEN {
                continue;
            }
            tokens += 1;
            match terms.get_mut(token.text.as_str()) {
                Some(count) => *count += 1,
                None => {
                    terms.insert(token.text.clone(), 1);
                }
            }
        }
        (terms, tokens)
    }
}

/// One buffer on its way: its text cut into segments, its chunks' postings by block.
struct PendingBuffer {
    id: i64,
    segment: Vec<u8>,
    segment_start: u64,
    segment_line: u64,
    /// Bytes of text seen, and the line they end on.
    position: u64,
    line: u64,
    seq: i32,
    tokens: i64,
    /// The current block's postings: term → (seqs, packed frequencies).
    block: HashMap<String, (Vec<i32>, Vec<i32>)>,
}

impl PendingBuffer {
    /// Appends text, closing a segment at the first line end past [`SEGMENT_BYTES`] (or at
    /// [`SEGMENT_MAX_BYTES`] within a long line, on a character boundary).
    fn text(&mut self, writer: &mut Writer, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let room = SEGMENT_MAX_BYTES - self.segment.len();
            let wanted = SEGMENT_BYTES.saturating_sub(self.segment.len());
            let cut = match memchr::memchr(b'\n', &bytes[wanted.min(bytes.len())..]) {
                Some(newline) if wanted + newline < room => Some((wanted + newline + 1, false)),
                _ if bytes.len() >= room => Some((char_boundary(bytes, room), true)),
                _ => None,
            };
            let take = cut.map_or(bytes.len(), |(take, _)| take);
            self.segment.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if let Some((_, inside_line)) = cut {
                self.close_segment(writer, inside_line);
            }
        }
    }

    /// Sends the segment gathered so far; `cut` when it ends inside a line (a literal across
    /// its end is in neither segment's trigrams, so `grep` always reads such a buffer).
    fn close_segment(&mut self, writer: &mut Writer, cut: bool) {
        if self.segment.is_empty() {
            return;
        }
        let bytes = std::mem::take(&mut self.segment);
        let length = bytes.len() as u64;
        let newlines = memchr::memchr_iter(b'\n', &bytes).count() as u64;
        writer.bytes += bytes.len() + 48;
        let row = if memchr::memchr(0, &bytes).is_some() {
            let (start, line) = (self.segment_start as i64, self.segment_line as i64);
            (self.id, start, line, None, Some(bytes), cut)
        } else {
            // Stored text was checked (or decoded lossily) at load, and segments end on
            // character boundaries.
            let text = String::from_utf8(bytes)
                .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned());
            let (start, line) = (self.segment_start as i64, self.segment_line as i64);
            (self.id, start, line, Some(text), None, cut)
        };
        writer.segments.push(row);
        self.position = self.segment_start + length;
        self.line = self.segment_line + newlines;
        self.segment_start = self.position;
        self.segment_line = self.line;
    }

    fn chunk(&mut self, writer: &mut Writer, chunk: Chunk, body: &str) {
        if self.seq > 0 && self.seq % BLOCK_CHUNKS == 0 {
            self.close_block(writer);
        }
        let (terms, tokens) = writer.terms(body);
        let norm = i32::from(FieldNormReader::fieldnorm_to_id(tokens));
        for (term, frequency) in terms {
            let packed = (frequency.min(MAX_FREQ) as i32) << 8 | norm;
            let entry = self.block.entry(term).or_default();
            entry.0.push(self.seq);
            entry.1.push(packed);
        }
        writer.bytes += body.len() / 2 + 64;
        writer.chunks.push(ChunkRow {
            buffer_id: self.id,
            seq: self.seq,
            chunk,
            tokens: tokens as i32,
        });
        self.tokens += i64::from(tokens);
        self.seq += 1;
    }

    fn close_block(&mut self, writer: &mut Writer) {
        let block = (self.seq.max(1) - 1) / BLOCK_CHUNKS;
        for (term, (seqs, freqs)) in self.block.drain() {
            writer.bytes += term.len() + 8 * seqs.len() + 48;
            let documents = seqs.len() as i32;
            writer
                .postings
                .push((term, self.id, block, documents, seqs, freqs));
        }
    }

    /// Closes the last segment and block; returns the buffer's id, chunks and tokens.
    fn finish(mut self, writer: &mut Writer) -> (i64, u64, i64) {
        // The last segment may end without a line end: the text's end is no cut.
        self.close_segment(writer, false);
        self.close_block(writer);
        (self.id, self.seq as u64, self.tokens)
    }
}

/// The largest cut at most `at` that does not split a character.
fn char_boundary(bytes: &[u8], at: usize) -> usize {
    let mut cut = at.min(bytes.len());
    while cut > 0 && cut < bytes.len() && bytes[cut] & 0xC0 == 0x80 {
        cut -= 1;
    }
    cut
}

/// Rewrites the postings and totals of every chunk from the stored text.
pub(super) fn reindex(
    store: &PostgresStore,
    progress: &mut dyn FnMut(IndexProgress),
) -> Result<crate::ReindexReport> {
    let schema = store.location.schema.clone();
    let buffers: Vec<BufferInfo> = store.list()?;
    let total: u64 = buffers.iter().map(|buffer| buffer.chunks).sum();
    let failed = store.failed("rebuild the postings");
    let mut client = store.client()?;
    let mut transaction = client.transaction().map_err(&failed)?;
    transaction
        .execute(
            "SELECT pg_advisory_xact_lock($1, hashtext($2))",
            &[&STORE_LOCK, &schema],
        )
        .map_err(&failed)?;
    transaction
        .batch_execute("DELETE FROM postings; DELETE FROM bm25_totals")
        .map_err(&failed)?;
    let mut writer = Writer::new(&schema);
    let mut done = 0;
    for buffer in &buffers {
        let rows = transaction
            .query(
                "SELECT start, stop FROM chunks WHERE buffer_id = $1 ORDER BY seq",
                &[&buffer.id],
            )
            .map_err(&failed)?;
        let text = super::read::buffer_text_in(&mut transaction, buffer.id).map_err(&failed)?;
        let mut pending = writer.buffer(buffer.id);
        for row in rows {
            let (start, stop): (i64, i64) = (row.get(0), row.get(1));
            let body = text.get(start as usize..stop as usize).unwrap_or_default();
            // Only the postings: the chunk rows stay.
            let (terms, tokens) = writer.terms(body);
            let norm = i32::from(FieldNormReader::fieldnorm_to_id(tokens));
            if pending.seq > 0 && pending.seq % BLOCK_CHUNKS == 0 {
                pending.close_block(&mut writer);
            }
            for (term, frequency) in terms {
                let packed = (frequency.min(MAX_FREQ) as i32) << 8 | norm;
                let entry = pending.block.entry(term).or_default();
                entry.0.push(pending.seq);
                entry.1.push(packed);
            }
            pending.seq += 1;
            pending.tokens += i64::from(tokens);
            done += 1;
            if done % 1024 == 0 {
                progress(IndexProgress {
                    chunks: done,
                    total,
                });
            }
        }
        pending.close_block(&mut writer);
        writer.documents += i64::from(pending.seq);
        writer.tokens += pending.tokens;
        transaction
            .execute(
                "UPDATE buffers SET token_count = $1 WHERE id = $2",
                &[&pending.tokens, &buffer.id],
            )
            .map_err(&failed)?;
        if writer.full() {
            writer.flush(&mut transaction).map_err(&failed)?;
        }
    }
    writer.flush(&mut transaction).map_err(&failed)?;
    writer.totals(&mut transaction).map_err(&failed)?;
    transaction.commit().map_err(&failed)?;
    progress(IndexProgress {
        chunks: done,
        total,
    });
    Ok(crate::ReindexReport {
        buffers: buffers.len() as u64,
        chunks: done,
    })
}
