//! Resource limits for one session.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Limits applied to model code. The defaults suit an RLM run over a large context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Limits {
    /// Interpreter time allowed per execution (time waiting on the host does not count).
    /// Past it the code gets an uncatchable `TimeoutError`; if the interpreter is stuck in one
    /// long operation, the worker is killed after a grace period.
    pub timeout: Duration,
    /// Memory the worker may use for model data, on top of room for the contexts themselves.
    /// Enforced by the operating system (`RLIMIT_AS`) in worker mode.
    pub memory_bytes: u64,
    /// Maximum Python call depth (`RecursionError` past it).
    pub recursion_depth: usize,
    /// Characters of printed output kept per execution; the rest is counted and dropped.
    pub output_chars: usize,
    /// Host calls (`llm_query` items count one each) allowed per execution.
    pub max_host_calls: usize,
    /// Bytes of one `llm_query`/`rlm_query` prompt the worker hands to the host; a longer
    /// prompt raises `ValueError` in the code instead.
    pub max_prompt_bytes: usize,
    /// Bytes of an answer (`FINAL`, `FINAL_VAR`) or of a variable's value the worker hands to
    /// the host; past it the code gets `ValueError` and the host [`crate::Error::TooLarge`].
    pub max_answer_bytes: usize,
}

/// Default of [`Limits::max_prompt_bytes`]: 10 MB, more than any model's window holds.
pub const DEFAULT_MAX_PROMPT_BYTES: usize = 10_000_000;
/// Default of [`Limits::max_answer_bytes`]: 50 MB.
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 50_000_000;

/// `size` bytes as the model and the user read it: `100.0 MB`, `2.5 KB`, `300 bytes`.
pub fn format_size(size: usize) -> String {
    match size {
        0..1_000 => format!("{size} bytes"),
        1_000..1_000_000 => format!("{:.1} KB", size as f64 / 1e3),
        _ => format!("{:.1} MB", size as f64 / 1e6),
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(60),
            memory_bytes: 2 << 30,
            recursion_depth: 200,
            output_chars: 100_000,
            max_host_calls: 10_000,
            max_prompt_bytes: DEFAULT_MAX_PROMPT_BYTES,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
        }
    }
}

impl Limits {
    /// Sets [`Limits::timeout`].
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets [`Limits::memory_bytes`].
    #[must_use]
    pub fn memory_bytes(mut self, bytes: u64) -> Self {
        self.memory_bytes = bytes;
        self
    }

    /// Sets [`Limits::recursion_depth`].
    #[must_use]
    pub fn recursion_depth(mut self, depth: usize) -> Self {
        self.recursion_depth = depth;
        self
    }

    /// Sets [`Limits::output_chars`].
    #[must_use]
    pub fn output_chars(mut self, chars: usize) -> Self {
        self.output_chars = chars;
        self
    }

    /// Sets [`Limits::max_host_calls`].
    #[must_use]
    pub fn max_host_calls(mut self, calls: usize) -> Self {
        self.max_host_calls = calls;
        self
    }

    /// Sets [`Limits::max_prompt_bytes`].
    #[must_use]
    pub fn max_prompt_bytes(mut self, bytes: usize) -> Self {
        self.max_prompt_bytes = bytes;
        self
    }

    /// Sets [`Limits::max_answer_bytes`].
    #[must_use]
    pub fn max_answer_bytes(mut self, bytes: usize) -> Self {
        self.max_answer_bytes = bytes;
        self
    }

    /// How long the host waits for a busy worker before killing it: the interpreter's own limit
    /// plus a grace period, so the soft `TimeoutError` (which keeps the session) normally wins.
    pub(crate) fn kill_after(&self) -> Duration {
        self.timeout + (self.timeout / 2).max(Duration::from_secs(1))
    }
}
