//! Search in PostgreSQL: BM25 scored by the server over rlm's own terms, semantic search by
//! pgvector (or an exact scan), fused by reciprocal rank as the local store fuses them.
//!
//! # BM25 as the local store scores it
//! A local store's scores are tantivy's: for each query term, `idf × (k1 + 1)` times
//! `tf / (tf + k1 × (1 − b + b × dl / avgdl))`, in single precision, with `dl` the chunk's
//! token count in tantivy's one-byte code ([`FieldNormReader`]) and the terms summed in query
//! order. Here the statistics (chunks, tokens, each term's chunk count) come from the database
//! in one statement, the per-term weights and the 256 length factors are computed from them
//! exactly as tantivy computes them, and the server multiplies, divides and sums in `real`
//! (IEEE single precision, as Rust's `f32`), in query order; ties go by chunk order. So the
//! same files give the same scores (and ranking) in both backends, until a local index holds
//! deleted documents that a merge has not yet purged (tantivy counts those too).

use rlm_embed::Embedder;
use tantivy::fieldnorm::FieldNormReader;

use super::PostgresStore;
use crate::error::Result;
use crate::search::{
    SearchHit, SearchMode, SearchOutcome, SearchRequest, effective_mode, reciprocal_rank_fusion,
};
use crate::snippet::{QueryTerms, snippet};
use crate::tokenizer::{IndexFormat, holds_any, query_plan};

/// tantivy's BM25 parameters.
const K1: f32 = 1.2;
const B: f32 = 0.75;

impl PostgresStore {
    pub(crate) fn search_with(
        &self,
        request: &SearchRequest,
        embedder: Option<&dyn Embedder>,
    ) -> Result<SearchOutcome> {
        let candidates = self.candidate_buffers(&request.buffers, request.path_glob.as_deref())?;
        let (mode, mut notice) = if request.mode == SearchMode::Bm25 {
            (SearchMode::Bm25, None)
        } else {
            effective_mode(request.mode, &self.embedding_status()?, embedder)
        };
        if mode != SearchMode::Bm25 && !self.pgvector && notice.is_none() {
            notice = Some(
                "pgvector is not installed in this database; semantic search scans every \
                 vector (exact, slower on many chunks)"
                    .to_owned(),
            );
        }
        let ids = candidates.as_deref();
        let ranked: Vec<(i64, f64)> = match embedder.filter(|_| mode != SearchMode::Bm25) {
            None => widen(self.bm25(&request.query, ids, request.limit)?),
            Some(embedder) if mode == SearchMode::Semantic => {
                widen(self.semantic(embedder, &request.query, ids, request.limit)?)
            }
            Some(embedder) => {
                let depth = request.limit.saturating_mul(4).max(50);
                let lexical = self.bm25(&request.query, ids, depth)?;
                let semantic = self.semantic(embedder, &request.query, ids, depth)?;
                let lists =
                    [lexical, semantic].map(|list| list.into_iter().map(|(id, _)| id).collect());
                let mut fused = reciprocal_rank_fusion(&lists, request.rrf_k);
                fused.truncate(request.limit);
                fused
            }
        };
        let hits = self.hits(&request.query, ranked)?;
        Ok(SearchOutcome { hits, mode, notice })
    }

    /// The ranked chunks as hits, with snippets weighted by the terms' rarity.
    fn hits(&self, query: &str, ranked: Vec<(i64, f64)>) -> Result<Vec<SearchHit>> {
        let texts = QueryTerms::texts(query);
        let (documents, frequencies) = self.statistics(&texts)?;
        let weights: Vec<f64> = frequencies
            .iter()
            .map(|&frequency| {
                let (documents, frequency) = (documents as f64, frequency as f64);
                (1.0 + (documents - frequency + 0.5) / (frequency + 0.5)).ln()
            })
            .collect();
        let terms = QueryTerms::new(query, |term| {
            texts
                .iter()
                .position(|text| text == term)
                .map_or(1.0, |index| weights[index])
        });
        let ids: Vec<i64> = ranked.iter().map(|(id, _)| *id).collect();
        let bodies = self.chunk_texts(&ids)?;
        let mut hits = Vec::with_capacity(ranked.len());
        for ((chunk_id, score), text) in ranked.into_iter().zip(bodies) {
            let Ok(chunk) = self.chunk(chunk_id) else {
                continue;
            };
            let (snippet, highlights) = snippet(&text, &terms);
            hits.push(SearchHit {
                chunk_id,
                buffer: chunk.buffer,
                start_line: chunk.start_line,
                end_line: chunk.end_line,
                score,
                snippet,
                highlights,
            });
        }
        Ok(hits)
    }

    /// Chunks, and the number of chunks holding each of `terms`.
    fn statistics(&self, terms: &[String]) -> Result<(u64, Vec<u64>)> {
        let rows = self.rows(
            "read the BM25 statistics",
            "SELECT (SELECT coalesce(sum(documents), 0)::bigint FROM bm25_totals),
                    (SELECT coalesce(sum(tokens), 0)::bigint FROM bm25_totals),
                    array(SELECT (SELECT coalesce(sum(p.documents), 0)::bigint
                                  FROM postings p WHERE p.term = t.term)
                          FROM unnest($1::text[]) WITH ORDINALITY AS t(term, i) ORDER BY t.i)",
            &[&terms],
        )?;
        let Some(row) = rows.first() else {
            return Ok((0, vec![0; terms.len()]));
        };
        let frequencies: Vec<i64> = row.get(2);
        Ok((
            row.get::<_, i64>(0).max(0) as u64,
            frequencies.into_iter().map(|f| f.max(0) as u64).collect(),
        ))
    }

