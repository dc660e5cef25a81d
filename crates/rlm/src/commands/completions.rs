//! `rlm completions SHELL`: shell completion scripts on stdout.

use std::io::Write as _;
use std::process::ExitCode;

use crate::cli::CompletionsArgs;

pub fn run(args: CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut command = crate::cli::command();
    // clap_complete panics when its writes fail (`| head`): generate into memory, then write
    // through the stdout that ends quietly on a closed pipe.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "rlm", &mut script);
    let mut out = crate::output::raw_stdout();
    out.write_all(&script)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
