//! Arguments of `rlm prompt`.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};
use rlm_context::tokens::Tokenizer;

use super::LlmArgs;

#[derive(Debug, Args)]
pub struct PromptArgs {
    #[command(subcommand)]
    pub action: PromptAction,
}

#[derive(Debug, Subcommand)]
pub enum PromptAction {
    /// Build the prompt for one agent turn: system + stage instructions, the conversation
    /// (older part summarized by a model when it is long), and material by priority.
    Build(PromptBuildArgs),
    /// Dry run: what would go in, what would be summarized and what that would take; no
    /// model is called.
    Plan(PromptBuildArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PromptFormat {
    /// Chat messages (system + user) as JSON, ready for an API call.
    Json,
    /// The two messages as plain text.
    Text,
    /// A Markdown document with an `mdctx` header, like `rlm ctx assemble` writes.
    Mdctx,
}

#[derive(Debug, Args)]
pub struct PromptBuildArgs {
    /// The task's stage: planning, coding, review, testing, error-fixing (unknown: coding,
    /// with a warning).
    #[arg(long, default_value = "coding")]
    pub stage: String,
    /// The conversation: JSON Lines of {role, content}, or an OpenAI `messages` array.
    #[arg(long, value_name = "FILE")]
    pub history: Option<PathBuf>,
    /// Notes file (repeatable; always included first).
    #[arg(long, value_name = "PATH")]
    pub notes: Vec<String>,
    /// ADR file, directory or glob (repeatable).
    #[arg(long, value_name = "PATH")]
    pub adr: Vec<String>,
    /// Source file, directory or glob such as 'src/**/*.rs' (repeatable).
    #[arg(long, value_name = "PATH")]
    pub source: Vec<String>,
    /// Build or CI log (repeatable; error-fixing stage; long logs keep their tail).
    #[arg(long, value_name = "PATH")]
    pub build_log: Vec<String>,
    /// Pod or service log (repeatable; error-fixing stage).
    #[arg(long, value_name = "PATH")]
    pub pod_log: Vec<String>,
    /// Test results, e.g. JUnit XML (repeatable).
    #[arg(long, value_name = "PATH")]
    pub test_results: Vec<String>,
    /// Library documentation (repeatable).
    #[arg(long, value_name = "PATH")]
    pub library: Vec<String>,
    /// Token budget of the whole prompt (default: the sum of the section budgets).
    #[arg(long, value_name = "TOKENS", allow_hyphen_values = true)]
    pub budget_total: Option<i64>,
    /// Budget of the system section [prompt] system_prompt_budget.
    #[arg(long, value_name = "TOKENS", allow_hyphen_values = true)]
    pub system_budget: Option<i64>,
    /// Budget of the stage section [prompt] agent_prompt_budget.
    #[arg(long, value_name = "TOKENS", allow_hyphen_values = true)]
    pub agent_budget: Option<i64>,
    /// Budget of the conversation [prompt] chat_history_budget.
    #[arg(long, value_name = "TOKENS", allow_hyphen_values = true)]
    pub history_budget: Option<i64>,
    /// Budget of the material [prompt] other_context_budget.
    #[arg(long, value_name = "TOKENS", allow_hyphen_values = true)]
    pub context_budget: Option<i64>,
    /// Summarize the history above this percentage of its budget [prompt.rlm]
    /// threshold_percentage (default 80).
    #[arg(long, value_name = "PERCENT", allow_hyphen_values = true)]
    pub threshold: Option<i64>,
    /// Share of the history budget kept for recent messages verbatim, in percent (default 50).
    #[arg(long, value_name = "PERCENT", allow_hyphen_values = true)]
    pub recent_share: Option<i64>,
    /// The summarizing model's context window in tokens ([prompt.rlm] window_tokens; default:
    /// what a local server reports at `/props`, else 100000).
    #[arg(long, value_name = "TOKENS", allow_hyphen_values = true)]
    pub window_tokens: Option<i64>,
    /// Ask for a new history summary even when one is cached, and replace it.
    #[arg(long)]
    pub refresh_summary: bool,
    /// Tokenizer for counts.
    #[arg(long, value_parser = super::ctx::parse_tokenizer)]
    pub tokenizer: Option<Tokenizer>,
    /// Write the prompt here instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write the plan here (pretty JSON, `promptplan.json`).
    #[arg(long, value_name = "FILE")]
    pub plan_output: Option<PathBuf>,
    /// Prompt format.
    #[arg(long, value_enum, default_value_t = PromptFormat::Json)]
    pub format: PromptFormat,
    /// `--model` is the summarizing model here (overrides [prompt.rlm] model).
    #[command(flatten)]
    pub llm: LlmArgs,
}
