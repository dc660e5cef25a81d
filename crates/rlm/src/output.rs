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
            std::env::var_os(crate::settings::env::NO_COLOR).is_none_or(|v| v.is_empty())
                && terminal()
        }
    }
}

/// Control characters in `text` as visible escapes, so text from a model, a REPL, a document or
/// a file name cannot move the cursor, erase lines, retitle the window or ring the bell.
///
/// `\n` and `\t` are kept. Other C0 controls and DEL are shown as `\xNN` (ESC as `\x1b`, a
/// carriage return as `\x0d`); C1 controls (U+0080–U+009F, which some terminals treat like
/// ESC-sequences) and bidi controls (U+202E would reorder the line) as `\u{NN}`. Everything
/// else, including non-ASCII text, is unchanged.
/// Borrowed when there is nothing to replace, which is the common case.
pub fn neutralize(text: &str) -> Cow<'_, str> {
    // Bidi controls too: U+202E would reorder what the terminal shows.
    let needs = |c: char| {
        (c.is_control() && c != '\n' && c != '\t') || rlm_context::fence::is_bidi_control(c)
    };
    if !text.chars().any(needs) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !needs(c) {
            shown.push(c);
        } else if (c as u32) < 0x80 {
            shown.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            shown.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    Cow::Owned(shown)
}

/// Whether stdout is a terminal (a person reads it, so data text is neutralised). Asked once:
/// commands call this for every line they print.
pub fn stdout_is_terminal() -> bool {
    static TERMINAL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TERMINAL.get_or_init(|| io::stdout().is_terminal())
}

/// Whether [`stdout`] keeps ANSI colour (the global choice, `NO_COLOR`, a terminal).
pub fn stdout_color() -> bool {
    color_on(|| stdout_is_terminal() && capture::target().is_none())
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
    PipeAware(match capture::target() {
        Some(target) => target,
        None => Box::new(anstream::AutoStream::auto(io::stdout().lock())),
    })
}

/// Stdout for data written as is (answers, buffer text, JSON): nothing stripped, so a
/// redirect gets the exact bytes. Neutralise with [`for_stdout`] first where a terminal may
/// read it.
pub fn raw_stdout() -> PipeAware<Box<dyn Write>> {
    PipeAware(match capture::target() {
        Some(target) => target,
        None => Box::new(io::stdout().lock()),
    })
}

/// Unlocked raw stdout, for callbacks that must be `Send` (streamed answers).
pub fn raw_stdout_unlocked() -> PipeAware<Box<dyn Write + Send>> {
    PipeAware(match capture::target() {
        Some(target) => target,
        None => Box::new(io::stdout()),
    })
}

/// Where a command's stdout goes when it is not the process's stdout: `rlm mcp` runs a
/// command on a thread of its own and collects what it prints ([`capture::run`]), because the
/// process's stdout carries the protocol; and the errors it reports and goes on after (a path
/// `rlm load` cannot read), which the client must see rather than the server's stderr.
pub mod capture {
    use std::cell::RefCell;
    use std::io::{self, Write};
    use std::sync::atomic::{AtomicBool, Ordering};

    thread_local! {
        static CAPTURED: RefCell<Option<Vec<u8>>> = const { RefCell::new(None) };
        static REPORTED: RefCell<Option<Vec<String>>> = const { RefCell::new(None) };
    }

    /// What a command left while it was captured.
    #[derive(Debug, Default)]
    pub struct Captured {
        /// What it printed on stdout.
        pub printed: Vec<u8>,
        /// The errors it reported (`error: …` / `hint: …` text, one per error) and went on.
        pub reported: Vec<String>,
    }

    /// Set once the process's stdout belongs to a protocol: output from a thread that is not
    /// capturing then goes to stderr rather than corrupting the stream.
    static STDOUT_IS_PROTOCOL: AtomicBool = AtomicBool::new(false);

    /// From now on, nothing a command prints reaches the process's stdout.
    #[cfg_attr(
        not(feature = "mcp"),
        expect(dead_code, reason = "only `rlm mcp` uses it")
    )]
    pub fn reserve_stdout() {
        STDOUT_IS_PROTOCOL.store(true, Ordering::Relaxed);
    }

    /// Runs `f` on this thread with its stdout and reported errors collected, and returns
    /// both.
    pub fn run<R>(f: impl FnOnce() -> R) -> (R, Captured) {
        CAPTURED.with_borrow_mut(|captured| *captured = Some(Vec::new()));
        REPORTED.with_borrow_mut(|reported| *reported = Some(Vec::new()));
        let result = f();
        let captured = Captured {
            printed: CAPTURED.with_borrow_mut(Option::take).unwrap_or_default(),
            reported: REPORTED.with_borrow_mut(Option::take).unwrap_or_default(),
        };
        (result, captured)
    }

    /// Keeps `shown` (an error's plain text) for the caller of [`run`] when this thread is
    /// captured; `false` when it is not and the error should go to stderr.
    pub fn keep_report(shown: &str) -> bool {
        REPORTED.with_borrow_mut(|reported| match reported {
            Some(reported) => {
                reported.push(shown.to_owned());
                true
            }
            None => false,
        })
    }

    /// The writer for this thread when stdout is not the process's own.
    pub(super) fn target() -> Option<Box<dyn Write + Send>> {
        if CAPTURED.with_borrow(Option::is_some) {
            Some(Box::new(Buffer))
        } else if STDOUT_IS_PROTOCOL.load(Ordering::Relaxed) {
            Some(Box::new(io::stderr()))
        } else {
            None
        }
    }

    /// Appends to the calling thread's buffer (a `Send` callback run elsewhere finds none and
    /// writes to stderr).
    struct Buffer;

    impl Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let kept = CAPTURED.with_borrow_mut(|captured| match captured {
                Some(bytes) => {
                    bytes.extend_from_slice(buf);
                    true
                }
                None => false,
            });
            if kept {
                Ok(buf.len())
            } else {
                io::stderr().write(buf)
            }
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
}

