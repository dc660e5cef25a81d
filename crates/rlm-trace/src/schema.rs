//! The records of a trajectory log, one type per line type.
//!
//! Field names follow the reference RLM implementation's log where one exists (`prompt`,
//! `response`, `code_blocks`, `rlm_calls`, `iteration_time`, `root_model`, ...), so tools written
//! for it read ours; a Rust field whose on-disk name is misleading is renamed here and says so.
//! Fields added after the first logs default when absent, so older logs still read.
//!
//! Chat messages and usage are `rlm-llm`'s own types (`Message`, `ModelTotals`,
//! `UsageReport`), logged as they serialize: the log and the model layer share one vocabulary.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use rlm_types::{Message, ModelTotals, UsageReport};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// A record that has its own line type (the `type` field of a line).
pub trait RecordType: Serialize {
    /// The value of `type`.
    const TYPE: &'static str;
}

/// The first line of a run's log: who ran what, over which contexts, within which limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMetadata {
    /// The run's id; a child run started by `rlm_query` is `<parent id>.<n>`.
    pub run_id: String,
    /// The parent's id, for a child run.
    pub parent_run_id: Option<String>,
    /// Recursion depth: 0 for the root run.
    pub depth: u32,
    /// The model this run asks (the root model of a child run is the parent's sub-call model).
    pub root_model: String,
    /// The default model of `llm_query`/`rlm_query`.
    pub subcall_model: String,
    /// Recursion depth at which `rlm_query` becomes a plain sub-model call.
    pub max_depth: u32,
    /// Turns before the model is asked for a final answer.
    pub max_iterations: u32,
    /// Always `"rlm"` (a reference-log field).
    pub backend: String,
    /// `{"model_name": root_model}` (a reference-log field).
    pub backend_kwargs: BackendArguments,
    /// The REPL: `"monty"`, `"cpython"`, or what a library caller named it.
    pub environment_type: String,
    /// Always `{}` (a reference-log field).
    #[serde(default)]
    pub environment_kwargs: Map<String, Value>,
    /// `[subcall_model]` (a reference-log field).
    pub other_backends: Vec<String>,
    /// The question, as the run was asked it (a child run: the rendered delegation prompt).
    pub query: String,
    /// What the model was told about the contexts; also the REPL's `contextMeta` variable.
    pub contexts: Contexts,
    /// The limits of the run.
    pub budget: Budget,
}

impl RecordType for RunMetadata {
    const TYPE: &'static str = "metadata";
}

/// `backend_kwargs` of [`RunMetadata`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackendArguments {
    /// The root model.
    pub model_name: String,
}

/// The contexts of a run, as described to the model (`contextMeta` in the REPL).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Contexts {
    /// Number of parts.
    pub count: usize,
    /// One entry per part, in order (`context_0`, `context_1`, ...).
    pub parts: Vec<ContextInfo>,
}

/// One context part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextInfo {
    /// Its REPL variable: `context_0`, `context_1`, ... (`context` is `context_0`).
    pub variable: String,
    /// Where it came from (a file path, `<stdin>`, `delegated request`), if known.
    pub name: Option<String>,
    /// Length in Unicode scalar values, as `len()` in Python.
    pub chars: u64,
    /// Lines; a last line without a newline counts.
    pub lines: u64,
    /// Whether the text is pure ASCII.
    pub ascii: bool,
    /// Free-form extra description given by the caller.
    pub hint: Option<String>,
    /// `rlm-context`'s `ContextMetadata` (what `rlm inspect --json` prints): format, sizes,
    /// records, fields, sample, encoding, notes. Kept as JSON so this crate stays light.
    pub metadata: Option<Value>,
}

/// The limits of a run (`budget` in [`RunMetadata`]). `None` means unlimited.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// Input + output tokens over the run tree.
    pub max_tokens: Option<u64>,
    /// US dollars over the priced calls of the run tree.
    pub max_cost_usd: Option<f64>,
    /// Model calls over the run tree.
    #[serde(default)]
    pub max_calls: Option<u64>,
    /// Wall time of the run, in seconds.
    pub timeout_seconds: Option<f64>,
    /// Sub-calls (`llm_query` items and `rlm_query` runs) over the run tree.
    pub max_subcalls: Option<u64>,
    /// Turns in a row whose code raised an error before the run stops.
    pub max_consecutive_errors: u32,
}

