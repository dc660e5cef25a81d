//! The BM25 index: one tantivy document per chunk, text indexed with the code tokenizer.
//!
//! Text is not stored in the index (it lives once, in SQLite); documents hold the chunk id as a
//! fast field (to map hits back) and the buffer id as an indexed term (to delete a buffer's
//! documents and to filter searches to a set of buffers before ranking).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use tantivy::collector::TopDocs;
use tantivy::directory::MmapDirectory;
use tantivy::indexer::LogMergePolicy;
use tantivy::query::{BooleanQuery, ConstScoreQuery, Occur, Query, TermQuery, TermSetQuery};
use tantivy::schema::{
    Field, INDEXED, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use crate::error::{Error, Result};
use crate::tokenizer::{CODE_TOKENIZER, CodeTokenizer, IndexFormat, query_plan};

/// Indexing memory budget across all writer threads. tantivy flushes a segment when a thread's
/// share is full, so this bounds the writer's RSS. Measured loading the 100 MB benchmark corpus
/// with two threads (median of 3): 40 MiB takes 3.0 s at 101 MB peak RSS, 64 MiB 2.9 s at 148 MB;
/// at 32 MiB the fixed per-segment tables leave so little room that segments of ~1,500 chunks
/// are flushed and merging them costs 45% more time.
const WRITER_MEMORY_BYTES: usize = 40 * 1024 * 1024;

/// Segments of one size class merged at once. tantivy's default (8) merges the ~12 segments a
/// 100 MB load flushes while the load runs, which cost 60% more load time; searching 16 small
/// segments instead of 1 adds well under a millisecond.
const MIN_SEGMENTS_PER_MERGE: usize = 16;

/// The commit payload of an index in [`IndexFormat::UniqueHashed`]. Indexes written before it
/// carry no payload; an index without segments is written in the current format.
const UNIQUE_HASHED_PAYLOAD: &str = "rlm-index-format 2";

/// Given chunk ids and lower-cased terms, whether each chunk's text holds one of the terms.
pub(crate) type HoldsTerms<'a> = dyn FnMut(&[i64], &[String]) -> Result<Vec<bool>> + 'a;

pub(crate) struct Bm25Index {
    index: Index,
    /// Opened on first search and reloaded after each commit of this process; opening one per
    /// query would cost more than the query.
    reader: std::sync::OnceLock<IndexReader>,
    chunk_id: Field,
    buffer_id: Field,
    text: Field,
    format: IndexFormat,
}

impl std::fmt::Debug for Bm25Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bm25Index").finish_non_exhaustive()
    }
}

impl Bm25Index {
    /// Opens (creating if needed) the index in `path`, in the format its last commit records.
    pub(crate) fn open(path: &Path) -> Result<Self> {
        Self::open_in(path, None)
    }

    /// [`Bm25Index::open`] writing an index in `format` whatever it holds, as an older rlm did.
    #[cfg(test)]
    pub(crate) fn open_in_format(path: &Path, format: IndexFormat) -> Result<Self> {
        Self::open_in(path, Some(format))
    }

    fn open_in(path: &Path, forced_format: Option<IndexFormat>) -> Result<Self> {
        std::fs::create_dir_all(path).map_err(crate::error::io("cannot create", path))?;
        let mut builder = Schema::builder();
        let chunk_id = builder.add_u64_field("chunk_id", NumericOptions::default().set_fast());
        let buffer_id = builder.add_u64_field("buffer_id", INDEXED);
        let indexing = TextFieldIndexing::default()
            .set_tokenizer(CODE_TOKENIZER)
            // BM25 needs term frequencies only; positions would grow the index for phrase
            // queries we do not offer.
            .set_index_option(IndexRecordOption::WithFreqs);
        let text = builder.add_text_field(
            "text",
            TextOptions::default().set_indexing_options(indexing),
        );
        let directory = MmapDirectory::open(path).map_err(|source| Error::IndexDirectory {
            path: path.to_owned(),
            source,
        })?;
        let index = Index::open_or_create(directory, builder.build())?;
        let format = match forced_format {
            Some(format) => format,
            None => format_of(&index)?,
        };
        index.tokenizers().register(
            CODE_TOKENIZER,
            TextAnalyzer::from(CodeTokenizer::new(format)),
        );
        Ok(Self {
            index,
            reader: std::sync::OnceLock::new(),
            chunk_id,
            buffer_id,
            text,
            format,
        })
    }

