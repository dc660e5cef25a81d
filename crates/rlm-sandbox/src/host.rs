//! The bridge from model code back to the host: `llm_query` and friends.

use async_trait::async_trait;
use futures::future::join_all;
use serde::{Deserialize, Serialize};

/// Functions model code can call that are answered by the host (the RLM engine).
///
/// Errors are plain strings because they are shown to the model: a failed call returns
/// `"Error: <message>"` in place of the answer (for batched calls, in place of that item), so one
/// failing prompt never aborts the model's program.
///
/// The batched methods have default implementations that run the single-item method concurrently;
/// override them to add a concurrency limit.
#[async_trait]
pub trait Host: Send + Sync {
    /// Answers one prompt with a plain language-model call.
    async fn llm_query(&self, prompt: String, model: Option<String>) -> Result<String, String>;

    /// Answers many prompts concurrently; the output has one entry per prompt, in order.
    async fn llm_query_batched(
        &self,
        prompts: Vec<String>,
        model: Option<String>,
    ) -> Vec<Result<String, String>> {
        join_all(
            prompts
                .into_iter()
                .map(|prompt| self.llm_query(prompt, model.clone())),
        )
        .await
    }

    /// Answers one prompt with a recursive RLM run (the engine decides what that means).
    async fn rlm_query(&self, prompt: String, model: Option<String>) -> Result<String, String>;

    /// Recursive runs for many prompts, concurrently; one entry per prompt, in order.
    async fn rlm_query_batched(
        &self,
        prompts: Vec<String>,
        model: Option<String>,
    ) -> Vec<Result<String, String>> {
        join_all(
            prompts
                .into_iter()
                .map(|prompt| self.rlm_query(prompt, model.clone())),
        )
        .await
    }

    /// Further functions this host answers (e.g. a store's `search`), bound in every session
    /// it serves. A name here shadows a native helper of the same name.
    fn functions(&self) -> Vec<FunctionSpec> {
        Vec::new()
    }

    /// Answers a call of one of [`Host::functions`]; `arguments` holds every parameter by
    /// name (defaults filled in). The value becomes plain Python data (lists, dicts, str,
    /// int, float, bool, None); an error is raised in model code as the exception it names.
    async fn call_function(
        &self,
        name: String,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<serde_json::Value, FunctionError> {
        let _ = arguments;
        Err(FunctionError::new(
            RaisedKind::NameError,
            format!("name '{name}' is not defined"),
        ))
    }
}

/// A function a [`Host`] offers model code: its name and parameters in positional order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FunctionSpec {
    /// The Python name.
    pub name: String,
    /// The parameters, in positional order.
    pub parameters: Vec<FunctionParameter>,
    /// Python's `*args`: the name under which positional arguments past `parameters` reach
    /// the host, as a list (empty when none are given). `None`: they are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rest: Option<String>,
    /// Python's `**kwargs`: the name under which keyword arguments `parameters` do not name
    /// reach the host, as a dict (empty when none are given). `None`: they are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rest_keywords: Option<String>,
}

impl FunctionSpec {
    /// A function with these parameters.
    #[must_use]
    pub fn new(name: impl Into<String>, parameters: Vec<FunctionParameter>) -> Self {
        Self {
            name: name.into(),
            parameters,
            rest: None,
            rest_keywords: None,
        }
    }

    /// Takes further positional arguments, as a list under `name` (Python's `*name`).
    #[must_use]
    pub fn with_rest(mut self, name: impl Into<String>) -> Self {
        self.rest = Some(name.into());
        self
    }

    /// Takes further keyword arguments, as a dict under `name` (Python's `**name`).
    #[must_use]
    pub fn with_rest_keywords(mut self, name: impl Into<String>) -> Self {
        self.rest_keywords = Some(name.into());
        self
    }
}

/// One parameter of a [`FunctionSpec`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FunctionParameter {
    /// The Python name (also the key in the arguments the host receives).
    pub name: String,
    /// Whether the caller must give it.
    pub required: bool,
    /// The value when the caller leaves it out (`Null` is Python's `None`).
    pub default: serde_json::Value,
}

impl FunctionParameter {
    /// A parameter the caller must give.
    #[must_use]
    pub fn required(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            required: true,
            default: serde_json::Value::Null,
        }
    }

    /// A parameter with a default value (`serde_json::Value::Null` is Python's `None`).
    #[must_use]
    pub fn optional(name: impl Into<String>, default: serde_json::Value) -> Self {
        Self {
            name: name.into(),
            required: false,
            default,
        }
    }
}

