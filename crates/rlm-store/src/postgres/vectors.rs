//! Vectors in PostgreSQL: the same `f32` bytes as a local store keeps (the exact scores, and
//! what `rlm store copy` moves), plus, with pgvector, a `vector` column under an HNSW index
//! (inner product: the models' vectors are normalised, so it is their cosine).
//!
//! With pgvector a semantic search asks the index for candidates (iterative scans, so a
//! filter still fills the list) and scores them exactly; without it, it reads every vector of
//! the candidate buffers and scores them all, as a local store without its vector file does.

use std::ops::ControlFlow;

use rlm_embed::{Embedder, ModelId, dot_f32, vector_from_bytes, vector_to_bytes};

use super::{PostgresStore, STORE_LOCK};
use crate::embed::{EmbedProgress, EmbeddingStatus};
use crate::error::{Error, Result};

/// Chunks embedded per transaction: progress survives an interruption in steps this size.
const COMMIT_EVERY: usize = 1024;

/// How many candidates the HNSW index is asked for, at least.
const CANDIDATES: usize = 100;

impl PostgresStore {
    pub(crate) fn embedding_model(&self) -> Result<Option<ModelId>> {
        let rows = self.rows(
            "read the embedding model",
            "SELECT model_id FROM embedding_model WHERE id = 1",
            &[],
        )?;
        Ok(rows
            .first()
            .map(|row| ModelId::from_stored(row.get::<_, String>(0))))
    }

    pub(crate) fn embedding_status(&self) -> Result<EmbeddingStatus> {
        let rows = self.rows(
            "count the vectors",
            "SELECT (SELECT count(*) FROM embeddings),
                    (SELECT coalesce(sum(chunk_count), 0)::bigint FROM buffers)",
            &[],
        )?;
        let (embedded, chunks): (i64, i64) =
            rows.first().map_or((0, 0), |row| (row.get(0), row.get(1)));
        Ok(EmbeddingStatus {
            model: self.embedding_model()?.map(|id| id.as_str().to_owned()),
            embedded_chunks: embedded as u64,
            chunks: chunks as u64,
        })
    }

    pub(crate) fn embed(
        &mut self,
        embedder: &dyn Embedder,
        reset: bool,
        progress: &mut dyn FnMut(EmbedProgress) -> ControlFlow<()>,
    ) -> Result<EmbedProgress> {
        let model = embedder.model_id();
        let dimension = embedder.dimension() as i32;
        match self.embedding_model()? {
            Some(stored) if stored.as_str() != model.as_str() => {
                if !reset {
                    return Err(Error::ModelMismatch {
                        stored: stored.as_str().to_owned(),
                        requested: model.as_str().to_owned(),
                    });
                }
                self.reset_vectors()?;
            }
            _ => {}
        }
        self.set_model(model.as_str(), dimension)?;
        let pending: Vec<i64> = self
            .rows(
                "list the chunks without vectors",
                "SELECT c.id FROM chunks c LEFT JOIN embeddings e ON e.chunk_id = c.id
                 WHERE e.chunk_id IS NULL ORDER BY c.id",
                &[],
            )?
            .iter()
            .map(|row| row.get(0))
            .collect();
        let mut state = EmbedProgress {
            done: 0,
            total: pending.len() as u64,
        };
        let insert = if self.pgvector {
            "INSERT INTO embeddings (chunk_id, vector, embedding)
             SELECT id, bytes, text::vector FROM unnest($1::bigint[], $2::bytea[], $3::text[])
                 AS v(id, bytes, text)
             ON CONFLICT (chunk_id) DO UPDATE
                 SET vector = excluded.vector, embedding = excluded.embedding"
        } else {
            "INSERT INTO embeddings (chunk_id, vector)
             SELECT id, bytes FROM unnest($1::bigint[], $2::bytea[]) AS v(id, bytes)
             ON CONFLICT (chunk_id) DO UPDATE SET vector = excluded.vector"
        };
        for group in pending.chunks(COMMIT_EVERY) {
            let texts = self.chunk_texts(group)?;
            let mut ids = Vec::with_capacity(group.len());
            let mut bytes = Vec::with_capacity(group.len());
            let mut literals = Vec::with_capacity(group.len());
            for (batch, batch_texts) in group
                .chunks(rlm_embed::DEFAULT_BATCH)
                .zip(texts.chunks(rlm_embed::DEFAULT_BATCH))
            {
                let borrowed: Vec<&str> = batch_texts.iter().map(String::as_str).collect();
                let vectors = embedder.embed(&borrowed)?;
                for (&id, vector) in batch.iter().zip(&vectors) {
                    ids.push(id);
                    bytes.push(vector_to_bytes(vector));
                    if self.pgvector {
                        literals.push(vector_literal(vector));
                    }
                }
            }
            let failed = self.failed("store vectors");
            let mut client = self.client()?;
            let written = if self.pgvector {
                client.execute(insert, &[&ids, &bytes, &literals])
            } else {
                client.execute(insert, &[&ids, &bytes])
            };
            written.map_err(failed)?;
            drop(client);
            state.done += group.len() as u64;
            if progress(state).is_break() {
                break;
            }
        }
        if self.pgvector {
            self.vector_index()?;
        }
        Ok(state)
    }

