//! Embeddings: computing vectors for chunks with an `rlm_embed::Embedder`, storing them once
//! per chunk, and semantic search over them.
//!
//! One store holds vectors of one model. The model id (name + digest of its files) is recorded
//! in `embedding_model`; embedding with another model is refused with [`Error::ModelMismatch`]
//! until the caller asks to reset. Vectors are f32 BLOBs (`rlm_embed::vector_to_bytes`) keyed by
//! chunk id and deleted with their chunk. Searches scan the quantised vector file
//! (`vector_file.rs`), written when `embed` ends and rewritten by the first search after the
//! vectors changed; filters pick the buffers' rows before ranking.

use std::ops::ControlFlow;
use std::sync::Arc;

use rlm_embed::{Embedder, ModelId, VectorIndex, dot_f32, vector_from_bytes, vector_to_bytes};
use rusqlite::{OptionalExtension as _, params};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::store::{LocalStore, try_lock};
use crate::vector_file::{self, VectorFile};

/// Chunks embedded per SQLite transaction: progress survives an interruption in steps this size.
const COMMIT_EVERY: usize = 1024;

/// Progress of [`Store::embed`].
#[derive(Debug, Clone, Copy, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct EmbedProgress {
    /// Chunks embedded so far in this call.
    pub done: u64,
    /// Chunks that needed a vector when the call started.
    pub total: u64,
}

/// Embedding state of a store.
#[derive(Debug, Clone, Serialize)]
pub struct EmbeddingStatus {
    /// The model the stored vectors come from, if any.
    pub model: Option<String>,
    /// Chunks with a vector.
    pub embedded_chunks: u64,
    /// All chunks.
    pub chunks: u64,
}

impl LocalStore {
    /// Computes vectors for every chunk that has none, in batches of `rlm_embed::DEFAULT_BATCH`.
    /// With `reset`, vectors of a different model are dropped first; without it, a different
    /// model is an error. Returning `Break` from `progress` stops after the current batch (what
    /// was committed stays).
    pub fn embed(
        &mut self,
        embedder: &dyn Embedder,
        reset: bool,
        progress: &mut dyn FnMut(EmbedProgress) -> ControlFlow<()>,
    ) -> Result<EmbedProgress> {
        let _lock = self.write_lock()?;
        let model = embedder.model_id();
        match self.embedding_model()? {
            Some(stored) if stored.as_str() != model.as_str() => {
                if !reset {
                    return Err(Error::ModelMismatch {
                        stored: stored.as_str().to_owned(),
                        requested: model.as_str().to_owned(),
                    });
                }
                let transaction = self.connection.transaction()?;
                transaction.execute("DELETE FROM embeddings", [])?;
                transaction.execute("DELETE FROM embedding_model", [])?;
                transaction.commit()?;
            }
            _ => {}
        }
        self.connection.execute(
            "INSERT OR IGNORE INTO embedding_model (id, model_id, dimension) VALUES (1, ?1, ?2)",
            params![model.as_str(), embedder.dimension() as i64],
        )?;
        let pending: Vec<i64> = {
            let mut statement = self.connection.prepare(
                "SELECT c.id FROM chunks c LEFT JOIN embeddings e ON e.chunk_id = c.id
                 WHERE e.chunk_id IS NULL ORDER BY c.id",
            )?;
            statement
                .query_map([], |row| row.get(0))?
                .collect::<rusqlite::Result<_>>()?
        };
        let mut state = EmbedProgress {
            done: 0,
            total: pending.len() as u64,
        };
        for group in pending.chunks(COMMIT_EVERY) {
            let transaction = self.connection.transaction()?;
            for batch in group.chunks(rlm_embed::DEFAULT_BATCH) {
                let texts = batch
                    .iter()
                    .map(|&id| crate::read::chunk_text_in(&transaction, id))
                    .collect::<Result<Vec<String>>>()?;
                let borrowed: Vec<&str> = texts.iter().map(String::as_str).collect();
                let vectors = embedder.embed(&borrowed)?;
                // An upsert, not `INSERT OR REPLACE`: a replace deletes without firing the
                // delete trigger, which would leave `vector_state.vectors` one too high.
                let mut insert = transaction.prepare_cached(
                    "INSERT INTO embeddings (chunk_id, vector) VALUES (?1, ?2)
                     ON CONFLICT (chunk_id) DO UPDATE SET vector = excluded.vector",
                )?;
                for (id, vector) in batch.iter().zip(&vectors) {
                    insert.execute(params![id, vector_to_bytes(vector)])?;
                }
                state.done += batch.len() as u64;
            }
            transaction.commit()?;
            if progress(state).is_break() {
                break;
            }
        }
        // Searches need the file; one that cannot be written is rebuilt by the next search, or
        // that search reads the rows itself.
        if let Err(error) = vector_file::write(&self.dir, &self.connection, embedder.dimension()) {
            tracing::warn!(%error, "the quantised vector file was not written");
        }
        Ok(state)
    }

