//! Argument definitions only; behaviour lives in `commands/`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use rlm_app::requests::{
    ChatRequest, ChunkRequest, ConfigRequest, CtxRequest, DeleteRequest, DoctorRequest,
    EmbedRequest, GrepRequest, InspectRequest, ListRequest, LoadRequest, ModelsRequest,
    PeekRequest, PromptRequest, QueryRequest, ReindexRequest, RunRequest, RunsRequest,
    SearchRequest, SessionsRequest, ShowRequest, StatusRequest, StoreRequest, ViewRequest,
};

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
    /// The store the store commands, `query` and `run --store` use: a directory, or a PostgreSQL
    /// URL (also accepted after the command; default .rlm) [env: RLM_STORE].
    #[arg(long, value_name = "DIR|URL")]
    pub store: Option<PathBuf>,
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
    /// Configuration file to use instead of ./rlm.toml and the user file [env: RLM_CONFIG].
    #[arg(long, global = true, value_name = "FILE")]
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
    Config(ConfigRequest),
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
    Load(OnStore<LoadRequest>),
    /// List stored buffers.
    List(OnStore<ListRequest>),
    /// Show a buffer's metadata (and optionally its chunks or text).
    Show(OnStore<ShowRequest>),
    /// Print part of a buffer: a line range, a byte range or a chunk.
    Peek(OnStore<PeekRequest>),
    /// Regex search over stored buffers, ripgrep-style.
    Grep(OnStore<GrepRequest>),
    /// Preview how a file would be chunked, without storing it.
    Chunk(ChunkRequest),
    /// Ranked search over chunks (BM25, semantic or hybrid).
    Search(OnStore<SearchRequest>),
    /// Delete buffers from the store.
    Delete(OnStore<DeleteRequest>),
    /// Store sizes, counts and index state.
    Status(OnStore<StatusRequest>),
    /// Check the store for damage (database, marker, index, vectors, temporary files); exit 1
    /// when something is wrong.
    Doctor(OnStore<DoctorRequest>),
    /// Rebuild the BM25 index from the stored text (and missing vectors, when the model is
    /// available).
    Reindex(OnStore<ReindexRequest>),
    /// Move a store between a directory and PostgreSQL (`rlm store copy SRC DST`).
    Store(StoreRequest),
    /// Import, list and remove embedding models (offline; from directories or wheels).
    Models(ModelsRequest),
    /// Compute embeddings for stored chunks that have none.
    Embed(OnStore<EmbedRequest>),
    /// Answer a question over huge contexts: the model writes code in a sandbox, calls
    /// sub-models, and iterates until it answers.
    Run(RunRequest),
    /// Write a run's trajectory as one self-contained HTML page (turns, code, sub-calls,
    /// child runs) that opens from disk.
    View(ViewRequest),
    /// List past runs, or show one: turns, code, output, sub-calls, usage, variables.
    Runs(RunsRequest),
    /// List, show or delete the sessions `rlm run --session NAME` continues.
    Sessions(SessionsRequest),
    /// Answer an analytic question over the whole store: plan, search, extract findings from
    /// chunks in parallel, and write a report that cites chunk ids.
    Query(OnStore<QueryRequest>),
    /// Serve the tools (inspect, load, search, grep, peek, run, ctx, query) and the stored
    /// buffers to a coding agent over the Model Context Protocol, on stdio or (`--http`) over
    /// streamable HTTP on loopback.
    #[cfg(feature = "mcp")]
    Mcp(rlm_mcp::ServerOptions),
    // New subcommands: add a variant here, its `*Args` in `cli/<area>.rs`, its resolved
    // settings in `settings/`, and its behaviour in `commands/<name>.rs`.
}

/// A store command's request and where its store is.
#[derive(Debug, Args)]
pub struct OnStore<R: Args> {
    #[command(flatten)]
    pub request: R,
    #[command(flatten)]
    pub location: StoreLocation,
}

/// Where the store lives: `--store DIR`, else `RLM_STORE`, else `.rlm` (the settings decide).
#[derive(Debug, Clone, Default, Args)]
pub struct StoreLocation {
    /// Store directory, or a PostgreSQL URL `postgres://USER@HOST/DATABASE?schema=NAME`
    /// (default: .rlm in the current directory) [env: RLM_STORE].
    #[arg(long, value_name = "DIR|URL")]
    pub store: Option<PathBuf>,
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

    /// Every flag a descriptor names is a flag of some command.
    #[test]
    fn every_flag_is_a_flag_of_some_command() {
        fn longs(command: &clap::Command, out: &mut Vec<String>) {
            out.extend(
                command
                    .get_arguments()
                    .filter_map(|arg| arg.get_long().map(|long| format!("--{long}"))),
            );
            for sub in command.get_subcommands() {
                longs(sub, out);
            }
        }
        let mut flags = Vec::new();
        longs(&Cli::command(), &mut flags);
        for described in rlm_app::settings::catalog::ALL {
            if let Some(flag) = described.flag() {
                assert!(
                    flags.iter().any(|f| f == flag),
                    "{flag} is no command's flag"
                );
            }
        }
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
