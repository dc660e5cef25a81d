//! Everything that touches Monty (pinned `=0.0.23`) lives here, so an upgrade is a local change.
//!
//! [`MontyInterpreter`] runs one code cell at a time, synchronously. When model code calls a host
//! function the interpreter suspends; this module answers helpers and `FINAL_VAR` itself and
//! forwards `llm_query` & co. to a [`HostBridge`] (a pipe to the host in worker mode, a channel in
//! in-process mode).

use std::collections::BTreeSet;

use monty::{MontyRepl, ReplProgress};
use monty_types::{
    CompileOptions, ExcType, ExtFunctionResult, MontyException, MontyObject, NameLookupResult,
    PrintWriter, ResourceLimits, ResourceTracker,
};

mod arguments;
mod functions;
mod helper_calls;
mod output;
mod percent_format;

use self::arguments::Arguments;
use self::output::CappedOutput;
use crate::context_text::LoadedText;
use crate::helpers::{IndexedText, TextBytes, helper};
use crate::host::{FunctionError, FunctionSpec, SubCallKind};
use crate::limits::Limits;
use crate::protocol::{Variable, WorkerReport};
use crate::result::{ExceptionInfo, FinalAnswer, append_line};

/// What every session starts with: `re` and `json` imported, in both interpreters
/// (`python_worker.py` binds the same), and a `next` that takes what Monty makes of a generator
/// expression, a list, as the generator it stands for (`next((x for x in xs if p(x)), None)` is
/// common in model code), consuming it as a generator would; anything else goes to the builtin.
const SESSION_START: &str = r#"
import re
import json
_rlm_next = next
def next(iterator, *default):
    if type(iterator) is list:
        if iterator:
            return iterator.pop(0)
        if default:
            return default[0]
        raise StopIteration()
    return _rlm_next(iterator, *default)
"#;

/// Names [`SESSION_START`] defines over builtins: never listed as the code's variables.
const SHIMMED_BUILTINS: &[&str] = &["next"];

/// Sends host calls to whoever answers them; returns one result per prompt.
pub(crate) trait HostBridge {
    fn call(
        &mut self,
        kind: SubCallKind,
        prompts: Vec<String>,
        model: Option<String>,
    ) -> Vec<Result<String, String>>;