    pub(crate) fn writer(&self) -> Result<Bm25Writer<'_>> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(2));
        let writer: IndexWriter = self
            .index
            .writer_with_num_threads(threads, WRITER_MEMORY_BYTES)?;
        let mut policy = LogMergePolicy::default();
        policy.set_min_num_segments(MIN_SEGMENTS_PER_MERGE);
        writer.set_merge_policy(Box::new(policy));
        Ok(Bm25Writer {
            index: self,
            writer,
        })
    }

    fn reader(&self) -> Result<&IndexReader> {
        if let Some(reader) = self.reader.get() {
            return Ok(reader);
        }
        let reader = self
            .index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        Ok(self.reader.get_or_init(|| reader))
    }

    /// Makes this process's reader see the latest commit.
    pub(crate) fn reload(&self) -> Result<()> {
        if let Some(reader) = self.reader.get() {
            reader.reload()?;
        }
        Ok(())
    }

    /// Number of documents (chunks) searchable now.
    pub(crate) fn document_count(&self) -> Result<u64> {
        Ok(self.reader()?.searcher().num_docs())
    }

    /// Segment ids (the prefix of their files' names) of the last commit.
    pub(crate) fn live_segments(&self) -> Result<HashSet<String>> {
        Ok(self
            .index
            .searchable_segment_ids()?
            .iter()
            .map(tantivy::index::SegmentId::uuid_string)
            .collect())
    }

    /// BM25's inverse document frequency of each term (always positive).
    pub(crate) fn inverse_document_frequencies(&self, terms: &[String]) -> Result<Vec<f64>> {
        let searcher = self.reader()?.searcher();
        let documents = searcher.num_docs() as f64;
        terms
            .iter()
            .map(|term| {
                let frequency = searcher.doc_freq(&Term::from_field_text(self.text, term))? as f64;
                Ok((1.0 + (documents - frequency + 0.5) / (frequency + 0.5)).ln())
            })
            .collect()
    }

    /// Top `limit` chunk ids by BM25 among chunks of `buffers` (all documents when `None`),
    /// best first. When the query asks for bucket terms, a hit is kept only if `holds` says its
    /// chunk's text holds one of the query's terms (asked for each chunk once, a fetch's worth
    /// at a time); more hits are fetched to make up for the ones dropped.
    pub(crate) fn search(
        &self,
        query: &str,
        buffers: Option<&[i64]>,
        limit: usize,
        holds: &mut HoldsTerms<'_>,
    ) -> Result<Vec<(i64, f32)>> {
        let plan = query_plan(query, self.format);
        if plan.terms.is_empty() || buffers.is_some_and(<[i64]>::is_empty) || limit == 0 {
            return Ok(Vec::new());
        }
        let should: Vec<(Occur, Box<dyn Query>)> = plan
            .terms
            .iter()
            .map(|term| {
                let query = TermQuery::new(
                    Term::from_field_text(self.text, term),
                    IndexRecordOption::WithFreqs,
                );
                (Occur::Should, Box::new(query) as Box<dyn Query>)
            })
            .collect();
        let text_query: Box<dyn Query> = Box::new(BooleanQuery::new(should));
        let query: Box<dyn Query> = match buffers {
            None => text_query,
            Some(buffers) => {
                let filter = TermSetQuery::new(
                    buffers
                        .iter()
                        .map(|&id| Term::from_field_u64(self.buffer_id, id as u64)),
                );
                // The filter scores 0, so ranking is BM25 of the text alone, within the set.
                Box::new(BooleanQuery::new(vec![
                    (Occur::Must, text_query),
                    (
                        Occur::Must,
                        Box::new(ConstScoreQuery::new(Box::new(filter), 0.0)),
                    ),
                ]))
            }
        };
        let searcher = self.reader()?.searcher();
        // Equal scores are ordered by chunk id, so the same store answers the same way whatever
        // its segment layout (tantivy breaks ties by segment, whose order varies between two
        // loads of the same files). Fetch past `limit` until the hits beyond it score lower, so
        // a tie across the cut is settled by chunk id too.
        let mut checked: HashMap<i64, bool> = HashMap::new();
        let mut fetch = limit.saturating_add(16);
        let mut hits = loop {
            let top =
                searcher.search(query.as_ref(), &TopDocs::with_limit(fetch).order_by_score())?;
            let exhausted = top.len() < fetch;
            let mut hits = Vec::with_capacity(top.len());
            for (score, address) in top {
                let column = searcher
                    .segment_reader(address.segment_ord)
                    .fast_fields()
                    .u64("chunk_id")?;
                if let Some(id) = column.first(address.doc_id) {
                    hits.push((id as i64, score));
                }
            }
            if let Some(literal) = &plan.literal {
                let unchecked: Vec<i64> = hits
                    .iter()
                    .map(|&(id, _)| id)
                    .filter(|id| !checked.contains_key(id))
                    .collect();
                if !unchecked.is_empty() {
                    let answers = holds(&unchecked, literal)?;
                    checked.extend(unchecked.into_iter().zip(answers));
                }
                hits.retain(|(id, _)| checked.get(id).copied().unwrap_or(false));
            }
            let settled = hits.len() > limit && hits[hits.len() - 1].1 < hits[limit - 1].1;
            if exhausted || settled {
                break hits;
            }
            fetch = fetch.saturating_mul(2);
        };
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits.truncate(limit);
        Ok(hits)
    }
}

