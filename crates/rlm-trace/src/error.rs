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
    /// The file is not a trajectory log (its first record is not `metadata`, or it is not JSON
    /// Lines at all).
    NotATrajectory {
        /// The file.
        path: PathBuf,
        /// 1-based line number where that showed.
        line: usize,
        /// What was found instead.
        reason: String,
    },
    /// A line was written by a newer version of the schema than this reader knows.
    NewerVersion {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The line's `version`.
        version: u32,
    },
    /// A session name that is not one plain directory name.
    InvalidSessionName {
        /// The name given.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A session file is not what this version writes.
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Why it could not be read.
        source: serde_json::Error,
    },
    /// The last line is cut short: it has no newline and is not a whole record.
    Truncated {
        /// The file.
        path: PathBuf,
        /// 1-based number of the cut line.
        line: usize,
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
            Self::NotATrajectory { path, line, reason } => write!(
                f,
                "{} is not an rlm trajectory log (line {line}: {reason})",
                path.display()
            ),
            Self::NewerVersion {
                path,
                line,
                version,
            } => write!(
                f,
                "{} was written with trajectory format version {version} (line {line}); this \
                 rlm reads versions up to {}",
                path.display(),
                crate::VERSION
            ),
            Self::InvalidSessionName { name, reason } => {
                write!(f, "`{name}` is not a session name: {reason}")
            }
            Self::Corrupt { path, .. } => {
                write!(f, "{} is not a session file rlm can read", path.display())
            }
            Self::Truncated { path, line } => write!(
                f,
                "{} is truncated: line {line} is cut short",
                path.display()
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } | Self::Read { source, .. } => Some(source),
            Self::Serialize { source, .. }
            | Self::InvalidRecord { source, .. }
            | Self::Corrupt { source, .. } => Some(source),
            Self::MalformedLine { source, .. } => source
                .as_ref()
                .map(|source| source as &(dyn std::error::Error + 'static)),
            Self::NotATrajectory { .. }
            | Self::NewerVersion { .. }
            | Self::Truncated { .. }
            | Self::InvalidSessionName { .. } => None,
        }
    }
}
