//! Progress of a query, for a front end to show as it happens.

use crate::plan::{Plan, PlanSource};
use crate::select::Selection;

/// What happened. Events arrive in stage order; `BatchDone` once per batch.
#[derive(Debug)]
#[non_exhaustive]
pub enum QueryEvent<'a> {
    /// The plan that will run.
    Planned {
        /// The plan, with the caller's options applied.
        plan: &'a Plan,
        /// Where it came from.
        source: &'a PlanSource,
        /// Fields the caller's options replaced.
        fixed: &'a [&'static str],
    },
    /// After extraction: whether the plan's and the extractor's replies were constrained to
    /// their JSON Schemas by the server (structured output); otherwise they were plain JSON,
    /// validated and asked again when wrong (also after a server refused the schema).
    StructuredOutput {
        /// The plan reply was (`false` also when no plan was asked for).
        plan: bool,
        /// Extractor replies were.
        extraction: bool,
    },
    /// The chunks chosen.
    Selected {
        /// Chunks, mode and notes.
        selection: &'a Selection,
        /// Extractor batches they make.
        batches: usize,
    },
    /// The wall-clock bound on planning, search and extraction, before any batch is sent.
    TimeLimit {
        /// Seconds from the query's start.
        seconds: f64,
        /// Chosen from the work (`true`), or the caller's.
        default: bool,
        /// Extractor batches it covers.
        batches: usize,
    },
    /// What the extraction is estimated to cost at most, before any of it is spent.
    Estimate {
        /// Extractor calls (without re-asks and splits).
        calls: usize,
        /// Chunks.
        chunks: usize,
        /// Input plus output tokens.
        tokens: u64,
        /// Dollars, when the sub-call model's price is known.
        cost_usd: Option<f64>,
    },
    /// A batch went out.
    BatchSent {
        /// Batches sent so far.
        sent: usize,
        /// All batches.
        total: usize,
        /// Batches out now, this one included.
        in_flight: usize,
    },
    /// A batch's reply was rejected and the batch is asked again, or split in halves.
    BatchRetry {
        /// The batch (`3`, `3.1`, …).
        batch: &'a str,
        /// `true`: split in halves; `false`: asked again.
        split: bool,
        /// Why its reply (or call) could not be used.
        reason: &'a str,
    },
    /// A batch finished (with its re-asks and halves).
    BatchDone {
        /// Batches finished so far.
        done: usize,
        /// All batches.
        total: usize,
        /// Findings so far.
        findings: usize,
        /// Batches still out.
        in_flight: usize,
        /// Chunks without an extraction so far.
        failed_chunks: usize,
        /// Tokens the extractors have used so far.
        tokens: u64,
        /// Dollars they have cost so far (priced calls).
        cost_usd: f64,
        /// Calls without a price (a local model), which `cost_usd` leaves out.
        unpriced_calls: u64,
    },
    /// The report is being written.
    Synthesizing {
        /// Chunks with findings.
        chunks: usize,
        /// Findings.
        findings: usize,
    },
    /// Something the user should know about the result (e.g. the report cites chunks the
    /// query never read).
    Warning {
        /// One sentence.
        message: String,
    },
}

/// Receives events; called from the query's task, so it should return quickly.
pub trait QueryEvents: Send + Sync {
    /// One event.
    fn event(&self, event: &QueryEvent<'_>);
}
