//! One module per subcommand; `dispatch` routes a parsed command line to it.

mod chat;
mod chunk;
mod completions;
mod config;
mod ctx;
mod delete;
mod embed;
mod grep;
mod inspect;
mod list;
pub mod llm_settings;
mod load;
mod models;
mod peek;
mod run;
mod run_progress;
mod run_sandbox;
mod search;
mod show;
mod status;
mod store_common;

use std::process::ExitCode;

use crate::cli::{Cli, Command};

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    let Cli { global, command } = cli;
    match command {
        Command::Inspect(args) => inspect::run(&global, args),
        Command::Config(args) => config::run(&global, args),
        Command::Completions(args) => completions::run(args),
        Command::Ctx(args) => ctx::run(&global, args),
        Command::Chat(args) => chat::run(&global, args),
        Command::Load(args) => load::run(&global, args),
        Command::List(args) => list::run(&global, args),
        Command::Show(args) => show::run(&global, args),
        Command::Peek(args) => peek::run(&global, args),
        Command::Grep(args) => grep::run(&global, args),
        Command::Chunk(args) => chunk::run(&global, args),
        Command::Search(args) => search::run(&global, args),
        Command::Delete(args) => delete::run(&global, args),
        Command::Status(args) => status::run(&global, args),
        Command::Models(args) => models::run(&global, args),
        Command::Embed(args) => embed::run(&global, args),
        Command::Run(args) => run::run(&global, args),
    }
}