    /// The chunk options a buffer was loaded with, as stored (JSON).
    pub(crate) fn stored_options(&self, buffer_id: i64) -> Result<String> {
        let rows = self.rows(
            "read a buffer's chunk options",
            "SELECT chunk_options FROM buffers WHERE id = $1",
            &[&buffer_id],
        )?;
        rows.first()
            .map(|row| row.get(0))
            .ok_or_else(|| Error::UnknownBuffer(buffer_id.to_string()))
    }

    /// The stored vectors (`f32` bytes) of those of `chunk_ids` that have one.
    pub(crate) fn raw_vectors(&self, chunk_ids: &[i64]) -> Result<Vec<(i64, Vec<u8>)>> {
        let rows = self.rows(
            "read vectors",
            "SELECT chunk_id, vector FROM embeddings WHERE chunk_id = ANY($1) ORDER BY chunk_id",
            &[&chunk_ids],
        )?;
        Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
    }

    /// Stores vectors computed elsewhere (`rlm store copy`) as model `model`'s.
    pub(crate) fn put_vectors(
        &mut self,
        model: &str,
        dimension: usize,
        vectors: &[(i64, Vec<u8>)],
    ) -> Result<()> {
        self.set_model(model, dimension as i32)?;
        let ids: Vec<i64> = vectors.iter().map(|(id, _)| *id).collect();
        let bytes: Vec<&[u8]> = vectors.iter().map(|(_, bytes)| bytes.as_slice()).collect();
        let failed = self.failed("store vectors");
        let mut client = self.client()?;
        let written = if self.pgvector {
            let literals = vectors
                .iter()
                .map(|(_, bytes)| vector_from_bytes(bytes, dimension).map(|v| vector_literal(&v)))
                .collect::<rlm_embed::Result<Vec<String>>>()?;
            client.execute(
                "INSERT INTO embeddings (chunk_id, vector, embedding)
                 SELECT id, bytes, text::vector FROM unnest($1::bigint[], $2::bytea[], $3::text[])
                     AS v(id, bytes, text)
                 ON CONFLICT (chunk_id) DO UPDATE
                     SET vector = excluded.vector, embedding = excluded.embedding",
                &[&ids, &bytes, &literals],
            )
        } else {
            client.execute(
                "INSERT INTO embeddings (chunk_id, vector)
                 SELECT id, bytes FROM unnest($1::bigint[], $2::bytea[]) AS v(id, bytes)
                 ON CONFLICT (chunk_id) DO UPDATE SET vector = excluded.vector",
                &[&ids, &bytes],
            )
        };
        written.map_err(failed)?;
        drop(client);
        if self.pgvector {
            self.vector_index()?;
        }
        Ok(())
    }

    /// Drops every vector and the model, under the store's exclusive lock.
    fn reset_vectors(&self) -> Result<()> {
        let schema = self.location.schema.clone();
        let failed = self.failed("drop the old vectors");
        let mut client = self.client()?;
        let result = (|| {
            let mut transaction = client.transaction()?;
            transaction.execute(
                "SELECT pg_advisory_xact_lock($1, hashtext($2))",
                &[&STORE_LOCK, &schema],
            )?;
            transaction.batch_execute(
                "DELETE FROM embeddings; DELETE FROM embedding_model;
                 ALTER TABLE embeddings DROP COLUMN IF EXISTS embedding",
            )?;
            transaction.commit()
        })();
        result.map_err(failed)
    }

