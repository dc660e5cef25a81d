//! The `variables` record: what the REPL held when a run ended, and which of it can be restored
//! into a later run (`rlm run --session`).
//!
//! Plain data (`str`, `int`, `float`, `bool`, `None`, and `list`/`dict`/`tuple` of plain data)
//! is kept as the Python literal `repr()` wrote; restoring it runs `name = <literal>` in the new
//! REPL. Anything else (functions, sets, objects, a value over the sandbox's size limit) is
//! listed with the reason it cannot be restored.

use serde::{Deserialize, Serialize};

use crate::schema::RecordType;

/// The REPL's variables at the end of a root run, written just before its `result` line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VariablesSnapshot {
    /// The run.
    pub run_id: String,
    /// Every variable model code created, sorted by name (the contexts, `contextMeta`,
    /// `answer` and `history_*`, which every run binds itself, are left out).
    pub variables: Vec<VariableInfo>,
}

impl RecordType for VariablesSnapshot {
    const TYPE: &'static str = "variables";
}

impl VariablesSnapshot {
    /// The variables that can be restored.
    pub fn restorable(&self) -> impl Iterator<Item = &VariableInfo> {
        self.variables
            .iter()
            .filter(|variable| variable.literal.is_some())
    }

    /// The variables that cannot be restored.
    pub fn not_restorable(&self) -> impl Iterator<Item = &VariableInfo> {
        self.variables
            .iter()
            .filter(|variable| variable.literal.is_none())
    }
}

/// One variable of a [`VariablesSnapshot`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VariableInfo {
    /// Its Python name.
    pub name: String,
    /// Its Python type name (`"int"`, `"list"`, `"function"`, …).
    #[serde(rename = "type")]
    pub type_name: String,
    /// Items for a `str` (chars), `list`, `tuple` or `dict`; `None` for other types.
    #[serde(default)]
    pub length: Option<u64>,
    /// Bytes of its `repr()`, when it could be read.
    #[serde(default)]
    pub repr_bytes: Option<u64>,
    /// The start of its `repr()`, at most [`PREVIEW_CHARS`] chars.
    #[serde(default)]
    pub preview: String,
    /// The whole value as a Python literal, when it is plain data that can be restored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub literal: Option<String>,
    /// Why it cannot be restored, when it cannot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_restorable: Option<String>,
}

/// Chars of a variable's `repr()` kept as its preview.
pub const PREVIEW_CHARS: usize = 200;

/// The first [`PREVIEW_CHARS`] chars of `text`, with `…` when there were more.
pub fn preview(text: &str) -> String {
    match text.char_indices().nth(PREVIEW_CHARS) {
        None => text.to_owned(),
        Some((cut, _)) => format!("{}…", &text[..cut]),
    }
}
