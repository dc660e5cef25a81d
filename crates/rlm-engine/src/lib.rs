//! The recursive language model (RLM) loop.
//!
//! A root model never sees the context. It sees the query and a description of the context,
//! writes Python in ```` ```repl ```` blocks that run in a persistent sandboxed session holding
//! the context, reads the (truncated) printed output, and calls sub-models on the pieces it
//! chooses (`llm_query`, `llm_query_batched`, `rlm_query`), until it answers with `FINAL(...)`
//! or `FINAL_VAR(name)`.
//!
//! The engine reaches models through [`ModelClient`] (implemented for `rlm_llm::LlmClient`,
//! speaking `rlm-llm`'s request, response and error types) and the sandbox through
//! [`ReplFactory`] ([`SandboxRepl`] over `rlm-sandbox`'s Monty sessions). [`RunLimits`] (spend,
//! time, sub-calls, errors, iterations) bound the whole recursion tree: spend is recorded in an
//! `rlm_llm::Ledger` per run, each under its parent's. Every turn is appended to the run's
//! trajectory (`rlm-trace`'s schema) as it happens.
//!
//! ```no_run
//! use std::sync::Arc;
//! use rlm_engine::{ContextPart, ModelClient, ReplFactory, Rlm, RunLimits};
//! use rlm_llm::Budget;
//!
//! async fn ask(
//!     client: Arc<dyn ModelClient>,
//!     repl: Arc<dyn ReplFactory>,
//! ) -> Result<(), rlm_engine::Error> {
//!     let rlm = Rlm::builder()
//!         .client(client)
//!         .repl(repl)
//!         .model("openai:gpt-4o")
//!         .subcall_model("openai:gpt-4o-mini")
//!         .limits(RunLimits {
//!             max_iterations: 20,
//!             spend: Budget { max_cost_usd: Some(1.0), ..Budget::default() },
//!             ..RunLimits::default()
//!         })
//!         .build()?;
//!     let log = ContextPart::new("2024-01-01 ERROR disk full\n").with_name("app.log");
//!     let result = rlm.completion("Which errors occurred?", vec![log]).await?;
//!     match result.outcome.answer {
//!         Some(answer) => println!("{answer}"),
//!         None => eprintln!("no answer: {}", result.outcome.status),
//!     }
//!     Ok(())
//! }
//! ```

mod budget_function;
mod context;
mod error;
mod events;
mod functions;
mod host;
mod limits;
mod literal;
mod model;
pub mod parse;
pub mod prompt;
mod repl;
mod resume;
mod rlm;
mod run;
mod sandbox;
mod tools;
mod trace;

#[cfg(any(test, feature = "test-support"))]
pub mod testing;

pub use context::{ContextPart, ContextSource, PartSize, describe as describe_contexts};
pub use error::Error;
pub use events::{Event, EventSink, Progress, SubcallKind};
pub use functions::{FunctionError, FunctionParameter, FunctionSpec, HostFunctions, RaisedKind};
pub use limits::RunLimits;
pub use model::ModelClient;
pub use prompt::Prompts;
pub use repl::{ExecOutcome, ReplError, ReplFactory, ReplSession, SessionSpec};
pub use resume::Resume;
pub use rlm::{
    CODE_BLOCK_STOP, DEFAULT_CHUNK_CHARS, DEFAULT_MAX_CONCURRENT_CHILDREN, DEFAULT_OUTPUT_LIMIT,
    DEFAULT_SUBCALL_WINDOW_CHARS, Rlm, RlmBuilder, Settings,
};
/// How a run ended (also the trajectory's `status`).
pub use rlm_trace::{RunOutcome, Status};
pub use rlm_trace::{VariableInfo, VariablesSnapshot};
pub use run::RunResult;
pub use sandbox::{SANDBOX_HELPERS_DOC, SandboxRepl};
pub use tools::{RESERVED_TOOL_NAMES, Tool, ToolKind, Toolbox, is_reserved_tool_name};

#[cfg(test)]
mod budget_tests;
#[cfg(test)]
mod caps_tests;
#[cfg(test)]
mod tests;