    /// The chunk options a buffer was loaded with, as stored (JSON).
    pub(crate) fn stored_options(&self, buffer_id: i64) -> Result<String> {
        Ok(self.connection.query_row(
            "SELECT chunk_options FROM buffers WHERE id = ?1",
            [buffer_id],
            |row| row.get(0),
        )?)
    }

    /// The stored vectors (`f32` bytes) of those of `chunk_ids` that have one.
    pub(crate) fn raw_vectors(&self, chunk_ids: &[i64]) -> Result<Vec<(i64, Vec<u8>)>> {
        let mut statement = self
            .connection
            .prepare_cached("SELECT vector FROM embeddings WHERE chunk_id = ?1")?;
        let mut vectors = Vec::new();
        for &id in chunk_ids {
            if let Some(bytes) = statement
                .query_row([id], |row| row.get::<_, Vec<u8>>(0))
                .optional()?
            {
                vectors.push((id, bytes));
            }
        }
        Ok(vectors)
    }

    /// Stores vectors computed elsewhere (`rlm store copy`) as model `model`'s, in one
    /// transaction, and writes the vector file again.
    pub(crate) fn put_vectors(
        &mut self,
        model: &str,
        dimension: usize,
        vectors: &[(i64, Vec<u8>)],
    ) -> Result<()> {
        let _lock = self.write_lock()?;
        let transaction = self.connection.transaction()?;
        transaction.execute(
            "INSERT OR IGNORE INTO embedding_model (id, model_id, dimension) VALUES (1, ?1, ?2)",
            params![model, dimension as i64],
        )?;
        {
            let mut insert = transaction.prepare_cached(
                "INSERT INTO embeddings (chunk_id, vector) VALUES (?1, ?2)
                 ON CONFLICT (chunk_id) DO UPDATE SET vector = excluded.vector",
            )?;
            for (id, bytes) in vectors {
                insert.execute(params![id, bytes])?;
            }
        }
        transaction.commit()?;
        if let Err(error) = vector_file::write(&self.dir, &self.connection, dimension) {
            tracing::warn!(%error, "the quantised vector file was not written");
        }
        Ok(())
    }

    /// The model the stored vectors come from, if any vectors were ever computed.
    pub fn embedding_model(&self) -> Result<Option<ModelId>> {
        Ok(self
            .connection
            .query_row(
                "SELECT model_id FROM embedding_model WHERE id = 1",
                [],
                |row| row.get::<_, String>(0),
            )
            .optional()?
            .map(ModelId::from_stored))
    }

