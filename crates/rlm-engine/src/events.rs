//! Progress events, delivered as they happen (the CLI prints them on stderr).

use std::fmt;
use std::path::Path;

use rlm_llm::Usage;

use crate::repl::ExecOutcome;
use crate::run::Status;

/// Which host function a sub-call came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SubcallKind {
    /// A plain sub-model call (`llm_query`, or `rlm_query` at the depth limit).
    LlmQuery,
    /// A recursive child run (`rlm_query` below the depth limit).
    RlmQuery,
}

impl SubcallKind {
    /// The host function's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::LlmQuery => "llm_query",
            Self::RlmQuery => "rlm_query",
        }
    }
}

/// Totals over the whole run tree so far.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Input + output tokens.
    pub tokens: u64,
    /// Dollars over priced calls (a lower bound when some prices are unknown).
    pub cost_usd: f64,
    /// Sub-calls currently running.
    pub subcalls_in_flight: usize,
}

/// Something that happened in a run. `depth` is 0 for the root run.
#[derive(Debug)]
#[non_exhaustive]
pub enum Event<'a> {
    /// A run began.
    RunStarted {
        /// Its id.
        run_id: &'a str,
        /// Recursion depth.
        depth: u32,
        /// The model writing code.
        model: &'a str,
        /// Its trajectory file, if logging.
        log: Option<&'a Path>,
    },
    /// A root-model turn is starting.
    IterationStarted {
        /// Recursion depth.
        depth: u32,
        /// 1-based turn.
        iteration: u32,
        /// The turn budget.
        max_iterations: u32,
    },
    /// The model answered a turn.
    ModelReplied {
        /// Recursion depth.
        depth: u32,
        /// The call's tokens.
        usage: &'a Usage,
        /// Tree totals.
        progress: Progress,
    },
    /// A code block is about to run.
    CodeStarted {
        /// Recursion depth.
        depth: u32,
        /// The code.
        code: &'a str,
    },
    /// A code block finished.
    CodeFinished {
        /// Recursion depth.
        depth: u32,
        /// What it produced.
        outcome: &'a ExecOutcome,
    },
    /// A sub-call started.
    SubcallStarted {
        /// Depth of the run making the call.
        depth: u32,
        /// Which kind.
        kind: SubcallKind,
        /// Tree totals.
        progress: Progress,
    },
    /// A sub-call finished.
    SubcallFinished {
        /// Depth of the run making the call.
        depth: u32,
        /// Which kind.
        kind: SubcallKind,
        /// Whether it failed.
        failed: bool,
        /// Tree totals.
        progress: Progress,
    },
    /// A run ended.
    RunFinished {
        /// Its id.
        run_id: &'a str,
        /// Recursion depth.
        depth: u32,
        /// How it ended.
        status: Status,
        /// Turns taken.
        iterations: u32,
    },
}

/// Receives events. Called from the run's tasks; keep it quick.
pub trait EventSink: Send + Sync + fmt::Debug {
    /// Handles one event.
    fn event(&self, event: &Event<'_>);
}
