//! The engine's view of the REPL: execute code, read variables, call back into the host.
//!
//! The product implements these traits over `rlm-sandbox` (Monty); unit tests use a small
//! in-memory fake. Sub-calls made by model code (`llm_query`, `rlm_query`, ...) come back to the
//! engine through the sandbox's own [`Host`] trait: the engine's run implements it and hands
//! itself to [`ReplFactory::open`] in [`SessionSpec::host`]. One trait serves both sides, so a
//! REPL over `rlm-sandbox` passes the host straight through and a fake REPL calls it directly.

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Serialize;

use rlm_sandbox::Host;

use crate::context::ContextPart;

/// What one execution of a code block produced.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ExecOutcome {
    /// Captured standard output (already capped by the sandbox).
    pub stdout: String,
    /// Captured standard error, if the sandbox separates it.
    pub stderr: String,
    /// The exception the code raised, formatted for the model (type, message, line).
    pub error: Option<String>,
    /// The value passed to `FINAL_VAR(...)` or `FINAL(...)` inside the code, rendered as text.
    pub final_answer: Option<String>,
    /// Wall time of the execution, in seconds.
    pub seconds: f64,
}

/// A failure of the REPL machinery itself (not an exception in model code).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplError {
    /// What went wrong.
    pub message: String,
    /// The value asked for is over the session's size limit and stayed in the REPL.
    pub too_large: bool,
}

impl ReplError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            too_large: false,
        }
    }

    /// A value over the session's size limit; the message says how large it is.
    pub fn too_large(message: impl Into<String>) -> Self {
        Self {
            too_large: true,
            ..Self::new(message)
        }
    }
}

impl fmt::Display for ReplError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ReplError {}

/// A live REPL whose variables persist across executions.
pub trait ReplSession: Send + fmt::Debug {
    /// Runs one code block. Exceptions in the code are reported in [`ExecOutcome::error`];
    /// `Err` means the session itself failed.
    fn execute<'a>(&'a mut self, code: &'a str) -> BoxFuture<'a, Result<ExecOutcome, ReplError>>;

    /// Reads a variable as JSON (strings as JSON strings, containers as arrays/objects, other
    /// values as their `str()` text). `Ok(None)` when the variable does not exist.
    fn variable<'a>(
        &'a mut self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<serde_json::Value>, ReplError>>;

    /// The session's variables as `(name, Python type name)`, for the end-of-run snapshot.
    /// A session that cannot tell lists none.
    fn variables(&mut self) -> BoxFuture<'_, Result<Vec<(String, String)>, ReplError>> {
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    /// `repr()` of a variable; `Ok(None)` when it does not exist (or the session cannot tell).
    fn variable_repr<'a>(
        &'a mut self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, ReplError>> {
        let _ = name;
        Box::pin(std::future::ready(Ok(None)))
    }
}

/// What a new session starts with.
#[derive(Clone)]
pub struct SessionSpec {
    /// The contexts: `context` (= `context_0`) and `context_1 … context_n`.
    pub contexts: Vec<ContextPart>,
    /// The `contextMeta` variable.
    pub context_meta: serde_json::Value,
    /// Where the session's `llm_query`/`rlm_query` calls go.
    pub host: Arc<dyn Host>,
}

impl fmt::Debug for SessionSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `Host` asks no `Debug` of its implementors; the contexts say which session this is.
        f.debug_struct("SessionSpec")
            .field("contexts", &self.contexts)
            .field("context_meta", &self.context_meta)
            .finish_non_exhaustive()
    }
}

/// Opens REPL sessions (one per run; child runs open their own).
pub trait ReplFactory: Send + Sync + fmt::Debug {
    /// Opens a session holding `spec.contexts`.
    fn open(&self, spec: SessionSpec) -> BoxFuture<'_, Result<Box<dyn ReplSession>, ReplError>>;
}