    /// Top `limit` chunks by BM25 among `buffers` (all when `None`), best first; when the
    /// query asks for bucket terms, only chunks whose text holds one of its terms (checked
    /// here, as the local store checks them), asking deeper until `limit` are found.
    pub(super) fn bm25(
        &self,
        query: &str,
        buffers: Option<&[i64]>,
        limit: usize,
    ) -> Result<Vec<(i64, f32)>> {
        let plan = query_plan(query, IndexFormat::UniqueHashed);
        if plan.terms.is_empty() || limit == 0 || buffers.is_some_and(<[i64]>::is_empty) {
            return Ok(Vec::new());
        }
        let rows = self.rows(
            "read the BM25 statistics",
            "SELECT (SELECT coalesce(sum(documents), 0)::bigint FROM bm25_totals),
                    (SELECT coalesce(sum(tokens), 0)::bigint FROM bm25_totals),
                    array(SELECT (SELECT coalesce(sum(p.documents), 0)::bigint
                                  FROM postings p WHERE p.term = t.term)
                          FROM unnest($1::text[]) WITH ORDINALITY AS t(term, i) ORDER BY t.i)",
            &[&plan.terms],
        )?;
        let Some(row) = rows.first() else {
            return Ok(Vec::new());
        };
        let (documents, tokens): (i64, i64) = (row.get(0), row.get(1));
        let frequencies: Vec<i64> = row.get(2);
        if documents <= 0 {
            return Ok(Vec::new());
        }
        let average = tokens as f32 / documents as f32;
        let weights: Vec<f32> = frequencies
            .iter()
            .map(|&frequency| {
                let frequency = frequency.clamp(0, documents) as u64;
                idf(frequency, documents as u64) * (1.0 + K1)
            })
            .collect();
        let lengths: Vec<f32> = (0..=255u8)
            .map(|id| K1 * (1.0 - B + B * FieldNormReader::id_to_fieldnorm(id) as f32 / average))
            .collect();
        let mut checked: std::collections::HashMap<i64, bool> = std::collections::HashMap::new();
        let mut fetch = limit;
        loop {
            let mut hits = self.bm25_top(&plan.terms, &weights, &lengths, buffers, fetch)?;
            let exhausted = hits.len() < fetch;
            if let Some(literal) = &plan.literal {
                let unchecked: Vec<i64> = hits
                    .iter()
                    .map(|&(id, _)| id)
                    .filter(|id| !checked.contains_key(id))
                    .collect();
                if !unchecked.is_empty() {
                    let texts = self.chunk_texts(&unchecked)?;
                    for (id, text) in unchecked.into_iter().zip(texts) {
                        checked.insert(id, holds_any(&text, literal));
                    }
                }
                hits.retain(|(id, _)| checked.get(id).copied().unwrap_or(false));
            }
            if exhausted || hits.len() >= limit {
                hits.truncate(limit);
                return Ok(hits);
            }
            fetch = fetch.saturating_mul(2);
        }
    }

    /// The best `limit` chunks for `terms` with their weights, scored by the server.
    fn bm25_top(
        &self,
        terms: &[String],
        weights: &[f32],
        lengths: &[f32],
        buffers: Option<&[i64]>,
        limit: usize,
    ) -> Result<Vec<(i64, f32)>> {
        let filter = if buffers.is_some() {
            "AND p.buffer_id = ANY($5)"
        } else {
            ""
        };
        // One sum a term (a chunk holds a term once, so each is that term's score exactly),
        // added in query order; a term the chunk lacks adds 0, which changes nothing. Hash
        // aggregation, where `sum(… ORDER BY term)` had the server sort every posting.
        let score = (1..=terms.len())
            .map(|index| format!("coalesce(sum(s.score) FILTER (WHERE s.i = {index}), 0::real)"))
            .collect::<Vec<_>>()
            .join(" + ");
        let sql = format!(
            "SELECT c.id, top.score FROM (
                 SELECT s.buffer_id, s.seq, {score} AS score
                 FROM (
                     SELECT p.buffer_id, u.seq, q.i,
                            q.weight * ((u.f >> 8)::real
                                / ((u.f >> 8)::real + ($3::real[])[(u.f & 255) + 1])) AS score
                     FROM unnest($1::text[], $2::real[]) WITH ORDINALITY AS q(term, weight, i)
                     JOIN postings p ON p.term = q.term {filter}
                     CROSS JOIN LATERAL unnest(p.seqs, p.freqs) AS u(seq, f)
                 ) s
                 GROUP BY s.buffer_id, s.seq
                 ORDER BY score DESC, s.buffer_id, s.seq
                 LIMIT $4
             ) top
             JOIN chunks c ON c.buffer_id = top.buffer_id AND c.seq = top.seq
             ORDER BY top.score DESC, top.buffer_id, top.seq"
        );
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let empty: &[i64] = &[];
        let buffers = buffers.unwrap_or(empty);
        let rows = if filter.is_empty() {
            self.rows("search", &sql, &[&terms, &weights, &lengths, &limit])?
        } else {
            self.rows(
                "search",
                &sql,
                &[&terms, &weights, &lengths, &limit, &buffers],
            )?
        };
        Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
    }
}

/// tantivy's inverse document frequency, in single precision as it computes it.
fn idf(frequency: u64, documents: u64) -> f32 {
    let x = ((documents - frequency) as f32 + 0.5) / (frequency as f32 + 0.5);
    (1.0 + x).ln()
}

fn widen(hits: Vec<(i64, f32)>) -> Vec<(i64, f64)> {
    hits.into_iter()
        .map(|(id, score)| (id, f64::from(score)))
        .collect()
}
