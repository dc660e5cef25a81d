//! Errors of the engine. Budget stops and model mistakes are not errors: they end a run with a
//! [`Status`](crate::Status). These are failures to set a run up or to keep it going.

use std::path::PathBuf;

/// What can go wrong in the engine.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A model the run may call (root, sub-call or allowed) cannot be called at all: its
    /// provider is unknown or has no key. The client's error keeps its kind.
    #[error("model `{model}` cannot be used")]
    Model {
        /// The model string, as configured.
        model: String,
        /// Why, as the model client says.
        #[source]
        source: rlm_llm::Error,
    },
    /// The builder was missing something it needs.
    #[error("the RLM is not configured: {0}")]
    Config(String),
    /// A prompt override could not be read.
    #[error("cannot read prompt file {}", path.display())]
    PromptFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A prompt override file is empty.
    #[error("prompt file {} is empty", path.display())]
    EmptyPrompt {
        /// The file.
        path: PathBuf,
    },
    /// The trajectory log could not be written.
    #[error("the trajectory log failed")]
    Trajectory(#[source] rlm_trace::Error),
    /// The REPL could not be started or broke down.
    #[error("the REPL failed")]
    Repl(#[source] crate::repl::ReplError),
}
