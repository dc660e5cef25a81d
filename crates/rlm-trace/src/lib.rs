//! The trajectory log of an rlm run: a typed, versioned schema, a JSON Lines writer and a reader.
//!
//! A run writes one file: a [`RunMetadata`] line, one [`Iteration`] line per turn (the prompt,
//! the reply, each code block with its output and sub-calls), and a closing [`RunOutcome`]
//! line. Every line is a JSON object that starts with `type`, `timestamp` and `version`
//! ([`VERSION`]); the rest are the record's fields, documented field by field on the types here
//! and in `docs/trajectory.md`. A child run started by `rlm_query` writes its own file next to
//! its parent's, and the parent's [`Subcall`] names it.
//!
//! Chat messages and usage totals are the types model calls return ([`rlm_types::Message`],
//! [`rlm_types::ModelTotals`], [`rlm_types::UsageReport`], which `rlm-llm` re-exports): a log
//! holds the values the model layer produced, unconverted, and this crate builds without an
//! HTTP client.
//!
//! `rlm query` (`rlm-query`) writes its own record types ([`QueryMetadata`], [`QueryStage`],
//! [`QueryCall`], [`QueryTool`], [`QueryOutcome`]) with the same writer.
//!
//! A root run also writes a [`VariablesSnapshot`] (`variables`) before its result: the REPL's
//! variables, and which of them a later run of the same session can restore. Sessions
//! ([`SessionStore`]) and run listings ([`list_runs`], [`RunSummary`]) live here too: they are
//! what persists of runs.
//!
//! Writers are the RLM loop (`rlm-engine`) and the query pipeline; readers are the viewer
//! and session inspection. The reader keeps line types it does not know as
//! [`Record::Unknown`], so an older reader can still show a newer log.
//!
//! ```
//! use rlm_trace::{Record, RunOutcome, Status, Trajectory, TrajectoryWriter, UsageSummary};
//! use rlm_types::UsageReport;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! let log = TrajectoryWriter::create(dir.path(), "run")?;
//! // ... the metadata and iteration records, then:
//! log.write(&RunOutcome {
//!     run_id: "a1b2c3d4".to_owned(),
//!     status: Status::Answered,
//!     answer: Some("42".to_owned()),
//!     partial_answer: None,
//!     iterations: 1,
//!     usage: UsageReport::default(),
//!     subcalls: 0,
//!     usage_summary: UsageSummary::default(),
//!     seconds: 0.5,
//!     error: None,
//! })?;
//!
//! let read = Trajectory::read(log.path())?;
//! assert_eq!(read.outcome().and_then(|o| o.answer.as_deref()), Some("42"));
//! assert!(matches!(read.entries[0].record, Record::Result(_)));
//! # Ok(())
//! # }
//! ```

mod error;
mod large;
mod query;
mod reader;
mod runs;
mod schema;
mod session;
mod variables;
mod writer;

pub mod view;

pub use error::Error;
pub use large::{LARGE_VALUE_BYTES, LargeValue, LargeValues};
pub use query::{QueryCall, QueryMetadata, QueryOutcome, QueryStage, QueryTool};
pub use reader::{Entry, Record, Trajectory, TrajectoryReader, parse_line};
pub use runs::{RunSummary, TurnSummary, list_runs};
pub use schema::{
    BackendArguments, Budget, CodeBlock, CodeResult, ContextInfo, Contexts, HostCall, Iteration,
    ModelSummary, RecordType, RunMetadata, RunOutcome, Status, Subcall, SubcallKind, UsageSummary,
};
pub use session::{
    ContextState, Question, SESSION_VERSION, SessionContext, SessionFile, SessionStore,
    check_name as check_session_name, write_json as write_json_atomically,
};
pub use variables::{PREVIEW_CHARS, VariableInfo, VariablesSnapshot, preview};
pub use writer::{
    TrajectoryWriter, is_run_id, new_run_id, root_stem, root_stem_named, timestamp_now,
};

/// The schema version this crate writes (the `version` field of every line).
///
/// Version 1 is the first versioned schema. Logs written before it have no `version` (read as
/// 0) and may lack fields added since; those fields default when read. Version 2 writes text
/// values over [`LARGE_VALUE_BYTES`] as a preview and a marker ([`LargeValue`]), each value once
/// per file.
pub const VERSION: u32 = 2;

#[cfg(test)]
mod tests;