    /// Which model, and how many chunks have vectors.
    pub fn embedding_status(&self) -> Result<EmbeddingStatus> {
        // The vector count is kept by triggers: counting a million embedding rows reads every
        // page of their table.
        let (embedded_chunks, chunks) = self.connection.query_row(
            "SELECT (SELECT vectors FROM vector_state WHERE id = 1), (SELECT COUNT(*) FROM chunks)",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?;
        Ok(EmbeddingStatus {
            model: self.embedding_model()?.map(|id| id.as_str().to_owned()),
            embedded_chunks,
            chunks,
        })
    }

    /// Top `limit` chunks of `buffers` by cosine similarity to `query`, best first.
    pub(crate) fn semantic_search(
        &self,
        embedder: &dyn Embedder,
        query: &str,
        buffers: Option<&[i64]>,
        limit: usize,
    ) -> Result<Vec<(i64, f32)>> {
        let (hits, ()) =
            self.semantic_search_beside(embedder, query, buffers, limit, |_| Ok(()))?;
        Ok(hits)
    }

    /// [`semantic_search`](Self::semantic_search), running `beside` (a hybrid search's BM25
    /// half) on this thread while other threads start scanning the vector file; this thread
    /// then scans beside them.
    pub(crate) fn semantic_search_beside<T>(
        &self,
        embedder: &dyn Embedder,
        query: &str,
        buffers: Option<&[i64]>,
        limit: usize,
        beside: impl FnOnce(&Self) -> Result<T>,
    ) -> Result<(Vec<(i64, f32)>, T)> {
        let Some(stored) = self.embedding_model()? else {
            return Ok((Vec::new(), beside(self)?));
        };
        stored.ensure_same(embedder.model_id())?;
        let dimension = embedder.dimension();
        let query_vector = embedder.embed_one(query)?;
        let Some(file) = self.current_vector_file(dimension)? else {
            let other = beside(self)?;
            let hits = self.semantic_search_in_rows(stored, &query_vector, buffers, limit)?;
            return Ok((hits, other));
        };
        let (candidates, other) =
            Arc::new(file).candidates_beside(&query_vector, buffers, limit, || beside(self))?;
        let mut statement = self
            .connection
            .prepare_cached("SELECT vector FROM embeddings WHERE chunk_id = ?1")?;
        let mut hits = Vec::new();
        for id in candidates {
            // A chunk deleted since the file was opened is no longer a result.
            let Some(bytes) = statement
                .query_row([id], |row| row.get::<_, Vec<u8>>(0))
                .optional()?
            else {
                continue;
            };
            let vector = vector_from_bytes(&bytes, dimension)?;
            hits.push((id, dot_f32(&query_vector, &vector)));
        }
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits.truncate(limit);
        Ok((hits, other))
    }

    /// The generation of the stored vectors (see `vector_file.rs`).
    fn vector_generation(&self) -> Result<i64> {
        Ok(self.connection.query_row(
            "SELECT generation FROM vector_state WHERE id = 1",
            [],
            |row| row.get(0),
        )?)
    }

    /// The vector file of the current vectors: the one on disk, or a new one written now when
    /// that is stale or missing and no writer is running (the lock keeps the vectors still
    /// while it is written). `None` when it cannot be had; the caller then reads the rows.
    fn current_vector_file(&self, dimension: usize) -> Result<Option<VectorFile>> {
        if let Some(file) = VectorFile::open(&self.dir, self.vector_generation()?, dimension) {
            return Ok(Some(file));
        }
        // A directory we cannot lock (read-only) just means no file.
        let Ok(Some(_lock)) = try_lock(&self.dir) else {
            return Ok(None);
        };
        if let Err(error) = vector_file::write(&self.dir, &self.connection, dimension) {
            tracing::debug!(%error, "the quantised vector file was not written");
            return Ok(None);
        }
        Ok(VectorFile::open(
            &self.dir,
            self.vector_generation()?,
            dimension,
        ))
    }

    /// The search without a vector file: every allowed embedding row decoded and quantised.
    fn semantic_search_in_rows(
        &self,
        stored: ModelId,
        query_vector: &[f32],
        buffers: Option<&[i64]>,
        limit: usize,
    ) -> Result<Vec<(i64, f32)>> {
        let dimension = query_vector.len();
        let mut index = VectorIndex::new(stored, dimension);
        let mut add_rows = |rows: &mut rusqlite::Rows<'_>| -> Result<()> {
            while let Some(row) = rows.next()? {
                let id: i64 = row.get(0)?;
                let bytes: Vec<u8> = row.get(1)?;
                index.insert(id as u64, &vector_from_bytes(&bytes, dimension)?)?;
            }
            Ok(())
        };
        match buffers {
            None => {
                let mut statement = self
                    .connection
                    .prepare_cached("SELECT chunk_id, vector FROM embeddings")?;
                add_rows(&mut statement.query([])?)?;
            }
            Some(buffers) => {
                let mut statement = self.connection.prepare_cached(
                    "SELECT e.chunk_id, e.vector FROM embeddings e JOIN chunks c ON c.id = e.chunk_id
                     WHERE c.buffer_id = ?1",
                )?;
                for buffer in buffers {
                    add_rows(&mut statement.query([buffer])?)?;
                }
            }
        }
        Ok(index
            .search(query_vector, limit)?
            .into_iter()
            .map(|hit| (hit.id as i64, hit.score))
            .collect())
    }
}
