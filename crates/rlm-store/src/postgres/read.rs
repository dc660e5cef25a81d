//! Reading a PostgreSQL store: buffers, names and globs, text ranges, lines, chunks, status.
//!
//! Names are ordered byte by byte (`COLLATE "C"`), as SQLite orders them, so listings come in
//! the same order from both backends; name and glob resolution is the local store's own
//! ([`crate::select`]) over the rows read here.

use std::collections::HashMap;
use std::ops::Range;

use postgres::GenericClient;
use postgres::types::ToSql;

use super::PostgresStore;
use crate::admin::StoreStatus;
use crate::doctor::Check;
use crate::error::{Error, Result};
use crate::read::{BufferInfo, ChunkInfo, LinesWithin, whole_chars};
use crate::select;
use crate::store::IndexHealth;

const BUFFER_COLUMNS: &str =
    "id, name, path, size, line_count, chunk_count, strategy, sha256, loaded_at";

fn buffer_from_row(row: &postgres::Row) -> BufferInfo {
    BufferInfo {
        id: row.get(0),
        name: row.get(1),
        path: row.get(2),
        bytes: row.get::<_, i64>(3) as u64,
        lines: row.get::<_, i64>(4) as u64,
        chunks: row.get::<_, i64>(5) as u64,
        strategy: row.get(6),
        sha256: row.get(7),
        loaded_at: row.get(8),
    }
}

fn chunk_from_row(row: &postgres::Row, buffer: String) -> ChunkInfo {
    ChunkInfo {
        id: row.get(0),
        buffer_id: row.get(1),
        buffer,
        seq: i64::from(row.get::<_, i32>(2)),
        bytes: row.get::<_, i64>(3) as u64..row.get::<_, i64>(4) as u64,
        start_line: row.get::<_, i64>(5) as u64,
        end_line: row.get::<_, i64>(6) as u64,
    }
}

