//! Error presentation and exit codes (`error:` / `Caused by:` / `hint:`).

use std::fmt;
use std::io::Write as _;
use std::process::ExitCode;

/// Exit code for a task that ran but failed (e.g. no answer within budget).
pub const EXIT_FAILED: u8 = 1;
/// Exit code for a usage or input error (bad flag, missing file, malformed input).
pub const EXIT_USAGE: u8 = 2;
/// Exit code after Ctrl-C, as shells report a SIGINT death.
pub const EXIT_INTERRUPTED: u8 = 130;

/// What kind of failure an error is, which decides the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The user's input or flags are wrong: exit 2.
    Input,
    /// The task failed: exit 1.
    Failed,
    /// The user interrupted: exit 130.
    Interrupted,
}

/// An error with an exit-code kind and an optional hint, carried inside `anyhow::Error`.
#[derive(Debug)]
pub struct CliError {
    pub kind: Kind,
    pub hint: Option<String>,
    inner: anyhow::Error,
}

#[allow(dead_code, reason = "constructors used by the run/chat/store commands")]
impl CliError {
    pub fn input(inner: impl Into<anyhow::Error>) -> Self {
        Self {
            kind: Kind::Input,
            hint: None,
            inner: inner.into(),
        }
    }

    pub fn failed(inner: impl Into<anyhow::Error>) -> Self {
        Self {
            kind: Kind::Failed,
            hint: None,
            inner: inner.into(),
        }
    }

    pub fn interrupted() -> Self {
        Self {
            kind: Kind::Interrupted,
            hint: None,
            inner: anyhow::anyhow!("interrupted"),
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.inner, f)
    }
}

impl std::error::Error for CliError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner.source()
    }
}

/// Shorthand: an input error (exit 2) with a message.
#[allow(dead_code, reason = "used by the run/chat/store commands")]
pub fn input_error(message: impl fmt::Display) -> CliError {
    CliError::input(anyhow::anyhow!("{message}"))
}

/// Prints the error chain to stderr and returns the exit code it maps to.
pub fn report(err: &anyhow::Error) -> ExitCode {
    if is_broken_pipe(err) {
        return ExitCode::SUCCESS;
    }
    let cli_error = err
        .chain()
        .find_map(|cause| cause.downcast_ref::<CliError>());
    let kind = cli_error.map_or(Kind::Failed, |e| e.kind);
    if kind == Kind::Interrupted {
        return ExitCode::from(EXIT_INTERRUPTED);
    }
    let mut stderr = anstream::stderr().lock();
    let red = anstyle::Style::new()
        .bold()
        .fg_color(Some(anstyle::AnsiColor::Red.into()));
    let bold = anstyle::Style::new().bold();
    let _ = writeln!(stderr, "{red}error{red:#}: {err}");
    let mut last = err.to_string();
    for cause in err.chain().skip(1) {
        let text = cause.to_string();
        // anyhow + CliError can repeat a message once; do not print it twice.
        if text == last {
            continue;
        }
        let _ = writeln!(stderr, "  {bold}Caused by{bold:#}: {text}");
        last = text;
    }
    if let Some(hint) = cli_error.and_then(|e| e.hint.as_deref()) {
        let cyan = anstyle::Style::new()
            .bold()
            .fg_color(Some(anstyle::AnsiColor::Cyan.into()));
        let _ = writeln!(stderr, "{cyan}hint{cyan:#}: {hint}");
    }
    ExitCode::from(match kind {
        Kind::Input => EXIT_USAGE,
        Kind::Failed => EXIT_FAILED,
        Kind::Interrupted => EXIT_INTERRUPTED,
    })
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
