//! Arguments of `rlm query`.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use rlm_query::{ScanMode, Threshold};
use rlm_store::SearchMode;

use crate::requests::LlmOptions;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct QueryRequest {
    /// The question to answer from the store.
    #[cfg_attr(feature = "clap", arg(value_name = "QUESTION"))]
    pub question: String,
    /// Only this buffer (name, id or unique path suffix); repeat for several.
    #[cfg_attr(feature = "clap", arg(long = "buffer", value_name = "NAME"))]
    #[serde(default)]
    pub buffers: Vec<String>,
    /// Only buffers whose name or path matches this glob.
    #[cfg_attr(feature = "clap", arg(long = "path", value_name = "GLOB"))]
    #[serde(alias = "path_glob")]
    pub path: Option<String>,
    /// Search mode (default: the plan's choice).
    #[cfg_attr(feature = "clap", arg(long, value_enum))]
    pub mode: Option<SearchMode>,
    /// `search` analyses what the searches find; `all` analyses every chunk of the selection.
    #[cfg_attr(feature = "clap", arg(long, value_enum))]
    pub scan: Option<ScanMode>,
    /// Chunks analysed at most, in search mode (default: the plan's choice). The result
    /// count is `k` in every command and tool; `--top-k` and `top_k` are older spellings.
    #[cfg_attr(
        feature = "clap",
        arg(short = 'k', long = "top", visible_alias = "top-k", value_name = "N")
    )]
    #[serde(alias = "top_k", alias = "top")]
    pub k: Option<usize>,
    /// Chunks per extractor call (default: the plan's choice).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub batch_size: Option<usize>,
    // Under a cost budget, batches stop while there is still room for the report, and
    // `--scan all` refuses to start above its estimate (README).
    #[cfg_attr(feature = "clap", command(flatten))]
    #[serde(flatten)]
    pub budget: super::BudgetOptions,
    /// Seconds for the whole query, the report included: batches not done by four fifths of it
    /// are reported and the report is written from the rest (or the findings returned as
    /// they are when it cannot be written in time).
    #[cfg_attr(feature = "clap", arg(long = "timeout", id = "query_timeout", value_name = "SECONDS", value_parser = super::llm::parse_seconds))]
    #[serde(alias = "timeout_seconds")]
    pub timeout: Option<f64>,
    /// Rounds of tool calls (get_chunks, search, grep) the report's writer may make; 0 writes
    /// the report without tools (default 3; models without tool calling never use them).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "N", allow_negative_numbers = true)
    )]
    pub max_tool_rounds: Option<i64>,
    /// Search with the question itself instead of asking the model for a plan.
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(default)]
    pub skip_plan: bool,
    /// Least relevance whose findings reach the report.
    #[cfg_attr(feature = "clap", arg(long, value_enum))]
    pub threshold: Option<Threshold>,
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
    #[cfg_attr(feature = "clap", command(flatten))]
    #[serde(flatten)]
    pub llm: LlmOptions,
}
