//! Arguments of `rlm query`.

use std::path::PathBuf;

use clap::Args;
use rlm_query::{ScanMode, Threshold};
use rlm_store::SearchMode;

use crate::cli::{LlmArgs, StoreLocation};

#[derive(Debug, Args)]
pub struct QueryArgs {
    /// The question to answer from the store.
    #[arg(value_name = "QUESTION")]
    pub question: String,
    /// Only this buffer (name, id or unique path suffix); repeat for several.
    #[arg(long = "buffer", value_name = "NAME")]
    pub buffers: Vec<String>,
    /// Only buffers whose name or path matches this glob.
    #[arg(long = "path", value_name = "GLOB")]
    pub path: Option<String>,
    /// Search mode (default: the plan's choice).
    #[arg(long, value_enum)]
    pub mode: Option<SearchMode>,
    /// `search` analyses what the searches find; `all` analyses every chunk of the selection.
    #[arg(long, value_enum)]
    pub scan: Option<ScanMode>,
    /// Chunks analysed at most, in search mode (default: the plan's choice).
    #[arg(long, value_name = "N")]
    pub top_k: Option<usize>,
    /// Chunks per extractor call (default: the plan's choice).
    #[arg(long, value_name = "N")]
    pub batch_size: Option<usize>,
    // Under a cost budget, batches stop while there is still room for the report, and
    // `--scan all` refuses to start above its estimate (README).
    #[command(flatten)]
    pub budget: super::BudgetArgs,
    /// Seconds for planning, searching and extracting; batches not done by then are reported
    /// as failed and the report is written from the rest.
    #[arg(long = "timeout", id = "query_timeout", value_name = "SECONDS", value_parser = super::llm::parse_seconds)]
    pub timeout: Option<f64>,
    /// Rounds of tool calls (get_chunks, search, grep) the report's writer may make; 0 writes
    /// the report without tools (default 3; models without tool calling never use them).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub max_tool_rounds: Option<i64>,
    /// Search with the question itself instead of asking the model for a plan.
    #[arg(long)]
    pub skip_plan: bool,
    /// Least relevance whose findings reach the report.
    #[arg(long, value_enum)]
    pub threshold: Option<Threshold>,
    /// Directory for the trajectory log (default: `$XDG_STATE_HOME/rlm/runs`).
    #[arg(long, value_name = "DIR", conflicts_with = "no_log")]
    pub log: Option<PathBuf>,
    /// Do not write a trajectory log.
    #[arg(long)]
    pub no_log: bool,
    #[command(flatten)]
    pub location: StoreLocation,
    #[command(flatten)]
    pub llm: LlmArgs,
}
