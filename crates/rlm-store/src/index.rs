//! The BM25 index: one tantivy document per chunk, text indexed with the code tokenizer.
//!
//! Text is not stored in the index (it lives once, in SQLite); documents hold the chunk id as a
//! fast field (to map hits back), the buffer id as an indexed term (to delete a buffer's
//! documents and to filter searches to a set of buffers before ranking), and the buffer's name
//! and path as fast fields (to filter searches by a `--path` glob inside the index, see
//! [`crate::name_filter`]), with their `/`-separated components as terms of one more field (to
//! find the few documents a glob like `*/dir007/*` can match by their postings). Indexes
//! written before the names were added have no such fields; their `--path` filters go through
//! the buffer table until `rlm reindex` rebuilds them. Indexes written with the names but
//! before the components match such globs against every name and path.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use tantivy::directory::MmapDirectory;
use tantivy::indexer::IndexWriterOptions;
use tantivy::query::{
    BooleanQuery, ConstScoreQuery, EnableScoring, Occur, Query, TermQuery, TermSetQuery, Weight,
};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use crate::document_queue::{CountingTokenizer, DocumentQueue, Waited};
use crate::error::{Error, Result};
use crate::merge_policy::BoundedMergePolicy;
use crate::name_filter::{
    BufferGlob, COMPONENT_FIELD, FilteredSearch, NAME_FIELD, PATH_FIELD, REVERSED_NAME_FIELD,
    REVERSED_PATH_FIELD, component_terms, reversed,
};
use crate::tokenizer::{CODE_TOKENIZER, CodeTokenizer, IndexFormat, query_plan};
use crate::top_hits::TopHits;

/// Indexing memory budget across all writer threads. tantivy flushes a segment when a thread's
/// share is full, so this bounds the writer's RSS. Measured loading the 100 MB benchmark corpus
/// with two threads (median of 3): 40 MiB takes 3.0 s at 101 MB peak RSS, 64 MiB 2.9 s at 148 MB;
/// at 32 MiB the fixed per-segment tables leave so little room that segments of ~1,500 chunks
/// are flushed and merging them costs 45% more time.
///
/// Those fixed tables: a segment writer counts 13.6 MB against its share as soon as it exists
/// (the term table and the fast-field writers' arenas; 4.3 MB of it resident), which leaves each
/// of two threads ~5.4 MB for postings: ~15,000 chunks of a TSV file, ~2,600 of base64 lines,
/// whose every token is a new posting. Larger shares or one thread make fewer segments and
/// merges for such text at the cost of every load's memory or wall time (BENCHMARKS.md,
/// "High-entropy loads").
const WRITER_MEMORY_BYTES: usize = 40 * 1024 * 1024;

/// Merges run one at a time (tantivy's default is 4), so a load holds at most one merge's
/// memory (see [`BoundedMergePolicy`]) whatever the file's size.
const MERGE_THREADS: usize = 1;

/// The commit payload of an index in [`IndexFormat::UniqueHashed`]. Indexes written before it
/// carry no payload; an index without segments is written in the current format.
const UNIQUE_HASHED_PAYLOAD: &str = "rlm-index-format 2";

/// Which documents a search may return.
#[derive(Debug, Clone, Copy)]
pub(crate) enum DocumentFilter<'a> {
    /// Every document (all are live).
    All,
    /// Documents of these buffer ids.
    Buffers(&'a [i64]),
    /// Documents whose buffer name or path matches the glob (only for an index with
    /// [`Bm25Index::has_buffer_names`], and all documents live).
    Glob(&'a BufferGlob),
}

/// The buffer a document belongs to, as the index records it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IndexedBuffer<'a> {
    pub(crate) id: i64,
    pub(crate) name: &'a str,
    /// The file it was read from, if any.
    pub(crate) path: Option<&'a str>,
}

/// Given chunk ids and lower-cased terms, whether each chunk's text holds one of the terms.
pub(crate) type HoldsTerms<'a> = dyn FnMut(&[i64], &[String]) -> Result<Vec<bool>> + 'a;

pub(crate) struct Bm25Index {
    index: Index,
    /// The index directory.
    path: PathBuf,
    /// Text bytes the indexing threads of this process have taken up (see
    /// [`crate::document_queue`]).
    taken_up: Arc<AtomicU64>,
    /// Opened on first search and reloaded after each commit of this process; opening one per
    /// query would cost more than the query.
    reader: std::sync::OnceLock<IndexReader>,
    chunk_id: Field,
    buffer_id: Field,
    text: Field,
    /// The buffer name, path, reversed name and reversed path fields; `None` in an index
    /// written before they existed.
    names: Option<[Field; 4]>,
    /// The field of the components of buffer names and paths; `None` in an index written
    /// before it existed.
    components: Option<Field>,
    format: IndexFormat,
    /// The format a newer rlm recorded, which this one neither searches nor writes.
    newer: Option<String>,
}