impl PostgresStore {
    /// Rows of a query, with the location in any error.
    pub(super) fn rows(
        &self,
        what: &str,
        sql: &str,
        parameters: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<postgres::Row>> {
        let failed = self.failed(what);
        self.client()?.query(sql, parameters).map_err(failed)
    }

    pub(crate) fn list(&self) -> Result<Vec<BufferInfo>> {
        let sql = format!("SELECT {BUFFER_COLUMNS} FROM buffers ORDER BY name COLLATE \"C\"");
        Ok(self
            .rows("list the buffers", &sql, &[])?
            .iter()
            .map(buffer_from_row)
            .collect())
    }

    pub(crate) fn buffer(&self, name: &str) -> Result<BufferInfo> {
        let sql = format!("SELECT {BUFFER_COLUMNS} FROM buffers WHERE name = $1");
        if let Some(row) = self.rows("find a buffer", &sql, &[&name])?.first() {
            return Ok(buffer_from_row(row));
        }
        if let Ok(id) = name.parse::<i64>() {
            let sql = format!("SELECT {BUFFER_COLUMNS} FROM buffers WHERE id = $1");
            if let Some(row) = self.rows("find a buffer", &sql, &[&id])?.first() {
                return Ok(buffer_from_row(row));
            }
        }
        select::by_suffix(name, self.list()?)
    }

    pub(crate) fn select_buffers(&self, pattern: &str) -> Result<Vec<BufferInfo>> {
        match self.buffer(pattern) {
            Ok(buffer) => return Ok(vec![buffer]),
            Err(Error::UnknownBuffer(_) | Error::AmbiguousBuffer { .. }) => {}
            Err(error) => return Err(error),
        }
        select::under_pattern(pattern, self.list()?)
    }

    pub(crate) fn filter_buffers(
        &self,
        names: &[String],
        path_glob: Option<&str>,
    ) -> Result<Vec<BufferInfo>> {
        let mut buffers = if names.is_empty() {
            self.list()?
        } else {
            let mut buffers = names
                .iter()
                .map(|name| self.buffer(name))
                .collect::<Result<Vec<_>>>()?;
            buffers.sort_by(|a, b| a.name.cmp(&b.name));
            buffers.dedup_by_key(|buffer| buffer.id);
            buffers
        };
        if let Some(glob) = path_glob {
            let matcher = select::compile_glob(glob)?;
            buffers.retain(|buffer| select::matches_glob(&matcher, buffer));
        }
        Ok(buffers)
    }

    /// Ids of the buffers a search may return; `None` for every buffer.
    pub(super) fn candidate_buffers(
        &self,
        names: &[String],
        path_glob: Option<&str>,
    ) -> Result<Option<Vec<i64>>> {
        if names.is_empty() && path_glob.is_none() {
            return Ok(None);
        }
        if !names.is_empty() {
            let mut ids: Vec<i64> = self
                .filter_buffers(names, path_glob)?
                .iter()
                .map(|buffer| buffer.id)
                .collect();
            ids.sort_unstable();
            return Ok(Some(ids));
        }
        let Some(glob) = path_glob else {
            return Ok(None);
        };
        let matcher = select::compile_glob(glob)?;
        // A literal prefix bounds the names and paths the glob can match (byte order).
        // (A prefix whose raised last byte is no longer UTF-8 bounds nothing here.)
        let bounds = select::literal_prefix(glob).and_then(|(low, high)| {
            Some((
                std::str::from_utf8(low).ok()?.to_owned(),
                String::from_utf8(high).ok()?,
            ))
        });
        let rows = match bounds {
            Some((low, high)) => self.rows(
                "filter the buffers",
                "SELECT id, name, path FROM buffers
                     WHERE (name COLLATE \"C\" >= $1 AND name COLLATE \"C\" < $2)
                        OR (path COLLATE \"C\" >= $1 AND path COLLATE \"C\" < $2)",
                &[&low, &high],
            )?,
            None => self.rows(
                "filter the buffers",
                "SELECT id, name, path FROM buffers",
                &[],
            )?,
        };
        let mut ids: Vec<i64> = rows
            .iter()
            .filter(|row| {
                matcher.is_match(row.get::<_, &str>(1))
                    || row
                        .get::<_, Option<&str>>(2)
                        .is_some_and(|path| matcher.is_match(path))
            })
            .map(|row| row.get(0))
            .collect();
        ids.sort_unstable();
        Ok(Some(ids))
    }

    pub(crate) fn text(&self, buffer: &BufferInfo) -> Result<String> {
        let bytes = self.read_range(buffer.id, 0, buffer.bytes)?;
        Ok(into_text(bytes))
    }

    /// Bytes `start..end` of a buffer's text, clamped to its length.
    pub(super) fn read_range(&self, buffer_id: i64, start: u64, end: u64) -> Result<Vec<u8>> {
        let failed = self.failed("read a buffer's text");
        let mut client = self.client()?;
        read_range_in(&mut *client, buffer_id, start, end).map_err(failed)
    }

    pub(crate) fn read_bytes(&self, buffer: &BufferInfo, range: Range<u64>) -> Result<String> {
        if range.start > range.end || range.end > buffer.bytes {
            return Err(Error::Range(format!(
                "byte range {}:{} is outside {} ({} bytes)",
                range.start, range.end, buffer.name, buffer.bytes
            )));
        }
        let start = range.start.saturating_sub(3);
        let end = (range.end + 3).min(buffer.bytes);
        let raw = self.read_range(buffer.id, start, end)?;
        let continuation = |byte: Option<&u8>| byte.is_some_and(|&b| b & 0xC0 == 0x80);
        let mut from = (range.start - start) as usize;
        while from > 0 && continuation(raw.get(from)) {
            from -= 1;
        }
        let mut to = ((range.end - start) as usize).min(raw.len());
        while to < raw.len() && continuation(raw.get(to)) {
            to += 1;
        }
        Ok(String::from_utf8_lossy(&raw[from.min(to)..to]).into_owned())
    }

    /// As the local store reads them: from the last segment that starts on a line before
    /// `first`, the segments up to the one holding line `last`'s end.
    pub(crate) fn read_lines(&self, buffer: &BufferInfo, first: u64, last: u64) -> Result<String> {
        Ok(self.read_lines_within(buffer, first, last, u64::MAX)?.text)
    }

    /// Lines `first..=last` as [`Self::read_lines`] reads them, but at most `max_bytes` of
    /// them: no segment is fetched that starts more than `max_bytes` past the first segment
    /// on a line from `first` on (line `first` starts at or before it), so one segment past
    /// the ceiling is the most read beyond it.
    pub(crate) fn read_lines_within(
        &self,
        buffer: &BufferInfo,
        first: u64,
        last: u64,
        max_bytes: u64,
    ) -> Result<LinesWithin> {
        crate::read::check_line_range(buffer, first, last)?;
        let reach = i64::try_from(max_bytes).unwrap_or(i64::MAX);
        let rows = self.rows(
            "read lines",
            "SELECT start, line, text, raw FROM segments
             WHERE buffer_id = $1 AND line <= $3
               AND start >= coalesce((SELECT max(start) FROM segments
                                      WHERE buffer_id = $1 AND line < $2), 0)
               AND start - coalesce((SELECT min(start) FROM segments
                                     WHERE buffer_id = $1 AND line >= $2), start) <= $4
             ORDER BY start",
            &[&buffer.id, &(first as i64), &(last as i64), &reach],
        )?;
        let (origin, mut line) = rows.first().map_or((0, 1), |row| {
            (row.get::<_, i64>(0) as u64, row.get::<_, i64>(1) as u64)
        });
        let mut bytes = Vec::new();
        for row in &rows {
            append_segment(&mut bytes, row, 2);
        }
        let mut start = (first == 1).then_some(0);
        let mut end = None;
        for newline in memchr::memchr_iter(b'\n', &bytes) {
            line += 1;
            let next_line_start = origin + newline as u64 + 1;
            if line == first {
                start = Some(next_line_start);
            }
            if line == last + 1 {
                end = Some(next_line_start);
                break;
            }
        }
        let Some(start) = start.filter(|&start| start < buffer.bytes || buffer.bytes == 0) else {
            return Err(Error::Range(format!(
                "line {first} is past the end of {} ({} lines)",
                buffer.name, buffer.lines
            )));
        };
        let end = end.unwrap_or((origin + bytes.len() as u64).min(buffer.bytes));
        let cut = end.saturating_sub(start) > max_bytes;
        let end = if cut { start + max_bytes } else { end };
        let from = (start - origin) as usize;
        let to = ((end - origin) as usize).min(bytes.len());
        Ok(LinesWithin {
            start: Some(start),
            text: whole_chars(&bytes[from.min(to)..to], cut),
            cut,
        })
    }

    pub(crate) fn chunks_of(&self, buffer: &BufferInfo) -> Result<Vec<ChunkInfo>> {
        let rows = self.rows(
            "list chunks",
            "SELECT id, buffer_id, seq, start, stop, start_line, end_line
             FROM chunks WHERE buffer_id = $1 ORDER BY seq",
            &[&buffer.id],
        )?;
        Ok(rows
            .iter()
            .map(|row| chunk_from_row(row, buffer.name.clone()))
            .collect())
    }

    pub(crate) fn chunks_of_each(&self, buffers: &[BufferInfo]) -> Result<Vec<ChunkInfo>> {
        let ids: Vec<i64> = buffers.iter().map(|buffer| buffer.id).collect();
        let rows = self.rows(
            "list chunks",
            "SELECT id, buffer_id, seq, start, stop, start_line, end_line
             FROM chunks WHERE buffer_id = ANY($1) ORDER BY buffer_id, seq",
            &[&ids],
        )?;
        let mut by_buffer: HashMap<i64, Vec<&postgres::Row>> = HashMap::new();
        for row in &rows {
            by_buffer.entry(row.get(1)).or_default().push(row);
        }
        let mut chunks = Vec::new();
        for buffer in buffers {
            for row in by_buffer.get(&buffer.id).into_iter().flatten() {
                chunks.push(chunk_from_row(row, buffer.name.clone()));
            }
        }
        Ok(chunks)
    }

    pub(crate) fn chunk(&self, id: i64) -> Result<ChunkInfo> {
        let rows = self.rows(
            "read a chunk",
            "SELECT c.id, c.buffer_id, c.seq, c.start, c.stop, c.start_line, c.end_line, b.name
             FROM chunks c JOIN buffers b ON b.id = c.buffer_id WHERE c.id = $1",
            &[&id],
        )?;
        let row = rows.first().ok_or(Error::UnknownChunk(id))?;
        Ok(chunk_from_row(row, row.get(7)))
    }

    pub(crate) fn chunk_text(&self, id: i64) -> Result<String> {
        let mut texts = self.chunk_texts(&[id])?;
        Ok(texts.pop().unwrap_or_default())
    }

    /// Every chunk's header and body in two statements: the ranges, then the segments
    /// holding them.
    pub(crate) fn chunk_texts(&self, ids: &[i64]) -> Result<Vec<String>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let rows = self.rows(
            "read chunks",
            "SELECT id, buffer_id, start, stop, header_start, header_end
             FROM chunks WHERE id = ANY($1)",
            &[&ids],
        )?;
        let found: HashMap<i64, &postgres::Row> =
            rows.iter().map(|row| (row.get(0), row)).collect();
        // Two ranges a chunk: its header (maybe empty) and its body.
        let (mut buffers, mut starts, mut ends) = (Vec::new(), Vec::new(), Vec::new());
        for id in ids {
            let row = found.get(id).ok_or(Error::UnknownChunk(*id))?;
            let buffer: i64 = row.get(1);
            let header = match (row.get::<_, Option<i64>>(4), row.get::<_, Option<i64>>(5)) {
                (Some(from), Some(to)) => (from, to),
                _ => (0, 0),
            };
            for (from, to) in [header, (row.get(2), row.get(3))] {
                buffers.push(buffer);
                starts.push(from);
                ends.push(to);
            }
        }
        let pieces = self.rows(
            "read chunks",
            "SELECT r.i, s.start, s.text, s.raw
             FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) WITH ORDINALITY
                  AS r(buffer_id, lo, hi, i)
             JOIN LATERAL (
                 SELECT start, text, raw FROM segments
                 WHERE buffer_id = r.buffer_id AND start < r.hi
                   AND start >= coalesce((SELECT max(start) FROM segments
                                          WHERE buffer_id = r.buffer_id AND start <= r.lo), 0)
             ) s ON r.lo < r.hi
             ORDER BY r.i, s.start",
            &[&buffers, &starts, &ends],
        )?;
        let mut ranges: Vec<Vec<u8>> = vec![Vec::new(); starts.len()];
        let mut origins: Vec<Option<i64>> = vec![None; starts.len()];
        for row in &pieces {
            let index = (row.get::<_, i64>(0) - 1) as usize;
            origins[index].get_or_insert(row.get(1));
            append_segment(&mut ranges[index], row, 2);
        }
        let mut texts = Vec::with_capacity(ids.len());
        for pair in 0..ids.len() {
            let mut bytes = Vec::new();
            for index in [2 * pair, 2 * pair + 1] {
                let origin = origins[index].unwrap_or(0);
                let from = (starts[index] - origin).max(0) as usize;
                let to = ((ends[index] - origin).max(0) as usize).min(ranges[index].len());
                bytes.extend_from_slice(&ranges[index][from.min(to)..to]);
            }
            texts.push(into_text(bytes));
        }
        Ok(texts)
    }

    pub(crate) fn status(&self) -> Result<StoreStatus> {
        let rows = self.rows(
            "read the store's status",
            "SELECT (SELECT count(*) FROM buffers),
                    (SELECT coalesce(sum(size), 0)::bigint FROM buffers),
                    (SELECT coalesce(sum(chunk_count), 0)::bigint FROM buffers),
                    (SELECT version FROM store_meta WHERE id = 1),
                    (SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
                     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                     WHERE n.nspname = current_schema() AND c.relkind = 'r'),
                    pg_total_relation_size('postings'),
                    (SELECT coalesce(sum(documents), 0)::bigint FROM bm25_totals)",
            &[],
        )?;
        let row = rows.first().ok_or_else(|| Error::NoStore {
            location: self.location.to_string(),
        })?;
        let embeddings = self.embedding_status()?;
        let index_bytes = row.get::<_, i64>(5) as u64;
        Ok(StoreStatus {
            dir: self.location.to_string(),
            schema_version: i64::from(row.get::<_, i32>(3)),
            buffers: row.get::<_, i64>(0) as u64,
            chunks: row.get::<_, i64>(2) as u64,
            text_bytes: row.get::<_, i64>(1) as u64,
            database_bytes: (row.get::<_, i64>(4) as u64).saturating_sub(index_bytes),
            index_bytes,
            indexed_chunks: row.get::<_, i64>(6) as u64,
            pending_index_work: 0,
            index_health: IndexHealth::UpToDate,
            embedded_chunks: embeddings.embedded_chunks,
            embedding_model: embeddings.model,
        })
    }
}

/// Appends a segment row's text (column `column`) or bytes (the next column).
pub(super) fn append_segment(bytes: &mut Vec<u8>, row: &postgres::Row, column: usize) {
    match row.get::<_, Option<&str>>(column) {
        Some(text) => bytes.extend_from_slice(text.as_bytes()),
        None => {
            bytes.extend_from_slice(row.get::<_, Option<&[u8]>>(column + 1).unwrap_or_default())
        }
    }
}

/// Stored text is UTF-8 (checked at load); were a range to cut a character, lossily.
fn into_text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
}