    /// Calls one of the host's further functions with its bound arguments.
    fn function(
        &mut self,
        name: String,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<serde_json::Value, FunctionError>;
}

/// A loaded context, before it becomes a Python value.
#[derive(Debug)]
pub(crate) enum ContextData {
    Text(LoadedText),
    Json(serde_json::Value),
}

/// Names model code can call that are answered outside Python, besides the native helpers
/// ([`crate::HELPERS`]).
const HOST_FUNCTIONS: &[&str] = &[
    "llm_query",
    "llm_query_batched",
    "rlm_query",
    "rlm_query_batched",
    "FINAL_VAR",
    "FINAL",
    "SHOW_VARS",
];

const PYTHON_KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// Bound on remembered identifiers, so `SHOW_VARS` stays cheap on sessions with huge code.
const MAX_TRACKED_NAMES: usize = 4096;

/// A persistent Monty REPL plus the native-helper state.
#[derive(Debug)]
pub(crate) struct MontyInterpreter {
    /// `None` only while a cell runs (Monty moves the REPL into its suspended state).
    repl: Option<MontyRepl>,
    limits: Limits,
    /// Helper view of each context that is a string (index = context number).
    texts: Vec<Option<IndexedText>>,
    /// Identifiers seen in executed code: candidates when listing variables.
    names_seen: BTreeSet<String>,
    /// The host's further functions (they shadow native helpers of the same name).
    functions: Vec<FunctionSpec>,
}

/// What a running cell asked for besides output.
#[derive(Debug, Default)]
struct CellState {
    final_request: Option<FinalRequest>,
    host_items: usize,
    denied: Vec<String>,
    variables_at_start: Vec<Variable>,
}

#[derive(Debug)]
enum FinalRequest {
    Variable(String),
    Value(String),
}

impl MontyInterpreter {
    /// Creates the REPL and binds `context`, `context_0..n` and `contextMeta`.
    pub(crate) fn new(
        contexts: Vec<ContextData>,
        meta: Option<serde_json::Value>,
        limits: Limits,
        functions: Vec<FunctionSpec>,
    ) -> Result<Self, String> {
        let resource_limits = ResourceLimits::default()
            .max_recursion_depth(limits.recursion_depth)
            // Without Monty's allocator this only pre-checks single large results (e.g.
            // `'a' * 10**10` fails fast); the hard cap is the worker's RLIMIT_AS.
            .max_memory(usize::try_from(limits.memory_bytes).unwrap_or(usize::MAX));
        let mut repl = MontyRepl::new(
            "rlm.py",
            ResourceTracker::new(resource_limits),
            CompileOptions::default(),
        );
        let several = contexts.len() > 1;
        let mut inputs = Vec::new();
        let mut texts = Vec::new();
        let mut names_seen = BTreeSet::new();
        for (index, context) in contexts.into_iter().enumerate() {
            let name = if several {
                format!("context_{index}")
            } else {
                "context".to_owned()
            };
            let value = match context {
                ContextData::Text(LoadedText { text, map }) => {
                    // The interpreter takes the string; the helpers read the file's map, or
                    // (no map: in-process, or a lossily decoded file) a copy made once here.
                    let helper_text = match map {
                        Some(map) => {
                            IndexedText::with_bytes(TextBytes::Mapped(map), text.is_ascii())
                        }
                        None => IndexedText::new(text.clone()),
                    };
                    texts.push(Some(helper_text));
                    MontyObject::String(text)
                }
                ContextData::Json(json) => {
                    texts.push(None);
                    json_to_object(json)
                }
            };
            names_seen.insert(name.clone());
            inputs.push((name, value));
        }
        if let Some(meta) = meta {
            names_seen.insert("contextMeta".to_owned());
            inputs.push(("contextMeta".to_owned(), json_to_object(meta)));
        }
        let alias = if several {
            "context = context_0"
        } else {
            "None"
        };
        if several {
            names_seen.insert("context".to_owned());
        }
        repl.feed_run(alias, inputs, PrintWriter::Disabled)
            .map_err(|error| format!("could not bind the contexts: {error}"))?;
        repl.feed_run(percent_format::PRELUDE, Vec::new(), PrintWriter::Disabled)
            .map_err(|error| format!("could not define the session's helpers: {error}"))?;
        // The prompt says `re` and `json` are imported already: models use them without
        // importing them (Qwen2.5-Coder-1.5B lost a turn of six to `NameError: name 're'`).
        repl.feed_run(SESSION_START, Vec::new(), PrintWriter::Disabled)
            .map_err(|error| format!("could not start the session's modules: {error}"))?;
        Ok(Self {
            repl: Some(repl),
            limits,
            texts,
            names_seen,
            functions,
        })
    }

