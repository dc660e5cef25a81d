//! Arguments of `rlm inspect`.

use std::path::PathBuf;

use clap::Args;

/// The sample sizes `inspect` takes, in characters, and its default.
pub const SAMPLE_CHARS: std::ops::RangeInclusive<u32> = 1..=100_000;
pub const DEFAULT_SAMPLE_CHARS: u32 = 200;

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// Files to inspect; `-` reads stdin.
    #[arg(value_name = "PATH", required_unless_present = "text")]
    pub paths: Vec<PathBuf>,
    /// Inspect this inline text instead of files.
    #[arg(long, conflicts_with = "paths")]
    pub text: Option<String>,
    /// Name to show for stdin or inline text (also used as an extension hint).
    #[arg(long)]
    pub name: Option<String>,
    /// Maximum characters of the sample.
    #[arg(long, default_value_t = DEFAULT_SAMPLE_CHARS, value_parser = clap::value_parser!(u32).range(*SAMPLE_CHARS.start() as i64..=*SAMPLE_CHARS.end() as i64))]
    pub sample_chars: u32,
}