/// Bytes `start..end` of a buffer's text (clamped), read with `client`.
pub(super) fn read_range_in(
    client: &mut impl GenericClient,
    buffer_id: i64,
    start: u64,
    end: u64,
) -> std::result::Result<Vec<u8>, postgres::Error> {
    if start >= end {
        return Ok(Vec::new());
    }
    let (start, end) = (start as i64, end.min(i64::MAX as u64) as i64);
    let rows = client.query(
        "SELECT start, text, raw FROM segments
         WHERE buffer_id = $1 AND start < $3
           AND start >= coalesce((SELECT max(start) FROM segments
                                  WHERE buffer_id = $1 AND start <= $2), 0)
         ORDER BY start",
        &[&buffer_id, &start, &end],
    )?;
    let origin = rows.first().map_or(0, |row| row.get::<_, i64>(0));
    let mut bytes = Vec::new();
    for row in &rows {
        append_segment(&mut bytes, row, 1);
    }
    let from = ((start - origin).max(0) as usize).min(bytes.len());
    let to = ((end - origin).max(0) as usize).min(bytes.len());
    bytes.truncate(to);
    bytes.drain(..from);
    Ok(bytes)
}

/// A buffer's whole text, read inside a transaction.
pub(super) fn buffer_text_in(
    client: &mut impl GenericClient,
    buffer_id: i64,
) -> std::result::Result<String, postgres::Error> {
    Ok(into_text(read_range_in(client, buffer_id, 0, u64::MAX)?))
}

