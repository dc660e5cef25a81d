//! Records of an `rlm query` log: `query_metadata`, one `query_stage` per planning and search
//! step, one `query_call` per model call (the report's tool rounds as one), one `query_tool`
//! per tool call of the synthesizer, and a closing `query_result`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use rlm_types::{ModelTotals, UsageReport};

use crate::schema::RecordType;

/// The first line of a query log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryMetadata {
    /// Query id (8 hex digits), also in the file name.
    pub run_id: String,
    /// The question.
    pub question: String,
    /// The model that plans and writes the report.
    pub model: String,
    /// The extractors' model.
    pub subcall_model: String,
    /// The store directory.
    pub store: PathBuf,
    /// The options as the caller set them (`null` where the plan decides).
    #[serde(default)]
    pub options: Value,
}

impl RecordType for QueryMetadata {
    const TYPE: &'static str = "query_metadata";
}

/// A step that is not a model call: `plan` (the plan used and where it came from) or
/// `search` (mode, chunks selected, fallbacks).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryStage {
    /// The query.
    pub run_id: String,
    /// `plan` or `search`.
    pub stage: String,
    /// Wall time of the step, its model call included.
    pub seconds: f64,
    /// What the step decided; its shape depends on `stage` (see `docs/trajectory.md`).
    #[serde(default)]
    pub detail: Value,
}

impl RecordType for QueryStage {
    const TYPE: &'static str = "query_stage";
}

/// One model call of a query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryCall {
    /// The query.
    pub run_id: String,
    /// `plan`, `extract`, `reduce` or `synthesize`.
    pub stage: String,
    /// For `extract`: the batch (`3`, or `3.1` for the first half of a split batch).
    #[serde(default)]
    pub batch: Option<String>,
    /// 1, or 2 for the request asked again after an invalid reply.
    pub attempt: u32,
    /// For `extract`: the chunks of the batch.
    #[serde(default)]
    pub chunk_ids: Vec<i64>,
    /// The model as configured.
    pub model: String,
    /// The last user message, cut to a preview of 4,000 chars.
    pub prompt: String,
    /// Its full length in chars.
    pub prompt_chars: u64,
    /// The reply, cut to a preview of 4,000 chars (empty when the call failed).
    pub response: String,
    /// Its full length in chars.
    pub response_chars: u64,
    /// Tokens, time and cost of the call (one failure when it failed).
    pub usage: ModelTotals,
    /// Wall time in seconds, retries included.
    pub seconds: f64,
    /// The error, when the call failed.
    #[serde(default)]
    pub error: Option<String>,
    /// For a `synthesize` call with tools: rounds of tool calls it ran (its `usage` then sums
    /// every model call of those rounds, and `response` is the last answer).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tool_rounds: u32,
}

fn is_zero(value: &u32) -> bool {
    *value == 0
}

impl RecordType for QueryCall {
    const TYPE: &'static str = "query_call";
}

/// One tool call the synthesizer made (`get_chunks`, `search`, `grep`), written as it is
/// answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryTool {
    /// The query.
    pub run_id: String,
    /// `synthesize`.
    pub stage: String,
    /// 1 for the first tool call of the report, and so on in the order they were answered.
    pub index: u32,
    /// The provider's call id.
    pub call_id: String,
    /// The tool's name as the model wrote it.
    pub tool: String,
    /// The arguments as the model wrote them, cut to a preview of 4,000 chars.
    pub arguments: String,
    /// What was sent back, cut to a preview of 4,000 chars.
    pub output: String,
    /// Its full length in chars.
    pub output_chars: u64,
    /// The call failed (bad arguments, unknown tool, store error, limit reached); `output`
    /// is the message the model got.
    #[serde(default)]
    pub is_error: bool,
    /// Chunk ids whose text the result carried.
    #[serde(default)]
    pub chunk_ids: Vec<i64>,
    /// Wall time of the tool, in seconds.
    pub seconds: f64,
}

impl RecordType for QueryTool {
    const TYPE: &'static str = "query_tool";
}

/// The last line of a query log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryOutcome {
    /// The query.
    pub run_id: String,
    /// `answered`, `no_evidence`, `extraction_failed` or `synthesis_failed`; `failed` (an
    /// error stopped it, see `error`) or `interrupted` (Ctrl-C, SIGTERM) when it ended
    /// without a result.
    pub status: String,
    /// The Markdown report.
    pub report: String,
    /// Chunks chosen for analysis.
    pub chunks_selected: usize,
    /// Chunks an extractor reported on.
    pub chunks_analyzed: usize,
    /// Batches whose replies were rejected or whose calls failed (as in `--json`).
    #[serde(default)]
    pub batches_failed: Vec<Value>,
    /// Chunks left without a report, with the reason.
    #[serde(default)]
    pub chunk_failures: Vec<Value>,
    /// Chunks not sent to an extractor because the budget had to keep room for the report
    /// (`{"chunk_id", "reason": "budget"}`).
    #[serde(default)]
    pub chunks_skipped: Vec<Value>,
    /// The findings the report was written from, most relevant first (as in `--json`).
    #[serde(default)]
    pub findings: Vec<Value>,
    /// Chunk ids the report cites that the query neither analysed nor read with its tools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub citations_unknown: Vec<i64>,
    /// Why the query stopped without a result (status `failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Usage per stage (`plan`, `extract`, `synthesize`) and `total`.
    pub usage: BTreeMap<String, UsageReport>,
    /// Wall time of the whole query.
    pub seconds: f64,
}

impl RecordType for QueryOutcome {
    const TYPE: &'static str = "query_result";
}
