//! Colour choice and stdout writing that turns a closed pipe into a quiet exit.

use std::io::{IsTerminal as _, Write};

use crate::cli::ColorChoice;

pub fn init_color(choice: ColorChoice) {
    let choice = match choice {
        ColorChoice::Auto => anstream::ColorChoice::Auto,
        ColorChoice::Always => anstream::ColorChoice::Always,
        ColorChoice::Never => anstream::ColorChoice::Never,
    };
    choice.write_global();
}

/// Whether stderr gets ANSI colour (for the log formatter, which does not go through anstream).
pub fn stderr_color() -> bool {
    match anstream::ColorChoice::global() {
        anstream::ColorChoice::Always | anstream::ColorChoice::AlwaysAnsi => true,
        anstream::ColorChoice::Never => false,
        anstream::ColorChoice::Auto => {
            std::env::var_os(crate::env::NO_COLOR).is_none_or(|v| v.is_empty())
                && std::io::stderr().is_terminal()
        }
    }
}

/// Stdout for data. Write with `writeln!` and `?` so a closed pipe ends the command quietly.
pub fn stdout() -> anstream::AutoStream<std::io::StdoutLock<'static>> {
    anstream::AutoStream::auto(std::io::stdout().lock())
}

/// Prints one JSON value as a line on stdout.
pub fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut out = stdout();
    serde_json::to_writer(&mut out, value)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}
