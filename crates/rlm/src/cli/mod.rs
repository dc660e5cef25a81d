//! Argument definitions only; behaviour lives in `commands/`.

use std::path::PathBuf;

mod bench_quality;
mod ctx;
mod inspect;
mod inspection;
mod llm;
#[cfg(feature = "mcp")]
mod mcp;
mod models;
mod prompt;
mod query;
mod run;
mod store;
mod view;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use bench_quality::{BenchQualityArgs, TaskKind};
#[cfg(feature = "mcp")]
pub use ctx::parse_tokenizer;
pub use ctx::{CtxBuildOptions, CtxAction, CtxRequest, OnOff};
#[cfg(feature = "mcp")]
pub use inspect::DEFAULT_SAMPLE_CHARS;
pub use inspect::{InspectRequest, SAMPLE_CHARS};
pub use inspection::{
    RunsAction, RunsRequest, RunsListRequest, RunsShowRequest, SessionsAction, SessionsRequest,
};
#[cfg(feature = "mcp")]
pub use llm::parse_seconds;
pub use llm::{ChatRequest, LlmOptions};
#[cfg(feature = "mcp")]
pub use mcp::McpArgs;
pub use models::{ModelsAction, ModelsRequest, ModelsImportRequest};
pub use prompt::{PromptAction, PromptRequest, PromptBuildRequest, PromptFormat};
pub use query::QueryRequest;
pub use run::{LoopOptions, RunRequest};
pub use store::{
    ChunkRequest, ChunkingOptions, DeleteRequest, DoctorRequest, EmbedRequest, GrepRequest, ListRequest, LoadRequest,
    PeekRequest, ReindexRequest, SearchRequest, ShowRequest, StatusRequest, StoreLocation,
};
pub use view::ViewRequest;

#[derive(Debug, Parser)]
#[command(
    name = "rlm",
    version,
    about = "Recursive language models over contexts far larger than a model's window",
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Flags every subcommand accepts, listed apart from each command's own in `--help`.
#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
pub struct GlobalArgs {
    /// More logging on stderr (-v debug, -vv trace); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// Only errors on stderr; no progress.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Machine-readable output on stdout (JSON, or JSON Lines for streams).
    #[arg(long, global = true)]
    pub json: bool,
    /// When to use colour (NO_COLOR is honoured by `auto`).
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, global = true)]
    pub color: ColorChoice,
    /// Configuration file to use instead of ./rlm.toml and the user file.
    #[arg(long, global = true, env = crate::settings::env::RLM_CONFIG, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Describe a context: format, size, fields, records, sample.
    Inspect(InspectRequest),
    /// Show the merged configuration and where each file came from.
    Config(ConfigArgs),
    /// Print a shell completion script.
    Completions(CompletionsArgs),
    /// Build a prompt from ranked evidence: `prompt.mdctx` + `ctxplan.json`, within a budget.
    Ctx(CtxRequest),
    /// Build a coding agent's prompt for one turn: sections with token budgets, stage
    /// instructions, the conversation summarized by a model when long.
    Prompt(PromptRequest),
    /// Ask a model once and stream the answer (usage on stderr, or in --json output).
    Chat(ChatRequest),
    /// Load files, directories or stdin into the store (chunked and indexed).
    Load(LoadRequest),
    /// List stored buffers.
    List(ListRequest),
    /// Show a buffer's metadata (and optionally its chunks or text).
    Show(ShowRequest),
    /// Print part of a buffer: a line range, a byte range or a chunk.
    Peek(PeekRequest),
    /// Regex search over stored buffers, ripgrep-style.
    Grep(GrepRequest),
    /// Preview how a file would be chunked, without storing it.
    Chunk(ChunkRequest),
    /// Ranked search over chunks (BM25, semantic or hybrid).
    Search(SearchRequest),
    /// Delete buffers from the store.
    Delete(DeleteRequest),
    /// Store sizes, counts and index state.
    Status(StatusRequest),
    /// Check the store for damage (database, marker, index, vectors, temporary files); exit 1
    /// when something is wrong.
    Doctor(DoctorRequest),
    /// Rebuild the BM25 index from the stored text (and missing vectors, when the model is
    /// available).
    Reindex(ReindexRequest),
    /// Import, list and remove embedding models (offline; from directories or wheels).
    Models(ModelsRequest),
    /// Compute embeddings for stored chunks that have none.
    Embed(EmbedRequest),
    /// Answer a question over huge contexts: the model writes code in a sandbox, calls
    /// sub-models, and iterates until it answers.
    Run(RunRequest),
    /// Measure a model on generated tasks (needle in a haystack, OOLONG-style counting) run
    /// through the same loop as `rlm run`: score, tokens, cost and time per task.
    BenchQuality(BenchQualityArgs),
    /// Write a run's trajectory as one self-contained HTML page (turns, code, sub-calls,
    /// child runs) that opens from disk.
    View(ViewRequest),
    /// List past runs, or show one: turns, code, output, sub-calls, usage, variables.
    Runs(RunsRequest),
    /// List, show or delete the sessions `rlm run --session NAME` continues.
    Sessions(SessionsRequest),
    /// Answer an analytic question over the whole store: plan, search, extract findings from
    /// chunks in parallel, and write a report that cites chunk ids.
    Query(QueryRequest),
    /// Serve the tools (inspect, load, search, grep, peek, run, ctx, query) and the stored
    /// buffers to a coding agent over the Model Context Protocol, on stdio or (`--http`) over
    /// streamable HTTP on loopback.
    #[cfg(feature = "mcp")]
    Mcp(McpArgs),
    // New subcommands: add a variant here, its `*Args` in `cli/<area>.rs`, its resolved
    // settings in `settings/`, and its behaviour in `commands/<name>.rs`.
}

