//! The pipeline's public face: [`Query`] (what to run and how) and [`QueryResult`] (what came
//! of it). The stages themselves — plan → select → extract (concurrent batches) → collect →
//! synthesize — are [`QueryRun`]'s, in `run/`.

use std::path::PathBuf;
use std::sync::Arc;

use rlm_embed::Embedder;
use rlm_llm::{LlmClient, UsageReport};
use rlm_store::{SearchMode, Store};
use serde::Serialize;

use crate::collect::ChunkFindings;
use crate::error::Result;
use crate::events::QueryEvents;
use crate::extract::{BatchFailure, ChunkFailure};
use crate::options::{QueryOptions, ScanMode};
use crate::plan::{Plan, PlanSource};
use crate::prompts::QueryPrompts;
use crate::run::QueryRun;
use crate::tools::ToolCallSummary;

/// How a query ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum QueryStatus {
    /// The report was written from the findings.
    Answered,
    /// No chunk was found, or none of those analysed was relevant.
    NoEvidence,
    /// Every batch failed; nothing was analysed.
    ExtractionFailed,
    /// The findings are there but the report call failed; the report lists the findings.
    SynthesisFailed,
}

impl QueryStatus {
    /// The name written to logs.
    pub fn name(self) -> &'static str {
        match self {
            Self::Answered => "answered",
            Self::NoEvidence => "no_evidence",
            Self::ExtractionFailed => "extraction_failed",
            Self::SynthesisFailed => "synthesis_failed",
        }
    }
}

/// Usage of each stage; every call is counted, failed and repeated ones included.
#[derive(Debug, Clone, Default, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct StageUsage {
    /// The planner call.
    #[cfg_attr(
        feature = "schemars",
        schemars(with = "serde_json::Map<String, serde_json::Value>")
    )]
    pub plan: UsageReport,
    /// Every extractor call.
    #[cfg_attr(
        feature = "schemars",
        schemars(with = "serde_json::Map<String, serde_json::Value>")
    )]
    pub extract: UsageReport,
    /// Group reductions and the report, every model call of its tool rounds included.
    #[cfg_attr(
        feature = "schemars",
        schemars(with = "serde_json::Map<String, serde_json::Value>")
    )]
    pub synthesize: UsageReport,
    /// All of them.
    #[cfg_attr(
        feature = "schemars",
        schemars(with = "serde_json::Map<String, serde_json::Value>")
    )]
    pub total: UsageReport,
    /// The report's tool calls.
    pub tools: ToolUsage,
}

/// What the report's writer did with its tools.
#[derive(Debug, Clone, Copy, Default, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ToolUsage {
    /// Rounds of tool calls run.
    pub rounds: u32,
    /// Tool calls answered.
    pub calls: usize,
    /// Of those, the ones answered with an error.
    pub errors: usize,
    /// Bytes of tool results sent to the model.
    pub output_bytes: usize,
}

/// Wall time of each stage, in seconds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Timings {
    pub plan: f64,
    pub search: f64,
    pub extract: f64,
    pub synthesize: f64,
    pub total: f64,
}

