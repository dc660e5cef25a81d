//! Search: filters resolved first (a `--path` glob inside the BM25 index when it holds buffer
//! names, else to buffer ids from the buffer table), then BM25 (and, when a model is present,
//! semantic) ranking inside that set, fused by reciprocal rank.

use std::collections::HashMap;
use std::ops::Range;

use rlm_embed::Embedder;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::index::DocumentFilter;
use crate::name_filter::BufferGlob;
use crate::snippet::{QueryTerms, snippet};
use crate::store::LocalStore;

/// Default `k` of reciprocal rank fusion (the value from the original RRF paper).
pub const DEFAULT_RRF_K: f64 = 60.0;

/// Ranking method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum SearchMode {
    /// BM25 over the code-aware tokens.
    #[default]
    Bm25,
    /// Embedding similarity.
    Semantic,
    /// Reciprocal rank fusion of BM25 and semantic.
    Hybrid,
}

impl SearchMode {
    /// Every mode, in the order choices are listed.
    pub const ALL: [SearchMode; 3] = [SearchMode::Bm25, SearchMode::Semantic, SearchMode::Hybrid];

    /// The name flags, tool arguments, logs and JSON use (`bm25`, `semantic`, `hybrid`).
    pub fn as_str(self) -> &'static str {
        match self {
            SearchMode::Bm25 => "bm25",
            SearchMode::Semantic => "semantic",
            SearchMode::Hybrid => "hybrid",
        }
    }
}

impl std::fmt::Display for SearchMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for SearchMode {
    type Err = String;

    /// A mode by its name; the error lists the names.
    fn from_str(name: &str) -> std::result::Result<Self, Self::Err> {
        SearchMode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == name)
            .ok_or_else(|| {
                let names: Vec<String> = SearchMode::ALL
                    .iter()
                    .map(|mode| format!("{:?}", mode.as_str()))
                    .collect();
                let (last, others) = names.split_last().unwrap_or((&names[0], &[]));
                format!("mode must be {} or {last}, not {name:?}", others.join(", "))
            })
    }
}

/// What to search for and where.
#[derive(Debug, Clone)]
pub struct SearchRequest {
    /// The query text.
    pub query: String,
    /// Ranking method.
    pub mode: SearchMode,
    /// Number of results.
    pub limit: usize,
    /// Only these buffers (names or ids); empty means all.
    pub buffers: Vec<String>,
    /// Only buffers whose name or path matches this glob.
    pub path_glob: Option<String>,
    /// `k` of reciprocal rank fusion.
    pub rrf_k: f64,
}

impl SearchRequest {
    /// A BM25 request for the top 10 over all buffers.
    pub fn new(query: impl Into<String>) -> Self {
        Self {
            query: query.into(),
            mode: SearchMode::Bm25,
            limit: 10,
            buffers: Vec::new(),
            path_glob: None,
            rrf_k: DEFAULT_RRF_K,
        }
    }
}

/// One result.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct SearchHit {
    /// Chunk id, usable with `Store::chunk_text` and `rlm peek --chunk`.
    pub chunk_id: i64,
    /// Buffer name.
    pub buffer: String,
    /// First line, 1-based.
    pub start_line: u64,
    /// Last line, 1-based inclusive.
    pub end_line: u64,
    /// Ranking score (BM25, cosine, or fused RRF score by mode).
    pub score: f64,
    /// The chunk's line that covers the query best (rarer terms weigh more, an exact
    /// identifier most), trimmed and cut around its first match with `…` marks.
    pub snippet: String,
    /// Byte ranges of the matched query terms in `snippet` (empty for a hit no query word is
    /// in, as semantic hits can be).
    pub highlights: Vec<Range<usize>>,
}

/// Results plus the mode that actually ran.
#[derive(Debug, Clone, Serialize)]
pub struct SearchOutcome {
    /// Best first.
    pub hits: Vec<SearchHit>,
    /// The mode used (BM25 when semantic was asked for without a model).
    pub mode: SearchMode,
    /// A one-line notice for the user (e.g. the BM25 fallback), if any.
    pub notice: Option<String>,
}

