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
            std::env::var_os(crate::settings::env::NO_COLOR).is_none_or(|v| v.is_empty())
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

/// Human-readable byte count (powers of 1000).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: &[&str] = &["B", "KB", "MB", "GB", "TB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// `1 turn`, `2 turns`: a count with its noun in the right number.
pub fn count(number: u64, noun: &str) -> String {
    if number == 1 {
        format!("1 {noun}")
    } else {
        format!("{number} {noun}s")
    }
}

/// US dollars with four decimals. Never `$-0.0000`: a sum of no costs can be negative zero,
/// and spend is never below zero.
pub fn usd(amount: f64) -> String {
    let amount = if amount > 0.0 { amount } else { 0.0 };
    format!("${amount:.4}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_dollars_read_right() {
        assert_eq!(count(1, "turn"), "1 turn");
        assert_eq!(count(0, "turn"), "0 turns");
        assert_eq!(count(2, "model call"), "2 model calls");
        assert_eq!(usd(-0.0), "$0.0000");
        assert_eq!(usd([].iter().sum::<f64>()), "$0.0000");
        assert_eq!(usd(0.01234), "$0.0123");
    }
}
