//! Contexts handed to a session, and the files the worker reads them from.

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::protocol::{ContextFile, ContextFormat};

/// One context for model code. The first becomes `context` (and `context_0` when there are several).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ContextInput {
    /// Text held in memory; written once to a private temporary file for the worker.
    Text(String),
    /// A UTF-8 text file read directly by the worker (no copy is made by the host). Invalid
    /// UTF-8 sequences read as U+FFFD (as `String::from_utf8_lossy` replaces them).
    TextFile(PathBuf),
    /// A list of strings (Python `list[str]`).
    List(Vec<String>),
    /// Any JSON value, typically an object (Python `dict`).
    Json(serde_json::Value),
}

impl From<String> for ContextInput {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<&str> for ContextInput {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

impl From<Vec<String>> for ContextInput {
    fn from(items: Vec<String>) -> Self {
        Self::List(items)
    }
}

/// Context files of one session; temporary ones are deleted with it.
#[derive(Debug)]
pub(crate) struct PreparedContexts {
    pub files: Vec<ContextFile>,
    _directory: Option<tempfile::TempDir>,
}

impl PreparedContexts {
    /// Writes in-memory contexts to a private temporary directory (once per session: a worker
    /// restart reads the same files again).
    pub(crate) fn prepare(contexts: Vec<ContextInput>) -> Result<Self> {
        let mut directory = None;
        let mut files = Vec::with_capacity(contexts.len());
        for (index, context) in contexts.into_iter().enumerate() {
            let (bytes, format) = match context {
                ContextInput::TextFile(path) => {
                    let path =
                        std::fs::canonicalize(&path).map_err(|source| Error::ContextFile {
                            path: path.clone(),
                            source,
                        })?;
                    files.push(ContextFile {
                        path,
                        format: ContextFormat::Text,
                    });
                    continue;
                }
                ContextInput::Text(text) => (text.into_bytes(), ContextFormat::Text),
                ContextInput::List(items) => (json_bytes(&items)?, ContextFormat::Json),
                ContextInput::Json(value) => (json_bytes(&value)?, ContextFormat::Json),
            };
            if directory.is_none() {
                directory = Some(
                    tempfile::Builder::new()
                        .prefix("rlm-sandbox-")
                        .tempdir()
                        .map_err(|source| Error::ContextFile {
                            path: std::env::temp_dir(),
                            source,
                        })?,
                );
            }
            let Some(dir) = directory.as_ref() else {
                continue;
            };
            let path = dir.path().join(format!("context_{index}"));
            std::fs::write(&path, bytes).map_err(|source| Error::ContextFile {
                path: path.clone(),
                source,
            })?;
            files.push(ContextFile { path, format });
        }
        Ok(Self {
            files,
            _directory: directory,
        })
    }
}

fn json_bytes(value: &impl serde::Serialize) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(|error| Error::Io(error.into()))
}
