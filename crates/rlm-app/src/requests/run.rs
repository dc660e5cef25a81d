//! Arguments of `rlm run`.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::requests::LlmOptions;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct RunRequest {
    /// The question to answer about the context.
    #[cfg_attr(feature = "clap", arg(value_name = "QUERY"))]
    pub query: String,
    /// A file to work over; repeat for several (`context_0`, `context_1`, …). `-` reads stdin.
    #[cfg_attr(feature = "clap", arg(long = "context-file", value_name = "FILE"))]
    #[serde(default)]
    pub context_files: Vec<PathBuf>,
    /// Inline context text; `-` reads stdin.
    #[cfg_attr(feature = "clap", arg(long, value_name = "TEXT"))]
    pub context: Option<String>,
    /// Work over a store (`rlm load`) instead of context files: the code gets `buffers()`,
    /// `search()`, `get_chunks()`, `grep()` and `read()`. `--store` alone uses the store the
    /// other store commands use (`RLM_STORE`, else `.rlm`); `--store=DIR` names one.
    #[cfg_attr(feature = "clap", arg(
        long,
        value_name = "DIR",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "",
        value_parser = StoreChoice::parse
    ))]
    pub store: Option<StoreChoice>,
    /// Continue session NAME (created by the first question that names it): the same contexts
    /// unless others are given, the REPL's plain-data variables, and the earlier questions'
    /// conversations as `history_0 … history_n`. Budgets apply to each question. Sessions live
    /// in `$XDG_STATE_HOME/rlm/sessions`; see `rlm sessions`.
    #[cfg_attr(feature = "clap", arg(long, value_name = "NAME"))]
    pub session: Option<String>,
    /// Run over a context that is binary (NUL bytes, mostly invalid UTF-8), which is refused by
    /// default: the model reads its invalid bytes as U+FFFD.
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(default)]
    pub allow_binary: bool,
    #[cfg_attr(feature = "clap", command(flatten))]
    #[serde(flatten)]
    pub run_loop: LoopOptions,
}

/// The RLM loop's flags (models, budgets, sandbox, trajectory log): `rlm run`'s, shared with
/// `rlm bench-quality`, which runs the same loop over generated tasks.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct LoopOptions {
    /// Root-model turns before it is asked for a final answer.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = super::defaults::max_iterations(), value_parser = clap::value_parser!(u32).range(1..=1000)))]
    #[serde(default = "super::defaults::max_iterations")]
    pub max_iterations: u32,
    /// Recursion depth of `rlm_query`: 1 makes it a plain sub-model call.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = super::defaults::max_depth(), value_parser = clap::value_parser!(u32).range(1..=5)))]
    #[serde(default = "super::defaults::max_depth")]
    pub max_depth: u32,
    #[cfg_attr(feature = "clap", command(flatten))]
    #[serde(flatten)]
    pub budget: super::BudgetOptions,
    /// Stop after this many seconds of wall time (`--request-timeout` bounds one model request).
    #[cfg_attr(feature = "clap", arg(long = "timeout", visible_alias = "max-time", value_name = "SECONDS", value_parser = super::llm::parse_seconds))]
    #[serde(rename = "timeout", alias = "timeout_seconds", alias = "max_time")]
    pub max_time: Option<f64>,
    /// Stop after this many sub-calls (`llm_query` items and `rlm_query` runs).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub max_subcalls: Option<u64>,
    /// Interpreter time one code block may take before it is stopped with a `TimeoutError`
    /// (default 60; `[run] block_timeout` in the configuration).
    #[cfg_attr(feature = "clap", arg(long, value_name = "SECS", value_parser = super::llm::parse_seconds))]
    pub block_timeout: Option<f64>,
    /// Iterations in a row whose code raised an error before the run stops.
    #[cfg_attr(feature = "clap", arg(long, value_name = "N", default_value_t = super::defaults::max_errors()))]
    #[serde(default = "super::defaults::max_errors")]
    pub max_errors: u32,
    /// Largest `llm_query`/`rlm_query` prompt model code may send, e.g. `10MB` (default 10 MB;
    /// `[run] max_prompt_size`). A longer prompt is refused with an error the code sees.
    #[cfg_attr(feature = "clap", arg(long, value_name = "SIZE"))]
    pub max_prompt_size: Option<String>,
    /// Largest answer the run accepts, e.g. `50MB` (default 50 MB; `[run] max_answer_size`).
    /// A longer answer is refused and the model is asked for a shorter one.
    #[cfg_attr(feature = "clap", arg(long, value_name = "SIZE"))]
    pub max_answer_size: Option<String>,
    /// A model code may name in `llm_query(..., model=M)`; repeat for several. Without it,
    /// sub-calls use the sub-call model and other `model=` arguments are refused.
    #[cfg_attr(feature = "clap", arg(long = "allow-model", value_name = "MODEL"))]
    #[serde(default, alias = "allow_model")]
    pub allow_models: Vec<String>,
    /// Directory for the trajectory log (default: `$XDG_STATE_HOME/rlm/runs`).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "DIR", conflicts_with = "no_log")
    )]
    pub log: Option<PathBuf>,
    /// Do not write a trajectory log.
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(default)]
    pub no_log: bool,
    /// Run model code even where the kernel lacks Landlock or seccomp: only the interpreter's
    /// own isolation, an empty environment and resource limits remain
    /// [env: RLM_ALLOW_REDUCED_PROTECTION].
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(default)]
    pub allow_reduced_protection: bool,
    /// Sub-calls one run keeps in flight at once (`llm_query_batched` items, `rlm_query`
    /// runs); default: plain calls as many as the providers' limiters allow, 4 child runs.
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub max_concurrent_subcalls: Option<usize>,
    #[cfg_attr(feature = "clap", command(flatten))]
    #[serde(flatten)]
    pub llm: LlmOptions,
    /// What a program embedding the loop adds (the Python package's `RLM` arguments); the
    /// command line has its own ways (prompt files, `[run.tools]`).
    #[cfg_attr(feature = "clap", arg(skip))]
    #[serde(flatten)]
    pub embedding: EmbeddingOptions,
}

