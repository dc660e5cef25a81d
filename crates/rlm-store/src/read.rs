//! Reading buffers back: metadata, text ranges, chunks, and the store's status.

use std::ops::Range;

use rusqlite::{Connection, OptionalExtension as _, Row, params};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::store::LocalStore;
use crate::text::TextReader;

/// Bytes of text read per step while [`Store::read_lines`] looks for its lines.
const BLOB_STEP: usize = 8 * 1024 * 1024;

/// Metadata of a stored buffer.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct BufferInfo {
    /// Buffer id.
    pub id: i64,
    /// Buffer name.
    pub name: String,
    /// Absolute path it was loaded from, if it was a file.
    pub path: Option<String>,
    /// Size in bytes.
    pub bytes: u64,
    /// Number of lines.
    pub lines: u64,
    /// Number of chunks.
    pub chunks: u64,
    /// Chunker used.
    pub strategy: String,
    /// SHA-256 of the content, hex.
    pub sha256: String,
    /// Unix time of the load.
    pub loaded_at: i64,
}

/// A chunk's location and text.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ChunkInfo {
    /// Chunk id (stable until its buffer is replaced or deleted).
    pub id: i64,
    /// Buffer id.
    pub buffer_id: i64,
    /// Buffer name.
    pub buffer: String,
    /// Position within the buffer, 0-based.
    pub seq: i64,
    /// Byte range in the buffer.
    pub bytes: Range<u64>,
    /// First line, 1-based.
    pub start_line: u64,
    /// Last line, 1-based inclusive.
    pub end_line: u64,
}

pub(crate) const BUFFER_COLUMNS: &str = "b.id, b.name, b.path, b.size, b.line_count,
    (SELECT COUNT(*) FROM chunks c WHERE c.buffer_id = b.id), b.strategy, b.sha256, b.loaded_at";

pub(crate) fn buffer_from_row(row: &Row<'_>) -> rusqlite::Result<BufferInfo> {
    Ok(BufferInfo {
        id: row.get(0)?,
        name: row.get(1)?,
        path: row.get(2)?,
        bytes: row.get(3)?,
        lines: row.get(4)?,
        chunks: row.get(5)?,
        strategy: row.get(6)?,
        sha256: row.get(7)?,
        loaded_at: row.get(8)?,
    })
}

impl LocalStore {
    /// All buffers, by name.
    pub fn list(&self) -> Result<Vec<BufferInfo>> {
        // Both statements read one snapshot, so a load committing between them cannot pair a
        // buffer with another version's chunk count (a read transaction; rolled back on drop).
        let _snapshot = if self.connection.is_autocommit() {
            Some(self.connection.unchecked_transaction()?)
        } else {
            None
        };
        // The chunk counts in one pass over the chunk index, not one lookup per buffer.
        let mut counts = std::collections::HashMap::new();
        let mut statement = self
            .connection
            .prepare_cached("SELECT buffer_id, COUNT(*) FROM chunks GROUP BY buffer_id")?;
        let mut rows = statement.query([])?;
        while let Some(row) = rows.next()? {
            counts.insert(row.get::<_, i64>(0)?, row.get::<_, u64>(1)?);
        }
        let mut statement = self.connection.prepare_cached(
            "SELECT b.id, b.name, b.path, b.size, b.line_count, 0, b.strategy, b.sha256, b.loaded_at
             FROM buffers b ORDER BY b.name",
        )?;
        let rows = statement.query_map([], buffer_from_row)?;
        rows.map(|row| {
            let mut buffer = row?;
            buffer.chunks = counts.get(&buffer.id).copied().unwrap_or(0);
            Ok(buffer)
        })
        .collect()
    }

    /// The whole text of a buffer.
    pub fn text(&self, buffer: &BufferInfo) -> Result<String> {
        buffer_text(&self.connection, buffer.id)
    }

    /// Bytes `range` of a buffer, widened to character boundaries.
    pub fn read_bytes(&self, buffer: &BufferInfo, range: Range<u64>) -> Result<String> {
        if range.start > range.end || range.end > buffer.bytes {
            return Err(Error::Range(format!(
                "byte range {}:{} is outside {} ({} bytes)",
                range.start, range.end, buffer.name, buffer.bytes
            )));
        }
        // Read up to 3 extra bytes each side so a range cutting a character can be widened.
        let start = range.start.saturating_sub(3);
        let end = (range.end + 3).min(buffer.bytes);
        let raw = read_blob(&self.connection, buffer.id, start as usize, end as usize)?;
        let mut from = (range.start - start) as usize;
        while from > 0 && is_continuation(raw.get(from)) {
            from -= 1;
        }
        let mut to = (range.end - start) as usize;
        while to < raw.len() && is_continuation(raw.get(to)) {
            to += 1;
        }
        Ok(String::from_utf8_lossy(&raw[from..to]).into_owned())
    }

