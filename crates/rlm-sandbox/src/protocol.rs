//! Messages between the session (host side) and the interpreter worker.
//!
//! Worker mode sends them as JSON lines over the child's stdin/stdout; in-process mode passes the
//! same values over channels. Contexts never travel here: the worker reads them from files.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::host::{FunctionError, FunctionSpec, SubCallKind};
use crate::limits::Limits;
use crate::result::{ExceptionInfo, FinalAnswer};

/// How a context file is to be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ContextFormat {
    /// UTF-8 text, becomes a Python `str`.
    Text,
    /// JSON, becomes the matching Python value (list of strings, dict, ...).
    Json,
}

/// One context as the worker loads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ContextFile {
    pub path: PathBuf,
    pub format: ContextFormat,
}

/// Host → worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ToWorker {
    /// First message: load contexts, apply limits.
    Start {
        contexts: Vec<ContextFile>,
        meta: Option<serde_json::Value>,
        limits: Limits,
        /// Apply OS resource limits to the worker process itself (worker mode only).
        os_limits: bool,
        /// The worker may run when Landlock or seccomp is unavailable (it says so in `Ready`).
        #[serde(default)]
        allow_reduced_protection: bool,
        /// The host's further functions, bound as globals.
        #[serde(default)]
        functions: Vec<FunctionSpec>,
    },
    /// Run a code cell.
    Execute { code: String },
    /// Answer to the worker's pending `HostCall`: one entry per prompt, in order.
    HostReply {
        results: Vec<Result<String, String>>,
    },
    /// Answer to the worker's pending `FunctionCall`.
    FunctionReply {
        result: Result<serde_json::Value, FunctionError>,
    },
    /// `str()` (or `repr()`) of a global variable.
    Variable { name: String, repr: bool },
    /// List the session's variables.
    Variables,
}

/// A variable visible to model code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Variable {
    /// The variable's name.
    pub name: String,
    /// Its Python type name, e.g. `"str"`, `"list"`.
    pub type_name: String,
}

/// What the worker reports at the end of an execution.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct WorkerReport {
    pub stdout: String,
    pub stdout_truncated_chars: u64,
    pub stderr: String,
    pub exception: Option<ExceptionInfo>,
    pub final_answer: Option<FinalAnswer>,
    pub denied_operations: Vec<String>,
}

/// Worker → host.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum FromWorker {
    /// Contexts loaded, OS confinement applied, ready for code.
    Ready {
        /// The OS confinement in force (worker processes only).
        #[serde(default)]
        protection: Option<String>,
        /// Protections this machine lacks, when the session allowed running without them.
        #[serde(default)]
        reduced_protection: Option<String>,
    },
    /// The session could not start (the message says why).
    StartFailed { message: String },
    /// Model code called a host function; the worker waits for `HostReply`.
    HostCall {
        kind: SubCallKind,
        prompts: Vec<String>,
        model: Option<String>,
    },
    /// Model code called one of the host's further functions; the worker waits for
    /// `FunctionReply`.
    FunctionCall {
        name: String,
        arguments: serde_json::Map<String, serde_json::Value>,
    },
    /// The execution finished.
    Done { report: WorkerReport },
    /// Answer to `Variable`: `None` when no such variable exists, `Err` when `str()` raised.
    Value {
        value: Option<Result<String, String>>,
    },
    /// Answer to `Variable` when the value is over [`Limits::max_answer_bytes`]: it stays in
    /// the worker, the message says how large it is.
    TooLarge { message: String },
    /// Answer to `Variables`.
    Variables { variables: Vec<Variable> },
}
