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
        "scanning {chunks} chunks takes {calls} calls estimated at up to ${estimate:.4}, over the budget of ${limit:.4}"
    )]
    OverBudget {
        /// Chunks in the selection.
        chunks: usize,
        /// Extractor calls it takes.
        calls: usize,
        /// Estimated dollars (an upper bound).
        estimate: f64,
        /// The budget.
        limit: f64,
    },
    /// A money budget is set but the sub-call model has no known price, so no estimate can
    /// be checked against it.
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