    /// Runs one cell. Never fails: every problem is reported in the returned record.
    pub(crate) fn execute(&mut self, code: &str, bridge: &mut dyn HostBridge) -> WorkerReport {
        let Some(mut repl) = self.repl.take() else {
            return internal_failure("the interpreter state was lost by an earlier failure");
        };
        let mut state = CellState::default();
        if code.contains("SHOW_VARS") {
            self.repl = Some(repl);
            state.variables_at_start = self.variables();
            let Some(taken) = self.repl.take() else {
                return internal_failure("the interpreter state was lost while listing variables");
            };
            repl = taken;
        }
        remember_identifiers(code, &mut self.names_seen);
        // Monty 0.0.23 accumulates execution time over the session; reset the budget per cell.
        repl.tracker_mut().set_max_duration(self.limits.timeout);

        let mut output = CappedOutput::new(self.limits.output_chars);
        let mut exception = None;
        let original_code = code;
        let rewritten = percent_format::rewrite(code);
        let code = rewritten.as_deref().unwrap_or(code);
        let mut progress = repl.feed_start(code, Vec::new(), PrintWriter::Callback(&mut output));
        loop {
            let step = match progress {
                Err(failure) => {
                    self.repl = Some(failure.repl);
                    exception = Some(match &rewritten {
                        Some(_) => percent_format::as_written(failure.error, original_code),
                        None => failure.error,
                    });
                    break;
                }
                Ok(step) => step,
            };
            progress = match step {
                ReplProgress::Complete { repl, .. } => {
                    self.repl = Some(repl);
                    break;
                }
                ReplProgress::FunctionCall(call) => {
                    let reply = self.function_call(
                        &call.function_name,
                        &call.args,
                        &call.kwargs,
                        bridge,
                        &mut state,
                    );
                    call.resume(reply, PrintWriter::Callback(&mut output))
                }
                ReplProgress::OsCall(os_call) => {
                    let operation = os_call.function_call.name();
                    state.denied.push(operation.to_owned());
                    let denial = MontyException::new(
                        ExcType::PermissionError,
                        Some(format!("{operation} is not allowed in the sandbox")),
                    );
                    os_call.resume(
                        ExtFunctionResult::Error(denial),
                        PrintWriter::Callback(&mut output),
                    )
                }
                ReplProgress::NameLookup(lookup) => lookup.resume(
                    NameLookupResult::Undefined,
                    PrintWriter::Callback(&mut output),
                ),
                ReplProgress::ResolveFutures(pending) => {
                    // No host function returns a future, so nothing can be pending.
                    let error = MontyException::new(
                        ExcType::RuntimeError,
                        Some("awaiting host futures is not supported".to_owned()),
                    );
                    pending.abort(error, PrintWriter::Callback(&mut output))
                }
            };
        }

        let mut report = WorkerReport {
            stdout_truncated_chars: output.dropped_chars,
            stdout: output.text,
            denied_operations: state.denied,
            ..WorkerReport::default()
        };
        if let Some(error) = exception {
            append_line(&mut report.stderr, &error.to_string());
            let info = exception_info(&error);
            if info.kind == "TypeError"
                && let Some(hint) = percent_format::hint_for(&info.message)
            {
                append_line(&mut report.stderr, &format!("hint: {hint}"));
            }
            report.exception = Some(info);
        }
        for operation in &report.denied_operations {
            append_line(&mut report.stderr, &format!("note: denied {operation}"));
        }
        self.give_answer(&mut report, state.final_request);
        report
    }

    /// The answer a cell gave with `FINAL(...)` or `FINAL_VAR(name)`, into `report`: refused
    /// over the answer limit, and a missing or unprintable variable reported as the cell's
    /// exception (unless it raised one already).
    fn give_answer(&mut self, report: &mut WorkerReport, final_request: Option<FinalRequest>) {
        match final_request {
            Some(FinalRequest::Value(value)) if value.len() > self.limits.max_answer_bytes => {
                refuse_answer(report, "the answer", value.len(), &self.limits);
            }
            Some(FinalRequest::Value(value)) => {
                report.final_answer = Some(FinalAnswer {
                    variable: None,
                    value,
                });
            }
            Some(FinalRequest::Variable(name)) => match self.variable(&name, false) {
                Some(Ok(value)) if value.len() > self.limits.max_answer_bytes => {
                    let what = format!("FINAL_VAR({name}): the answer");
                    refuse_answer(report, &what, value.len(), &self.limits);
                }
                Some(Ok(value)) => {
                    report.final_answer = Some(FinalAnswer {
                        variable: Some(name),
                        value,
                    });
                }
                Some(Err(error)) if report.exception.is_none() => {
                    append_line(&mut report.stderr, &format!("FINAL_VAR({name}): {error}"));
                    report.exception = Some(ExceptionInfo {
                        kind: "ValueError".to_owned(),
                        message: format!("FINAL_VAR({name}): {error}"),
                        line: None,
                    });
                }
                None if report.exception.is_none() => {
                    let message = format!(
                        "FINAL_VAR('{name}'): no variable named '{name}'; assign it first, or use FINAL(text)"
                    );
                    append_line(&mut report.stderr, &format!("NameError: {message}"));
                    report.exception = Some(ExceptionInfo {
                        kind: "NameError".to_owned(),
                        message,
                        line: None,
                    });
                }
                _ => {}
            },
            None => {}
        }
    }

