//! The crate's error type.

/// What stops a query before it has a result. Failures of single batches are not errors: they
/// are reported in the result and the query goes on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The question is empty or only whitespace.
    #[error("the question is empty")]
    EmptyQuestion,
    /// An option is out of range (e.g. a batch size of 0).
    #[error("{0}")]
    InvalidOption(String),
    /// The store holds no chunk at all.
    #[error("the store is empty")]
    EmptyStore,
    /// The buffer and path filters leave no buffer to look at.
    #[error("no buffer matches the filters ({0})")]
    EmptySelection(String),
    /// The estimated cost of a whole-corpus scan exceeds the money budget.
    #[error(
        "scanning {chunks} chunks takes {calls} calls; with the report they are estimated at up to ${estimate:.4}, over the budget of ${limit:.4}"
    )]
    OverBudget {
        /// Chunks in the selection.
        chunks: usize,
        /// Extractor calls it takes.
        calls: usize,
        /// Estimated dollars of the scan and the report (an upper bound).
        estimate: f64,
        /// The budget.
        limit: f64,
    },
    /// The budget cannot cover even the least a report needs.
    #[error("the budget ({limit}) cannot cover {what}: they may use up to {needed}")]
    BudgetTooSmall {
        /// What had to fit (e.g. the plan, one extractor batch and the report).
        what: &'static str,
        /// Their estimate, in the budget's units.
        needed: String,
        /// The budget.
        limit: String,
    },
    /// A money budget is set but a model (planner, extractor or report writer) has no known
    /// price, so no estimate can be checked against it.
    #[error("a money budget is set but model {0} has no known price")]
    UnknownPrice(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] rlm_store::Error),
    /// A model call that the query cannot do without (the plan never is; the synthesis is)
    /// failed.
    #[error("the {stage} call failed")]
    Model {
        /// `synthesize` or `reduce`.
        stage: &'static str,
        /// What went wrong.
        #[source]
        source: rlm_llm::Error,
    },
    /// The trajectory log could not be written.
    #[error(transparent)]
    Trace(#[from] rlm_trace::Error),
    /// A blocking store task panicked or was cancelled.
    #[error("a store task did not finish: {0}")]
    Task(String),
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
