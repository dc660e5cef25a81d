//! Colour choice, terminal-safe text, and stdout writing that turns a closed pipe into a quiet
//! exit.
//!
//! Two rules live here so every command follows them the same way:
//!
//! - **Text we did not write** (model replies, REPL output, document text, file names) never
//!   reaches a terminal with its control characters: [`neutralize`] shows them as visible
//!   escapes, whatever `--color` says. Our own styling is added around the neutralised text.
//!   Data piped to a file stays byte-exact ([`raw_stdout`], [`for_stdout`]).
//! - **A closed stdout** (`| head`) ends the command quietly with exit 0: every stdout writer
//!   comes from here and records the broken pipe, which `error::report` checks.

use std::borrow::Cow;
use std::io::{self, IsTerminal as _, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::cli::ColorChoice;

pub use rlm_app::text::{cache_note, cost, count, human_bytes, neutralize, totals_cost, usd};

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
    color_on(|| std::io::stderr().is_terminal())
}

/// Colour by the global choice; `auto` means on a terminal (`terminal`) unless `NO_COLOR` is set.
fn color_on(terminal: impl FnOnce() -> bool) -> bool {
    match anstream::ColorChoice::global() {
        anstream::ColorChoice::Always | anstream::ColorChoice::AlwaysAnsi => true,
        anstream::ColorChoice::Never => false,
        anstream::ColorChoice::Auto => {
            std::env::var_os(rlm_app::settings::env::NO_COLOR).is_none_or(|v| v.is_empty())
                && terminal()
        }
    }
}

/// Whether stdout is a terminal (a person reads it, so data text is neutralised). Asked once:
/// commands call this for every line they print.
pub fn stdout_is_terminal() -> bool {
    static TERMINAL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TERMINAL.get_or_init(|| io::stdout().is_terminal())
}

/// Whether [`stdout`] keeps ANSI colour (the global choice, `NO_COLOR`, a terminal).
pub fn stdout_color() -> bool {
    color_on(stdout_is_terminal)
}

/// Data text for stdout: neutralised on a terminal, byte-exact when piped or redirected.
pub fn for_stdout(text: &str) -> Cow<'_, str> {
    if stdout_is_terminal() {
        neutralize(text)
    } else {
        Cow::Borrowed(text)
    }
}

/// Set once a write to stdout failed because the reader went away.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Whether a write to stdout hit a closed pipe: the command should then end quietly, exit 0.
pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// A stdout writer that records a broken pipe (see [`stdout_closed`]) and passes the error on,
/// so `?` stops the command and `error::report` ends it quietly.
#[derive(Debug)]
pub struct PipeAware<W>(W);

impl<W: Write> PipeAware<W> {
    fn note(result: io::Result<usize>) -> io::Result<usize> {
        if let Err(err) = &result
            && err.kind() == io::ErrorKind::BrokenPipe
        {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
        }
        result
    }
}

impl<W: Write> Write for PipeAware<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Self::note(self.0.write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        Self::note(self.0.flush().map(|()| 0)).map(|_| ())
    }
}

/// Stdout for styled listings (our colours, stripped when stdout is not a colour terminal).
/// Interpolate text we did not write through [`for_stdout`]. Write with `writeln!` and `?`.
pub fn stdout() -> PipeAware<Box<dyn Write>> {
    PipeAware(Box::new(anstream::AutoStream::auto(io::stdout().lock())))
}

/// Stdout for data written as is (answers, buffer text, JSON): nothing stripped, so a
/// redirect gets the exact bytes. Neutralise with [`for_stdout`] first where a terminal may
/// read it.
pub fn raw_stdout() -> PipeAware<Box<dyn Write>> {
    PipeAware(Box::new(io::stdout().lock()))
}

/// Unlocked raw stdout, for callbacks that must be `Send` (streamed answers).
pub fn raw_stdout_unlocked() -> PipeAware<Box<dyn Write + Send>> {
    PipeAware(Box::new(io::stdout()))
}

/// Writes one JSON value and a newline, keeping an I/O error an `io::Error` (not wrapped in
/// `serde_json::Error`) so a closed pipe is recognised.
pub fn write_json(out: &mut impl Write, value: &impl serde::Serialize) -> io::Result<()> {
    let line = serde_json::to_vec(value).map_err(io::Error::other)?;
    out.write_all(&line)?;
    out.write_all(b"\n")
}

/// A note on stderr for a person at a terminal (empty results and the like); silent when
/// stderr is not a terminal or `--quiet` is given, so scripts see only the data stream.
pub fn terminal_note(quiet: bool, message: &str) {
    if !quiet && io::stderr().is_terminal() {
        let mut stderr = anstream::stderr();
        let _ = writeln!(stderr, "note: {}", neutralize(message));
    }
}
