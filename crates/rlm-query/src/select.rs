//! Which chunks the extractors read: the union of the plan's searches, or every chunk of the
//! selected buffers. Store work is blocking; the pipeline runs it on the blocking pool.

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

use rlm_embed::Embedder;
use rlm_store::{BufferInfo, ChunkInfo, SearchMode, SearchRequest, Store};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::plan::Plan;

/// A store and the embedding model its vectors were made with, if any.
#[derive(Debug)]
pub struct Corpus {
    store: Mutex<Store>,
    embedder: Option<Box<dyn Embedder>>,
}

/// A chunk chosen for analysis: where it is, not its text (read when its batch runs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SelectedChunk {
    /// Chunk id.
    pub id: i64,
    /// Buffer name.
    pub buffer: String,
    /// First line, 1-based.
    pub start_line: u64,
    /// Last line, 1-based inclusive.
    pub end_line: u64,
    /// Size of its text in bytes.
    pub bytes: u64,
    /// Corpus order: buffer id, then position in the buffer.
    #[serde(skip)]
    pub position: (i64, i64),
}

impl SelectedChunk {
    fn of(chunk: &ChunkInfo) -> Self {
        Self {
            id: chunk.id,
            buffer: chunk.buffer.clone(),
            start_line: chunk.start_line,
            end_line: chunk.end_line,
            bytes: chunk.bytes.end.saturating_sub(chunk.bytes.start),
            position: (chunk.buffer_id, chunk.seq),
        }
    }

    /// `buffer:first-last`, as prompts and reports cite it.
    pub fn source(&self) -> String {
        use std::fmt::Write as _;
        let mut source = String::with_capacity(self.buffer.len() + 24);
        source.push_str(&self.buffer);
        // Writing to a String cannot fail.
        let _ = write!(source, ":{}-{}", self.start_line, self.end_line);
        source
    }
}

/// The chunks chosen and how.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Selection {
    /// In the order they were ranked (search) or stored (scan).
    pub chunks: Vec<SelectedChunk>,
    /// The search mode that found them (`None` for a scan).
    pub mode: Option<SearchMode>,
    /// Notices and fallbacks, for the user and the log.
    pub notes: Vec<String>,
}

impl Corpus {
    /// Wraps an open store; `embedder` is needed for semantic and hybrid search.
    pub fn new(store: Store, embedder: Option<Box<dyn Embedder>>) -> Self {
        Self {
            store: Mutex::new(store),
            embedder,
        }
    }

    fn store(&self) -> std::sync::MutexGuard<'_, Store> {
        // A panic in another store call leaves SQLite and tantivy consistent.
        self.store.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `work` on the store and the embedder (blocking: call it on the blocking pool).
    pub(crate) fn with_store<T>(&self, work: impl FnOnce(&Store, Option<&dyn Embedder>) -> T) -> T {
        work(&self.store(), self.embedder.as_deref())
    }

    /// Total chunks in the store.
    pub fn chunk_count(&self) -> Result<u64> {
        Ok(self.store().status()?.chunks)
    }

    /// Whether semantic search can run: a model is present and vectors are stored.
    pub fn semantic_available(&self) -> Result<bool> {
        Ok(self.embedder.is_some() && self.store().embedding_status()?.embedded_chunks > 0)
    }

    /// Buffers passing the name and path filters (all when both are empty).
    pub fn buffers(&self, names: &[String], path_glob: Option<&str>) -> Result<Vec<BufferInfo>> {
        Ok(self.store().filter_buffers(names, path_glob)?)
    }

    /// A chunk's text.
    pub fn text(&self, id: i64) -> Result<String> {
        Ok(self.store().chunk_text(id)?)
    }

    /// Several chunks' texts, in order, read in one pass over the store.
    pub fn texts(&self, ids: &[i64]) -> Result<Vec<String>> {
        Ok(self.store().chunk_texts(ids)?)
    }

    /// Every chunk of `buffers`, in corpus order.
    pub fn scan(&self, buffers: &[BufferInfo]) -> Result<Selection> {
        let chunks = self
            .store()
            .chunks_of_each(buffers)?
            .iter()
            .map(SelectedChunk::of)
            .collect();
        Ok(Selection {
            chunks,
            mode: None,
            notes: Vec::new(),
        })
    }