/// What a new index's documents carry of their buffer (older rlm versions carried less).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(
    not(test),
    expect(dead_code, reason = "the older layouts are written only by tests")
)]
pub(crate) enum BufferFields {
    /// Its id only.
    Id,
    /// Its id, name and path.
    Names,
    /// Its id, name, path and their components.
    NamesAndComponents,
}

impl std::fmt::Debug for Bm25Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bm25Index").finish_non_exhaustive()
    }
}

impl Bm25Index {
    /// Opens (creating if needed) the index in `path`, in the format its last commit records.
    pub(crate) fn open(path: &Path) -> Result<Self> {
        Self::open_in(path, None, BufferFields::NamesAndComponents)
    }

    /// [`Bm25Index::open`] writing an index in `format` whatever it holds, as an older rlm did.
    #[cfg(test)]
    pub(crate) fn open_in_format(path: &Path, format: IndexFormat) -> Result<Self> {
        Self::open_in(path, Some(format), BufferFields::NamesAndComponents)
    }

    /// [`Bm25Index::open`] creating an index whose documents carry only `fields` of their
    /// buffer, as older rlm versions wrote them.
    #[cfg(test)]
    pub(crate) fn open_with_buffer_fields(path: &Path, fields: BufferFields) -> Result<Self> {
        Self::open_in(path, None, fields)
    }

    fn open_in(
        path: &Path,
        forced_format: Option<IndexFormat>,
        fields: BufferFields,
    ) -> Result<Self> {
        std::fs::create_dir_all(path).map_err(crate::error::io("cannot create", path))?;
        let directory = MmapDirectory::open(path).map_err(|source| Error::IndexDirectory {
            path: path.to_owned(),
            source,
        })?;
        // An existing index keeps the schema it was written with, older ones included.
        let index = if Index::exists(&directory).map_err(tantivy::TantivyError::from)? {
            Index::open(directory)?
        } else {
            Index::open_or_create(directory, schema(fields))?
        };
        let schema = index.schema();
        let chunk_id = schema.get_field("chunk_id")?;
        let buffer_id = schema.get_field("buffer_id")?;
        let text = schema.get_field("text")?;
        let field = |name| schema.get_field(name).ok();
        let names = (|| {
            Some([
                field(NAME_FIELD)?,
                field(PATH_FIELD)?,
                field(REVERSED_NAME_FIELD)?,
                field(REVERSED_PATH_FIELD)?,
            ])
        })();
        let components = field(COMPONENT_FIELD);
        let (format, newer) = match forced_format {
            Some(format) => (format, None),
            None => match format_of(&index)? {
                Ok(format) => (format, None),
                // Opened (listing, status and `rlm reindex` need no index), searched and
                // written never.
                Err(recorded) => (IndexFormat::UniqueHashed, Some(recorded)),
            },
        };
        let taken_up = Arc::new(AtomicU64::new(0));
        index.tokenizers().register(
            CODE_TOKENIZER,
            TextAnalyzer::from(CountingTokenizer::new(
                CodeTokenizer::new(format),
                taken_up.clone(),
            )),
        );
        Ok(Self {
            index,
            path: path.to_owned(),
            taken_up,
            reader: std::sync::OnceLock::new(),
            chunk_id,
            buffer_id,
            text,
            names,
            components,
            format,
            newer,
        })
    }

    /// Refuses to search or write an index a newer rlm wrote: its terms may be written in a
    /// way this rlm does not know, so answers could be wrong and writes would mix formats.
    fn check_format(&self) -> Result<()> {
        match &self.newer {
            Some(recorded) => Err(Error::IndexTooNew {
                path: self.path.clone(),
                recorded: recorded.clone(),
                supported: UNIQUE_HASHED_PAYLOAD,
            }),
            None => Ok(()),
        }
    }

    /// Whether documents carry their buffer's name and path, so a glob filter can run inside
    /// the index ([`DocumentFilter::Glob`]).
    pub(crate) fn has_buffer_names(&self) -> bool {
        self.names.is_some()
    }

    /// Whether documents carry the components of their buffer's name and path as terms.
    #[cfg(test)]
    pub(crate) fn has_path_components(&self) -> bool {
        self.components.is_some()
    }

    /// A searcher on the last commit this process saw.
    #[cfg(test)]
    pub(crate) fn searcher(&self) -> Result<tantivy::Searcher> {
        Ok(self.reader()?.searcher())
    }

