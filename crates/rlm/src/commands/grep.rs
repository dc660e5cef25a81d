//! `rlm grep`: regex over stored buffers with ripgrep-like output.

use std::io::Write as _;
use std::ops::ControlFlow;
use std::process::ExitCode;

use rlm_store::{GrepLine, GrepOptions};

use crate::cli::{GlobalArgs, GrepArgs};
use crate::error::store_error;
use crate::output;
use crate::settings::{Sources, StoreSettings};

pub fn run(global: &GlobalArgs, sources: &Sources, args: GrepArgs) -> anyhow::Result<ExitCode> {
    let store = StoreSettings::resolve(&args.location, sources).open_existing()?;
    let options = GrepOptions {
        buffers: args.buffers,
        path_glob: args.path_glob,
        context: args.context,
        ignore_case: args.ignore_case,
    };
    let mut out = output::stdout();
    let magenta = anstyle::Style::new().fg_color(Some(anstyle::AnsiColor::Magenta.into()));
    let green = anstyle::Style::new().fg_color(Some(anstyle::AnsiColor::Green.into()));
    let mut write_error = None;
    let summary = store
        .grep(&args.pattern, &options, &mut |line| {
            let result = if global.json {
                serde_json::to_writer(&mut out, &line)
                    .map_err(std::io::Error::from)
                    .and_then(|()| writeln!(out))
            } else {
                match line {
                    GrepLine::Match { buffer, line, text } => {
                        let (buffer, text) = (output::for_stdout(buffer), output::for_stdout(text));
                        writeln!(
                            out,
                            "{magenta}{buffer}{magenta:#}:{green}{line}{green:#}:{text}"
                        )
                    }
                    GrepLine::Context { buffer, line, text } => {
                        let (buffer, text) = (output::for_stdout(buffer), output::for_stdout(text));
                        writeln!(
                            out,
                            "{magenta}{buffer}{magenta:#}-{green}{line}{green:#}-{text}"
                        )
                    }
                    GrepLine::Break => writeln!(out, "--"),
                }
            };
            match result {
                Ok(()) => ControlFlow::Continue(()),
                Err(err) => {
                    write_error = Some(err);
                    ControlFlow::Break(())
                }
            }
        })
        .map_err(store_error)?;
    if let Some(err) = write_error {
        return Err(err.into());
    }
    // Like grep and ripgrep: exit 1 when nothing matched.
    Ok(if summary.matched_lines > 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::error::EXIT_FAILED)
    })
}
