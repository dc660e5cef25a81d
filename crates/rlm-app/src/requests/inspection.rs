//! Arguments of `rlm runs` and `rlm sessions`: looking at past runs and sessions.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct RunsRequest {
    #[cfg_attr(feature = "clap", command(subcommand))]
    #[serde(flatten)]
    pub action: RunsAction,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Subcommand))]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum RunsAction {
    /// Recent runs, newest first: id, start time, status, turns, cost, question.
    List(RunsListRequest),
    /// One run from its trajectory: the contexts, each turn's code, output, sub-calls and
    /// usage, the result, and with --vars the REPL's variables at its end.
    Show(RunsShowRequest),
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct RunsListRequest {
    /// Show at most this many runs.
    #[cfg_attr(feature = "clap", arg(long, short = 'n', value_name = "N", default_value_t = super::defaults::runs_limit()))]
    #[serde(default = "super::defaults::runs_limit")]
    pub limit: usize,
    /// Directory of run logs (default: `$XDG_STATE_HOME/rlm/runs`).
    #[cfg_attr(feature = "clap", arg(long, value_name = "DIR"))]
    pub log: Option<PathBuf>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct RunsShowRequest {
    /// A run id (as `rlm run` printed it; `rlm runs list` lists them), `last`, or a log file.
    #[cfg_attr(feature = "clap", arg(value_name = "RUN_ID|last|LOG"))]
    pub run: String,
    /// Show only this turn (1-based).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub turn: Option<u32>,
    /// Also list the REPL's variables when the run ended: name, type, size, a preview, and
    /// whether a session can restore it.
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(default)]
    pub vars: bool,
    /// Directory of run logs (default: `$XDG_STATE_HOME/rlm/runs`).
    #[cfg_attr(feature = "clap", arg(long, value_name = "DIR"))]
    pub log: Option<PathBuf>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct SessionsRequest {
    #[cfg_attr(feature = "clap", command(subcommand))]
    #[serde(flatten)]
    pub action: SessionsAction,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Subcommand))]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum SessionsAction {
    /// Every session: name, questions, last use, model.
    List,
    /// One session: its contexts (and whether they changed), its questions with their run
    /// ids, and the variables the next question starts with.
    Show(SessionNameRequest),
    /// Delete a session (its runs' logs stay).
    Rm(SessionNameRequest),
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct SessionNameRequest {
    /// The session's name.
    #[cfg_attr(feature = "clap", arg(value_name = "NAME"))]
    pub name: String,
}
