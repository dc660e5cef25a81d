//! Custom tools from Python (`RLM(custom_tools=...)`): values are copied into the REPL, and
//! callables are host functions ([`rlm_engine::HostFunctions`]) whose calls travel to the
//! thread that called `completion` — the one holding the user's Python state — through the
//! same channel as the run's events, and are answered there by the package's dispatcher.
//!
//! Each call is bounded in time: the dispatcher stops a Python callable that overruns its
//! limit (an asynchronous `TimeoutError` in its thread), and the run stops waiting a moment
//! later in any case, so model code gets `TimeoutError` even when the callable is stuck in C.

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyTuple;
use rlm_engine::{
    FunctionError, FunctionParameter, FunctionSpec, HostFunctions, RaisedKind, Tool, Toolbox,
};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::Message;

/// How long past its limit the run waits for a callable the dispatcher could not stop.
const GRACE: Duration = Duration::from_secs(2);

/// One tool as the Python side declares it.
#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum Declared {
    /// A callable, with the parameters its signature has.
    Function {
        name: String,
        #[serde(default)]
        description: Option<String>,
        #[serde(default)]
        parameters: Vec<DeclaredParameter>,
        #[serde(default)]
        rest: Option<String>,
        #[serde(default)]
        rest_keywords: Option<String>,
    },
    /// Plain data, copied into the REPL.
    Value {
        name: String,
        #[serde(default)]
        description: Option<String>,
        value: Value,
    },
}

/// A parameter of a callable: required, or with a default that is plain data.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DeclaredParameter {
    name: String,
    #[serde(default)]
    default: Option<Value>,
}

/// The tools of a completion as declared: the root run's, and its child runs' when they
/// differ; the dispatcher and the time limit of each call.
pub(crate) struct Declaration {
    pub root: Option<Vec<Declared>>,
    pub children: Option<Vec<Declared>>,
    pub timeout: Duration,
}

impl Declaration {
    /// The toolboxes, the callables answered through `sender`.
    pub fn toolboxes(
        self,
        sender: &Sender<Message>,
    ) -> Result<rlm_app::operations::run::Tools, rlm_engine::Error> {
        let toolbox = |table: &'static str, declared: Vec<Declared>| {
            let host = Arc::new(PythonTools {
                table,
                sender: Mutex::new(sender.clone()),
                timeout: self.timeout,
            });
            let tools = declared.into_iter().map(tool).collect();
            Toolbox::new(tools, Some(host as Arc<dyn HostFunctions>))
        };
        Ok(rlm_app::operations::run::Tools {
            root: self.root.map(|tools| toolbox("root", tools)).transpose()?,
            children: self
                .children
                .map(|tools| toolbox("children", tools))
                .transpose()?,
        })
    }
}

fn tool(declared: Declared) -> Tool {
    match declared {
        Declared::Function {
            name,
            description,
            parameters,
            rest,
            rest_keywords,
        } => {
            let parameters = parameters
                .into_iter()
                .map(|parameter| match parameter.default {
                    None => FunctionParameter::required(parameter.name),
                    Some(default) => FunctionParameter::optional(parameter.name, default),
                })
                .collect();
            let mut spec = FunctionSpec::new(name, parameters);
            if let Some(rest) = rest {
                spec = spec.with_rest(rest);
            }
            if let Some(rest) = rest_keywords {
                spec = spec.with_rest_keywords(rest);
            }
            Tool::function(spec, description)
        }
        Declared::Value {
            name,
            description,
            value,
        } => Tool::value(name, value, description),
    }
}

/// A call of a Python tool, on its way to the calling thread.
pub(crate) struct ToolRequest {
    /// `root` or `children`: which of the user's tables holds the callable.
    table: &'static str,
    name: String,
    arguments: Map<String, Value>,
    timeout: Duration,
    reply: Sender<Result<Value, FunctionError>>,
}

/// The Python callables of one table, answered on the calling thread.
struct PythonTools {
    table: &'static str,
    sender: Mutex<Sender<Message>>,
    timeout: Duration,
}

