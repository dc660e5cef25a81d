//! [`Store`]: the one store type every command uses, over either backend.
//!
//! A store is a directory on this machine (SQLite + tantivy: [`crate::store::LocalStore`], the
//! default) or a schema in a PostgreSQL database that a team shares (feature `postgres`).
//! Both answer the same calls with the same results: the same buffers and chunks, the same BM25
//! ranking (one tokenizer, one scoring), the same grep lines. Which one a store is shows only in
//! where it is ([`StoreLocation`]) and in [`Store::status`]'s sizes.

use std::ops::{ControlFlow, Range};
use std::path::{Path, PathBuf};

use rlm_context::chunk::ChunkOptions;
use rlm_context::root::FileRoot;
use rlm_embed::{Embedder, ModelId};

use crate::admin::StoreStatus;
use crate::embed::{EmbedProgress, EmbeddingStatus};
#[cfg(not(feature = "postgres"))]
use crate::error::Error;
use crate::error::Result;
use crate::grep::{GrepLine, GrepOptions, GrepSummary};
use crate::load::{Batch, LoadEvent, LoadReport, Source};
use crate::location::StoreLocation;
#[cfg(feature = "postgres")]
use crate::postgres::PostgresStore;
use crate::read::{BufferInfo, ChunkInfo, LinesWithin};
use crate::reindex::ReindexReport;
use crate::search::{SearchOutcome, SearchRequest};
use crate::store::{IndexHealth, IndexProgress, LocalStore};

/// An open store: its buffers, chunks, BM25 index and vectors.
///
/// Open a directory with [`Store::open`], or any location (a directory or a PostgreSQL URL)
/// with [`Store::open_at`]. Reads take `&self`; writes (`load`, `delete`, `embed`) take
/// `&mut self` and are each one transaction: a reader never sees half of one.
#[derive(Debug)]
pub struct Store {
    backend: Backend,
    /// The root the files a load reads must lie in: a store opened within one reads its
    /// sources within it too, each opened from the root ([`FileRoot::open`]).
    sources_within: Option<FileRoot>,
    /// Whether a load's report lists each buffer written or left unchanged (by default), or
    /// only counts them ([`Store::set_list_loaded`]).
    list_loaded: bool,
}

#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "a process holds a store or two; the local store, the common case, stays inline"
)]
enum Backend {
    Local(LocalStore),
    #[cfg(feature = "postgres")]
    Postgres(Box<PostgresStore>),
}

/// Runs `$body` with `$store` bound to the backend, whichever it is.
macro_rules! dispatch {
    ($self:expr, $store:ident => $body:expr) => {
        match $self {
            Backend::Local($store) => $body,
            #[cfg(feature = "postgres")]
            Backend::Postgres($store) => $body,
        }
    };
}

impl Store {
    /// Opens (creating if needed) the store in directory `dir`, applies schema migrations, and,
    /// when no other writer is running, replays unfinished index work and removes temporary
    /// files left by a killed writer.
    ///
    /// A directory holding a damaged store is not taken for a new one: an empty (0-byte) or
    /// foreign `store.sqlite`, a database without the store marker, or a missing database
    /// beside an index is [`Error::Damaged`], and nothing is written. An index that cannot be
    /// read is [`Error::IndexDamaged`] ([`Store::reindex`] rebuilds it).
    pub fn open(dir: impl AsRef<Path>) -> Result<Self> {
        Ok(Self::local(LocalStore::open(dir)?))
    }

    /// [`Store::open`] for a store that must lie within `root`: the directory and every file
    /// and link in it and in `bm25/` (and SQLite's `-wal`/`-shm` beside the database a link
    /// leads to) must resolve inside the root, or [`Error::OutsideRoot`] names the first that
    /// does not, before anything is opened or created.
    /// The files a load of it reads are opened below `root` too, from a descriptor of it, so
    /// that a file swapped for a link after it was found is refused, not read.
    pub fn open_within(dir: impl AsRef<Path>, root: &FileRoot) -> Result<Self> {
        let mut store = Self::local(LocalStore::open_within(dir, root)?);
        store.sources_within = Some(root.clone());
        Ok(store)
    }