    /// Records the model and, with pgvector, gives the vectors their column of its dimension.
    fn set_model(&self, model: &str, dimension: i32) -> Result<()> {
        let schema = self.location.schema.clone();
        let pgvector = self.pgvector;
        let failed = self.failed("record the embedding model");
        let mut client = self.client()?;
        let result = (|| {
            let mut transaction = client.transaction()?;
            transaction.execute(
                "SELECT pg_advisory_xact_lock($1, hashtext($2))",
                &[&STORE_LOCK, &schema],
            )?;
            transaction.execute(
                "INSERT INTO embedding_model (id, model_id, dimension) VALUES (1, $1, $2)
                 ON CONFLICT (id) DO NOTHING",
                &[&model, &dimension],
            )?;
            if pgvector {
                transaction.batch_execute(&format!(
                    "ALTER TABLE embeddings ADD COLUMN IF NOT EXISTS embedding vector({dimension})"
                ))?;
            }
            transaction.commit()
        })();
        result.map_err(failed)
    }

    /// Builds the HNSW index once the vectors are in (one build is much quicker than adding
    /// each vector to it); later inserts add to it.
    fn vector_index(&self) -> Result<()> {
        let failed = self.failed("index the vectors");
        self.client()?
            .batch_execute(
                "CREATE INDEX IF NOT EXISTS embeddings_hnsw ON embeddings
                 USING hnsw (embedding vector_ip_ops)",
            )
            .map_err(failed)
    }

    /// Top `limit` chunks of `buffers` (all when `None`) by cosine similarity to `query`.
    pub(super) fn semantic(
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
        if limit == 0 || buffers.is_some_and(<[i64]>::is_empty) {
            return Ok(Vec::new());
        }
        let dimension = embedder.dimension();
        let query_vector = embedder.embed_one(query)?;
        let empty: &[i64] = &[];
        let filter = buffers.is_some();
        let ids = buffers.unwrap_or(empty);
        let rows = if self.pgvector {
            let candidates = limit.max(CANDIDATES);
            let sql = format!(
                "SELECT e.chunk_id, e.vector FROM embeddings e {}
                 ORDER BY e.embedding <#> $1::text::vector LIMIT $2",
                if filter {
                    "JOIN chunks c ON c.id = e.chunk_id WHERE c.buffer_id = ANY($3)"
                } else {
                    ""
                }
            );
            let failed = self.failed("search the vectors");
            let mut client = self.client()?;
            let result = (|| {
                let mut transaction = client.transaction()?;
                // Iterative scans keep a filtered search from coming back short.
                transaction.batch_execute(&format!(
                    "SET LOCAL hnsw.iterative_scan = relaxed_order;
                     SET LOCAL hnsw.ef_search = {}",
                    candidates.clamp(40, 1000)
                ))?;
                let literal = vector_literal(&query_vector);
                let count = candidates as i64;
                let rows = if filter {
                    transaction.query(&sql, &[&literal, &count, &ids])?
                } else {
                    transaction.query(&sql, &[&literal, &count])?
                };
                transaction.commit()?;
                Ok(rows)
            })();
            result.map_err(failed)?
        } else if filter {
            self.rows(
                "read the vectors",
                "SELECT e.chunk_id, e.vector FROM embeddings e JOIN chunks c ON c.id = e.chunk_id
                 WHERE c.buffer_id = ANY($1)",
                &[&ids],
            )?
        } else {
            self.rows(
                "read the vectors",
                "SELECT chunk_id, vector FROM embeddings",
                &[],
            )?
        };
        let mut hits = Vec::with_capacity(rows.len());
        for row in &rows {
            let vector = vector_from_bytes(row.get::<_, &[u8]>(1), dimension)?;
            hits.push((row.get::<_, i64>(0), dot_f32(&query_vector, &vector)));
        }
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits.truncate(limit);
        Ok(hits)
    }
}

/// A vector as pgvector reads it: `[0.1,-0.2,…]`, each value printed so it reads back exactly.
fn vector_literal(vector: &[f32]) -> String {
    let mut text = String::with_capacity(vector.len() * 12 + 2);
    text.push('[');
    for (index, value) in vector.iter().enumerate() {
        if index > 0 {
            text.push(',');
        }
        text.push_str(&value.to_string());
    }
    text.push(']');
    text
}
