//! Arguments of `rlm run`.

use std::path::PathBuf;

use clap::Args;

use crate::cli::LlmArgs;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The question to answer about the context.
    #[arg(value_name = "QUERY")]
    pub query: String,
    /// A file to work over; repeat for several (`context_0`, `context_1`, …). `-` reads stdin.
    #[arg(long = "context-file", value_name = "FILE")]
    pub context_files: Vec<PathBuf>,
    /// Inline context text; `-` reads stdin.
    #[arg(long, value_name = "TEXT")]
    pub context: Option<String>,
    /// Work over a store (`rlm load`) instead of context files: the code gets `buffers()`,
    /// `search()`, `get_chunks()`, `grep()` and `read()`. `--store` alone uses the store the
    /// other store commands use (`RLM_STORE`, else `.rlm`); `--store=DIR` names one.
    #[arg(
        long,
        value_name = "DIR",
        num_args = 0..=1,
        require_equals = true
    )]
    pub store: Option<Option<PathBuf>>,
    /// Continue session NAME (created by the first question that names it): the same contexts
    /// unless others are given, the REPL's plain-data variables, and the earlier questions'
    /// conversations as `history_0 … history_n`. Budgets apply to each question. Sessions live
    /// in `$XDG_STATE_HOME/rlm/sessions`; see `rlm sessions`.
    #[arg(long, value_name = "NAME")]
    pub session: Option<String>,
    #[command(flatten)]
    pub run_loop: LoopArgs,
}

/// The RLM loop's flags (models, budgets, sandbox, trajectory log): `rlm run`'s, shared with
/// `rlm bench-quality`, which runs the same loop over generated tasks.
#[derive(Debug, Args)]
pub struct LoopArgs {
    /// Root-model turns before it is asked for a final answer.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub max_iterations: u32,
    /// Recursion depth of `rlm_query`: 1 makes it a plain sub-model call.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=5))]
    pub max_depth: u32,
    #[command(flatten)]
    pub budget: super::BudgetArgs,
    /// Stop after this many seconds of wall time (`--request-timeout` bounds one model request).
    #[arg(long = "timeout", visible_alias = "max-time", value_name = "SECONDS", value_parser = super::llm::parse_seconds)]
    pub max_time: Option<f64>,
    /// Stop after this many sub-calls (`llm_query` items and `rlm_query` runs).
    #[arg(long, value_name = "N")]
    pub max_subcalls: Option<u64>,
    /// Interpreter time one code block may take before it is stopped with a `TimeoutError`
    /// (default 60; `[run] block_timeout` in the configuration).
    #[arg(long, value_name = "SECS", value_parser = super::llm::parse_seconds)]
    pub block_timeout: Option<f64>,
    /// Iterations in a row whose code raised an error before the run stops.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub max_errors: u32,
    /// Largest `llm_query`/`rlm_query` prompt model code may send, e.g. `10MB` (default 10 MB;
    /// `[run] max_prompt_size`). A longer prompt is refused with an error the code sees.
    #[arg(long, value_name = "SIZE")]
    pub max_prompt_size: Option<String>,
    /// Largest answer the run accepts, e.g. `50MB` (default 50 MB; `[run] max_answer_size`).
    /// A longer answer is refused and the model is asked for a shorter one.
    #[arg(long, value_name = "SIZE")]
    pub max_answer_size: Option<String>,
    /// A model code may name in `llm_query(..., model=M)`; repeat for several. Without it,
    /// sub-calls use the sub-call model and other `model=` arguments are refused.
    #[arg(long = "allow-model", value_name = "MODEL")]
    pub allow_models: Vec<String>,
    /// Directory for the trajectory log (default: `$XDG_STATE_HOME/rlm/runs`).
    #[arg(long, value_name = "DIR", conflicts_with = "no_log")]
    pub log: Option<PathBuf>,
    /// Do not write a trajectory log.
    #[arg(long)]
    pub no_log: bool,
    /// Run model code even where the kernel lacks Landlock or seccomp: only the interpreter's
    /// own isolation, an empty environment and resource limits remain
    /// [env: RLM_ALLOW_REDUCED_PROTECTION].
    #[arg(long)]
    pub allow_reduced_protection: bool,
    #[command(flatten)]
    pub llm: LlmArgs,
}
