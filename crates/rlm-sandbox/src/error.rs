//! The crate's error type.

use std::path::PathBuf;

/// Everything that can go wrong outside model code.
///
/// Errors raised *by* model code (exceptions, timeouts, denied I/O) are not Rust errors: they are
/// reported inside [`crate::ExecutionResult`] and the session stays usable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The worker process could not be started.
    #[error("could not start the sandbox worker `{command}`")]
    Spawn {
        /// The program that was run.
        command: String,
        /// Why the operating system refused.
        #[source]
        source: std::io::Error,
    },
    /// A context could not be written to or read from its file.
    #[error("could not prepare context file {}", path.display())]
    ContextFile {
        /// The file involved.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The worker refused to start a session (bad context, limits it cannot apply, ...).
    #[error("the sandbox worker could not start a session: {0}")]
    WorkerStart(String),
    /// The worker broke the protocol or vanished outside an execution.
    #[error("the sandbox worker stopped unexpectedly: {0}")]
    WorkerLost(String),
    /// Talking to the worker failed at the I/O level.
    #[error("I/O error while talking to the sandbox worker")]
    Io(#[source] std::io::Error),
    /// A variable's value is larger than [`crate::Limits::max_answer_bytes`]; it stayed in the
    /// worker. The message says how large and what the limit is.
    #[error("{0}")]
    TooLarge(String),
    /// A variable name that is not a Python identifier was asked for.
    #[error("`{0}` is not a valid Python variable name")]
    InvalidName(String),
    /// The requested backend or protection is not available on this machine.
    #[error("sandbox backend unavailable: {0}")]
    Unavailable(String),
}

/// Shorthand used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
