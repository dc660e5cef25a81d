//! One module per subcommand, each: resolve its settings, call a library, print.
//! `dispatch` routes a parsed command line to it.

mod bench_quality;
mod chat;
mod chunk;
mod completions;
mod config;
pub(crate) mod ctx;
mod delete;
mod doctor;
mod embed;
pub(crate) mod grep;
pub(crate) mod inspect;
pub(crate) mod list;
pub(crate) mod load;
#[cfg(feature = "mcp")]
mod mcp;
mod models;
pub(crate) mod peek;
mod prompt;
pub(crate) mod query;
mod reindex;
pub(crate) mod run;
mod runs;
pub(crate) mod search;
mod sessions;
mod show;
mod status;
mod store_copy;
mod view;

use std::io::Write as _;
use std::process::ExitCode;

use crate::cli::{Cli, Command};
use crate::settings::Sources;

/// What a command produced for its caller: the records `--json` prints, in order, and how it
/// ended. The CLI prints them, as JSON Lines or as text; `rlm mcp` returns them to its client
/// as they are, so a tool's result and its output schema come from the same types.
#[derive(Debug)]
pub struct Outcome<R> {
    pub records: Vec<R>,
    /// Lines a person should read besides the records (`note: …`, `warning: …`): the CLI
    /// prints them on stderr, `rlm mcp` after the records in the text it returns.
    pub notes: Vec<String>,
    pub code: ExitCode,
}

impl<R> Outcome<R> {
    /// `records`, exit code 0.
    pub fn success(records: Vec<R>) -> Self {
        Self {
            records,
            notes: Vec::new(),
            code: ExitCode::SUCCESS,
        }
    }

    /// Prints the notes on stderr, unless `quiet`.
    pub fn print_notes(&self, quiet: bool) {
        if quiet {
            return;
        }
        let mut stderr = anstream::stderr();
        for note in &self.notes {
            let _ = writeln!(stderr, "{}", crate::output::neutralize(note));
        }
    }
}

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    // Nothing is read yet: the configuration files are loaded when a command first asks.
    let sources = Sources::from_process(cli.global.config.clone());
    dispatch_with(cli, sources)
}

/// [`dispatch`] over given sources: the MCP server's carry the model providers it offers.
pub fn dispatch_with(cli: Cli, sources: Sources) -> anyhow::Result<ExitCode> {
    let Cli { global, command } = cli;
    let sources = &sources;
    match command {
        Command::Inspect(args) => inspect::run(&global, args),
        Command::Config(args) => config::run(&global, sources, args),
        Command::Completions(args) => completions::run(args),
        Command::Ctx(args) => ctx::run(&global, sources, args),
        Command::Prompt(args) => prompt::run(&global, sources, args),
        Command::Chat(args) => chat::run(&global, sources, args),
        Command::Load(args) => load::run(&global, sources, args),
        Command::List(args) => list::run(&global, sources, args),
        Command::Show(args) => show::run(&global, sources, args),
        Command::Peek(args) => peek::run(&global, sources, args),
        Command::Grep(args) => grep::run(&global, sources, args),
        Command::Chunk(args) => chunk::run(&global, args),
        Command::Search(args) => search::run(&global, sources, args),
        Command::Delete(args) => delete::run(&global, sources, args),
        Command::Status(args) => status::run(&global, sources, args),
        Command::Doctor(args) => doctor::run(&global, sources, args),
        Command::Reindex(args) => reindex::run(&global, sources, args),
        Command::Store(args) => store_copy::run(&global, sources, args),
        Command::Models(args) => models::run(&global, sources, args),
        Command::Embed(args) => embed::run(&global, sources, args),
        Command::Run(args) => run::run(&global, sources, args),
        Command::BenchQuality(args) => bench_quality::run(&global, sources, args),
        Command::View(args) => view::run(&global, sources, args),
        Command::Runs(args) => runs::run(&global, sources, args),
        Command::Sessions(args) => sessions::run(&global, sources, args),
        Command::Query(args) => query::run(&global, sources, args),
        #[cfg(feature = "mcp")]
        Command::Mcp(args) => mcp::run(&global, sources, args),
    }
}
