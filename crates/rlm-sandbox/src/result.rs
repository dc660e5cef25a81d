//! What one execution returns.

use std::fmt::Write as _;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::host::SubCallKind;

/// The record of one [`crate::Session::execute`] call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ExecutionResult {
    /// What the code printed, cut at the output cap (see `stdout_truncated_chars`).
    pub stdout: String,
    /// How many characters of output were dropped by the cap (0 if none).
    pub stdout_truncated_chars: u64,
    /// Interpreter-side diagnostics: the traceback of an exception, notes about denied operations
    /// and about a restarted worker. Empty when the code ran cleanly.
    pub stderr: String,
    /// The exception that ended the code, if any (including timeouts and a dead worker).
    pub exception: Option<ExceptionInfo>,
    /// Wall time of the whole execution, host calls included.
    pub duration: Duration,
    /// Host calls the code made, in order (one entry per prompt for batched calls).
    pub sub_calls: Vec<SubCall>,
    /// Set when the code called `FINAL_VAR(name)` or `FINAL(value)`.
    pub final_answer: Option<FinalAnswer>,
    /// Operations that were refused (file system, environment, ...), e.g. `"Path.read_text"`.
    pub denied_operations: Vec<String>,
    /// Set when the worker process died or was killed during this execution; the session then
    /// runs on a fresh worker and every variable except the contexts was lost.
    pub worker_restarted: Option<String>,
}

impl ExecutionResult {
    /// Whether the code ran to its end without an exception.
    #[must_use]
    pub fn is_ok(&self) -> bool {
        self.exception.is_none()
    }

    /// The text to show a model: output (with the truncation note), then diagnostics.
    #[must_use]
    pub fn to_model_text(&self) -> String {
        let mut text = self.stdout.clone();
        if self.stdout_truncated_chars > 0 {
            if !text.ends_with('\n') {
                text.push('\n');
            }
            let _ = writeln!(text, "… {} more chars", self.stdout_truncated_chars);
        }
        if !self.stderr.is_empty() {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&self.stderr);
        }
        text
    }
}

/// A Python exception (or a sandbox-level failure presented as one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ExceptionInfo {
    /// The exception type, e.g. `"NameError"`, `"TimeoutError"`, `"MemoryError"`.
    pub kind: String,
    /// The exception message (may be empty).
    pub message: String,
    /// 1-based line in the executed code where it was raised, when known.
    pub line: Option<u32>,
}

/// One host call made by model code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SubCall {
    /// Which function was called.
    pub kind: SubCallKind,
    /// Position inside a batched call (0 for single calls).
    pub batch_index: usize,
    /// The model requested by the code, if any.
    pub model: Option<String>,
    /// Length of the prompt in characters.
    pub prompt_chars: usize,
    /// Length of the answer (or of the error message) in characters.
    pub response_chars: usize,
    /// Time the host took; for batched calls, the whole batch.
    pub latency: Duration,
    /// The host's error message, if the call failed.
    pub error: Option<String>,
}

/// A final-answer request made from code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FinalAnswer {
    /// The variable named by `FINAL_VAR(name)`; `None` for `FINAL(value)` or a non-name argument.
    pub variable: Option<String>,
    /// The answer as text (`str()` of the value).
    pub value: String,
}

/// Joins `stderr` pieces with line breaks.
pub(crate) fn append_line(buffer: &mut String, line: &str) {
    if !buffer.is_empty() && !buffer.ends_with('\n') {
        buffer.push('\n');
    }
    buffer.push_str(line);
    if !buffer.ends_with('\n') {
        buffer.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_text_marks_truncation_and_appends_diagnostics() {
        let result = ExecutionResult {
            stdout: "abc".to_owned(),
            stdout_truncated_chars: 12,
            stderr: "NameError: x\n".to_owned(),
            ..ExecutionResult::default()
        };
        assert_eq!(
            result.to_model_text(),
            "abc\n… 12 more chars\nNameError: x\n"
        );
    }
}