    /// The plan's queries, merged rank by rank (first hits of every query, then the second
    /// ones, …), without duplicates, cut to `top_k`. When nothing is found the search falls
    /// back to BM25, then to the question itself, and says so in `notes`.
    pub fn search(
        &self,
        plan: &Plan,
        path_glob: Option<&str>,
        question: &str,
    ) -> Result<Selection> {
        let mut notes = Vec::new();
        let mut attempts: Vec<(SearchMode, Vec<String>)> = vec![(plan.mode, plan.queries.clone())];
        if plan.mode != SearchMode::Bm25 {
            attempts.push((SearchMode::Bm25, plan.queries.clone()));
        }
        let question = question.trim().to_owned();
        if !plan.queries.contains(&question) {
            attempts.push((SearchMode::Bm25, vec![question]));
        }
        for (index, (mode, queries)) in attempts.iter().enumerate() {
            let (chunks, used_mode) =
                self.search_once(plan, *mode, queries, path_glob, &mut notes)?;
            if !chunks.is_empty() {
                return Ok(Selection {
                    chunks,
                    mode: Some(used_mode),
                    notes,
                });
            }
            if let Some((next_mode, next_queries)) = attempts.get(index + 1) {
                let what = if next_queries == queries {
                    format!("searching again with {}", next_mode)
                } else {
                    "searching for the question itself with bm25".to_owned()
                };
                notes.push(format!("{} search found nothing; {what}", used_mode));
            }
        }
        notes.push("no chunk matched any search".to_owned());
        Ok(Selection {
            chunks: Vec::new(),
            mode: Some(attempts.last().map_or(plan.mode, |attempt| attempt.0)),
            notes,
        })
    }

    fn search_once(
        &self,
        plan: &Plan,
        mode: SearchMode,
        queries: &[String],
        path_glob: Option<&str>,
        notes: &mut Vec<String>,
    ) -> Result<(Vec<SelectedChunk>, SearchMode)> {
        let store = self.store();
        let mut lists = Vec::with_capacity(queries.len());
        let mut used_mode = mode;
        for query in queries {
            let request = SearchRequest {
                mode,
                limit: plan.top_k,
                buffers: plan.buffers.clone(),
                path_glob: path_glob.map(str::to_owned),
                ..SearchRequest::new(query.clone())
            };
            let outcome = store.search_with(&request, self.embedder.as_deref())?;
            used_mode = outcome.mode;
            if let Some(notice) = outcome.notice
                && !notes.contains(&notice)
            {
                notes.push(notice);
            }
            lists.push(
                outcome
                    .hits
                    .into_iter()
                    .map(|hit| hit.chunk_id)
                    .collect::<Vec<_>>(),
            );
        }
        let mut seen = HashSet::new();
        let mut merged = Vec::new();
        let deepest = lists.iter().map(Vec::len).max().unwrap_or(0);
        'ranks: for rank in 0..deepest {
            for list in &lists {
                if merged.len() >= plan.top_k {
                    break 'ranks;
                }
                if let Some(&id) = list.get(rank)
                    && seen.insert(id)
                {
                    merged.push(SelectedChunk::of(&store.chunk(id)?));
                }
            }
        }
        Ok((merged, used_mode))
    }
}

/// Refuses an empty store and a selection that leaves no buffer.
pub fn check_selection(
    buffers: &[BufferInfo],
    names: &[String],
    path_glob: Option<&str>,
) -> Result<()> {
    if buffers.iter().all(|buffer| buffer.chunks == 0) {
        let mut filters = Vec::new();
        if !names.is_empty() {
            filters.push(format!("buffers {}", names.join(", ")));
        }
        if let Some(glob) = path_glob {
            filters.push(format!("path {glob}"));
        }
        if filters.is_empty() {
            return Err(Error::EmptyStore);
        }
        return Err(Error::EmptySelection(filters.join(", ")));
    }
    Ok(())
}