    pub(crate) fn writer(&self) -> Result<Bm25Writer<'_>> {
        self.check_format()?;
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(2));
        let options = IndexWriterOptions::builder()
            .num_worker_threads(threads)
            .memory_budget_per_thread(WRITER_MEMORY_BYTES / threads)
            .num_merge_threads(MERGE_THREADS)
            .build();
        let writer: IndexWriter = self.index.writer_with_options(options)?;
        writer.set_merge_policy(Box::new(BoundedMergePolicy::new(self.path.clone())));
        Ok(Bm25Writer {
            index: self,
            writer,
            queue: DocumentQueue::new(self.taken_up.clone()),
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
        self.check_format()?;
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

    /// Top `limit` chunk ids by BM25 among the documents `filter` lets through, best first. When the query asks for bucket terms, a hit is kept only if `holds` says its
    /// chunk's text holds one of the query's terms (asked for each chunk once, a fetch's worth
    /// at a time); more hits are fetched to make up for the ones dropped.
    pub(crate) fn search(
        &self,
        query: &str,
        filter: DocumentFilter<'_>,
        limit: usize,
        holds: &mut HoldsTerms<'_>,
    ) -> Result<Vec<(i64, f32)>> {
        self.check_format()?;
        let plan = query_plan(query, self.format);
        let no_buffers = matches!(filter, DocumentFilter::Buffers(buffers) if buffers.is_empty());
        if plan.terms.is_empty() || no_buffers || limit == 0 {
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
        let query: Box<dyn Query> = match filter {
            DocumentFilter::All | DocumentFilter::Glob(_) => text_query,
            DocumentFilter::Buffers(buffers) => {
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
        let mut ranking = match filter {
            DocumentFilter::Glob(glob) => {
                Ranking::Glob(FilteredSearch::new(&searcher, query.as_ref(), glob)?)
            }
            _ => Ranking::All(query.weight(EnableScoring::enabled_from_searcher(&searcher))?),
        };
        // Hits come in one total order (score, then chunk id: `TopHits`), so the first
        // `limit` are the answer unless some are dropped for not holding a bucket term; then
        // a deeper list is asked for.
        let mut checked: HashMap<i64, bool> = HashMap::new();
        let mut fetch = limit;
        loop {
            let new_top = |depth| TopHits::new(&searcher, self.text, &plan.terms, depth);
            let mut hits = match &mut ranking {
                // A glob most documents match: the unfiltered top hits checked afterwards.
                Ranking::Glob(filtered) => match filtered.verified_top(fetch, new_top)? {
                    Some(hits) => hits,
                    None => {
                        let mut top = new_top(fetch)?;
                        filtered.collect(&mut top)?;
                        top.into_sorted()
                    }
                },
                Ranking::All(weight) => {
                    let mut top = new_top(fetch)?;
                    for ordinal in 0..searcher.segment_readers().len() as u32 {
                        top.collect_segment(ordinal, weight.as_ref(), &mut |_| Ok(true))?;
                    }
                    top.into_sorted()
                }
            };
            let exhausted = hits.len() < fetch;
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
            if exhausted || hits.len() >= limit {
                hits.truncate(limit);
                return Ok(hits);
            }
            fetch = fetch.saturating_mul(2);
        }
    }
}

/// How a query's documents are ranked: among those a glob accepts, or all it matches.
enum Ranking<'a> {
    Glob(FilteredSearch<'a>),
    All(Box<dyn Weight>),
}

/// The schema of a new index (`fields` is less than [`BufferFields::NamesAndComponents`] only
/// to write an index as older rlm versions did).
fn schema(fields: BufferFields) -> Schema {
    let mut builder = Schema::builder();
    builder.add_u64_field("chunk_id", NumericOptions::default().set_fast());
    builder.add_u64_field("buffer_id", INDEXED);
    let indexing = TextFieldIndexing::default()
        .set_tokenizer(CODE_TOKENIZER)
        // BM25 needs term frequencies only; positions would grow the index for phrase
        // queries we do not offer.
        .set_index_option(IndexRecordOption::WithFreqs);
    builder.add_text_field(
        "text",
        TextOptions::default().set_indexing_options(indexing),
    );
    // Columns only (no terms): each segment keeps one sorted dictionary of the names its
    // documents hold and one ordinal per document.
    if fields >= BufferFields::Names {
        for field in [
            NAME_FIELD,
            PATH_FIELD,
            REVERSED_NAME_FIELD,
            REVERSED_PATH_FIELD,
        ] {
            builder.add_text_field(field, FAST);
        }
    }
    // Terms only (no column, no norms, no frequencies): a glob asks which documents hold one.
    if fields >= BufferFields::NamesAndComponents {
        let indexing = TextFieldIndexing::default()
            .set_tokenizer("raw")
            .set_index_option(IndexRecordOption::Basic)
            .set_fieldnorms(false);
        builder.add_text_field(
            COMPONENT_FIELD,
            TextOptions::default().set_indexing_options(indexing),
        );
    }
    builder.build()
}

/// The format an index's last commit records (an index without segments is written in the
/// current one).
/// The format an index's last commit records: no payload (written before formats were
/// recorded), or ours; `Err` with the recorded text for any other, which only a newer rlm
/// writes.
fn format_of(index: &Index) -> Result<std::result::Result<IndexFormat, String>> {
    let metas = index.load_metas()?;
    Ok(match metas.payload.as_deref() {
        _ if metas.segments.is_empty() => Ok(IndexFormat::UniqueHashed),
        Some(UNIQUE_HASHED_PAYLOAD) => Ok(IndexFormat::UniqueHashed),
        None => Ok(IndexFormat::RandomLeftOut),
        Some(other) => Err(other.to_owned()),
    })
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
    /// What it holds for unique-looking tokens, or the format a newer rlm recorded.
    pub(crate) format: std::result::Result<IndexFormat, String>,
    /// Whether its documents carry their buffer's name and path.
    pub(crate) buffer_names: bool,
    /// Whether its documents carry the components of their buffer's name and path as terms.
    pub(crate) path_components: bool,
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
        buffer_names: [
            NAME_FIELD,
            PATH_FIELD,
            REVERSED_NAME_FIELD,
            REVERSED_PATH_FIELD,
        ]
        .iter()
        .all(|field| index.schema().get_field(field).is_ok()),
        path_components: index.schema().get_field(COMPONENT_FIELD).is_ok(),
        corrupted,
        live_segments: index
            .searchable_segment_ids()?
            .iter()
            .map(tantivy::index::SegmentId::uuid_string)
            .collect(),
    }))
}

/// Bytes of a document besides its text and its buffer's name and path (twice each, plus their
/// components): two numbers and each value's length.
const DOCUMENT_OVERHEAD_BYTES: usize = 64;

/// An open index writer; dropping it without [`Bm25Writer::commit`] discards its changes.
pub(crate) struct Bm25Writer<'a> {
    index: &'a Bm25Index,
    writer: IndexWriter,
    queue: DocumentQueue,
}