    /// `str()` (or `repr()`) of a global: `None` if it does not exist, `Some(Err)` if converting
    /// it raised.
    pub(crate) fn variable(&mut self, name: &str, repr: bool) -> Option<Result<String, String>> {
        if !is_identifier(name) {
            return None;
        }
        let repl = self.repl.as_mut()?;
        repl.tracker_mut().set_max_duration(self.limits.timeout);
        let function = if repr { "repr" } else { "str" };
        match repl.feed_run(
            &format!("{function}({name})"),
            Vec::new(),
            PrintWriter::Disabled,
        ) {
            Ok(MontyObject::String(text)) => Some(Ok(text)),
            Ok(other) => Some(Ok(other.to_string())),
            Err(error) if error.exc_type() == ExcType::NameError => None,
            Err(error) => Some(Err(error.summary())),
        }
    }

    /// Globals defined by model code or injected by the session, with their type names.
    pub(crate) fn variables(&mut self) -> Vec<Variable> {
        let Some(repl) = self.repl.as_mut() else {
            return Vec::new();
        };
        repl.tracker_mut().set_max_duration(self.limits.timeout);
        let mut variables = Vec::new();
        for name in &self.names_seen {
            let probe = format!("type({name}).__name__");
            if let Ok(MontyObject::String(type_name)) =
                repl.feed_run(&probe, Vec::new(), PrintWriter::Disabled)
                && !matches!(type_name.as_str(), "builtin_function_or_method" | "module")
                // A builtin type the code only named (`str(x)`, `isinstance(v, list)`) is no
                // variable of its; one the code rebound (`list = [1]`) has another type.
                && !(type_name == "type" && BUILTIN_TYPES.contains(&name.as_str()))
            {
                variables.push(Variable {
                    name: name.clone(),
                    type_name,
                });
            }
        }
        variables
    }

    fn function_call(
        &mut self,
        name: &str,
        args: &[MontyObject],
        kwargs: &[(MontyObject, MontyObject)],
        bridge: &mut dyn HostBridge,
        state: &mut CellState,
    ) -> ExtFunctionResult {
        let call = Arguments {
            function: name,
            args,
            kwargs,
        };
        if let Some(spec) = self.functions.iter().find(|spec| spec.name == name) {
            return match self.function(spec, &call, bridge, state) {
                Ok(value) => ExtFunctionResult::Return(value),
                Err(error) => ExtFunctionResult::Error(error),
            };
        }
        if let Err(error) = call.check_signature() {
            return ExtFunctionResult::Error(error);
        }
        let outcome = match name {
            "FINAL_VAR" => call.required(0, "name", "a variable name").map(|value| {
                state.final_request = Some(match value {
                    MontyObject::String(text) if is_identifier(text) => {
                        FinalRequest::Variable(text.clone())
                    }
                    other => FinalRequest::Value(other.to_string()),
                });
                MontyObject::None
            }),
            "FINAL" => call.required(0, "answer", "the answer").map(|value| {
                state.final_request = Some(FinalRequest::Value(value.to_string()));
                MontyObject::None
            }),
            "SHOW_VARS" => Ok(MontyObject::dict(
                state
                    .variables_at_start
                    .iter()
                    .map(|variable| {
                        (
                            MontyObject::String(variable.name.clone()),
                            MontyObject::String(variable.type_name.clone()),
                        )
                    })
                    .collect::<Vec<_>>(),
            )),
            name if helper(name).is_some() => helper_calls::call(name, &call, &self.texts),
            _ => match SubCallKind::from_python_name(name) {
                Some(kind) => self.host_call(kind, &call, bridge, state),
                None => return ExtFunctionResult::NotFound(name.to_owned()),
            },
        };
        match outcome {
            Ok(value) => ExtFunctionResult::Return(value),
            Err(error) => ExtFunctionResult::Error(error),
        }
    }

