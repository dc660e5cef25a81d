//! Argument definitions only; behaviour lives in `commands/`.

pub mod examples;

use std::path::PathBuf;

use clap::{Args, CommandFactory as _, Parser, Subcommand, ValueEnum};
use rlm_app::requests::{
    ChatRequest, ChunkRequest, ConfigRequest, CtxRequest, DeleteRequest, DoctorRequest,
    EmbedRequest, GrepRequest, InspectRequest, ListRequest, LoadRequest, ModelsRequest,
    PeekRequest, PromptRequest, QueryRequest, ReindexRequest, RunRequest, RunsRequest,
    SearchRequest, SessionsRequest, ShowRequest, StatusRequest, StoreRequest, ViewRequest,
};

/// The command line as parsed and as shown: the definitions below with the Examples section
/// of every command's long help ([`examples`]).
pub fn command() -> clap::Command {
    examples::add(Cli::command())
}

/// The process's arguments parsed against [`command`].
pub fn parse() -> Result<Cli, clap::Error> {
    use clap::FromArgMatches as _;
    let mut command = command();
    let matches = command.try_get_matches_from_mut(std::env::args_os())?;
    Cli::from_arg_matches(&matches).map_err(|err| err.format(&mut command))
}

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
    /// Write the manual pages (roff): `rlm.1` on stdout, or with --dir a page per command.
    Man(ManArgs),
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
pub struct ManArgs {
    /// Write `rlm.1` and a page per command (`rlm-load.1`, `rlm-runs-show.1`, …) into this
    /// directory (created if missing), e.g. ~/.local/share/man/man1.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
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
        command().debug_assert();
    }

    /// Every command that can be run, `rlm` itself included, has an Examples section in its
    /// long help.
    #[test]
    fn every_command_has_examples() {
        fn walk(command: &mut clap::Command, path: &str, missing: &mut Vec<String>) {
            let help = command.render_long_help().to_string();
            if !help.contains("\nExamples:\n  $ rlm") && !help.contains("\nExamples:\n  $ ") {
                missing.push(path.to_owned());
            }
            for sub in command.get_subcommands_mut() {
                if sub.get_name() != "help" {
                    let name = format!("{path} {}", sub.get_name());
                    walk(sub, &name, missing);
                }
            }
        }
        let mut missing = Vec::new();
        walk(&mut command(), "rlm", &mut missing);
        assert!(missing.is_empty(), "no examples: {missing:?}");
        for (name, _) in examples::EXAMPLES {
            assert!(
                command().find_subcommand(name).is_some(),
                "examples for {name}, which is no command"
            );
        }
    }

    /// The words of a shell command: quotes group and are removed (`\"` inside double quotes
    /// is a quote).
    fn shell_words(text: &str) -> Vec<String> {
        let mut words = Vec::new();
        let mut word: Option<String> = None;
        let mut quote: Option<char> = None;
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            match (quote, c) {
                (Some('"'), '\\') => word.get_or_insert_default().extend(chars.next()),
                (Some(open), c) if c == open => quote = None,
                (Some(_), c) => word.get_or_insert_default().push(c),
                (None, '\'' | '"') => {
                    quote = Some(c);
                    word.get_or_insert_default();
                }
                (None, c) if c.is_whitespace() => words.extend(word.take()),
                (None, c) => word.get_or_insert_default().push(c),
            }
        }
        words.extend(word);
        words
    }

    /// The `rlm …` commands of an example line: each part of a pipeline or `&&` list, and a
    /// command substitution, that runs rlm.
    fn rlm_commands(line: &str) -> Vec<Vec<String>> {
        let line = line
            .strip_prefix("$ ")
            .expect("an example starts with `$ `");
        let line = line.split_once(" #").map_or(line, |(command, _)| command);
        let line = line.replace("\"$(", "").replace(")\"", "");
        line.split("&&")
            .flat_map(|part| part.split(" | "))
            .map(|part| part.split(" > ").next().unwrap_or(part))
            .map(|part| part.split(" < ").next().unwrap_or(part))
            .map(shell_words)
            .filter_map(|words| {
                let at = words.iter().position(|word| word == "rlm")?;
                Some(words[at..].to_vec())
            })
            .collect()
    }

    /// Every example parses with the real definitions, as the command it is listed under.
    #[test]
    fn every_example_parses_as_its_command() {
        let mut checked = 0;
        let tables = examples::EXAMPLES
            .iter()
            .map(|(name, lines)| (Some(*name), (*lines).to_owned()))
            .chain([(None, examples::for_command(&[]).unwrap())]);
        for (name, lines) in tables {
            for line in lines.lines() {
                // A line may prepare (`pip download …`) or chain (`rlm load … && rlm query …`):
                // every rlm command in it parses, and one of them is the command it is listed
                // under.
                let mut runs = Vec::new();
                for words in rlm_commands(line) {
                    match command().try_get_matches_from(&words) {
                        Ok(matches) => runs.extend(matches.subcommand_name().map(str::to_owned)),
                        Err(err) if err.kind() == clap::error::ErrorKind::DisplayHelp => {
                            runs.push(words[1].clone());
                        }
                        Err(err) => panic!("{line:?} does not parse: {err}"),
                    }
                    checked += 1;
                }
                if let Some(name) = name
                    && line.contains("rlm ")
                {
                    assert!(runs.iter().any(|run| run == name), "{line:?} runs {runs:?}");
                }
            }
        }
        assert!(checked > 100, "{checked}");
    }

    /// The `rlm` commands of the shell blocks (`console`, `sh`, `bash`) of a Markdown text, with
    /// the line each starts on: `\\` continuations joined, `$ ` prompts and comments dropped,
    /// `VAR=value` prefixes skipped, and `cargo run … -p rlm --` read as `rlm`.
    fn documented_commands(markdown: &str) -> Vec<(usize, Vec<String>)> {
        let mut commands = Vec::new();
        let mut in_shell = None;
        let mut pending: Option<(usize, String)> = None;
        for (number, line) in markdown.lines().enumerate() {
            let number = number + 1;
            let fence = line.trim_start().strip_prefix("```");
            match (in_shell, fence) {
                (None, Some(info)) => {
                    let lang = info.split_whitespace().next().unwrap_or("");
                    in_shell = Some(matches!(lang, "console" | "sh" | "bash" | "shell"));
                    continue;
                }
                (Some(_), Some(_)) => {
                    in_shell = None;
                    continue;
                }
                (Some(true), None) => {}
                _ => continue,
            }
            let (start, mut text) = pending.take().unwrap_or((number, String::new()));
            text.push_str(line.trim());
            if let Some(open) = text.strip_suffix('\\') {
                pending = Some((start, format!("{open} ")));
                continue;
            }
            let text = text.strip_prefix("$ ").unwrap_or(&text);
            let text = text
                .replace("cargo run --release --locked -p rlm -- ", "rlm ")
                .replace("cargo run --locked -p rlm -- ", "rlm ");
            for words in rlm_commands(&format!("$ {text}")) {
                commands.push((start, words));
            }
        }
        commands
    }

    /// Every `rlm` command in the README and docs/ parses with the real definitions: a doc
    /// that names a flag or a command that is gone fails here.
    #[test]
    fn every_command_in_the_docs_parses() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut files = vec![root.join("README.md")];
        let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
            .collect();
        docs.sort();
        files.extend(docs);
        let mut checked = 0;
        let mut failures = Vec::new();
        for file in &files {
            let markdown = std::fs::read_to_string(file).unwrap();
            for (line, words) in documented_commands(&markdown) {
                checked += 1;
                match command().try_get_matches_from(&words) {
                    Ok(_) => {}
                    Err(err)
                        if matches!(
                            err.kind(),
                            clap::error::ErrorKind::DisplayHelp
                                | clap::error::ErrorKind::DisplayVersion
                        ) => {}
                    Err(err) => failures.push(format!(
                        "{}:{line}: {}\n{}",
                        file.file_name().unwrap().to_string_lossy(),
                        words.join(" "),
                        err.render()
                    )),
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        assert!(checked > 60, "only {checked} commands found");
    }

    #[test]
    fn example_lines_go_to_the_subcommands_they_run() {
        assert_eq!(
            examples::subcommand_of("$ rlm --json ctx status # x"),
            ["ctx", "status"]
        );
        assert_eq!(
            examples::subcommand_of("$ eval \"$(rlm ctx env)\""),
            ["ctx", "env"]
        );
        assert_eq!(
            examples::subcommand_of("$ rlm --store postgres://x status"),
            ["status"]
        );
        let toggle = examples::for_command(&["ctx", "toggle"]).unwrap();
        assert_eq!(toggle.lines().count(), 1, "{toggle}");
        assert!(toggle.starts_with("$ rlm ctx toggle off 200-299"));
        assert!(examples::for_command(&["nothing"]).is_none());
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
