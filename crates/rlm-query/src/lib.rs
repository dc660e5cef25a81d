//! The agentic query pipeline of rlm: answer one analytic question over a whole store with a
//! written report whose claims cite chunk ids.
//!
//! 1. **Plan** — the primary model reads the question and a description of the store (buffers,
//!    sizes, chunk counts) and chooses queries, search mode, `top_k`, batch size and buffers
//!    ([`plan`]). A reply that does not parse falls back to a default plan, and the result says
//!    so ([`PlanSource`]). Whatever the caller set in [`QueryOptions`] wins over the plan.
//! 2. **Select** — the plan's queries through `rlm-store` (BM25, semantic or hybrid; buffer and
//!    path filters before ranking), merged without duplicates, with fallbacks when nothing is
//!    found; or, with [`ScanMode::All`], every chunk of the selection after an estimate that a
//!    money budget must cover.
//! 3. **Extract** — batches of chunks go to the sub-call model concurrently. Chunk text is
//!    fenced as data ([`fence`]); each reply must be `{"results": [...]}` with exactly one
//!    valid entry per chunk of its batch. An invalid reply is asked again once with the reason,
//!    then the batch is split in halves; a chunk that still fails is reported, never dropped.
//! 4. **Collect** — the threshold, identical findings merged, most relevant first, then corpus
//!    order.
//! 5. **Synthesize** — the primary model writes a Markdown report; findings too large for one
//!    call are reduced in groups first, never cut. The final call may pull more evidence with
//!    tools ([`tools`]: `get_chunks`, `search`, `grep`) for `max_tool_rounds` rounds, when the
//!    model has native tool calling.
//!
//! Every call goes through one `rlm_llm::LlmClient` (its provider limiter, retries and prices)
//! under a ledger per stage below a ledger with the query's budget, so reservations keep
//! concurrent batches within `--max-cost`/`--max-tokens`. Under a budget the pipeline also keeps
//! a reserve for the report: batches are sent only while they fit beside it, the chunks left
//! are reported as skipped (`budget`), and a budget that cannot cover the plan, one batch and
//! the report is refused before anything is spent. Each call is logged with `rlm-trace`.
//!
//! ```no_run
//! use rlm_query::{Query, QueryOptions};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let client = rlm_llm::LlmClient::builder()
//!     .builtin_providers(&|name| std::env::var(name).ok())
//!     .build()?;
//! let store = rlm_store::Store::open(".rlm")?;
//! let options = QueryOptions::new("openai:gpt-4o", "openai:gpt-4o-mini");
//! let result = Query::new(client, store, options)
//!     .run("How does authentication fail on token refresh?")
//!     .await?;
//! println!("{}", result.report);
//! # Ok(())
//! # }
//! ```

mod budget;
pub mod citations;
pub mod collect;
mod error;
mod events;
pub mod extract;
pub mod fence;
mod options;
mod pipeline;
pub mod plan;
mod prompts;
mod run;
mod schema;
pub mod select;
pub mod synthesize;
pub mod tools;
mod trace;

#[cfg(test)]
mod limits_tests;
#[cfg(test)]
mod overrun_tests;
#[cfg(test)]
mod synthesis_tests;
#[cfg(test)]
mod tests;

pub use collect::ChunkFindings;
pub use error::{Error, Result};
pub use events::{QueryEvent, QueryEvents};
pub use extract::{BatchFailure, ChunkExtraction, ChunkFailure};
pub use options::{
    DEFAULT_BATCH_SIZE, DEFAULT_EXTRACT_MAX_TOKENS, DEFAULT_MAX_CONCURRENCY,
    DEFAULT_MAX_TOOL_ROUNDS, DEFAULT_SECONDS_PER_ROUND, DEFAULT_SYNTHESIS_INPUT_CHARS,
    DEFAULT_SYNTHESIS_MAX_TOKENS, DEFAULT_TOP_K, MAX_TOOL_ROUNDS, QueryOptions, Relevance,
    ScanMode, Threshold,
};
pub use pipeline::{
    Query, QueryResult, QueryStatus, ReserveReport, StageUsage, TimeLimit, Timings, ToolUsage,
};
pub use plan::{Plan, PlanSource};
pub use prompts::{PROMPT_FILES, PromptError, QueryPrompts};
pub use tools::ToolCallSummary;