impl LocalStore {
    /// BM25 search without an embedding model (tests search through it).
    #[cfg(test)]
    pub fn search(&self, request: &SearchRequest) -> Result<SearchOutcome> {
        self.search_with(request, None)
    }

    /// Searches chunks. Filters restrict the candidate set before ranking, so `limit` results
    /// come from the filtered buffers when they have that many matches. Semantic and hybrid
    /// need `embedder` and stored vectors of the same model; without them the search is BM25
    /// and the outcome carries a one-line notice saying why.
    pub fn search_with(
        &self,
        request: &SearchRequest,
        embedder: Option<&dyn Embedder>,
    ) -> Result<SearchOutcome> {
        // An index that lost documents would answer "no match" for text the store holds.
        self.ensure_index_in_step()?;
        let candidates = self.candidates(request)?;
        let (mode, notice) = if request.mode == SearchMode::Bm25 {
            (SearchMode::Bm25, None)
        } else {
            effective_mode(request.mode, &self.embedding_status()?, embedder)
        };
        let ranked = self.rank(request, mode, embedder, &candidates)?;
        let texts = QueryTerms::texts(&request.query);
        let weights = self.index.inverse_document_frequencies(&texts)?;
        let terms = QueryTerms::new(&request.query, |term| {
            texts
                .iter()
                .position(|text| text == term)
                .map_or(1.0, |index| weights[index])
        });
        let mut hits = Vec::with_capacity(ranked.len());
        for (chunk_id, score) in ranked {
            let Ok(chunk) = self.chunk(chunk_id) else {
                continue;
            };
            let text = self.chunk_text(chunk_id)?;
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
        Ok(SearchOutcome { hits, mode, notice })
    }
}

/// The mode a search for `requested` runs in, and the notice that says why when it is not
/// what was asked for (no vectors, no model: BM25) or covers less than every chunk.
pub(crate) fn effective_mode(
    requested: SearchMode,
    status: &crate::EmbeddingStatus,
    embedder: Option<&dyn Embedder>,
) -> (SearchMode, Option<String>) {
    if requested == SearchMode::Bm25 {
        return (requested, None);
    }
    if status.embedded_chunks == 0 {
        return (
            SearchMode::Bm25,
            Some("no chunk has a vector yet; using BM25 (import a model with `rlm models import`, then run `rlm embed`)".to_owned()),
        );
    }
    if embedder.is_none() {
        return (
            SearchMode::Bm25,
            Some(
                "no embedding model is available; using BM25 \
                 (import one with `rlm models import`)"
                    .to_owned(),
            ),
        );
    }
    let notice = (status.embedded_chunks < status.chunks).then(|| {
        format!(
            "only {} of {} chunks have vectors; run `rlm embed` to cover the rest",
            status.embedded_chunks, status.chunks
        )
    });
    (requested, notice)
}

/// The buffers a search may return.
enum Candidates {
    /// Every document in the index (all are live).
    All,
    /// Chunks of these buffer ids.
    Buffers(Vec<i64>),
    /// Chunks of buffers whose name or path matches, decided inside the BM25 index; a vector
    /// search resolves the glob to buffer ids.
    Glob(Box<BufferGlob>),
}

impl Candidates {
    fn document_filter(&self) -> DocumentFilter<'_> {
        match self {
            Candidates::All => DocumentFilter::All,
            Candidates::Buffers(ids) => DocumentFilter::Buffers(ids),
            Candidates::Glob(glob) => DocumentFilter::Glob(glob),
        }
    }
}

impl LocalStore {
    /// Resolves the request's filters. A `--path` glob alone stays a glob for the index to
    /// match when its documents carry buffer names and every document is live (no index
    /// work queued, so no document of a deleted buffer is left); otherwise the filters become
    /// buffer ids read from the buffer table.
    fn candidates(&self, request: &SearchRequest) -> Result<Candidates> {
        if let Some(glob) = request.path_glob.as_deref()
            && request.buffers.is_empty()
            && self.index.has_buffer_names()
            && self.pending_index_work()? == 0
        {
            return Ok(Candidates::Glob(Box::new(BufferGlob::new(glob)?)));
        }
        Ok(
            match self.candidate_buffers(&request.buffers, request.path_glob.as_deref())? {
                None => Candidates::All,
                Some(ids) => Candidates::Buffers(ids),
            },
        )
    }

