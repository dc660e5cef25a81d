//! Embeddings: computing vectors for chunks with an `rlm_embed::Embedder`, storing them once
//! per chunk, and semantic search over them.
//!
//! One store holds vectors of one model. The model id (name + digest of its files) is recorded
//! in `embedding_model`; embedding with another model is refused with [`Error::ModelMismatch`]
//! until the caller asks to reset. Vectors are f32 BLOBs (`rlm_embed::vector_to_bytes`) keyed by
//! chunk id and deleted with their chunk; the vector index is rebuilt in memory per search from
//! the allowed buffers only, so filters apply before ranking.

use std::ops::ControlFlow;

use rlm_embed::{Embedder, ModelId, VectorIndex, vector_from_bytes, vector_to_bytes};
use rusqlite::{OptionalExtension as _, params};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::store::Store;

/// Chunks embedded per SQLite transaction: progress survives an interruption in steps this size.
const COMMIT_EVERY: usize = 1024;

/// Progress of [`Store::embed`].
#[derive(Debug, Clone, Copy, Serialize)]
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

impl Store {
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
                let mut insert = transaction.prepare_cached(
                    "INSERT OR REPLACE INTO embeddings (chunk_id, vector) VALUES (?1, ?2)",
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
        Ok(state)
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
        let (embedded_chunks, chunks) = self.connection.query_row(
            "SELECT (SELECT COUNT(*) FROM embeddings), (SELECT COUNT(*) FROM chunks)",
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
        let Some(stored) = self.embedding_model()? else {
            return Ok(Vec::new());
        };
        stored.ensure_same(embedder.model_id())?;
        let dimension = embedder.dimension();
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
        let query_vector = embedder.embed_one(query)?;
        Ok(index
            .search(&query_vector, limit)?
            .into_iter()
            .map(|hit| (hit.id as i64, hit.score))
            .collect())
    }
}