/// Prints one JSON value as a line on stdout (JSON escapes control characters itself).
pub fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut out = raw_stdout();
    write_json(&mut out, value)?;
    out.flush()?;
    Ok(())
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

/// What a call or a run read from and wrote to the providers' prompt caches, as
/// ` · cache 4,200 read, 700 written` (a part that is zero left out), or nothing when both are.
pub fn cache_note(usage: &rlm_llm::Usage) -> String {
    let parts: Vec<String> = [
        (usage.cache_read_tokens, "read"),
        (usage.cache_write_tokens, "written"),
    ]
    .into_iter()
    .filter(|(tokens, _)| *tokens > 0)
    .map(|(tokens, verb)| format!("{} {verb}", rlm_context::thousands(tokens)))
    .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" · cache {}", parts.join(", "))
    }
}

/// US dollars with four decimals. Never `$-0.0000`: a sum of no costs can be negative zero,
/// and spend is never below zero.
pub fn usd(amount: f64) -> String {
    let amount = if amount > 0.0 { amount } else { 0.0 };
    format!("${amount:.4}")
}

/// A cost for a person: `$0.0123`; `≥ $0.0123 (some prices unknown)` when some calls had no
/// price; `cost unknown` when none had one (a local model) rather than a made-up `$0.0000`.
pub fn cost(cost_usd: f64, unpriced_calls: u64) -> String {
    match unpriced_calls {
        0 => usd(cost_usd),
        _ if cost_usd <= 0.0 => "cost unknown".to_owned(),
        _ => format!("≥ {} (some prices unknown)", usd(cost_usd)),
    }
}

/// [`cost`] of a model's totals.
pub fn totals_cost(totals: &rlm_llm::ModelTotals) -> String {
    cost(totals.cost_usd, totals.unpriced_calls)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unpriced_cost_is_unknown_not_zero() {
        assert_eq!(cost(0.0123, 0), "$0.0123");
        assert_eq!(cost(0.0, 0), "$0.0000");
        assert_eq!(cost(0.0, 2), "cost unknown");
        assert_eq!(cost(0.5, 1), "≥ $0.5000 (some prices unknown)");
    }

    #[test]
    fn cache_notes_name_only_what_happened() {
        let usage = |read, write| rlm_llm::Usage {
            input_tokens: 10_000,
            output_tokens: 5,
            cache_read_tokens: read,
            cache_write_tokens: write,
        };
        assert_eq!(cache_note(&usage(0, 0)), "");
        assert_eq!(cache_note(&usage(4_200, 0)), " · cache 4,200 read");
        assert_eq!(cache_note(&usage(0, 700)), " · cache 700 written");
        assert_eq!(
            cache_note(&usage(12_345, 700)),
            " · cache 12,345 read, 700 written"
        );
    }

    #[test]
    fn counts_and_dollars_read_right() {
        assert_eq!(count(1, "turn"), "1 turn");
        assert_eq!(count(0, "turn"), "0 turns");
        assert_eq!(count(2, "model call"), "2 model calls");
        assert_eq!(usd(-0.0), "$0.0000");
        assert_eq!(usd([].iter().sum::<f64>()), "$0.0000");
        assert_eq!(usd(0.01234), "$0.0123");
    }

    #[test]
    fn neutralize_shows_controls_and_keeps_newlines_and_tabs() {
        assert!(matches!(neutralize("plain\ttext\n"), Cow::Borrowed(_)));
        assert_eq!(
            neutralize("a\x1b]0;pwned\x07b\r\x1b[Kc\u{9b}d\u{7f}"),
            "a\\x1b]0;pwned\\x07b\\x0d\\x1b[Kc\\u{9b}d\\x7f"
        );
        assert_eq!(neutralize("héllo ✓\n"), "héllo ✓\n");
        assert_eq!(neutralize("a\u{202E}b\u{2067}c"), "a\\u{202e}b\\u{2067}c");
    }
}
