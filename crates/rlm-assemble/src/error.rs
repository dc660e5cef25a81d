//! The crate's error type.

use std::path::PathBuf;

/// Everything that can go wrong while editing or assembling a ctx directory.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading or writing a file failed.
    #[error("cannot {action} {}", path.display())]
    Io {
        /// What was being done (`read`, `write`, `rename`, ...).
        action: &'static str,
        /// The file involved.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A file named on the command line (or a link target) does not exist.
    #[error("{} does not exist", path.display())]
    Missing {
        /// The path looked for.
        path: PathBuf,
    },
    /// A selector (`file::100,200#tag`) is malformed or does not fit its file.
    #[error("bad selector `{selector}`: {reason}")]
    Selector {
        /// The selector as typed.
        selector: String,
        /// Why it was rejected.
        reason: String,
    },
    /// A file is binary or not UTF-8 text, so it cannot be evidence.
    #[error("{} is not UTF-8 text ({reason})", path.display())]
    NotText {
        /// The file.
        path: PathBuf,
        /// What was found (a NUL byte, invalid UTF-8 at an offset).
        reason: String,
    },
    /// A rank is not three digits in 000–499.
    #[error("bad rank `{0}`: a rank is three digits from 000 to 499")]
    Rank(String),
    /// A name, rank or range matches no part.
    #[error("no part matches `{0}`")]
    UnknownPart(String),
    /// A name matches more than one part where exactly one is needed.
    #[error("`{name}` matches {} parts: {}", candidates.len(), candidates.join(", "))]
    AmbiguousPart {
        /// What was typed.
        name: String,
        /// The parts it matches.
        candidates: Vec<String>,
    },
    /// The directory is not a ctx directory (no `ctx.json`).
    #[error("{} is not a ctx directory (run `rlm ctx init` first)", path.display())]
    NotInitialized {
        /// The directory looked at.
        path: PathBuf,
    },
    /// Any other rejected input (bad slot, name collision, link toggled off...).
    #[error("{0}")]
    Invalid(String),
    /// The required parts (system, user, ranks 000–199) do not fit the budget.
    #[error(
        "required parts need {required} tokens but the budget is {budget}; drop or shrink: {}",
        suggestions.join(", ")
    )]
    OverBudget {
        /// Tokens the required parts need (including the document frame).
        required: u64,
        /// The token budget.
        budget: u64,
        /// The largest required parts, enough of them to fit when dropped, as `name (N tokens)`.
        suggestions: Vec<String>,
    },
    /// A fixed prompt section (the system brief, the stage instructions) does not fit its
    /// budget or the total.
    #[error("the {section} needs {needed} tokens but {what} is {budget}")]
    SectionTooLarge {
        /// Which section (`system prompt`, `stage prompt`).
        section: &'static str,
        /// Tokens it needs.
        needed: u64,
        /// Which budget it exceeds (`its budget`, `the total budget left`).
        what: &'static str,
        /// That budget.
        budget: u64,
    },
    /// A JSON file in the ctx directory is damaged.
    #[error("cannot parse {}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// A file the directory leads to (a part, a link target, a part's source, an output)
    /// resolves outside the root it was opened within ([`Ctx::open_within`](crate::Ctx::open_within));
    /// it was not read or written.
    #[error("{0}")]
    OutsideRoot(#[source] rlm_context::root::OutsideRoot),
}

impl Error {
    /// Whether this error is the user's input being wrong (exit code 2) rather than a task that
    /// could not be done (exit code 1).
    pub fn is_input(&self) -> bool {
        !matches!(
            self,
            Self::Io { .. } | Self::OverBudget { .. } | Self::SectionTooLarge { .. }
        )
    }

    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        Self::Io {
            action,
            path: path.into(),
            source,
        }
    }
}

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
