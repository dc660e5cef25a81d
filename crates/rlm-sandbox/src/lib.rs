//! Sandboxed Python REPL for model-written code, with a bridge back to the host.
//!
//! The RLM engine gives a model a Python session holding a (possibly huge) `context`; the model
//! writes code, the session runs it and reports output, errors and the sub-calls it made. Python
//! runs in [Monty](https://github.com/pydantic/monty) (an embedded interpreter for a Python subset,
//! with no file, environment or network access), by default inside a worker process with an OS
//! memory cap, a kill on timeout, a fresh worker when one dies, and OS confinement (Landlock and
//! a seccomp filter) as a second barrier should the interpreter have a hole.
//!
//! Model code can call:
//! - `llm_query(prompt, model=None)`, `llm_query_batched(prompts, model=None)`,
//!   `rlm_query(...)`, `rlm_query_batched(...)`: answered by the [`Host`]; batched calls run
//!   concurrently; a failed item comes back as `"Error: <message>"` in its place.
//! - `FINAL_VAR(name)` / `FINAL(text)`: record the final answer ([`ExecutionResult::final_answer`]).
//! - `SHOW_VARS()`: a dict of the variables defined before the current cell, with type names.
//! - Native helpers answered in Rust, fast on big strings (`find_all`, `grep`, `line_range`,
//!   …): [`HELPERS`] lists them with their signatures, what they return and the conventions
//!   they share.
//!
//! ```no_run
//! use std::sync::Arc;
//! use rlm_sandbox::{ContextInput, Host, Limits, Sandbox, Session, WorkerCommand};
//!
//! struct Echo;
//!
//! #[async_trait::async_trait]
//! impl Host for Echo {
//!     async fn llm_query(&self, prompt: String, _model: Option<String>) -> Result<String, String> {
//!         Ok(format!("echo: {prompt}"))
//!     }
//!     async fn rlm_query(&self, prompt: String, model: Option<String>) -> Result<String, String> {
//!         self.llm_query(prompt, model).await
//!     }
//! }
//!
//! # async fn example() -> Result<(), rlm_sandbox::Error> {
//! let sandbox = Sandbox::builder()
//!     .limits(Limits::default().timeout(std::time::Duration::from_secs(30)))
//!     .worker_command(WorkerCommand::current_exe()?) // the `rlm` binary: `rlm __sandbox-worker`
//!     .build()?;
//! let contexts = vec![ContextInput::Text("line one\nline two\n".to_owned())];
//! let mut session = Session::start(&sandbox, contexts, None, Arc::new(Echo)).await?;
//! let result = session.execute("n = len(context.splitlines())\nprint(llm_query(f'{n} lines'))").await?;
//! assert_eq!(result.stdout, "echo: 2 lines\n");
//! let result = session.execute("answer = str(n)\nFINAL_VAR('answer')").await?;
//! assert_eq!(result.final_answer.map(|answer| answer.value), Some("2".to_owned()));
//! # Ok(())
//! # }
//! ```

mod confine;
mod context;
mod context_text;
mod error;
mod helpers;
mod host;
mod limits;
mod link;
mod monty_glue;
mod os_limits;
mod probe;
mod protocol;
mod python;
mod result;
mod sandbox;
mod session;
mod worker;

pub use crate::context::ContextInput;
pub use crate::error::{Error, Result};
pub use crate::helpers::{HELPERS, Helper};
pub use crate::host::{
    FunctionError, FunctionParameter, FunctionSpec, Host, RaisedKind, SubCallKind,
};
pub use crate::limits::{DEFAULT_MAX_ANSWER_BYTES, DEFAULT_MAX_PROMPT_BYTES, Limits, format_size};
pub use crate::monty_glue::is_identifier;
pub use crate::protocol::Variable;
pub use crate::result::{ExceptionInfo, ExecutionResult, FinalAnswer, SubCall};
pub use crate::sandbox::{Backend, Isolation, Sandbox, SandboxBuilder, WORKER_ARG, WorkerCommand};
pub use crate::session::Session;
pub use crate::worker::worker_main;
