//! Arguments of `rlm inspect`.

use std::path::PathBuf;

use clap::Args;

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
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub sample_chars: u32,
}
