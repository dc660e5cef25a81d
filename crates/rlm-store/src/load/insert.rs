//! Writing a buffer's rows: the `buffers` row, its text, its chunks; finding and replacing the
//! buffer a load supersedes.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rlm_context::chunk::{self, Chunk, ChunkOptions, Strategy};
use rusqlite::{OptionalExtension as _, Transaction, params};

use super::LoadedBuffer;
use super::index_queue::{queue_add, queue_delete};
use crate::error::Result;
use crate::index::{Bm25Writer, IndexedBuffer};

/// A buffer about to be inserted.
pub(super) struct NewBuffer<'a> {
    pub name: &'a str,
    /// Absolute path of the file it was read from, if any.
    pub path: Option<&'a str>,
    /// Hex SHA-256 of its text.
    pub sha256: &'a str,
}

/// The stored buffer of a name, as far as a load needs to know it.
pub(super) struct StoredBuffer {
    pub id: i64,
    pub sha256: String,
    /// The chunk options it was loaded with, as JSON.
    pub options_key: String,
}

impl<'a> NewBuffer<'a> {
    /// The buffer as the index records it, once its row has `id`.
    pub fn indexed(&self, id: i64) -> IndexedBuffer<'a> {
        IndexedBuffer {
            id,
            name: self.name,
            path: self.path,
        }
    }
}

impl StoredBuffer {
    /// The buffer stored under `name`, if any.
    pub fn find(transaction: &Transaction<'_>, name: &str) -> Result<Option<Self>> {
        Ok(transaction
            .query_row(
                "SELECT id, sha256, chunk_options FROM buffers WHERE name = ?1",
                [name],
                |row| {
                    Ok(Self {
                        id: row.get(0)?,
                        sha256: row.get(1)?,
                        options_key: row.get(2)?,
                    })
                },
            )
            .optional()?)
    }

    /// Deletes the buffer (its text and chunks go with it) and its index documents.
    pub fn remove(
        &self,
        transaction: &Transaction<'_>,
        writer: Option<&Bm25Writer<'_>>,
    ) -> Result<()> {
        transaction.execute("DELETE FROM buffers WHERE id = ?1", [self.id])?;
        queue_delete(transaction, writer, self.id)
    }
}

/// Removes every buffer loaded from a file under one of `directories` that no longer exists;
/// returns their names.
pub(super) fn remove_missing(
    transaction: &Transaction<'_>,
    writer: Option<&Bm25Writer<'_>>,
    directories: &[PathBuf],
) -> Result<Vec<String>> {
    if directories.is_empty() {
        return Ok(Vec::new());
    }
    let directories: Vec<PathBuf> = directories
        .iter()
        .filter_map(|directory| std::path::absolute(directory).ok())
        .collect();
    let files: Vec<(i64, String, String)> = {
        let mut statement = transaction
            .prepare("SELECT id, name, path FROM buffers WHERE path IS NOT NULL ORDER BY name")?;
        statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?
    };
    let mut removed = Vec::new();
    for (id, name, path) in files {
        let path = Path::new(&path);
        // Only a file known to be gone: an unreadable directory is not a deletion.
        let gone = directories
            .iter()
            .any(|directory| path.starts_with(directory))
            && matches!(path.try_exists(), Ok(false));
        if gone {
            transaction.execute("DELETE FROM buffers WHERE id = ?1", [id])?;
            queue_delete(transaction, writer, id)?;
            removed.push(name);
        }
    }
    Ok(removed)
}

/// Stores a buffer read whole: chunks `text`, writes the rows and feeds the index.
pub(super) fn insert_whole(
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
    let mut rows = ChunkRows::new(transaction, writer, buffer.indexed(id))?;
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
pub(super) fn insert_buffer_row(
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
pub(super) struct ChunkRows<'a> {
    statement: rusqlite::CachedStatement<'a>,
    transaction: &'a Transaction<'a>,
    writer: Option<&'a Bm25Writer<'a>>,
    buffer: IndexedBuffer<'a>,
    /// Chunks stored so far.
    pub count: u64,
}

impl<'a> ChunkRows<'a> {
    pub fn new(
        transaction: &'a Transaction<'a>,
        writer: Option<&'a Bm25Writer<'a>>,
        buffer: IndexedBuffer<'a>,
    ) -> Result<Self> {
        let statement = transaction.prepare_cached(
            "INSERT INTO chunks (buffer_id, seq, start, end, start_line, end_line, header_start, header_end)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        Ok(Self {
            statement,
            transaction,
            writer,
            buffer,
            count: 0,
        })
    }

    /// Stores `chunk`, whose text (without header) is `body`.
    pub fn add(&mut self, chunk: Chunk, body: &str) -> Result<()> {
        self.statement.execute(params![
            self.buffer.id,
            self.count as i64,
            chunk.range.start as i64,
            chunk.range.end as i64,
            chunk.start_line as i64,
            chunk.end_line as i64,
            chunk.header.as_ref().map(|h| h.start as i64),
            chunk.header.as_ref().map(|h| h.end as i64),
        ])?;
        if let Some(writer) = self.writer {
            writer.add_chunk(self.transaction.last_insert_rowid(), &self.buffer, body)?;
        }
        self.count += 1;
        Ok(())
    }
}

/// Queues the buffer's index work and describes what was stored.
pub(super) fn finish_buffer(
    transaction: &Transaction<'_>,
    buffer: NewBuffer<'_>,
    id: i64,
    bytes: u64,
    chunks: u64,
    strategy: Strategy,
) -> Result<LoadedBuffer> {
    queue_add(transaction, id)?;
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