impl std::fmt::Debug for PythonTools {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("PythonTools")
            .field("table", &self.table)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl HostFunctions for PythonTools {
    fn functions(&self) -> Vec<FunctionSpec> {
        // The engine takes the specifications from the toolbox's tools.
        Vec::new()
    }

    fn call(&self, name: &str, arguments: &Map<String, Value>) -> Result<Value, FunctionError> {
        let sender = self
            .sender
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        ask(&sender, self.table, name, arguments.clone(), self.timeout)
    }
}

/// Sends one call to the calling thread and waits for its answer, at most `timeout` and a
/// moment more.
pub(crate) fn ask(
    sender: &Sender<Message>,
    table: &'static str,
    name: &str,
    arguments: Map<String, Value>,
    timeout: Duration,
) -> Result<Value, FunctionError> {
    let (reply, answer) = mpsc::channel();
    let request = ToolRequest {
        table,
        name: name.to_owned(),
        arguments,
        timeout,
        reply,
    };
    if sender.send(Message::Tool(request)).is_err() {
        return Err(FunctionError::new(
            RaisedKind::RuntimeError,
            format!("{name}() was not called: the run is stopping"),
        ));
    }
    match answer.recv_timeout(timeout + GRACE) {
        Ok(result) => result,
        Err(RecvTimeoutError::Timeout) => Err(timed_out(name, timeout)),
        Err(RecvTimeoutError::Disconnected) => Err(FunctionError::new(
            RaisedKind::RuntimeError,
            format!("{name}() gave no answer: the run is stopping"),
        )),
    }
}

fn timed_out(name: &str, limit: Duration) -> FunctionError {
    FunctionError::new(
        RaisedKind::TimeoutError,
        format!(
            "{name}() took longer than its time limit of {} s",
            limit.as_secs_f64()
        ),
    )
}

/// Answers `request` on the calling thread with `dispatch(table, name, arguments, seconds)`,
/// which returns `(True, value)` or `(False, (exception type, message))`. `Err` when the
/// dispatcher raised (Ctrl-C in the tool): the call gets an error and the run should stop.
pub(crate) fn answer(
    py: Python<'_>,
    dispatch: Option<&Py<PyAny>>,
    request: ToolRequest,
    stopping: bool,
) -> PyResult<()> {
    let ToolRequest {
        table,
        name,
        arguments,
        timeout,
        reply,
    } = request;
    let Some(dispatch) = dispatch.filter(|_| !stopping) else {
        let _ = reply.send(Err(FunctionError::new(
            RaisedKind::RuntimeError,
            format!("{name}() was not called: the run is stopping"),
        )));
        return Ok(());
    };
    let arguments = pythonize::pythonize(py, &Value::Object(arguments))?;
    let answered = dispatch.call1(py, (table, &name, arguments, timeout.as_secs_f64()));
    let answered = match answered {
        Ok(answered) => answered,
        Err(err) => {
            let _ = reply.send(Err(FunctionError::new(
                RaisedKind::RuntimeError,
                format!("{name}() was interrupted"),
            )));
            return Err(err);
        }
    };
    let _ = reply.send(result(&name, answered.bind(py)));
    Ok(())
}

/// The dispatcher's answer as the result model code gets.
fn result(name: &str, answered: &Bound<'_, PyAny>) -> Result<Value, FunctionError> {
    let malformed = || {
        FunctionError::new(
            RaisedKind::RuntimeError,
            format!("{name}(): the tool dispatcher gave a malformed answer (a bug in rlm_rs)"),
        )
    };
    let pair = answered.cast::<PyTuple>().map_err(|_| malformed())?;
    let (ok, payload) = pair
        .extract::<(bool, Bound<'_, PyAny>)>()
        .map_err(|_| malformed())?;
    if ok {
        return pythonize::depythonize::<Value>(&payload).map_err(|err| {
            FunctionError::new(
                RaisedKind::TypeError,
                format!("{name}() returned a value that is not plain data: {err}"),
            )
        });
    }
    let (kind, message) = payload
        .extract::<(String, String)>()
        .map_err(|_| malformed())?;
    Err(match RaisedKind::from_name(&kind) {
        Some(kind) => FunctionError::new(kind, message),
        None => FunctionError::new(RaisedKind::Exception, format!("{kind}: {message}")),
    })
}