/// `rlm doctor`'s counts: the BM25 totals against the chunks, the vectors against the model.
pub(super) fn consistency(client: &mut postgres::Client) -> Vec<Check> {
    let row = client.query_one(
        "SELECT (SELECT coalesce(sum(chunk_count), 0)::bigint FROM buffers),
                (SELECT coalesce(sum(token_count), 0)::bigint FROM buffers),
                (SELECT coalesce(sum(documents), 0)::bigint FROM bm25_totals),
                (SELECT coalesce(sum(tokens), 0)::bigint FROM bm25_totals),
                (SELECT count(*) FROM embeddings),
                (SELECT model_id FROM embedding_model WHERE id = 1)",
        &[],
    );
    let row = match row {
        Ok(row) => row,
        Err(error) => {
            return vec![Check::problem(
                "bm25 index",
                format!("cannot count: {}", super::ServerError::from(error)),
                "check the user's privileges on the schema",
            )];
        }
    };
    let (chunks, tokens, documents, counted): (i64, i64, i64, i64) =
        (row.get(0), row.get(1), row.get(2), row.get(3));
    let mut checks = vec![if chunks == documents && tokens == counted {
        Check::ok("bm25 index", format!("{chunks} chunks, statistics in step"))
    } else {
        Check::problem(
            "bm25 index",
            format!(
                "statistics count {documents} chunks and {counted} tokens, the buffers \
                 {chunks} and {tokens}"
            ),
            "run `rlm reindex` to write the postings and statistics again",
        )
    }];
    let embedded: i64 = row.get(4);
    checks.push(match row.get::<_, Option<String>>(5) {
        None => Check::ok("vectors", "none (BM25 only)"),
        Some(model) if embedded < chunks => Check::resumable(
            "vectors",
            format!("{embedded} of {chunks} chunks have a vector so far ({model})"),
            "run `rlm embed` with the model available to embed the rest",
        ),
        Some(model) => Check::ok(
            "vectors",
            format!("{embedded} of {chunks} chunks ({model})"),
        ),
    });
    checks
}