/// Everything a query produced.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct QueryResult {
    /// Query id, also in the log's file name.
    pub run_id: String,
    /// How it ended.
    pub status: QueryStatus,
    /// The Markdown report.
    pub report: String,
    /// The plan that ran (after the caller's options).
    pub plan: Plan,
    /// Where the plan came from.
    pub plan_source: PlanSource,
    /// Plan fields the caller's options replaced.
    pub fixed_by_caller: Vec<&'static str>,
    /// `search` or `all`.
    pub scan: ScanMode,
    /// The search mode that found the chunks (`None` for a scan).
    pub search_mode: Option<SearchMode>,
    /// Search notices and fallbacks.
    pub search_notes: Vec<String>,
    /// Chunks chosen for analysis.
    pub chunks_selected: usize,
    /// Chunks an extractor reported on.
    pub chunks_analyzed: usize,
    /// Extractor batches (before any split).
    pub batches: usize,
    /// Batches whose reply was rejected or whose call failed.
    pub batches_failed: Vec<BatchFailure>,
    /// Chunks left without a report.
    pub chunk_failures: Vec<ChunkFailure>,
    /// Chunks never sent to an extractor because the budget had to keep room for the report
    /// (reason `budget`).
    pub chunks_skipped: Vec<ChunkFailure>,
    /// Why no further batch was sent after the first ones all failed the same way (their
    /// chunks are in `chunk_failures`, reason `not sent: …`).
    pub stopped_early: Option<String>,
    /// Why the query found nothing to report, with what it searched (`None` with findings).
    pub no_findings_reason: Option<String>,
    /// The wall-clock bound on the extraction, as applied.
    pub time_limit: Option<TimeLimit>,
    /// What the budget kept for the report before extraction (`None` without a budget).
    pub synthesis_reserve: Option<ReserveReport>,
    /// The findings the report was written from.
    pub findings: Vec<ChunkFindings>,
    /// Group reductions before the report (0 when the findings fit one call).
    pub reduce_calls: usize,
    /// The report writer's tool calls, in order.
    pub tool_calls: Vec<ToolCallSummary>,
    /// The synthesis error, for `synthesis_failed`.
    pub synthesis_error: Option<String>,
    /// Chunk ids the report cites that were neither analysed nor read by its tools (marked
    /// `(not read)` in the report).
    pub citations_unknown: Vec<i64>,
    /// Usage per stage.
    pub usage: StageUsage,
    /// Time per stage.
    pub timings: Timings,
    /// The trajectory log, when written.
    pub log: Option<PathBuf>,
}

/// The wall-clock bound of a query's planning, search and extraction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct TimeLimit {
    /// Seconds from the query's start.
    pub seconds: f64,
    /// Chosen from the work (`true`) or set by the caller (`timeout`).
    pub default: bool,
}

/// The reserve kept for the report, as estimated when the last batch was sent.
#[derive(Debug, Clone, Copy, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ReserveReport {
    /// Tokens at most.
    pub tokens: u64,
    /// Dollars at most, when the price is known.
    pub cost_usd: Option<f64>,
    /// Model calls (the group reductions when the findings need them, the report and its
    /// tool rounds).
    pub calls: u64,
}

/// A query over a store, ready to run.
pub struct Query {
    pub(crate) client: LlmClient,
    pub(crate) store: Store,
    pub(crate) embedder: Option<Box<dyn Embedder>>,
    pub(crate) options: QueryOptions,
    pub(crate) prompts: QueryPrompts,
    pub(crate) events: Option<Arc<dyn QueryEvents>>,
    pub(crate) log_dir: Option<PathBuf>,
}

impl std::fmt::Debug for Query {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Query")
            .field("options", &self.options)
            .field("log_dir", &self.log_dir)
            .finish_non_exhaustive()
    }
}

impl Query {
    /// A query with the built-in prompts, no events and no log.
    pub fn new(client: LlmClient, store: Store, options: QueryOptions) -> Self {
        Self {
            client,
            store,
            embedder: None,
            options,
            prompts: QueryPrompts::default(),
            events: None,
            log_dir: None,
        }
    }

    /// The model the store's vectors were made with (semantic and hybrid search need it).
    pub fn embedder(mut self, embedder: Option<Box<dyn Embedder>>) -> Self {
        self.embedder = embedder;
        self
    }

    /// Prompts to use instead of the built-in ones.
    pub fn prompts(mut self, prompts: QueryPrompts) -> Self {
        self.prompts = prompts;
        self
    }

    /// Where progress goes.
    pub fn events(mut self, events: Arc<dyn QueryEvents>) -> Self {
        self.events = Some(events);
        self
    }

    /// Writes the trajectory to `dir/query_<time>_<id>.jsonl`.
    pub fn log_dir(mut self, dir: PathBuf) -> Self {
        self.log_dir = Some(dir);
        self
    }

    /// Runs the query. Errors are reserved for what stops it before there is anything to
    /// report (bad options, an empty store, a missing key); failed batches are in the result.
    /// The stages are [`QueryRun`]'s.
    ///
    /// Cancel safety: dropping the future cancels the calls in flight; the log keeps every
    /// record written so far and closes with an `interrupted` result.
    pub async fn run(self, question: &str) -> Result<QueryResult> {
        let (run, early_scan) = QueryRun::prepare(self, question).await?;
        run.run(early_scan).await
    }
}
