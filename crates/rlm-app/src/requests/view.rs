//! `rlm view` arguments.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct ViewRequest {
    /// A run or query id (as `rlm run`/`rlm query` printed it; a child run's id works too) or a
    /// log file (.jsonl).
    #[cfg_attr(
        feature = "clap",
        arg(value_name = "RUN_ID|LOG", required_unless_present = "last")
    )]
    pub run: Option<String>,
    /// The most recent run or query in the log directory.
    #[cfg_attr(feature = "clap", arg(long, conflicts_with = "run"))]
    #[serde(default)]
    pub last: bool,
    /// Where to write the page (default: beside a LOG file, or ./rlm-RUN_ID.html).
    #[cfg_attr(feature = "clap", arg(short, long, value_name = "FILE"))]
    pub output: Option<PathBuf>,
    /// Open the page in the browser once written: `$BROWSER`, else xdg-open (rlm does not wait
    /// for it).
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(default)]
    pub open: bool,
    /// Directory of run logs to look in for RUN_ID and --last (default: `$XDG_STATE_HOME/rlm/runs`).
    #[cfg_attr(feature = "clap", arg(long, value_name = "DIR"))]
    pub log: Option<PathBuf>,
}