/// One turn: the conversation sent, the reply, the code it ran and what came of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Iteration {
    /// 1-based turn number; the last-chance request after the turns ran out counts as one.
    pub iteration: u32,
    /// The run this turn belongs to.
    pub run_id: String,
    /// The whole conversation sent to the model for this turn, system message first.
    pub prompt: Vec<Message>,
    /// The model's reply (when it was asked twice, the second, complete reply).
    pub response: String,
    /// The code blocks that ran, in order; the list stops at the block that answered.
    pub code_blocks: Vec<CodeBlock>,
    /// The answer this turn produced, if any.
    pub final_answer: Option<String>,
    /// Wall time of the turn in seconds (`iteration_time`, a reference-log name).
    #[serde(rename = "iteration_time")]
    pub seconds: f64,
    /// The root-model calls of this turn (two when a reply cut inside `FINAL(` was asked
    /// again); sub-calls are in the code blocks.
    pub usage: ModelTotals,
    /// Notes the engine added for the model or the reader (e.g. a rejected `FINAL_VAR`).
    #[serde(default)]
    pub notes: Vec<String>,
}

impl RecordType for Iteration {
    const TYPE: &'static str = "iteration";
}

/// One code block and what it did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CodeBlock {
    /// The code, as the model wrote it.
    pub code: String,
    /// What running it produced.
    pub result: CodeResult,
}

/// What running a [`CodeBlock`] produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CodeResult {
    /// Printed output, as captured by the sandbox (capped there, with a note of what was cut).
    pub stdout: String,
    /// Diagnostics: a traceback, a note that the interpreter was restarted.
    pub stderr: String,
    /// The exception, as `Kind: message (line N)`, or why the block could not run.
    pub error: Option<String>,
    /// The answer given by `FINAL(...)`/`FINAL_VAR(...)` inside the code.
    pub final_answer: Option<String>,
    /// Wall time in seconds (`execution_time`, a reference-log name).
    #[serde(rename = "execution_time")]
    pub seconds: f64,
    /// The sub-calls the code made, in the order they finished (`rlm_calls`, a reference-log
    /// name: it holds `llm_query` calls too).
    #[serde(rename = "rlm_calls")]
    pub subcalls: Vec<Subcall>,
    /// Calls of the host's further functions (a store's `search`, `grep`, …), in call order;
    /// absent when there were none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_calls: Vec<HostCall>,
}

/// One call model code made to a host function that is not a model call (`rlm run --store`:
/// `buffers`, `search`, `get_chunks`, `grep`, `read`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostCall {
    /// The function's Python name.
    pub name: String,
    /// The arguments by parameter name (defaults filled in), as JSON text cut to a 1,000-char
    /// preview.
    pub arguments: String,
    /// Size of the JSON result in bytes (0 when the call failed).
    pub result_bytes: u64,
    /// Items in the result when it is a list, else 1 (0 when the call failed).
    pub result_items: u64,
    /// The JSON result cut to a 1,000-char preview; absent when the call failed (and in logs
    /// written before it was added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// Seconds from call to answer (`execution_time`, as in the other records).
    #[serde(rename = "execution_time")]
    pub seconds: f64,
    /// The exception raised in model code, as `Kind: message`, when the call failed.
    pub error: Option<String>,
}

/// One sub-call made by model code: an `llm_query` item or an `rlm_query` child run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Subcall {
    /// Which host function served it.
    pub kind: SubcallKind,
    /// The model that answered. On disk it is `root_model`, the reference log's name, although
    /// it is the sub-call's model.
    #[serde(rename = "root_model")]
    pub model: String,
    /// The prompt, cut to a preview of 4,000 chars.
    pub prompt: String,
    /// The prompt's full length in chars.
    pub prompt_chars: u64,
    /// The response (or the error text), cut to a preview of 4,000 chars.
    pub response: String,
    /// The response's full length in chars.
    pub response_chars: u64,
    /// Tokens per model, in the reference log's shape (a child run: its whole subtree).
    pub usage_summary: UsageSummary,
    /// Dollars over priced calls (a child run: its whole subtree); a lower bound when some
    /// prices are unknown.
    pub cost_usd: f64,
    /// Seconds from start to answer (`execution_time`, a reference-log name).
    #[serde(rename = "execution_time")]
    pub seconds: f64,
    /// Why it failed, if it did.
    pub error: Option<String>,
    /// The child run's id, for `rlm_query` runs.
    pub child_run_id: Option<String>,
    /// The child run's own trajectory file, when logging.
    pub child_log: Option<PathBuf>,
}

/// Which host function a sub-call came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SubcallKind {
    /// A plain sub-model call (`llm_query`, or `rlm_query` at the depth limit).
    LlmQuery,
    /// A recursive child run (`rlm_query` below the depth limit).
    RlmQuery,
    /// A kind written by a newer version (read only).
    #[serde(other)]
    Other,
}