    /// One call of the host's further functions; counts against the per-execution host-call
    /// limit like a sub-call.
    fn function(
        &self,
        spec: &FunctionSpec,
        call: &Arguments<'_>,
        bridge: &mut dyn HostBridge,
        state: &mut CellState,
    ) -> Result<MontyObject, MontyException> {
        let arguments = functions::bind(spec, call)?;
        state.host_items += 1;
        if state.host_items > self.limits.max_host_calls {
            return Err(MontyException::new(
                ExcType::RuntimeError,
                Some(format!(
                    "host call limit reached ({} per execution)",
                    self.limits.max_host_calls
                )),
            ));
        }
        bridge
            .function(spec.name.clone(), arguments)
            .map(json_to_object)
            .map_err(functions::raised)
    }

    fn host_call(
        &self,
        kind: SubCallKind,
        call: &Arguments<'_>,
        bridge: &mut dyn HostBridge,
        state: &mut CellState,
    ) -> Result<MontyObject, MontyException> {
        let model = call.optional_string(1, "model")?;
        let prompts = if kind.is_batched() {
            call.string_list(0, "prompts")?
        } else {
            vec![call.string(0, "prompt")?]
        };
        if let Some(prompt) = prompts
            .iter()
            .find(|prompt| prompt.len() > self.limits.max_prompt_bytes)
        {
            return Err(MontyException::new(
                ExcType::ValueError,
                Some(format!(
                    "{} prompt is {}; the limit is {} — pass a slice or summarize first",
                    kind.python_name(),
                    crate::limits::format_size(prompt.len()),
                    crate::limits::format_size(self.limits.max_prompt_bytes),
                )),
            ));
        }
        state.host_items += prompts.len();
        if state.host_items > self.limits.max_host_calls {
            return Err(MontyException::new(
                ExcType::RuntimeError,
                Some(format!(
                    "host call limit reached ({} per execution)",
                    self.limits.max_host_calls
                )),
            ));
        }
        if prompts.is_empty() {
            return Ok(MontyObject::List(Vec::new()));
        }
        let expected = prompts.len();
        let mut answers = bridge.call(kind, prompts, model);
        answers.resize_with(expected, || Err("the host returned no answer".to_owned()));
        let mut values: Vec<MontyObject> = answers
            .into_iter()
            .map(|answer| {
                MontyObject::String(answer.unwrap_or_else(|error| format!("Error: {error}")))
            })
            .collect();
        if kind.is_batched() {
            Ok(MontyObject::List(values))
        } else {
            Ok(values.pop().unwrap_or(MontyObject::None))
        }
    }
}

/// An answer over [`Limits::max_answer_bytes`] stays in the worker; the code gets a
/// `ValueError` saying how large it is, unless it already raised.
fn refuse_answer(report: &mut WorkerReport, what: &str, size: usize, limits: &Limits) {
    if report.exception.is_some() {
        return;
    }
    let message = crate::worker::too_large(what, size, limits);
    append_line(&mut report.stderr, &format!("ValueError: {message}"));
    report.exception = Some(ExceptionInfo {
        kind: "ValueError".to_owned(),
        message,
        line: None,
    });
}

fn exception_info(error: &MontyException) -> ExceptionInfo {
    ExceptionInfo {
        kind: error.exc_type().to_string(),
        message: error.message().unwrap_or_default().to_owned(),
        line: error.traceback().last().map(|frame| frame.start.line),
    }
}

fn internal_failure(message: &str) -> WorkerReport {
    WorkerReport {
        stderr: format!("SandboxError: {message}\n"),
        exception: Some(ExceptionInfo {
            kind: "SandboxError".to_owned(),
            message: message.to_owned(),
            line: None,
        }),
        ..WorkerReport::default()
    }
}

fn json_to_object(value: serde_json::Value) -> MontyObject {
    use serde_json::Value;
    match value {
        Value::Null => MontyObject::None,
        Value::Bool(flag) => MontyObject::Bool(flag),
        Value::Number(number) => match number.as_i64() {
            Some(integer) => MontyObject::Int(integer),
            None => MontyObject::Float(number.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(text) => MontyObject::String(text),
        Value::Array(items) => MontyObject::List(items.into_iter().map(json_to_object).collect()),
        Value::Object(map) => MontyObject::dict(
            map.into_iter()
                .map(|(key, value)| (MontyObject::String(key), json_to_object(value)))
                .collect::<Vec<_>>(),
        ),
    }
}

/// Whether `name` can name a Python variable: an identifier (Unicode letters, digits and `_`,
/// not starting with a digit) that is not a keyword.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first == '_' || first.is_alphabetic())
        && chars.all(|rest| rest == '_' || rest.is_alphanumeric())
        && !PYTHON_KEYWORDS.contains(&name)
}

/// Python's builtin types: naming one (`str(x)`) binds nothing.
const BUILTIN_TYPES: &[&str] = &[
    "bool",
    "bytearray",
    "bytes",
    "complex",
    "dict",
    "enumerate",
    "filter",
    "float",
    "frozenset",
    "int",
    "list",
    "map",
    "memoryview",
    "object",
    "range",
    "reversed",
    "set",
    "slice",
    "str",
    "tuple",
    "type",
    "zip",
    "BaseException",
    "Exception",
    "ValueError",
    "TypeError",
    "KeyError",
    "IndexError",
    "RuntimeError",
    "OSError",
    "TimeoutError",
    "PermissionError",
    "NotImplementedError",
    "LookupError",
    "ZeroDivisionError",
    "AttributeError",
    "NameError",
    "StopIteration",
    "ArithmeticError",
    "AssertionError",
];

fn remember_identifiers(code: &str, names: &mut BTreeSet<String>) {
    let mut word = String::new();
    for character in code.chars().chain(std::iter::once(' ')) {
        if character == '_' || character.is_alphanumeric() {
            word.push(character);
            continue;
        }
        if !word.is_empty() {
            let candidate = std::mem::take(&mut word);
            if names.len() < MAX_TRACKED_NAMES
                && is_identifier(&candidate)
                && !candidate.starts_with('_')
                && !candidate.starts_with(|first: char| first.is_ascii_digit())
                && !HOST_FUNCTIONS.contains(&candidate.as_str())
                && !SHIMMED_BUILTINS.contains(&candidate.as_str())
                && helper(&candidate).is_none()
            {
                names.insert(candidate);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_skip_keywords_privates_and_helpers() {
        let mut names = BTreeSet::new();
        remember_identifiers("for x in lines: _tmp = llm_query(x) + 'été2'", &mut names);
        let names: Vec<_> = names.into_iter().collect();
        assert_eq!(names, vec!["lines", "x", "été2"]);
    }

    #[test]
    fn a_variable_name_is_a_python_identifier_and_not_a_keyword() {
        for name in ["answer", "_x", "été2", "résumé_final"] {
            assert!(is_identifier(name), "{name}");
        }
        for name in ["", "2x", "a-b", "a b", "class", "None", "lambda", "x.y"] {
            assert!(!is_identifier(name), "{name}");
        }
    }
}
