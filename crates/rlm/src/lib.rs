//! The `rlm` command-line interface as a library: the binary (`main.rs`) is [`main`], and other
//! front ends — the Python package (`crates/rlm-py`) — run the same commands in-process through
//! [`embedded`]. Argument definitions live in `cli`, their resolution into settings (flags >
//! env > files > defaults) in `settings`, each subcommand in `commands/`, and [`main`] only
//! wires them to the process (logging, exit codes, errors).

mod cli;
mod commands;
mod contexts;
pub mod embedded;
mod engine;
mod error;
mod logging;
mod observers;
mod output;
mod progress;
mod query_progress;
mod sandbox;
mod session;
mod settings;
mod signals;
mod store_functions;

use std::process::ExitCode;

use clap::Parser;

/// The `rlm` binary: parses the process's arguments, runs the command, maps errors to exit
/// codes.
pub fn main() -> ExitCode {
    // Hidden mode: the sandbox runs model code in a child `rlm __sandbox-worker` process. It is
    // matched before clap so it never shows in help or completions and skips config and logging.
    if std::env::args_os().nth(1).as_deref() == Some(std::ffi::OsStr::new(rlm_sandbox::WORKER_ARG))
    {
        return rlm_sandbox::worker_main();
    }
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
