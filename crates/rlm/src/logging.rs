//! `tracing` to stderr: `-v` debug, `-vv` trace, `-q` errors only; `RUST_LOG` overrides.
//! Configured API keys are masked in every line (`rlm_llm::secrets`).

use std::io::{self, Write};

use tracing_subscriber::EnvFilter;

use crate::cli::GlobalArgs;

pub fn init(global: &GlobalArgs) {
    let default = if global.quiet {
        "error"
    } else {
        match global.verbose {
            0 => "warn",
            1 => "debug",
            _ => "trace",
        }
    };
    let filter = std::env::var(rlm_app::settings::env::RUST_LOG)
        .ok()
        .and_then(|value| EnvFilter::try_new(value).ok())
        .unwrap_or_else(|| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| MaskedStderr)
        .with_ansi(crate::output::stderr_color())
        .with_target(global.verbose > 1)
        .without_time()
        .try_init();
}

/// Stderr with configured API keys masked. The subscriber formats an event whole and hands it
/// over in one write, so a key is never split between two.
struct MaskedStderr;

impl Write for MaskedStderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match std::str::from_utf8(buf) {
            Ok(text) => io::stderr().write_all(rlm_llm::secrets::mask(text).as_bytes())?,
            Err(_) => io::stderr().write_all(buf)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}