    /// Opens (creating if needed) the store at `location`: a directory as [`Store::open`]
    /// (within `root` when one is given, as [`Store::open_within`]), or a PostgreSQL schema,
    /// created with its tables when missing (a root concerns files only).
    pub fn open_at(location: &StoreLocation, root: Option<&FileRoot>) -> Result<Self> {
        match location {
            StoreLocation::Directory(dir) => match root {
                Some(root) => Self::open_within(dir, root),
                None => Self::open(dir),
            },
            #[cfg(feature = "postgres")]
            StoreLocation::Postgres(postgres) => Ok(Self {
                backend: Backend::Postgres(Box::new(PostgresStore::open(postgres, true)?)),
                sources_within: root.cloned(),
                list_loaded: true,
            }),
            #[cfg(not(feature = "postgres"))]
            StoreLocation::Postgres(_) => Err(missing_backend(location)),
        }
    }

    /// Whether a store is at `location` (a directory with a store's database or index, or a
    /// PostgreSQL schema with a store's tables); creates nothing. A server that cannot be
    /// reached is an error, not a `false`.
    pub fn exists_at(location: &StoreLocation) -> Result<bool> {
        match location {
            StoreLocation::Directory(dir) => Ok(dir.join(crate::store::DATABASE).is_file()
                || dir.join(crate::store::INDEX).join("meta.json").is_file()),
            #[cfg(feature = "postgres")]
            StoreLocation::Postgres(postgres) => PostgresStore::exists(postgres),
            #[cfg(not(feature = "postgres"))]
            StoreLocation::Postgres(_) => Err(missing_backend(location)),
        }
    }

    fn local(store: LocalStore) -> Self {
        Self {
            backend: Backend::Local(store),
            sources_within: None,
            list_loaded: true,
        }
    }

    /// Where the store is: its directory, or for a PostgreSQL store its URL without password
    /// (as text in a path, for logs that record where a store was).
    pub fn dir(&self) -> &Path {
        dispatch!(&self.backend, store => store.dir())
    }

    /// Where the store is.
    pub fn location(&self) -> StoreLocation {
        match &self.backend {
            Backend::Local(store) => StoreLocation::Directory(store.dir().to_owned()),
            #[cfg(feature = "postgres")]
            Backend::Postgres(store) => StoreLocation::Postgres(store.location().clone()),
        }
    }

    /// Whether the BM25 index holds exactly the stored chunks. Cheap: two counts.
    pub fn index_health(&self) -> Result<IndexHealth> {
        dispatch!(&self.backend, store => store.index_health())
    }

    /// Deletes buffers in one transaction; returns what was deleted. Each pattern is what
    /// [`Store::select_buffers`] takes: a name, id, unique path suffix, glob or directory.
    pub fn delete(&mut self, patterns: &[String]) -> Result<Vec<BufferInfo>> {
        dispatch!(&mut self.backend, store => store.delete(patterns))
    }