    /// Lines `first..=last` (1-based) of a buffer, each with its newline.
    pub fn read_lines(&self, buffer: &BufferInfo, first: u64, last: u64) -> Result<String> {
        Ok(self.read_lines_within(buffer, first, last, u64::MAX)?.text)
    }

    /// Lines `first..=last` as [`Self::read_lines`] reads them, but at most `max_bytes` of
    /// them: the scan for the range's end stops past that many, and only that many are read.
    pub fn read_lines_within(
        &self,
        buffer: &BufferInfo,
        first: u64,
        last: u64,
        max_bytes: u64,
    ) -> Result<LinesWithin> {
        check_line_range(buffer, first, last)?;
        // Start scanning at the last chunk that begins before the first line, not at byte 0.
        let (mut position, mut line) = self.scan_start(buffer.id, first)?;
        let mut reader = TextReader::new(&self.connection);
        let mut start = (first == 1).then_some(0);
        let mut end = None;
        'scan: while position < buffer.bytes {
            let step_end = (position + BLOB_STEP as u64).min(buffer.bytes);
            let piece = reader.read(buffer.id, position, step_end)?;
            for newline in memchr::memchr_iter(b'\n', &piece) {
                // `line` is the line holding `position`; a newline starts the next one.
                line += 1;
                let next_line_start = position + newline as u64 + 1;
                if line == first {
                    start = Some(next_line_start);
                }
                if line == last + 1 {
                    end = Some(next_line_start);
                    break 'scan;
                }
            }
            position = step_end;
            if start.is_some_and(|start| position - start > max_bytes) {
                // The range goes on past what may be read: its end is not needed.
                break;
            }
        }
        let Some(start) = start.filter(|&start| start < buffer.bytes || buffer.bytes == 0) else {
            return Err(Error::Range(format!(
                "line {first} is past the end of {} ({} lines)",
                buffer.name, buffer.lines
            )));
        };
        let end = end.unwrap_or(buffer.bytes);
        let cut = end - start > max_bytes;
        let end = if cut { start + max_bytes } else { end };
        let bytes = reader.read(buffer.id, start, end)?;
        Ok(LinesWithin {
            start: Some(start),
            text: whole_chars(&bytes, cut),
            cut,
        })
    }

    /// Where [`Store::read_lines`] starts looking for line `first`: the start and first line of
    /// the last chunk that begins on an earlier line, else the text's start. A binary search
    /// over the chunks' order, in which their lines grow (one key lookup per step): sorting
    /// the chunks by line read all of a buffer's chunks, 23 ms for the 130,000 of 256 MB. Any
    /// chunk on an earlier line would do; the last one leaves the least to scan.
    fn scan_start(&self, buffer_id: i64, first: u64) -> Result<(u64, u64)> {
        let chunks: Option<u64> = self
            .connection
            .prepare_cached("SELECT max(seq) + 1 FROM chunks WHERE buffer_id = ?1")?
            .query_row([buffer_id], |row| row.get(0))?;
        let mut at_seq = self.connection.prepare_cached(
            "SELECT start, start_line FROM chunks WHERE buffer_id = ?1 AND seq = ?2",
        )?;
        let (mut low, mut high) = (0, chunks.unwrap_or(0));
        let mut found = (0, 1);
        while low < high {
            let middle = low + (high - low) / 2;
            let chunk: Option<(u64, u64)> = at_seq
                .query_row(params![buffer_id, middle as i64], |row| {
                    Ok((row.get(0)?, row.get(1)?))
                })
                .optional()?;
            match chunk {
                Some((start, line)) if line < first => {
                    found = (start, line);
                    low = middle + 1;
                }
                _ => high = middle,
            }
        }
        Ok(found)
    }

    /// Every chunk of a buffer, in order.
    pub fn chunks_of(&self, buffer: &BufferInfo) -> Result<Vec<ChunkInfo>> {
        let mut statement = self.connection.prepare_cached(
            "SELECT id, buffer_id, seq, start, end, start_line, end_line
             FROM chunks WHERE buffer_id = ?1 ORDER BY seq",
        )?;
        let rows = statement.query_map([buffer.id], |row| {
            Ok(ChunkInfo {
                id: row.get(0)?,
                buffer_id: row.get(1)?,
                buffer: buffer.name.clone(),
                seq: row.get(2)?,
                bytes: row.get(3)?..row.get(4)?,
                start_line: row.get(5)?,
                end_line: row.get(6)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Every chunk of each of `buffers`, buffer after buffer, each in order. A few buffers
    /// are read one indexed query each; many are read in one pass over the chunk table, since
    /// a query per buffer costs tens of microseconds however small the buffer (a scan over
    /// 1,000 one-chunk files took 20–25 ms that way, one pass about 2).
    pub fn chunks_of_each(&self, buffers: &[BufferInfo]) -> Result<Vec<ChunkInfo>> {
        const ONE_PASS_FROM: usize = 32;
        if buffers.len() < ONE_PASS_FROM {
            let mut chunks = Vec::new();
            for buffer in buffers {
                chunks.extend(self.chunks_of(buffer)?);
            }
            return Ok(chunks);
        }
        // Where each buffer's chunks go: the position of the buffer in `buffers`.
        let order: std::collections::HashMap<i64, usize> = buffers
            .iter()
            .enumerate()
            .rev()
            .map(|(position, buffer)| (buffer.id, position))
            .collect();
        let mut per_buffer: Vec<Vec<ChunkInfo>> = vec![Vec::new(); buffers.len()];
        let mut statement = self.connection.prepare_cached(
            "SELECT id, buffer_id, seq, start, end, start_line, end_line
             FROM chunks ORDER BY buffer_id, seq",
        )?;
        let mut rows = statement.query([])?;
        while let Some(row) = rows.next()? {
            let buffer_id: i64 = row.get(1)?;
            let Some(&position) = order.get(&buffer_id) else {
                continue;
            };
            per_buffer[position].push(ChunkInfo {
                id: row.get(0)?,
                buffer_id,
                buffer: buffers[position].name.clone(),
                seq: row.get(2)?,
                bytes: row.get(3)?..row.get(4)?,
                start_line: row.get(5)?,
                end_line: row.get(6)?,
            });
        }
        // A buffer listed twice gets its chunks twice, as one query per listing would.
        let last: std::collections::HashMap<i64, usize> = buffers
            .iter()
            .enumerate()
            .map(|(position, buffer)| (buffer.id, position))
            .collect();
        let mut chunks = Vec::new();
        for (position, buffer) in buffers.iter().enumerate() {
            let first = order[&buffer.id];
            if last[&buffer.id] == position {
                chunks.append(&mut per_buffer[first]);
            } else {
                chunks.extend(per_buffer[first].iter().cloned());
            }
        }
        Ok(chunks)
    }

    /// A chunk's location.
    pub fn chunk(&self, id: i64) -> Result<ChunkInfo> {
        self.connection
            .query_row(
                "SELECT c.id, c.buffer_id, b.name, c.seq, c.start, c.end, c.start_line, c.end_line
                 FROM chunks c JOIN buffers b ON b.id = c.buffer_id WHERE c.id = ?1",
                [id],
                |row| {
                    Ok(ChunkInfo {
                        id: row.get(0)?,
                        buffer_id: row.get(1)?,
                        buffer: row.get(2)?,
                        seq: row.get(3)?,
                        bytes: row.get(4)?..row.get(5)?,
                        start_line: row.get(6)?,
                        end_line: row.get(7)?,
                    })
                },
            )
            .optional()?
            .ok_or(Error::UnknownChunk(id))
    }

    /// A chunk's text, with the CSV header in front when the chunk has one.
    pub fn chunk_text(&self, id: i64) -> Result<String> {
        chunk_text_in(&self.connection, id)
    }

    /// The texts of several chunks, in the order of `ids`, as [`Store::chunk_text`] gives them:
    /// one prepared statement for the whole list and one blob handle, moved from buffer to
    /// buffer (`sqlite3_blob_reopen` costs a fraction of opening a handle, which compiles a
    /// statement each time), instead of a statement and a blob opened per chunk.
    pub fn chunk_texts(&self, ids: &[i64]) -> Result<Vec<String>> {
        let mut statement = self.connection.prepare_cached(
            "SELECT buffer_id, start, end, header_start, header_end FROM chunks WHERE id = ?1",
        )?;
        let mut reader = TextReader::new(&self.connection);
        let mut texts = Vec::with_capacity(ids.len());
        for &id in ids {
            let (buffer_id, start, end, header_start, header_end): (
                i64,
                u64,
                u64,
                Option<u64>,
                Option<u64>,
            ) = statement
                .query_row([id], |row| {
                    Ok((
                        row.get(0)?,
                        row.get(1)?,
                        row.get(2)?,
                        row.get(3)?,
                        row.get(4)?,
                    ))
                })
                .optional()?
                .ok_or(Error::UnknownChunk(id))?;
            let length = reader.length(buffer_id)?;
            // The header (if any) and the chunk read into one buffer, kept as the String.
            let header = match (header_start, header_end) {
                (Some(from), Some(to)) => clamp(length, from, to),
                _ => 0..0,
            };
            let body = clamp(length, start, end);
            let mut bytes = vec![0; (header.end - header.start + body.end - body.start) as usize];
            let (head, rest) = bytes.split_at_mut((header.end - header.start) as usize);
            reader.read_exact_at(buffer_id, head, header.start)?;
            reader.read_exact_at(buffer_id, rest, body.start)?;
            texts.push(
                String::from_utf8(bytes)
                    .unwrap_or_else(|err| String::from_utf8_lossy(err.as_bytes()).into_owned()),
            );
        }
        Ok(texts)
    }
}

/// `start..end` clamped to a text's `length`, as [`read_blob`] clamps it.
fn clamp(length: u64, start: u64, end: u64) -> std::ops::Range<u64> {
    let end = end.min(length);
    start.min(end)..end
}

/// A chunk's text (header first) read with `connection` (which may be a transaction).
pub(crate) fn chunk_text_in(connection: &Connection, id: i64) -> Result<String> {
    let (buffer_id, start, end, header): (i64, usize, usize, Option<(usize, usize)>) = connection
        .query_row(
            "SELECT buffer_id, start, end, header_start, header_end FROM chunks WHERE id = ?1",
            [id],
            |row| {
                let header = match (
                    row.get::<_, Option<usize>>(3)?,
                    row.get::<_, Option<usize>>(4)?,
                ) {
                    (Some(start), Some(end)) => Some((start, end)),
                    _ => None,
                };
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, header))
            },
        )
        .optional()?
        .ok_or(Error::UnknownChunk(id))?;
    let mut bytes = match header {
        Some((from, to)) => read_blob(connection, buffer_id, from, to)?,
        None => Vec::new(),
    };
    bytes.extend(read_blob(connection, buffer_id, start, end)?);
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn is_continuation(byte: Option<&u8>) -> bool {
    byte.is_some_and(|&b| b & 0xC0 == 0x80)
}

/// Writes `text` as the buffer's text.
pub(crate) fn write_buffer_text(connection: &Connection, buffer_id: i64, text: &str) -> Result<()> {
    crate::text::write_text(connection, buffer_id, text.as_bytes())
}

/// Bytes `start..end` of a buffer's text (clamped to its length).
pub(crate) fn read_blob(
    connection: &Connection,
    buffer_id: i64,
    start: usize,
    end: usize,
) -> Result<Vec<u8>> {
    crate::text::read_range(connection, buffer_id, start as u64, end as u64)
}

/// The whole text of a buffer (stored text is validated UTF-8 at load).
pub(crate) fn buffer_text(connection: &Connection, buffer_id: i64) -> Result<String> {
    let bytes = read_blob(connection, buffer_id, 0, usize::MAX)?;
    Ok(String::from_utf8(bytes)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned()))
}

/// Lines read within a byte limit ([`Store::read_lines_within`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinesWithin {
    /// Byte offset of the first line, when the store knows it.
    pub start: Option<u64>,
    /// The lines, each with its newline; when `cut`, the last may be cut short.
    pub text: String,
    /// Whether the range goes on past `text`.
    pub cut: bool,
}

/// `bytes` as text; when `cut` (they end where a limit did), without a character the cut
/// split.
pub(crate) fn whole_chars(bytes: &[u8], cut: bool) -> String {
    let valid = match std::str::from_utf8(bytes) {
        Err(err) if cut && err.error_len().is_none() => err.valid_up_to(),
        _ => bytes.len(),
    };
    String::from_utf8_lossy(&bytes[..valid]).into_owned()
}

/// `Err` unless `first..=last` is a range of lines `buffer` has (from 1; an empty buffer has
/// line 1): what every backend's line read checks first.
pub(crate) fn check_line_range(buffer: &BufferInfo, first: u64, last: u64) -> Result<()> {
    if first == 0 || first > last || first > buffer.lines.max(1) {
        return Err(Error::Range(format!(
            "line range {first}:{last} is outside {} ({} lines)",
            buffer.name, buffer.lines
        )));
    }
    Ok(())
}
