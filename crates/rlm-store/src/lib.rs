//! Embedded store for rlm: buffers and chunks in SQLite, BM25 search with tantivy, and fusion
//! with semantic search.
//!
//! A store is one directory: `store.sqlite` holds every buffer's text **once** (chunks are byte
//! ranges into it) plus chunk metadata, and `bm25/` holds a tantivy index whose tokenizer emits
//! code identifiers whole and split (`getLogger` → `getlogger get logger`). Loads are atomic
//! (one SQLite transaction; the index is brought up to date from a durable work queue, see
//! [`Store`]), unchanged content is not re-loaded, and concurrent writers wait for each other.
//!
//! ```
//! use rlm_context::chunk::ChunkOptions;
//! use rlm_store::{SearchRequest, Source, Store};
//!
//! # fn main() -> Result<(), rlm_store::Error> {
//! let dir = std::env::temp_dir().join(format!("rlm-store-doc-{}", std::process::id()));
//! let mut store = Store::open(&dir)?;
//! let source = Source::Text {
//!     name: "app.py".into(),
//!     text: "import logging\nlog = logging.getLogger(__name__)\n".into(),
//! };
//! store.load(vec![source], &ChunkOptions::default(), &mut |_| std::ops::ControlFlow::Continue(()))?;
//! let outcome = store.search(&SearchRequest::new("logger"))?;
//! assert_eq!(outcome.hits[0].buffer, "app.py");
//! # drop(store);
//! # let _ = std::fs::remove_dir_all(&dir);
//! # Ok(())
//! # }
//! ```

mod admin;
mod backend;
mod copy;
mod doctor;
mod document_queue;
mod embed;
mod error;
mod grep;
mod index;
mod leftovers;
mod load;
mod location;
mod memory;
mod merge_policy;
mod name_filter;
mod page_reader;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(test)]
mod property_tests;
mod read;
mod reindex;
mod schema;
mod search;
mod select;
mod snippet;
mod store;
mod text;
pub mod tokenizer;
pub mod tools;
mod top_hits;
mod vector_file;

pub use admin::StoreStatus;
pub use backend::Store;
pub use copy::CopyReport;
pub use doctor::{Check, diagnose, diagnose_at};
pub use embed::{EmbedProgress, EmbeddingStatus};
pub use error::{Error, Result};
pub use grep::{GrepLine, GrepOptions, GrepSummary};
pub use load::{
    LoadEvent, LoadReport, LoadTotals, LoadedBuffer, SkippedSource, Source, WalkOptions,
    check_max_buffer_bytes, collect_sources, collect_sources_with,
};
pub use location::{DEFAULT_SCHEMA, PostgresLocation, StoreLocation, TlsMode};
pub use memory::release_freed_memory_promptly;
pub use read::{BufferInfo, ChunkInfo, LinesWithin};
pub use reindex::ReindexReport;
pub use search::{
    DEFAULT_RRF_K, SearchHit, SearchMode, SearchOutcome, SearchRequest, reciprocal_rank_fusion,
};
pub use select::{MAX_GLOB_BYTES, MAX_GLOB_NESTING};
pub use store::{IndexHealth, IndexProgress};
