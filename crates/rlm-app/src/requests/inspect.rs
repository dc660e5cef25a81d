//! Arguments of `rlm inspect`.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The sample sizes `inspect` takes, in characters, and its default.
pub const SAMPLE_CHARS: std::ops::RangeInclusive<u32> = 1..=100_000;
pub const DEFAULT_SAMPLE_CHARS: u32 = 200;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct InspectRequest {
    /// Files to inspect; `-` reads stdin.
    #[cfg_attr(
        feature = "clap",
        arg(value_name = "PATH", required_unless_present = "text")
    )]
    #[serde(default)]
    pub paths: Vec<PathBuf>,
    /// Inspect this inline text instead of files.
    #[cfg_attr(feature = "clap", arg(long, conflicts_with = "paths"))]
    pub text: Option<String>,
    /// Name to show for stdin or inline text (also used as an extension hint).
    #[cfg_attr(feature = "clap", arg(long))]
    pub name: Option<String>,
    /// Maximum characters of the sample.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = DEFAULT_SAMPLE_CHARS, value_parser = clap::value_parser!(u32).range(*SAMPLE_CHARS.start() as i64..=*SAMPLE_CHARS.end() as i64)))]
    #[serde(default = "super::defaults::sample_chars")]
    pub sample_chars: u32,
}
