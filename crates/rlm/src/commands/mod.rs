//! One module per subcommand, each: the operation's request from the command line, the
//! operation (`rlm_app::operations`), and the records printed as text or JSON. `dispatch`
//! routes a parsed command line to it.

mod chat;
mod chunk;
mod completions;
mod config;
mod ctx;
mod delete;
mod doctor;
mod embed;
mod grep;
mod inspect;
mod list;
mod load;
mod man;
#[cfg(feature = "mcp")]
mod mcp;
mod models;
mod peek;
mod prompt;
mod query;
mod reindex;
mod run;
mod runs;
mod search;
mod sessions;
mod show;
mod status;
mod store;
mod view;

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

use rlm_app::settings::Sources;
use rlm_app::{Context, Outcome, StopHandle};

use crate::cli::{Cli, Command, GlobalArgs, OnStore, StoreLocation};
use crate::progress::Printer;

/// What a command runs with: its global flags, the settings sources (with `--store` set on
/// them) and the operation's context (the stderr printer, Ctrl-C and SIGTERM, stdin).
pub struct Run<'a> {
    pub global: &'a GlobalArgs,
    pub sources: Sources,
    pub context: Context,
    printer: Arc<Printer>,
}

impl Run<'_> {
    /// Clears a progress line the operation left.
    pub fn finish(&self) {
        self.printer.clear();
    }

    /// Prints the notes on stderr, unless `--quiet`.
    pub fn print_notes<R>(&self, outcome: &Outcome<R>) {
        self.finish();
        if self.global.quiet {
            return;
        }
        let mut stderr = anstream::stderr();
        for note in &outcome.notes {
            let _ = writeln!(stderr, "{}", crate::output::neutralize(note));
        }
    }

    /// Every record as a JSON line.
    pub fn print_json<R: serde::Serialize>(&self, outcome: &Outcome<R>) -> anyhow::Result<()> {
        self.finish();
        let mut out = crate::output::raw_stdout();
        for record in &outcome.records {
            crate::output::write_json(&mut out, record)?;
        }
        out.flush()?;
        Ok(())
    }

    /// The exit code an outcome ends with: its error's (printed), else its status's.
    pub fn exit<R>(&self, outcome: Outcome<R>) -> anyhow::Result<ExitCode> {
        self.finish();
        match outcome.error {
            Some(err) => Err(err),
            None => Ok(ExitCode::from(outcome.status.code())),
        }
    }
}

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    let Cli {
        global,
        store,
        command,
    } = cli;
    let stop = StopHandle::new();
    crate::signals::watch(stop.clone());
    if let Some(kept) = kept_when_interrupted(&command) {
        crate::signals::set_kept_note(kept);
    }
    let printer = Arc::new(Printer::new(&global, stop.clone()));
    // Records stream to stdout as they come: no ceiling on an answer.
    let context = Context::new(printer.clone(), stop)
        .with_stdin()
        .with_reply_limit(rlm_app::ReplyLimit::UNLIMITED);
    let run = |location: Option<&StoreLocation>| {
        // Nothing is read yet: the configuration files are loaded when a command first asks.
        let mut sources =
            Sources::from_process(global.config.clone()).with_warnings(printer.clone());
        // After the command (`rlm search q --store DIR`) or before it (`rlm --store DIR …`).
        let named = location.and_then(|location| location.store.clone());
        if let Some(dir) = named.or_else(|| store.clone()) {
            sources = sources.with_store(dir);
        }
        Run {
            global: &global,
            sources,
            context: context.clone(),
            printer: printer.clone(),
        }
    };
    match command {
        Command::Inspect(request) => inspect::run(&run(None), request),
        Command::Config(request) => config::run(&run(None), request),
        Command::Completions(args) => completions::run(args),
        Command::Man(args) => man::run(args),
        Command::Ctx(request) => ctx::run(&run(None), request),
        Command::Prompt(request) => prompt::run(&run(None), request),
        Command::Chat(request) => chat::run(&run(None), request),
        Command::Load(OnStore { request, location }) => load::run(&run(Some(&location)), request),
        Command::List(OnStore { request, location }) => list::run(&run(Some(&location)), request),
        Command::Show(OnStore { request, location }) => show::run(&run(Some(&location)), request),
        Command::Peek(OnStore { request, location }) => peek::run(&run(Some(&location)), request),
        Command::Grep(OnStore { request, location }) => grep::run(&run(Some(&location)), request),
        Command::Chunk(request) => chunk::run(&run(None), request),
        Command::Search(OnStore { request, location }) => {
            search::run(&run(Some(&location)), request)
        }
        Command::Delete(OnStore { request, location }) => {
            delete::run(&run(Some(&location)), request)
        }
        Command::Status(OnStore { request, location }) => {
            status::run(&run(Some(&location)), request)
        }
        Command::Doctor(OnStore { request, location }) => {
            doctor::run(&run(Some(&location)), request)
        }
        Command::Reindex(OnStore { request, location }) => {
            reindex::run(&run(Some(&location)), request)
        }
        Command::Store(request) => store::run(&run(None), request),
        Command::Models(request) => models::run(&run(None), request),
        Command::Embed(OnStore { request, location }) => embed::run(&run(Some(&location)), request),
        Command::Run(request) => run::run(&run(None), request),
        Command::View(request) => view::run(&run(None), request),
        Command::Runs(request) => runs::run(&run(None), request),
        Command::Sessions(request) => sessions::run(&run(None), request),
        Command::Query(OnStore { request, location }) => query::run(&run(Some(&location)), request),
        #[cfg(feature = "mcp")]
        Command::Mcp(mut options) => {
            options.store = options.store.or(store);
            mcp::run(&global, options)
        }
    }
}

/// What a command that writes keeps when Ctrl-C stops it, and how to go on.
fn kept_when_interrupted(command: &Command) -> Option<&'static str> {
    Some(match command {
        Command::Load(_) => {
            "nothing of this load was stored (a load is one transaction); run the same command \
             again to load"
        }
        Command::Embed(_) => "the vectors computed so far are kept; `rlm embed` computes the rest",
        Command::Store(_) => {
            "the buffers copied so far are kept; run the same copy again to finish it"
        }
        _ => return None,
    })
}
