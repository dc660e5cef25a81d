//! One module per subcommand; `dispatch` routes a parsed command line to it.

mod chat;
mod completions;
mod config;
mod inspect;
pub mod llm_settings;
mod run;
mod run_progress;
mod run_sandbox;

use std::process::ExitCode;

use crate::cli::{Cli, Command};

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    let Cli { global, command } = cli;
    match command {
        Command::Inspect(args) => inspect::run(&global, args),
        Command::Config(args) => config::run(&global, args),
        Command::Completions(args) => completions::run(args),
        Command::Chat(args) => chat::run(&global, args),
        Command::Run(args) => run::run(&global, args),
    }
}
