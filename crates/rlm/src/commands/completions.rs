//! `rlm completions SHELL`: shell completion scripts on stdout.

use std::process::ExitCode;

use clap::CommandFactory as _;

use crate::cli::{Cli, CompletionsArgs};

pub fn run(args: CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut command = Cli::command();
    let mut out = crate::output::stdout();
    clap_complete::generate(args.shell, &mut command, "rlm", &mut out);
    Ok(ExitCode::SUCCESS)
}
