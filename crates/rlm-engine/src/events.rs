//! Progress events, delivered as they happen (the CLI prints them on stderr).

use std::fmt;
use std::path::Path;

use rlm_llm::Usage;

use rlm_trace::Status;

use crate::repl::ExecOutcome;

/// Which host function a sub-call came from (the trajectory's `kind` of a sub-call).
pub use rlm_trace::SubcallKind;

/// Totals over the whole run tree so far.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Input + output tokens.
    pub tokens: u64,
    /// Dollars over priced calls (a lower bound when some prices are unknown).
    pub cost_usd: f64,
    /// Calls whose model has no price (a local model): `cost_usd` leaves them out.
    pub unpriced_calls: u64,
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
    /// A root-model turn ended (its code ran, its answer was resolved).
    IterationFinished {
        /// Recursion depth.
        depth: u32,
        /// 1-based turn.
        iteration: u32,
        /// Wall time of the turn: the model's reply and its code.
        seconds: f64,
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
    /// `rlm_query` started a child run (a REPL run of its own; at the last depth `rlm_query`
    /// is a plain sub-call and starts none).
    ChildRunStarted {
        /// The child run's depth (its parent's plus one).
        depth: u32,
        /// The model writing the child run's code.
        model: &'a str,
        /// The start of the delegated prompt (at most 80 characters).
        prompt_preview: &'a str,
    },
    /// A child run ended, with or without an answer.
    ChildRunFinished {
        /// The child run's depth.
        depth: u32,
        /// Its model.
        model: &'a str,
        /// Wall time of the child run.
        seconds: f64,
        /// Why it gave no answer, when it gave none.
        error: Option<&'a str>,
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