/// The Python exception a failed host function raises in model code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum RaisedKind {
    /// A wrong argument value (a bad pattern, an unknown mode, a reversed range).
    ValueError,
    /// A wrong argument type.
    TypeError,
    /// Something named that does not exist (a buffer, a chunk id).
    LookupError,
    /// The host could not answer (a damaged store, a lost connection).
    RuntimeError,
    /// The function does not exist.
    NameError,
    /// A missing key.
    KeyError,
    /// An index out of range.
    IndexError,
    /// The call took longer than its time limit.
    TimeoutError,
    /// A division by zero.
    ZeroDivisionError,
    /// A missing attribute.
    AttributeError,
    /// A failed assertion.
    AssertionError,
    /// Something the function does not implement.
    NotImplementedError,
    /// An operating-system error (a file, a process).
    OSError,
    /// A file that does not exist.
    FileNotFoundError,
    /// A permission the function lacks.
    PermissionError,
    /// Any other exception (its type is named in the message).
    Exception,
}

impl RaisedKind {
    /// The kind named by a Python exception type (`"KeyError"`), if it is one of these.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "ValueError" => Self::ValueError,
            "TypeError" => Self::TypeError,
            "LookupError" => Self::LookupError,
            "RuntimeError" => Self::RuntimeError,
            "NameError" => Self::NameError,
            "KeyError" => Self::KeyError,
            "IndexError" => Self::IndexError,
            "TimeoutError" => Self::TimeoutError,
            "ZeroDivisionError" => Self::ZeroDivisionError,
            "AttributeError" => Self::AttributeError,
            "AssertionError" => Self::AssertionError,
            "NotImplementedError" => Self::NotImplementedError,
            "OSError" => Self::OSError,
            "FileNotFoundError" => Self::FileNotFoundError,
            "PermissionError" => Self::PermissionError,
            "Exception" => Self::Exception,
            _ => return None,
        })
    }
}

/// Why a host function gave no value: the exception model code sees.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FunctionError {
    /// The exception type.
    pub kind: RaisedKind,
    /// Its message.
    pub message: String,
}

impl FunctionError {
    /// An error raised as `kind` with `message`.
    #[must_use]
    pub fn new(kind: RaisedKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for FunctionError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{:?}: {}", self.kind, self.message)
    }
}

/// Which host function model code called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SubCallKind {
    /// `llm_query(prompt, model=None)`
    LlmQuery,
    /// `llm_query_batched(prompts, model=None)`
    LlmQueryBatched,
    /// `rlm_query(prompt, model=None)`
    RlmQuery,
    /// `rlm_query_batched(prompts, model=None)`
    RlmQueryBatched,
}

impl SubCallKind {
    /// The Python name of the function.
    #[must_use]
    pub fn python_name(self) -> &'static str {
        match self {
            Self::LlmQuery => "llm_query",
            Self::LlmQueryBatched => "llm_query_batched",
            Self::RlmQuery => "rlm_query",
            Self::RlmQueryBatched => "rlm_query_batched",
        }
    }

    /// Parses a Python function name.
    #[must_use]
    pub fn from_python_name(name: &str) -> Option<Self> {
        match name {
            "llm_query" => Some(Self::LlmQuery),
            "llm_query_batched" => Some(Self::LlmQueryBatched),
            "rlm_query" => Some(Self::RlmQuery),
            "rlm_query_batched" => Some(Self::RlmQueryBatched),
            _ => None,
        }
    }

    /// Whether the Python function takes a list of prompts.
    #[must_use]
    pub fn is_batched(self) -> bool {
        matches!(self, Self::LlmQueryBatched | Self::RlmQueryBatched)
    }
}

/// Runs one host request and returns one result per prompt.
pub(crate) async fn dispatch(
    host: &dyn Host,
    kind: SubCallKind,
    mut prompts: Vec<String>,
    model: Option<String>,
) -> Vec<Result<String, String>> {
    match kind {
        SubCallKind::LlmQuery | SubCallKind::RlmQuery => {
            let Some(prompt) = prompts.pop() else {
                return vec![Err("no prompt given".to_owned())];
            };
            let answer = if kind == SubCallKind::LlmQuery {
                host.llm_query(prompt, model).await
            } else {
                host.rlm_query(prompt, model).await
            };
            vec![answer]
        }
        SubCallKind::LlmQueryBatched => host.llm_query_batched(prompts, model).await,
        SubCallKind::RlmQueryBatched => host.rlm_query_batched(prompts, model).await,
    }
}
