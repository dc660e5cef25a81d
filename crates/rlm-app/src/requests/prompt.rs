//! Arguments of `rlm prompt`.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use rlm_context::tokens::Tokenizer;

use super::LlmOptions;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct PromptRequest {
    #[cfg_attr(feature = "clap", command(subcommand))]
    #[serde(flatten)]
    pub action: PromptAction,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Subcommand))]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum PromptAction {
    /// Build the prompt for one agent turn: system + stage instructions, the conversation
    /// (older part summarized by a model when it is long), and material by priority.
    Build(PromptBuildRequest),
    /// Dry run: what would go in, what would be summarized and what that would take; no
    /// model is called.
    Plan(PromptBuildRequest),
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum PromptFormat {
    /// Chat messages (system + user) as JSON, ready for an API call.
    #[default]
    Json,
    /// The two messages as plain text.
    Text,
    /// A Markdown document with an `mdctx` header, like `rlm ctx assemble` writes.
    Mdctx,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct PromptBuildRequest {
    /// The task's stage: planning, coding, review, testing, error-fixing (unknown: coding,
    /// with a warning).
    #[cfg_attr(feature = "clap", arg(long, default_value = "coding"))]
    #[serde(default = "super::defaults::stage")]
    pub stage: String,
    /// The conversation: JSON Lines of {role, content}, or an OpenAI `messages` array.
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub history: Option<PathBuf>,
    /// The conversation itself, instead of a file (a front end that holds it: Python).
    #[cfg_attr(feature = "clap", arg(skip))]
    #[serde(default)]
    pub messages: Option<Vec<rlm_assemble::prompt::ChatMessage>>,
    /// Notes file (repeatable; always included first).
    #[cfg_attr(feature = "clap", arg(long, value_name = "PATH"))]
    #[serde(default)]
    pub notes: Vec<String>,
    /// ADR file, directory or glob (repeatable).
    #[cfg_attr(feature = "clap", arg(long, value_name = "PATH"))]
    #[serde(default)]
    pub adr: Vec<String>,
    /// Source file, directory or glob such as 'src/**/*.rs' (repeatable).
    #[cfg_attr(feature = "clap", arg(long, value_name = "PATH"))]
    #[serde(default)]
    pub source: Vec<String>,
    /// Build or CI log (repeatable; error-fixing stage; long logs keep their tail).
    #[cfg_attr(feature = "clap", arg(long, value_name = "PATH"))]
    #[serde(default)]
    pub build_log: Vec<String>,
    /// Pod or service log (repeatable; error-fixing stage).
    #[cfg_attr(feature = "clap", arg(long, value_name = "PATH"))]
    #[serde(default)]
    pub pod_log: Vec<String>,
    /// Test results, e.g. JUnit XML (repeatable).
    #[cfg_attr(feature = "clap", arg(long, value_name = "PATH"))]
    #[serde(default)]
    pub test_results: Vec<String>,
    /// Library documentation (repeatable).
    #[cfg_attr(feature = "clap", arg(long, value_name = "PATH"))]
    #[serde(default)]
    pub library: Vec<String>,
    /// Token budget of the whole prompt (default: the sum of the section budgets).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "TOKENS", allow_hyphen_values = true)
    )]
    pub budget_total: Option<i64>,
    /// Budget of the system section [prompt] system_prompt_budget.
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "TOKENS", allow_hyphen_values = true)
    )]
    pub system_budget: Option<i64>,
    /// Budget of the stage section [prompt] agent_prompt_budget.
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "TOKENS", allow_hyphen_values = true)
    )]
    pub agent_budget: Option<i64>,
    /// Budget of the conversation [prompt] chat_history_budget.
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "TOKENS", allow_hyphen_values = true)
    )]
    pub history_budget: Option<i64>,
    /// Budget of the material [prompt] other_context_budget.
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "TOKENS", allow_hyphen_values = true)
    )]
    pub context_budget: Option<i64>,
    /// Summarize the history above this percentage of its budget [prompt.rlm]
    /// threshold_percentage (default 80).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "PERCENT", allow_hyphen_values = true)
    )]
    pub threshold: Option<i64>,
    /// Share of the history budget kept for recent messages verbatim, in percent (default 50).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "PERCENT", allow_hyphen_values = true)
    )]
    pub recent_share: Option<i64>,
    /// The summarizing model's context window in tokens ([prompt.rlm] window_tokens; default:
    /// what a local server reports at `/props`, else 100000).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "TOKENS", allow_hyphen_values = true)
    )]
    pub window_tokens: Option<i64>,
    /// Ask for a new history summary even when one is cached, and replace it.
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(default)]
    pub refresh_summary: bool,
    /// Tokenizer for counts.
    #[cfg_attr(feature = "clap", arg(long, value_parser = super::ctx::parse_tokenizer))]
    pub tokenizer: Option<Tokenizer>,
    /// Write the prompt here instead of stdout.
    #[cfg_attr(feature = "clap", arg(long, short = 'o', value_name = "FILE"))]
    pub output: Option<PathBuf>,
    /// Also write the plan here (pretty JSON, `promptplan.json`).
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub plan_output: Option<PathBuf>,
    /// Prompt format.
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value_t = PromptFormat::Json))]
    #[serde(default)]
    pub format: PromptFormat,
    /// `--model` is the summarizing model here (overrides [prompt.rlm] model).
    #[cfg_attr(feature = "clap", command(flatten))]
    #[serde(flatten)]
    pub llm: LlmOptions,
}