impl SubcallKind {
    /// The host function's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::LlmQuery => "llm_query",
            Self::RlmQuery => "rlm_query",
            Self::Other => "sub-call",
        }
    }
}

/// The last line: how the run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunOutcome {
    /// The run.
    pub run_id: String,
    /// How it ended.
    pub status: Status,
    /// The answer, when the status is an answer.
    pub answer: Option<String>,
    /// The `answer` variable of a run that stopped without answering, if any.
    pub partial_answer: Option<String>,
    /// Root-model turns taken.
    pub iterations: u32,
    /// Model usage of this run and everything below it.
    pub usage: UsageReport,
    /// Sub-calls made by this run and below it.
    #[serde(default)]
    pub subcalls: u64,
    /// The same usage in the reference log's shape.
    pub usage_summary: UsageSummary,
    /// Wall time in seconds.
    pub seconds: f64,
    /// Why the root model failed, for [`Status::ModelError`]: the error and its causes.
    pub error: Option<String>,
}

impl RecordType for RunOutcome {
    const TYPE: &'static str = "result";
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Status {
    /// The model answered with `FINAL`, `FINAL_VAR` or a ready `answer`.
    Answered,
    /// The turns ran out and the model answered the one last request.
    ForcedAnswer,
    /// The model answered, but no code of the run had looked at data larger than what the
    /// conversation showed (it answered before any code ran, and again when sent back): an
    /// answer with nothing behind it.
    NoEvidence,
    /// The turns ran out and the last request gave no answer.
    IterationLimit,
    /// The token budget ran out.
    TokenBudget,
    /// The cost budget ran out.
    CostBudget,
    /// The model-call budget ran out.
    CallBudget,
    /// The wall-time budget ran out.
    Timeout,
    /// The sub-call budget ran out.
    SubcallBudget,
    /// Too many turns in a row raised errors.
    ErrorLimit,
    /// The root model could not be reached (after the client's retries).
    ModelError,
    /// The run was stopped from outside (Ctrl-C, or the caller dropped it) before it ended.
    Interrupted,
    /// A status written by a newer version (read only).
    #[serde(other)]
    Other,
}

impl Status {
    /// Whether the run produced an answer.
    pub fn is_answered(self) -> bool {
        matches!(self, Self::Answered | Self::ForcedAnswer | Self::NoEvidence)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            Self::Answered => "answered",
            Self::ForcedAnswer => "answered at the iteration limit",
            Self::NoEvidence => "answered without evidence (no code looked at the data)",
            Self::IterationLimit => "iteration limit reached without an answer",
            Self::TokenBudget => "token budget exhausted",
            Self::CostBudget => "cost budget exhausted",
            Self::CallBudget => "model-call budget exhausted",
            Self::Timeout => "time budget exhausted",
            Self::SubcallBudget => "sub-call budget exhausted",
            Self::ErrorLimit => "too many consecutive code errors",
            Self::ModelError => "the root model failed",
            Self::Interrupted => "interrupted",
            Self::Other => "ended (a status this version does not know)",
        };
        f.write_str(text)
    }
}

/// Usage in the reference log's shape: `{"model_usage_summaries": {model: {...}}}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageSummary {
    /// Per model reference.
    pub model_usage_summaries: BTreeMap<String, ModelSummary>,
}

impl UsageSummary {
    /// The summary of per-model totals.
    pub fn of(report: &UsageReport) -> Self {
        let model_usage_summaries = report
            .models
            .iter()
            .map(|(model, totals)| {
                let summary = ModelSummary {
                    total_calls: totals.calls,
                    total_input_tokens: totals.usage.input_tokens,
                    total_output_tokens: totals.usage.output_tokens,
                    cache_read_tokens: totals.usage.cache_read_tokens,
                    cache_write_tokens: totals.usage.cache_write_tokens,
                    cost_usd: totals.cost_usd,
                };
                (model.clone(), summary)
            })
            .collect();
        Self {
            model_usage_summaries,
        }
    }
}

/// One model's line of a [`UsageSummary`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelSummary {
    /// Answered calls.
    pub total_calls: u64,
    /// Prompt tokens, cached ones included.
    pub total_input_tokens: u64,
    /// Generated tokens.
    pub total_output_tokens: u64,
    /// Prompt tokens read from the provider's cache.
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's cache.
    pub cache_write_tokens: u64,
    /// Dollars over priced calls.
    #[serde(deserialize_with = "null_as_zero")]
    pub cost_usd: f64,
}

/// Logs written before costs were totals stored an unknown cost as `null`.
fn null_as_zero<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(0.0))
}
