//! Errors of writing and reading a trajectory log.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// What can go wrong with a trajectory log.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The log file could not be created, written or read.
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Reading the log's lines failed.
    Read {
        /// 1-based number of the line being read.
        line: usize,
        /// Why.
        source: io::Error,
    },
    /// A record could not be turned into JSON.
    Serialize {
        /// The record's line type.
        kind: &'static str,
        /// Why.
        source: serde_json::Error,
    },
    /// A line is not a JSON object with a string `type`.
    MalformedLine {
        /// 1-based line number.
        line: usize,
        /// Why, when the line is not JSON at all.
        source: Option<serde_json::Error>,
    },
    /// A line of a known type does not have that type's fields.
    InvalidRecord {
        /// 1-based line number.
        line: usize,
        /// The line's `type`.
        kind: String,
        /// Which field is wrong.
        source: serde_json::Error,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { path, .. } => write!(f, "cannot access trajectory log {}", path.display()),
            Self::Read { line, .. } => write!(f, "cannot read line {line} of a trajectory log"),
            Self::Serialize { kind, .. } => write!(f, "cannot encode a `{kind}` record"),
            Self::MalformedLine { line, .. } => {
                write!(f, "line {line} is not a trajectory record")
            }
            Self::InvalidRecord { line, kind, .. } => {
                write!(f, "line {line} is not a valid `{kind}` record")
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } | Self::Read { source, .. } => Some(source),
            Self::Serialize { source, .. } | Self::InvalidRecord { source, .. } => Some(source),
            Self::MalformedLine { source, .. } => source
                .as_ref()
                .map(|source| source as &(dyn std::error::Error + 'static)),
        }
    }
}