/// The loop's options a program embedding rlm sets (the reference's `RLM` arguments).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct EmbeddingOptions {
    /// The user's instructions in place of rlm's system prompt; rlm's description of the
    /// sandbox (its variables, functions, limits and answer forms) still follows them.
    #[serde(default)]
    pub custom_system_prompt: Option<String>,
    /// Sections appended to the system prompt (the reference's `tool_prompts`).
    #[serde(default)]
    pub system_sections: Vec<String>,
    /// Python run in the root session before the first turn (the reference's `tool_code`).
    #[serde(default)]
    pub setup_code: Option<String>,
    /// The first word of the trajectory's file name (default `rlm`).
    #[serde(default)]
    pub log_name: Option<String>,
    /// Output-token cap of the root model's requests (the reference's
    /// `sampling_args["max_tokens"]`); default: the root model's configured cap.
    #[serde(default)]
    pub root_max_output_tokens: Option<u32>,
    /// Output-token cap of the sub-calls' requests (the reference's
    /// `sub_sampling_args["max_tokens"]`); default: the sub-call model's configured cap.
    #[serde(default)]
    pub subcall_max_output_tokens: Option<u32>,
    /// Sampling temperature of the root model's requests (`sampling_args["temperature"]`).
    #[serde(default)]
    pub root_temperature: Option<f32>,
    /// Sampling temperature of the sub-calls (`sub_sampling_args["temperature"]`).
    #[serde(default)]
    pub subcall_temperature: Option<f32>,
    /// Compacts the root's conversation when it reaches this share of the root model's window
    /// (the reference's `compaction_threshold_pct` with `compaction=True`).
    #[serde(default)]
    pub compaction: Option<f64>,
}

/// `rlm run`'s `--store`: the store the other store commands use, or one named by its
/// directory. In JSON: `true` (or `false` for none) or a directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum StoreChoice {
    /// `true`: the store the other commands use (`RLM_STORE`, else `.rlm`); `false`: none.
    Default(bool),
    /// A store directory.
    Directory(PathBuf),
}

impl StoreChoice {
    /// `--store` alone (an empty value) is the default store; `--store=DIR` names one.
    pub fn parse(text: &str) -> Result<Self, String> {
        Ok(if text.is_empty() {
            Self::Default(true)
        } else {
            Self::Directory(PathBuf::from(text))
        })
    }
}
