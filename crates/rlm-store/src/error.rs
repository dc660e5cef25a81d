//! The crate's error type.

use std::path::PathBuf;

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The SQLite database failed.
    #[error("store database error")]
    Database(#[from] rusqlite::Error),
    /// The tantivy index failed.
    #[error("search index error")]
    Index(#[from] tantivy::TantivyError),
    /// The tantivy index directory could not be opened.
    #[error("cannot open the search index at {path}")]
    IndexDirectory {
        /// The index directory.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: tantivy::directory::error::OpenDirectoryError,
    },
    /// A file or the store directory could not be read or written.
    #[error("{action} {path}")]
    Io {
        /// What was being done, e.g. "cannot read".
        action: &'static str,
        /// The path involved.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
    /// The chunking parameters were invalid.
    #[error(transparent)]
    Chunk(#[from] rlm_context::chunk::ChunkError),
    /// No buffer has this name or id.
    #[error("no buffer named {0:?} in the store")]
    UnknownBuffer(String),
    /// Several buffers end with this name; the caller should give more of the path.
    #[error("{name:?} matches {matches} buffers: {}", candidates.join(", "))]
    AmbiguousBuffer {
        /// The name as given.
        name: String,
        /// How many buffers it matches.
        matches: usize,
        /// Some of their names (the first ten, then "and N more").
        candidates: Vec<String>,
    },
    /// No chunk has this id.
    #[error("no chunk with id {0} in the store")]
    UnknownChunk(i64),
    /// A path glob did not parse.
    #[error("invalid path glob {glob:?}")]
    Glob {
        /// The glob as given.
        glob: String,
        /// What went wrong.
        #[source]
        source: globset::Error,
    },
    /// A path glob past the length or nesting the store takes (`select::check_glob`).
    #[error("the path glob {preview:?} is too complex ({reason}); write a shorter or flatter one")]
    GlobTooComplex {
        /// The glob's first 40 characters.
        preview: String,
        /// Which limit it passed, and by how much.
        reason: String,
    },
    /// A grep pattern did not parse.
    #[error("invalid regular expression")]
    Regex(#[source] grep_regex::Error),
    /// A grep pattern did not parse, said of the pattern as the user wrote it.
    #[error("invalid regular expression")]
    Pattern(#[source] Box<regex_syntax::Error>),
    /// A range (lines or bytes) was outside the buffer or reversed.
    #[error("{0}")]
    Range(String),
    /// A buffer is larger than SQLite can hold in one value.
    #[error("{name} is {size} bytes; the store holds buffers up to {limit} bytes")]
    TooLarge {
        /// The buffer name.
        name: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// A buffer size limit that is zero or more than SQLite holds in one value
    /// ([`Store::set_max_buffer_bytes`](crate::Store::set_max_buffer_bytes)).
    #[error(
        "a buffer limit of {requested} bytes is outside what the store can hold: 1 to {ceiling} bytes"
    )]
    BufferLimit {
        /// The limit asked for.
        requested: u64,
        /// The most one buffer can hold.
        ceiling: u64,
    },
    /// The database was written by a newer rlm.
    #[error("the store schema version {found} is newer than this rlm understands ({supported})")]
    SchemaTooNew {
        /// Version in the file.
        found: i64,
        /// Newest version this build knows.
        supported: i64,
    },
    /// The search index records a format only a newer rlm writes.
    #[error(
        "the search index {path} was written by a newer rlm (format `{recorded}`); this rlm \
         searches and writes `{supported}` and leaves it untouched"
    )]
    IndexTooNew {
        /// The index directory.
        path: PathBuf,
        /// The format its last commit records.
        recorded: String,
        /// The format this rlm writes.
        supported: &'static str,
    },
    /// The embedding model failed or its vectors do not match.
    #[error(transparent)]
    Embed(#[from] rlm_embed::Error),
    /// The store holds vectors of another model.
    #[error("the store holds vectors of model {stored}, not {requested}; mixing models is refused")]
    ModelMismatch {
        /// Model id of the stored vectors.
        stored: String,
        /// Model id asked for.
        requested: String,
    },
    /// The store directory holds a damaged store (an empty or foreign database, a missing
    /// marker, a missing database beside an index). Nothing was changed.
    #[error("the store at {dir} is damaged: {reason}")]
    Damaged {
        /// The store directory.
        dir: PathBuf,
        /// What is wrong, in a sentence.
        reason: String,
    },
    /// The BM25 index exists but cannot be read.
    #[error("cannot read the search index at {path}")]
    IndexDamaged {
        /// The index directory.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: Box<Error>,
    },
    /// The BM25 index does not hold the stored chunks (deleted, replaced or damaged).
    #[error("the search index holds {indexed} documents but the store has {chunks} chunks")]
    IndexOutOfStep {
        /// Documents in the index.
        indexed: u64,
        /// Chunks in SQLite.
        chunks: u64,
    },
    /// The caller asked to stop (Ctrl-C); nothing was written.
    #[error("interrupted; nothing was written")]
    Interrupted,
    /// A file of the store resolves outside the root it was opened within
    /// ([`Store::open_within`](crate::Store::open_within)); nothing was read.
    #[error("{0}")]
    OutsideRoot(#[source] rlm_context::root::OutsideRoot),
    /// A store location (a PostgreSQL URL) did not parse. The location is shown without its
    /// password.
    #[error("invalid store location {location}: {reason}")]
    InvalidLocation {
        /// The location, password masked.
        location: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No store is at this location (and the caller asked not to create one).
    #[error("no store at {location}")]
    NoStore {
        /// The location, without password.
        location: String,
    },
    /// The location needs a backend this build of rlm-store does not have.
    #[error(
        "{location} needs the {feature} backend, which this build leaves out (cargo feature `{feature}`)"
    )]
    BackendMissing {
        /// The location, without password.
        location: String,
        /// The cargo feature that builds it.
        feature: &'static str,
    },
    /// The PostgreSQL server failed or refused.
    #[cfg(feature = "postgres")]
    #[error("{context}")]
    Postgres {
        /// What was being done, and where (the location without password).
        context: String,
        /// What went wrong.
        #[source]
        source: Box<crate::postgres::ServerError>,
    },
}

/// Shorthand for results in this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

pub(crate) fn io(
    action: &'static str,
    path: impl Into<PathBuf>,
) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.into();
    move |source| Error::Io {
        action,
        path,
        source,
    }
}
