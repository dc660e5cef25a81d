//! `rlm view` arguments.

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub struct ViewArgs {
    /// A run or query id (as `rlm run`/`rlm query` printed it; a child run's id works too) or a
    /// log file (.jsonl).
    #[arg(value_name = "RUN_ID|LOG", required_unless_present = "last")]
    pub run: Option<String>,
    /// The most recent run or query in the log directory.
    #[arg(long, conflicts_with = "run")]
    pub last: bool,
    /// Where to write the page (default: beside a LOG file, or ./rlm-RUN_ID.html).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Open the page in the browser once written: `$BROWSER`, else xdg-open (rlm does not wait
    /// for it).
    #[arg(long)]
    pub open: bool,
    /// Directory of run logs to look in for RUN_ID and --last (default: `$XDG_STATE_HOME/rlm/runs`).
    #[arg(long, value_name = "DIR")]
    pub log: Option<PathBuf>,
}
