//! Arguments of `rlm runs` and `rlm sessions`: looking at past runs and sessions.

use std::path::PathBuf;

use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct RunsArgs {
    #[command(subcommand)]
    pub action: RunsAction,
}

#[derive(Debug, Subcommand)]
pub enum RunsAction {
    /// Recent runs, newest first: id, start time, status, turns, cost, question.
    List(RunsListArgs),
    /// One run from its trajectory: the contexts, each turn's code, output, sub-calls and
    /// usage, the result, and with --vars the REPL's variables at its end.
    Show(RunsShowArgs),
}

#[derive(Debug, Args)]
pub struct RunsListArgs {
    /// Show at most this many runs.
    #[arg(long, short = 'n', value_name = "N", default_value_t = 20)]
    pub limit: usize,
    /// Directory of run logs (default: `$XDG_STATE_HOME/rlm/runs`).
    #[arg(long, value_name = "DIR")]
    pub log: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RunsShowArgs {
    /// A run id (as `rlm run` printed it; `rlm runs list` lists them), `last`, or a log file.
    #[arg(value_name = "RUN_ID|last|LOG")]
    pub run: String,
    /// Show only this turn (1-based).
    #[arg(long, value_name = "N")]
    pub turn: Option<u32>,
    /// Also list the REPL's variables when the run ended: name, type, size, a preview, and
    /// whether a session can restore it.
    #[arg(long)]
    pub vars: bool,
    /// Directory of run logs (default: `$XDG_STATE_HOME/rlm/runs`).
    #[arg(long, value_name = "DIR")]
    pub log: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct SessionsArgs {
    #[command(subcommand)]
    pub action: SessionsAction,
}

#[derive(Debug, Subcommand)]
pub enum SessionsAction {
    /// Every session: name, questions, last use, model.
    List,
    /// One session: its contexts (and whether they changed), its questions with their run
    /// ids, and the variables the next question starts with.
    Show(SessionNameArgs),
    /// Delete a session (its runs' logs stay).
    Rm(SessionNameArgs),
}

#[derive(Debug, Args)]
pub struct SessionNameArgs {
    /// The session's name.
    #[arg(value_name = "NAME")]
    pub name: String,
}