    /// Chunk ids with their scores, best first, by `mode` (BM25 when no embedder is given).
    fn rank(
        &self,
        request: &SearchRequest,
        mode: SearchMode,
        embedder: Option<&dyn Embedder>,
        candidates: &Candidates,
    ) -> Result<Vec<(i64, f64)>> {
        let filter = candidates.document_filter();
        let Some(embedder) = embedder.filter(|_| mode != SearchMode::Bm25) else {
            return Ok(self
                .bm25_search(&request.query, filter, request.limit)?
                .into_iter()
                .map(|(id, score)| (id, f64::from(score)))
                .collect());
        };
        // The vector file is grouped by buffer id, so a vector search takes ids.
        let resolved;
        let ids = match candidates {
            Candidates::All => None,
            Candidates::Buffers(ids) => Some(ids.as_slice()),
            Candidates::Glob(_) => {
                resolved = self.candidate_buffers(&[], request.path_glob.as_deref())?;
                resolved.as_deref()
            }
        };
        if mode == SearchMode::Semantic {
            return Ok(self
                .semantic_search(embedder, &request.query, ids, request.limit)?
                .into_iter()
                .map(|(id, score)| (id, f64::from(score)))
                .collect());
        }
        // Fuse deeper lists than asked for, so a chunk ranked moderately by both methods can
        // surface.
        let depth = request.limit.saturating_mul(4).max(50);
        let (semantic, lexical) =
            self.semantic_search_beside(embedder, &request.query, ids, depth, |store| {
                store.bm25_search(&request.query, filter, depth)
            })?;
        let lexical: Vec<i64> = lexical.into_iter().map(|(id, _)| id).collect();
        let semantic: Vec<i64> = semantic.into_iter().map(|(id, _)| id).collect();
        let mut fused = reciprocal_rank_fusion(&[lexical, semantic], request.rrf_k);
        fused.truncate(request.limit);
        Ok(fused)
    }

    /// BM25 hits, checked against the chunks' text when the query asks for bucket terms (a
    /// chunk that is gone, as a replaced buffer's leftover documents are, holds nothing).
    fn bm25_search(
        &self,
        query: &str,
        filter: DocumentFilter<'_>,
        limit: usize,
    ) -> Result<Vec<(i64, f32)>> {
        self.index
            .search(query, filter, limit, &mut |chunk_ids, terms| {
                let texts = match self.chunk_texts(chunk_ids) {
                    Ok(texts) => texts,
                    // One chunk is gone: ask for each, so the others are still judged.
                    Err(_) => chunk_ids
                        .iter()
                        .map(|&id| self.chunk_text(id).unwrap_or_default())
                        .collect(),
                };
                Ok(texts
                    .iter()
                    .map(|text| crate::tokenizer::holds_any(text, terms))
                    .collect())
            })
    }
}

/// Reciprocal rank fusion: each list contributes `1 / (k + rank)` (rank from 1) per id; ids are
/// returned by fused score, best first, ties broken by id for a stable order.
pub fn reciprocal_rank_fusion(lists: &[Vec<i64>], k: f64) -> Vec<(i64, f64)> {
    let mut scores: HashMap<i64, f64> = HashMap::new();
    for list in lists {
        for (rank, id) in list.iter().enumerate() {
            *scores.entry(*id).or_default() += 1.0 / (k + rank as f64 + 1.0);
        }
    }
    let mut fused: Vec<(i64, f64)> = scores.into_iter().collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fusion_rewards_agreement_between_lists() {
        let fused = reciprocal_rank_fusion(&[vec![1, 2, 3], vec![3, 2, 4]], 60.0);
        let order: Vec<i64> = fused.iter().map(|(id, _)| *id).collect();
        // 2 and 3 appear in both lists and beat 1 and 4; 3 (ranks 3+1) ties 2 (2+2) on
        // position sum but 1/61+1/63 > 1/62+1/62, so 3 first.
        assert_eq!(order, [3, 2, 1, 4]);
        assert!((fused[0].1 - (1.0 / 63.0 + 1.0 / 61.0)).abs() < 1e-12);
    }
}