#[derive(Debug, Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    pub action: Option<ConfigAction>,
}

#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// Print the merged configuration (secrets redacted).
    Show,
    /// Print the configuration files that were looked for, in precedence order.
    Paths,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// Shell to generate completions for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory as _, ValueEnum};
    use rlm_context::chunk::{CHARS_PER_TOKEN, SizeUnit, Strategy};

    use super::*;

    #[test]
    fn definitions_are_consistent() {
        Cli::command().debug_assert();
    }

    fn names<E: ValueEnum>() -> Vec<String> {
        E::value_variants()
            .iter()
            .filter_map(ValueEnum::to_possible_value)
            .map(|value| value.get_name().to_owned())
            .collect()
    }

    /// The library enums the flags offer keep the value names the mirror enums had.
    #[test]
    fn library_choices_keep_their_names() {
        assert_eq!(
            names::<Strategy>(),
            ["auto", "fixed", "structure", "records", "code"]
        );
        assert_eq!(names::<SizeUnit>(), ["chars", "tokens"]);
        assert_eq!(
            names::<rlm_store::SearchMode>(),
            ["bm25", "semantic", "hybrid"]
        );
        assert_eq!(names::<rlm_query::ScanMode>(), ["search", "all"]);
        assert_eq!(names::<rlm_query::Threshold>(), ["low", "medium", "high"]);
        assert_eq!(
            names::<rlm_assemble::Slot>(),
            ["system", "user", "evidence"]
        );
        let tokens = SizeUnit::Tokens.to_possible_value().unwrap();
        let help = tokens.get_help().unwrap().to_string();
        assert!(
            help.contains(&format!("{CHARS_PER_TOKEN} characters")),
            "{help}"
        );
    }
}

/// The spending budget of `rlm run` and `rlm query`, read and checked the same way by both
/// (`settings::budget`): a negative or zero value is an input error with a hint, not a
/// parse error.
#[derive(Debug, Clone, Default, Args)]
pub struct BudgetOptions {
    /// Stop when this many US dollars have been spent (every model call counted).
    #[arg(long, value_name = "USD", allow_negative_numbers = true)]
    pub max_cost: Option<f64>,
    /// Stop when this many tokens have been used (every model call counted).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub max_tokens: Option<i64>,
}
