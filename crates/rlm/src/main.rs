//! The `rlm` command-line interface. Argument definitions live in `cli`, each subcommand in
//! `commands/`, and this file only wires them to the process (logging, exit codes, errors).

mod cli;
mod commands;
mod config;
mod embedding;
mod env;
mod error;
mod logging;
mod output;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            // clap prints help/version to stdout and usage errors to stderr itself.
            let _ = err.print();
            return if err.use_stderr() {
                ExitCode::from(error::EXIT_USAGE)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    output::init_color(cli.global.color);
    logging::init(&cli.global);
    match commands::dispatch(cli) {
        Ok(code) => code,
        Err(err) => error::report(&err),
    }
}