/// The format an index's last commit records (an index without segments is written in the
/// current one).
fn format_of(index: &Index) -> Result<IndexFormat> {
    let metas = index.load_metas()?;
    Ok(
        if metas.segments.is_empty() || metas.payload.as_deref() == Some(UNIQUE_HASHED_PAYLOAD) {
            IndexFormat::UniqueHashed
        } else {
            IndexFormat::RandomLeftOut
        },
    )
}

/// What a read-only look at an index directory found.
#[derive(Debug)]
pub(crate) struct IndexInspection {
    /// Documents in the last commit.
    pub(crate) documents: u64,
    /// Files of the last commit whose checksum does not match their content.
    pub(crate) corrupted: Vec<PathBuf>,
    /// Segment ids of the last commit.
    pub(crate) live_segments: HashSet<String>,
    /// What it holds for unique-looking tokens.
    pub(crate) format: IndexFormat,
}

/// Opens the index at `path` without creating or changing anything, counts its documents and
/// verifies every file's checksum (reads the whole index). `Ok(None)` when there is no index.
pub(crate) fn inspect(path: &Path) -> Result<Option<IndexInspection>> {
    if !path.join("meta.json").is_file() {
        return Ok(None);
    }
    let directory = MmapDirectory::open(path).map_err(|source| Error::IndexDirectory {
        path: path.to_owned(),
        source,
    })?;
    let index = Index::open(directory)?;
    let reader: IndexReader = index
        .reader_builder()
        .reload_policy(ReloadPolicy::Manual)
        .try_into()?;
    let mut corrupted: Vec<PathBuf> = index.validate_checksum()?.into_iter().collect();
    corrupted.sort();
    Ok(Some(IndexInspection {
        documents: reader.searcher().num_docs(),
        format: format_of(&index)?,
        corrupted,
        live_segments: index
            .searchable_segment_ids()?
            .iter()
            .map(tantivy::index::SegmentId::uuid_string)
            .collect(),
    }))
}

/// An open index writer; dropping it without [`Bm25Writer::commit`] discards its changes.
pub(crate) struct Bm25Writer<'a> {
    index: &'a Bm25Index,
    writer: IndexWriter,
}

impl Bm25Writer<'_> {
    pub(crate) fn delete_buffer(&self, buffer_id: i64) {
        self.writer
            .delete_term(Term::from_field_u64(self.index.buffer_id, buffer_id as u64));
    }

    pub(crate) fn add_chunk(&self, chunk_id: i64, buffer_id: i64, text: &str) -> Result<()> {
        let mut document = TantivyDocument::new();
        document.add_u64(self.index.chunk_id, chunk_id as u64);
        document.add_u64(self.index.buffer_id, buffer_id as u64);
        document.add_text(self.index.text, text);
        self.writer.add_document(document)?;
        Ok(())
    }

    /// Writes the segments to disk but never commits them, as a writer killed between the two
    /// does (their files are then leftovers).
    #[cfg(test)]
    pub(crate) fn flush_without_commit(mut self) -> Result<()> {
        let _never_committed = self.writer.prepare_commit()?;
        Ok(())
    }

    /// Makes the changes durable and visible, then waits for background merges.
    pub(crate) fn commit(mut self) -> Result<()> {
        let mut commit = self.writer.prepare_commit()?;
        if self.index.format == IndexFormat::UniqueHashed {
            commit.set_payload(UNIQUE_HASHED_PAYLOAD);
        }
        commit.commit()?;
        self.writer.wait_merging_threads()?;
        Ok(())
    }
}
