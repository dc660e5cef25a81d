//! `_native.Sandbox`: rlm's sandbox as a persistent Python REPL for another program's loop (the
//! DSPy interpreter in `rlm_rs.dspy`). Code runs in the same confined worker process
//! `RLM.completion` uses; its variables persist from one `execute` to the next. Model code
//! reaches the host through one host function, `__rlm_tool__(name, *args, **kwargs)`, answered
//! on the thread that called `execute` by the dispatcher it passed (the Python side binds a
//! wrapper per tool); the sandbox's own `llm_query` and `llm_query_batched` go to the tools of
//! those names.

use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use rlm_engine::{
    FunctionError, FunctionParameter, FunctionSpec, RaisedKind, ReplSession, RunLimits, SessionSpec,
};
use rlm_sandbox::Host;
use serde_json::{Map, Value, json};

use crate::{Message, run_released, tools};

/// The host function every tool call goes through.
const TOOL_FUNCTION: &str = "__rlm_tool__";
/// The dispatcher's table for these calls.
const TABLE: &str = "sandbox";

/// The host side of a sandbox session: tool calls to the thread running `execute`.
#[derive(Debug)]
struct PythonHost {
    /// The channel of the `execute` in progress (none between calls).
    sender: Mutex<Option<Sender<Message>>>,
    timeout: Duration,
}

impl PythonHost {
    fn call(
        &self,
        name: &str,
        args: Vec<Value>,
        kwargs: Map<String, Value>,
    ) -> Result<Value, FunctionError> {
        let sender = self
            .sender
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let Some(sender) = sender else {
            return Err(FunctionError::new(
                RaisedKind::RuntimeError,
                format!("{name}() was called outside execute()"),
            ));
        };
        let mut arguments = Map::new();
        arguments.insert("args".into(), Value::Array(args));
        arguments.insert("kwargs".into(), Value::Object(kwargs));
        tools::ask(&sender, TABLE, name, arguments, self.timeout)
    }

    /// Calls the tool on a blocking thread (the answer comes through a channel).
    async fn call_blocking(
        self: &Arc<Self>,
        name: String,
        args: Vec<Value>,
        kwargs: Map<String, Value>,
    ) -> Result<Value, FunctionError> {
        let host = Arc::clone(self);
        let called = name.clone();
        tokio::task::spawn_blocking(move || host.call(&called, args, kwargs))
            .await
            .unwrap_or_else(|err| {
                Err(FunctionError::new(
                    RaisedKind::RuntimeError,
                    format!("{name}() failed inside the host: {err}"),
                ))
            })
    }
}

/// `Arc<PythonHost>` is the session's host.
#[derive(Debug)]
struct SharedHost(Arc<PythonHost>);

fn text(value: Result<Value, FunctionError>) -> Result<String, String> {
    match value {
        Ok(Value::String(text)) => Ok(text),
        Ok(other) => Ok(other.to_string()),
        Err(error) => Err(error.message),
    }
}

#[async_trait::async_trait]
impl Host for SharedHost {
    async fn llm_query(&self, prompt: String, model: Option<String>) -> Result<String, String> {
        let mut kwargs = Map::new();
        if let Some(model) = model {
            kwargs.insert("model".into(), Value::String(model));
        }
        text(
            self.0
                .call_blocking("llm_query".into(), vec![Value::String(prompt)], kwargs)
                .await,
        )
    }

    async fn llm_query_batched(
        &self,
        prompts: Vec<String>,
        model: Option<String>,
    ) -> Vec<Result<String, String>> {
        let count = prompts.len();
        let mut kwargs = Map::new();
        if let Some(model) = model {
            kwargs.insert("model".into(), Value::String(model));
        }
        let prompts = Value::Array(prompts.into_iter().map(Value::String).collect());
        match self
            .0
            .call_blocking("llm_query_batched".into(), vec![prompts], kwargs)
            .await
        {
            Ok(Value::Array(replies)) if replies.len() == count => {
                replies.into_iter().map(|reply| text(Ok(reply))).collect()
            }
            Ok(other) => vec![Err(format!("llm_query_batched gave {other}")); count],
            Err(error) => vec![Err(error.message); count],
        }
    }

    async fn rlm_query(&self, prompt: String, model: Option<String>) -> Result<String, String> {
        self.llm_query(prompt, model).await
    }

    fn functions(&self) -> Vec<FunctionSpec> {
        vec![
            FunctionSpec::new(TOOL_FUNCTION, vec![FunctionParameter::required("name")])
                .with_rest("args")
                .with_rest_keywords("kwargs"),
        ]
    }

