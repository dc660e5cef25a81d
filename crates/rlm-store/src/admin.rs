//! Deleting buffers and reporting the store's state.

use std::path::Path;

use serde::Serialize;

use crate::error::Result;
use crate::read::BufferInfo;
use crate::store::{IndexHealth, LocalStore};

/// Sizes, counts and index state of a store.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct StoreStatus {
    /// The store directory.
    pub dir: String,
    /// Schema version (`PRAGMA user_version`).
    pub schema_version: i64,
    /// Number of buffers.
    pub buffers: u64,
    /// Number of chunks in SQLite.
    pub chunks: u64,
    /// Total text bytes held (each byte once).
    pub text_bytes: u64,
    /// Bytes on disk of the SQLite files (database, WAL, shared memory).
    pub database_bytes: u64,
    /// Bytes on disk of the BM25 index.
    pub index_bytes: u64,
    /// Chunks searchable in the BM25 index.
    pub indexed_chunks: u64,
    /// Buffers whose index update is still queued (non-zero only during or after an
    /// interrupted write; the next writer applies them).
    pub pending_index_work: u64,
    /// Whether the index holds exactly the stored chunks.
    pub index_health: IndexHealth,
    /// Chunks with an embedding vector.
    pub embedded_chunks: u64,
    /// Model id of the stored vectors, if any.
    pub embedding_model: Option<String>,
}

impl LocalStore {
    /// Deletes buffers in one transaction; returns what was deleted. Each pattern is what
    /// [`Store::select_buffers`] takes: a name, id, unique path suffix, glob or directory.
    pub fn delete(&mut self, patterns: &[String]) -> Result<Vec<BufferInfo>> {
        let _lock = self.write_lock()?;
        let mut buffers = Vec::new();
        for pattern in patterns {
            buffers.extend(self.select_buffers(pattern)?);
        }
        buffers.sort_by(|a, b| a.name.cmp(&b.name));
        buffers.dedup_by_key(|buffer| buffer.id);
        let transaction = self.connection.transaction()?;
        for buffer in &buffers {
            transaction.execute("DELETE FROM buffers WHERE id = ?1", [buffer.id])?;
            transaction.execute(
                "INSERT INTO index_queue (buffer_id, action) VALUES (?1, 'delete')",
                [buffer.id],
            )?;
        }
        transaction.commit()?;
        self.sync_index(&mut |_| {})?;
        Ok(buffers)
    }

    /// Sizes, counts and index state.
    pub fn status(&self) -> Result<StoreStatus> {
        let (buffers, text_bytes): (u64, u64) = self.connection.query_row(
            "SELECT COUNT(*), COALESCE(SUM(size), 0) FROM buffers",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?;
        let chunks = self
            .connection
            .query_row("SELECT COUNT(*) FROM chunks", [], |row| row.get(0))?;
        let schema_version = self
            .connection
            .pragma_query_value(None, "user_version", |row| row.get(0))?;
        let database_bytes = ["store.sqlite", "store.sqlite-wal", "store.sqlite-shm"]
            .iter()
            .map(|name| file_size(&self.dir.join(name)))
            .sum();
        let embeddings = self.embedding_status()?;
        Ok(StoreStatus {
            dir: self.dir.to_string_lossy().into_owned(),
            schema_version,
            buffers,
            chunks,
            text_bytes,
            database_bytes,
            index_bytes: directory_size(&self.dir.join("bm25")),
            indexed_chunks: self.index.document_count()?,
            pending_index_work: self.pending_index_work()?,
            index_health: self.index_health()?,
            embedded_chunks: embeddings.embedded_chunks,
            embedding_model: embeddings.model,
        })
    }
}

fn file_size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |metadata| metadata.len())
}

fn directory_size(path: &Path) -> u64 {
    std::fs::read_dir(path).map_or(0, |entries| {
        entries
            .flatten()
            .map(|entry| match entry.file_type() {
                Ok(kind) if kind.is_dir() => directory_size(&entry.path()),
                Ok(_) => file_size(&entry.path()),
                Err(_) => 0,
            })
            .sum()
    })
}
