//! Host functions the embedding program offers model code besides the sub-calls: the seam that
//! lets `rlm run --store` give the REPL a store's `search`, `grep`, … without the engine knowing
//! what a store is.

use std::fmt;
use std::time::Instant;

use serde_json::{Map, Value};

pub use rlm_sandbox::{FunctionError, FunctionParameter, FunctionSpec, RaisedKind};
use rlm_trace::HostCall;

use crate::prompt::truncate;

/// How much of a call's arguments and of its result the trajectory keeps.
const ARGUMENTS_PREVIEW_CHARS: usize = 1_000;
const RESULT_PREVIEW_CHARS: usize = 1_000;

/// Functions bound in the root run's session and in those of its `rlm_query` child runs, which
/// inherit them (their calls are logged in each run's own trajectory).
///
/// When a run has host functions, the first message describes the data with
/// [`HostFunctions::describe`] in place of the contexts' description (a child run: followed by
/// the description of its delegated request, its `context`), and the system prompt's
/// `{{functions}}` placeholder is filled with the `functions` prompt template
/// ([`crate::Prompts::functions`]), whose `{{context_role}}` says what `context` holds in this
/// run. Results should be bounded by the implementation (caps on
/// counts and sizes, with a note in the result when something was left out).
pub trait HostFunctions: Send + Sync + fmt::Debug {
    /// The functions, with their parameters in positional order.
    fn functions(&self) -> Vec<FunctionSpec>;

    /// Answers one call; `arguments` holds every parameter by name, defaults filled in. May
    /// block (the engine calls it on the blocking pool). The value reaches model code as
    /// plain Python data; an error is raised there as the exception it names.
    ///
    /// # Errors
    /// The exception model code gets: a bad argument, an unknown name, a failed lookup.
    fn call(&self, name: &str, arguments: &Map<String, Value>) -> Result<Value, FunctionError>;

    /// The description of the data for the first message (it replaces the contexts'). Only
    /// a run's data functions (a store's) describe anything; tools
    /// ([`crate::Toolbox`]) are listed in the system prompt instead.
    fn describe(&self) -> String {
        String::new()
    }
}

/// Runs one call on the blocking pool and returns its result with the trajectory's record.
pub(crate) async fn call_logged(
    functions: std::sync::Arc<dyn HostFunctions>,
    name: String,
    arguments: Map<String, Value>,
) -> (Result<Value, FunctionError>, HostCall) {
    let started = Instant::now();
    let arguments_text = truncate(
        &Value::Object(arguments.clone()).to_string(),
        ARGUMENTS_PREVIEW_CHARS,
    );
    let call_name = name.clone();
    let result = tokio::task::spawn_blocking(move || functions.call(&call_name, &arguments))
        .await
        .unwrap_or_else(|join_error| {
            Err(FunctionError::new(
                RaisedKind::RuntimeError,
                format!("{name}() failed inside the host: {join_error}"),
            ))
        });
    let (result_bytes, result_items, result_preview, error) = match &result {
        Ok(value) => {
            let text = value.to_string();
            (
                text.len() as u64,
                value.as_array().map_or(1, |items| items.len() as u64),
                Some(truncate(&text, RESULT_PREVIEW_CHARS)),
                None,
            )
        }
        Err(error) => (
            0,
            0,
            None,
            Some(format!("{:?}: {}", error.kind, error.message)),
        ),
    };
    let record = HostCall {
        name,
        arguments: arguments_text,
        result_bytes,
        result_items,
        result: result_preview,
        seconds: started.elapsed().as_secs_f64(),
        error,
    };
    (result, record)
}