    async fn call_function(
        &self,
        name: String,
        arguments: Map<String, Value>,
    ) -> Result<Value, FunctionError> {
        if name != TOOL_FUNCTION {
            return Err(FunctionError::new(
                RaisedKind::NameError,
                format!("name '{name}' is not defined"),
            ));
        }
        let Some(Value::String(tool)) = arguments.get("name").cloned() else {
            return Err(FunctionError::new(
                RaisedKind::TypeError,
                format!("{TOOL_FUNCTION}() takes the tool's name as a str first"),
            ));
        };
        let args = match arguments.get("args") {
            Some(Value::Array(args)) => args.clone(),
            _ => Vec::new(),
        };
        let kwargs = match arguments.get("kwargs") {
            Some(Value::Object(kwargs)) => kwargs.clone(),
            _ => Map::new(),
        };
        self.0.call_blocking(tool, args, kwargs).await
    }
}

/// An open session and the runtime its worker's tasks run on.
struct Open {
    runtime: rlm_app::Runtime,
    session: Box<dyn ReplSession>,
}

/// A persistent sandboxed REPL (opened on the first `execute`).
#[pyclass(module = "rlm_rs._native")]
pub(crate) struct Sandbox {
    open: Arc<Mutex<Option<Open>>>,
    host: Arc<PythonHost>,
    block_timeout: Duration,
}

#[pymethods]
impl Sandbox {
    #[new]
    #[pyo3(signature = (tool_timeout=60.0, block_timeout=60.0))]
    fn new(tool_timeout: f64, block_timeout: f64) -> PyResult<Self> {
        for (name, seconds) in [
            ("tool_timeout", tool_timeout),
            ("block_timeout", block_timeout),
        ] {
            if !(seconds.is_finite() && seconds > 0.0) {
                return Err(PyValueError::new_err(format!(
                    "{name} must be seconds above 0, not {seconds}"
                )));
            }
        }
        Ok(Self {
            open: Arc::new(Mutex::new(None)),
            host: Arc::new(PythonHost {
                sender: Mutex::new(None),
                timeout: Duration::from_secs_f64(tool_timeout),
            }),
            block_timeout: Duration::from_secs_f64(block_timeout),
        })
    }

    /// Runs `code`; returns `(stdout, stderr, error)` (`error`: the exception's text, or
    /// `None`). Tool calls are answered here by `dispatch(table, name, {"args", "kwargs"},
    /// seconds)`.
    fn execute(
        &self,
        py: Python<'_>,
        code: String,
        dispatch: Py<PyAny>,
    ) -> PyResult<(String, String, Option<String>)> {
        let open = Arc::clone(&self.open);
        let host = Arc::clone(&self.host);
        let block_timeout = self.block_timeout;
        let stop = rlm_app::StopHandle::new();
        let ran = run_released(py, stop, None, Some(&dispatch), move |sender| {
            *host.sender.lock().unwrap_or_else(PoisonError::into_inner) = Some(sender);
            let ran = execute(&open, &host, block_timeout, &code);
            *host.sender.lock().unwrap_or_else(PoisonError::into_inner) = None;
            ran
        })?;
        ran.map_err(PyRuntimeError::new_err)
    }

    /// Ends the session (its worker process exits).
    fn close(&self) {
        drop(
            self.open
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
    }
}

fn execute(
    open: &Mutex<Option<Open>>,
    host: &Arc<PythonHost>,
    block_timeout: Duration,
    code: &str,
) -> Result<(String, String, Option<String>), String> {
    let mut open = open.lock().unwrap_or_else(PoisonError::into_inner);
    if open.is_none() {
        let runtime = rlm_app::Runtime::new().map_err(|err| format!("{err:#}"))?;
        let repl = rlm_app::sandbox::repl(false, block_timeout, &RunLimits::default())
            .map_err(|err| format!("the sandbox cannot start: {err:#}"))?;
        let spec = SessionSpec {
            contexts: Vec::new(),
            context_meta: json!([]),
            host: Arc::new(SharedHost(Arc::clone(host))),
        };
        let session = runtime
            .block_on(repl.factory.open(spec))
            .map_err(|err| format!("the sandbox cannot start: {err}"))?;
        *open = Some(Open { runtime, session });
    }
    let Some(Open { runtime, session }) = open.as_mut() else {
        return Err("the sandbox is closed".to_owned());
    };
    let outcome = runtime
        .block_on(session.execute(code))
        .map_err(|err| format!("the sandbox failed: {err}"))?;
    Ok((outcome.stdout, outcome.stderr, outcome.error))
}
