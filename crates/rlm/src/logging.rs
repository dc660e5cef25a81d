//! `tracing` to stderr: `-v` debug, `-vv` trace, `-q` errors only; `RUST_LOG` overrides.

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
    let filter = std::env::var(crate::settings::env::RUST_LOG)
        .ok()
        .and_then(|value| EnvFilter::try_new(value).ok())
        .unwrap_or_else(|| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(crate::output::stderr_color())
        .with_target(global.verbose > 1)
        .without_time()
        .try_init();
}