impl Bm25Writer<'_> {
    pub(crate) fn delete_buffer(&self, buffer_id: i64) {
        self.writer
            .delete_term(Term::from_field_u64(self.index.buffer_id, buffer_id as u64));
    }

    pub(crate) fn add_chunk(
        &self,
        chunk_id: i64,
        buffer: &IndexedBuffer<'_>,
        text: &str,
    ) -> Result<()> {
        // Sized for its values: tantivy's default (1 KB, doubled as needed) would hold a 2 KB
        // chunk in 4 KB, and up to 10,000 documents wait in its queue.
        let names = buffer.name.len() + buffer.path.map_or(0, str::len);
        let mut document =
            TantivyDocument::with_capacity(text.len() + 3 * names + DOCUMENT_OVERHEAD_BYTES);
        document.add_u64(self.index.chunk_id, chunk_id as u64);
        document.add_u64(self.index.buffer_id, buffer.id as u64);
        document.add_text(self.index.text, text);
        if let Some([name, path, reversed_name, reversed_path]) = self.index.names {
            document.add_text(name, buffer.name);
            document.add_text(reversed_name, reversed(buffer.name));
            if let Some(buffer_path) = buffer.path {
                document.add_text(path, buffer_path);
                document.add_text(reversed_path, reversed(buffer_path));
            }
        }
        if let Some(components) = self.index.components {
            for component in component_terms(buffer.name, buffer.path) {
                document.add_text(components, component);
            }
        }
        self.writer.add_document(document)?;
        if self.queue.sent(text.len() as u64) == Waited::Stalled {
            tracing::debug!("the indexing threads took up no text for a while; not waiting");
        }
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::atomic::Ordering;

    use super::*;

    #[test]
    fn the_indexing_threads_count_every_chunk_they_take_up() {
        let dir = tempfile::tempdir().unwrap();
        let index = Bm25Index::open(dir.path()).unwrap();
        let buffer = IndexedBuffer {
            id: 1,
            name: "app.log",
            path: Some("/var/log/app.log"),
        };
        let texts: Vec<String> = (0..500)
            .map(|n| format!("request {n} failed with timeout {}", "x".repeat(n % 50)))
            .collect();
        let writer = index.writer().unwrap();
        for (id, text) in texts.iter().enumerate() {
            writer.add_chunk(id as i64, &buffer, text).unwrap();
        }
        writer.commit().unwrap();
        let total: usize = texts.iter().map(String::len).sum();
        assert_eq!(index.taken_up.load(Ordering::Relaxed), total as u64);
        assert_eq!(index.document_count().unwrap(), 500);
    }
}