    /// Sizes, counts and index state.
    pub fn status(&self) -> Result<StoreStatus> {
        dispatch!(&self.backend, store => store.status())
    }

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
        dispatch!(&mut self.backend, store => store.embed(embedder, reset, progress))
    }

    /// The model the stored vectors come from, if any vectors were ever computed.
    pub fn embedding_model(&self) -> Result<Option<ModelId>> {
        dispatch!(&self.backend, store => store.embedding_model())
    }

    /// Which model, and how many chunks have vectors.
    pub fn embedding_status(&self) -> Result<EmbeddingStatus> {
        dispatch!(&self.backend, store => store.embedding_status())
    }

    /// Calls `emit` for every matching line (and context line) of the selected buffers, in
    /// buffer-name order. Return `Break` from `emit` to stop early.
    ///
    /// Patterns match within one line, as ripgrep's do: a pattern that needs a line break
    /// (`a\nb`) is refused, and classes such as `\s` do not match one.
    pub fn grep(
        &self,
        pattern: &str,
        options: &GrepOptions,
        emit: &mut dyn FnMut(GrepLine<'_>) -> ControlFlow<()>,
    ) -> Result<GrepSummary> {
        dispatch!(&self.backend, store => store.grep(pattern, options, emit))
    }

    /// All buffers, by name.
    pub fn list(&self) -> Result<Vec<BufferInfo>> {
        dispatch!(&self.backend, store => store.list())
    }

    /// The whole text of a buffer.
    pub fn text(&self, buffer: &BufferInfo) -> Result<String> {
        dispatch!(&self.backend, store => store.text(buffer))
    }

    /// Bytes `range` of a buffer, widened to character boundaries.
    pub fn read_bytes(&self, buffer: &BufferInfo, range: Range<u64>) -> Result<String> {
        dispatch!(&self.backend, store => store.read_bytes(buffer, range))
    }

    /// Lines `first..=last` (1-based) of a buffer, each with its newline.
    pub fn read_lines(&self, buffer: &BufferInfo, first: u64, last: u64) -> Result<String> {
        dispatch!(&self.backend, store => store.read_lines(buffer, first, last))
    }

    /// Lines `first..=last` of a buffer, at most `max_bytes` of them. A local store reads no
    /// more than that; PostgreSQL fetches at most one segment (8–64 KiB) more.
    pub fn read_lines_within(
        &self,
        buffer: &BufferInfo,
        first: u64,
        last: u64,
        max_bytes: u64,
    ) -> Result<LinesWithin> {
        dispatch!(&self.backend, store => store.read_lines_within(buffer, first, last, max_bytes))
    }

    /// Every chunk of a buffer, in order.
    pub fn chunks_of(&self, buffer: &BufferInfo) -> Result<Vec<ChunkInfo>> {
        dispatch!(&self.backend, store => store.chunks_of(buffer))
    }

    /// Every chunk of each of `buffers`, buffer after buffer, each in order (a buffer listed
    /// twice gets its chunks twice).
    pub fn chunks_of_each(&self, buffers: &[BufferInfo]) -> Result<Vec<ChunkInfo>> {
        dispatch!(&self.backend, store => store.chunks_of_each(buffers))
    }

    /// A chunk's location.
    pub fn chunk(&self, id: i64) -> Result<ChunkInfo> {
        dispatch!(&self.backend, store => store.chunk(id))
    }

    /// A chunk's text, with the CSV header in front when the chunk has one.
    pub fn chunk_text(&self, id: i64) -> Result<String> {
        dispatch!(&self.backend, store => store.chunk_text(id))
    }

    /// The texts of several chunks, in the order of `ids`, as [`Store::chunk_text`] gives them.
    pub fn chunk_texts(&self, ids: &[i64]) -> Result<Vec<String>> {
        dispatch!(&self.backend, store => store.chunk_texts(ids))
    }

    /// Rebuilds the BM25 index of the store in directory `dir` from its stored chunks,
    /// replacing whatever `bm25/` holds (nothing, an index out of step, or one that cannot be
    /// read). Works without opening the old index. Takes the write lock, like a load.
    pub fn reindex(
        dir: impl AsRef<Path>,
        progress: &mut dyn FnMut(IndexProgress),
    ) -> Result<ReindexReport> {
        LocalStore::reindex(dir, progress)
    }

    /// [`Store::reindex`] of the store at `location`: for PostgreSQL, the postings of every
    /// chunk written again from the stored text, in one transaction, under the store's lock.
    pub fn reindex_at(
        location: &StoreLocation,
        progress: &mut dyn FnMut(IndexProgress),
    ) -> Result<ReindexReport> {
        match location {
            StoreLocation::Directory(dir) => Self::reindex(dir, progress),
            #[cfg(feature = "postgres")]
            StoreLocation::Postgres(postgres) => {
                PostgresStore::open(postgres, false)?.reindex(progress)
            }
            #[cfg(not(feature = "postgres"))]
            StoreLocation::Postgres(_) => Err(missing_backend(location)),
        }
    }

    /// Searches chunks with BM25 (semantic and hybrid requests fall back to BM25 with a
    /// notice; use [`Store::search_with`] to pass an embedding model).
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
        dispatch!(&self.backend, store => store.search_with(request, embedder))
    }

    /// A buffer by exact name; else by id when `name` is a number no buffer is named; else the
    /// one buffer whose name or path ends with `name` at a `/` (so `app.py` or `src/app.py`
    /// finds `/home/me/project/src/app.py`). Several such buffers are an
    /// [`Error::AmbiguousBuffer`] listing them.
    pub fn buffer(&self, name: &str) -> Result<BufferInfo> {
        dispatch!(&self.backend, store => store.buffer(name))
    }

    /// What a delete of `pattern` removes: the buffer [`Store::buffer`] finds; else, for a
    /// glob (`*`, `?`, `[`, `{`), every buffer whose name or path matches it; else every
    /// buffer loaded from under the directory `pattern` (by name prefix or path). Nothing
    /// found is an [`Error::UnknownBuffer`].
    pub fn select_buffers(&self, pattern: &str) -> Result<Vec<BufferInfo>> {
        dispatch!(&self.backend, store => store.select_buffers(pattern))
    }

    /// Buffers passing the name/id and path-glob filters (all buffers when both are empty).
    /// Names are resolved as [`Store::buffer`] resolves them.
    pub fn filter_buffers(
        &self,
        names: &[String],
        path_glob: Option<&str>,
    ) -> Result<Vec<BufferInfo>> {
        dispatch!(&self.backend, store => store.filter_buffers(names, path_glob))
    }

    /// The largest source, in bytes of text, a load stores as a buffer; a larger one is skipped
    /// with a reason. By default [`Store::buffer_ceiling`].
    pub fn max_buffer_bytes(&self) -> u64 {
        dispatch!(&self.backend, store => store.max_buffer_bytes())
    }

    /// The most one buffer can hold: 2,147,483,576 bytes (2 GiB) in a local store as this
    /// workspace builds SQLite.
    pub fn buffer_ceiling(&self) -> u64 {
        dispatch!(&self.backend, store => store.buffer_ceiling())
    }

    /// Makes later loads skip sources over `bytes` of text (`rlm load --max-file-size`).
    /// [`Error::BufferLimit`] unless `bytes` is from 1 to [`Store::buffer_ceiling`].
    pub fn set_max_buffer_bytes(&mut self, bytes: u64) -> Result<()> {
        dispatch!(&mut self.backend, store => store.set_max_buffer_bytes(bytes))
    }

    /// Loads `sources` in one transaction and indexes them for BM25.
    ///
    /// Unchanged content (same SHA-256 and chunk options under the same name) is a no-op;
    /// changed content replaces the old buffer and its chunks. Binary and over-large sources
    /// are skipped and reported; invalid UTF-8 is stored as U+FFFD with a note in
    /// [`LoadedBuffer::notes`](crate::LoadedBuffer::notes). An unreadable file or a `Break`
    /// from `progress` aborts the whole load with nothing written. Files over 16 MiB are
    /// streamed in 4 MiB pieces rather than held whole, unless the options need the whole
    /// text (`structure` or `code` with overlap); a file that changes while it is read aborts
    /// the load. A [`Source::Reader`] is read here, once.
    pub fn load(
        &mut self,
        sources: Vec<Source>,
        options: &ChunkOptions,
        progress: &mut dyn FnMut(LoadEvent<'_>) -> ControlFlow<()>,
    ) -> Result<LoadReport> {
        self.load_and_prune(sources, &[], options, progress)
    }

    /// Loads like [`Store::load`] and, in the same transaction, removes every buffer loaded
    /// from a file under one of `directories` that no longer exists, so re-loading a directory
    /// follows deletions. Their names are in [`LoadReport::removed`].
    pub fn load_and_prune(
        &mut self,
        sources: Vec<Source>,
        directories: &[PathBuf],
        options: &ChunkOptions,
        progress: &mut dyn FnMut(LoadEvent<'_>) -> ControlFlow<()>,
    ) -> Result<LoadReport> {
        let within = self.sources_within.as_ref();
        let batch = Batch {
            sources,
            prune: directories,
            list: self.list_loaded,
        };
        dispatch!(&mut self.backend, store => store.load_and_prune(batch, options, progress, within))
    }

    /// Whether the reports of later loads list each buffer written and left unchanged (the
    /// default) or only count them in [`LoadReport::totals`], leaving `loaded` and `unchanged`
    /// empty. A caller that has no use for the lists (it shows a summary, and hears each
    /// buffer as a [`LoadEvent::Loaded`] anyway) keeps the memory of a load of many files
    /// flat: the lists take about 180 bytes a file, 15 MB for 81k files.
    pub fn set_list_loaded(&mut self, list: bool) {
        self.list_loaded = list;
    }
}

/// What only `rlm store copy` needs of a backend.
impl Store {
    pub(crate) fn stored_options(&self, buffer_id: i64) -> Result<String> {
        dispatch!(&self.backend, store => store.stored_options(buffer_id))
    }

    pub(crate) fn raw_vectors(&self, chunk_ids: &[i64]) -> Result<Vec<(i64, Vec<u8>)>> {
        dispatch!(&self.backend, store => store.raw_vectors(chunk_ids))
    }

    pub(crate) fn put_vectors(
        &mut self,
        model: &str,
        dimension: usize,
        vectors: &[(i64, Vec<u8>)],
    ) -> Result<()> {
        dispatch!(&mut self.backend, store => store.put_vectors(model, dimension, vectors))
    }
}

#[cfg(not(feature = "postgres"))]
fn missing_backend(location: &StoreLocation) -> Error {
    Error::BackendMissing {
        location: location.to_string(),
        feature: "postgres",
    }
}
