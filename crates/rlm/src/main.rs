//! The `rlm` command line: clap's arguments (`cli/`), one module per subcommand that turns its
//! arguments into a request, calls the operation (`rlm_app::operations`) and prints the
//! records (`commands/`), progress on stderr (`progress/`), and errors with their exit codes
//! (`error.rs`). Everything a command does is in `rlm-app`, which the MCP server and the
//! Python package call too.

mod cli;
mod commands;
mod error;
mod logging;
mod output;
mod progress;
mod signals;

use std::process::ExitCode;

/// Parses the process's arguments, runs the command, maps errors to exit codes.
fn main() -> ExitCode {
    // Hidden mode: the sandbox runs model code in a child `rlm __sandbox-worker` process. It is
    // matched before clap so it never shows in help or completions and skips config and logging.
    if std::env::args_os().nth(1).as_deref() == Some(std::ffi::OsStr::new(rlm_sandbox::WORKER_ARG))
    {
        return rlm_sandbox::worker_main();
    }
    let cli = match cli::parse() {
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
        Err(err) => {
            if matches!(rlm_app::error::kind_of(&err), rlm_app::Kind::Interrupted(_)) {
                signals::say_what_was_kept();
            }
            error::report(&err)
        }
    }
}
