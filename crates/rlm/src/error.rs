//! How the command line shows an error (`error:` / `Caused by:` / `hint:`, as the application
//! layer's [`Shown`] gives it) and which exit code it ends with.

use std::io::Write as _;
use std::process::ExitCode;

pub use rlm_app::error::{EXIT_USAGE, Kind, Shown};

/// Prints the error chain to stderr and returns the exit code it maps to.
pub fn report(err: &anyhow::Error) -> ExitCode {
    // `| head` closed stdout: the reader has what it wanted, so end quietly.
    if crate::output::stdout_closed() || is_broken_pipe(err) {
        return ExitCode::SUCCESS;
    }
    let shown = Shown::of(err);
    let code = ExitCode::from(rlm_app::error::exit_code(err));
    if matches!(shown.kind, Kind::Interrupted(_)) {
        return code;
    }
    let mut stderr = anstream::stderr().lock();
    let red = anstyle::Style::new()
        .bold()
        .fg_color(Some(anstyle::AnsiColor::Red.into()));
    let bold = anstyle::Style::new().bold();
    let _ = writeln!(stderr, "{red}error{red:#}: {}", shown.message);
    for cause in &shown.causes {
        let _ = writeln!(stderr, "  {bold}Caused by{bold:#}: {cause}");
    }
    if let Some(hint) = &shown.hint {
        let cyan = anstyle::Style::new()
            .bold()
            .fg_color(Some(anstyle::AnsiColor::Cyan.into()));
        let _ = writeln!(stderr, "{cyan}hint{cyan:#}: {hint}");
    }
    code
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        // serde_json hides the io::Error it wraps from `source()`; ask it for the kind.
        let kind = cause
            .downcast_ref::<std::io::Error>()
            .map(std::io::Error::kind)
            .or_else(|| {
                cause
                    .downcast_ref::<serde_json::Error>()
                    .and_then(serde_json::Error::io_error_kind)
            });
        kind == Some(std::io::ErrorKind::BrokenPipe)
    })
}
