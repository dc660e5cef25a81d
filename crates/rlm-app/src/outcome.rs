//! What an operation returns when it ran: its records and how it ended.

/// How an operation that ran ended, as the command line's exit code says it: success, a task
/// that did not succeed (no answer within the budget, nothing matched), or input that was
/// partly refused (a path `load` could not read while the rest loaded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExitStatus {
    #[default]
    Success,
    /// Exit code 1.
    Failed,
    /// Exit code 2.
    InputError,
}

impl ExitStatus {
    /// The command line's exit code.
    pub fn code(self) -> u8 {
        match self {
            Self::Success => 0,
            Self::Failed => crate::error::EXIT_FAILED,
            Self::InputError => crate::error::EXIT_USAGE,
        }
    }

    pub fn is_success(self) -> bool {
        self == Self::Success
    }
}

/// What an operation produced for its caller: the records `--json` prints, in order, lines a
/// person should read besides them, and how it ended. The CLI prints them, as JSON Lines or as
/// text; the MCP server returns them as they are, so a tool's result and its output schema come
/// from the same types; the Python package turns them into objects.
#[derive(Debug)]
pub struct Outcome<R> {
    pub records: Vec<R>,
    /// Lines a person should read besides the records (`note: …`, `warning: …`): the CLI
    /// prints them on stderr, the MCP server after the records in the text it returns.
    pub notes: Vec<String>,
    pub status: ExitStatus,
    /// The error the operation ended with after producing its records (a run whose root
    /// model failed still has its result record): a front end shows the records, then this
    /// error, which decides the exit code.
    pub error: Option<anyhow::Error>,
    /// Where the next page starts, when the answer stopped at its reply ceiling
    /// ([`crate::reply`]): the caller passes it back as the request's `cursor`.
    pub next_cursor: Option<String>,
}

impl<R> Outcome<R> {
    /// `records`, ended with success.
    pub fn success(records: Vec<R>) -> Self {
        Self {
            records,
            notes: Vec::new(),
            status: ExitStatus::Success,
            error: None,
            next_cursor: None,
        }
    }

    /// `records`, ended with `status`.
    pub fn ended(records: Vec<R>, status: ExitStatus) -> Self {
        Self {
            status,
            ..Self::success(records)
        }
    }

    /// The same outcome with each record turned into another type (JSON values, Python
    /// objects).
    pub fn map<T, E>(self, f: impl FnMut(R) -> Result<T, E>) -> Result<Outcome<T>, E> {
        Ok(Outcome {
            records: self.records.into_iter().map(f).collect::<Result<_, _>>()?,
            notes: self.notes,
            status: self.status,
            error: self.error,
            next_cursor: self.next_cursor,
        })
    }
}
