//! Run limits and the accounts shared down the recursion tree.
//!
//! Spend (tokens, dollars, calls) is `rlm-llm`'s [`Ledger`]: one node per run, a child run's
//! node under its parent's, so a child can never spend more than its parent has left. The
//! engine adds what only a run has: a deadline and a count of sub-calls, bounded the same way.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rlm_llm::{Budget, Ledger};

/// Limits for one run (and, through its accounts, for everything below it).
#[derive(Debug, Clone, PartialEq)]
pub struct RunLimits {
    /// Root-model turns before the engine asks for a final answer. Default 30.
    pub max_iterations: u32,
    /// Tokens, dollars and model calls over the run and everything below it.
    pub spend: Budget,
    /// Wall time of the whole run.
    pub timeout: Option<Duration>,
    /// Sub-calls (`llm_query` items, `rlm_query` runs) over the tree.
    pub max_subcalls: Option<u64>,
    /// Iterations in a row whose code raised an error. Default 5.
    pub max_consecutive_errors: u32,
    /// Bytes of one `llm_query`/`rlm_query` prompt from model code; a longer one is refused
    /// with an error the code sees. Default 10 MB.
    pub max_prompt_bytes: usize,
    /// Bytes of the run's answer (and of a partial answer); a longer one is refused with a note
    /// to the model. Default 50 MB.
    pub max_answer_bytes: usize,
}

impl Default for RunLimits {
    fn default() -> Self {
        Self {
            max_iterations: 30,
            spend: Budget::default(),
            timeout: None,
            max_subcalls: None,
            max_consecutive_errors: 5,
            max_prompt_bytes: rlm_sandbox::DEFAULT_MAX_PROMPT_BYTES,
            max_answer_bytes: rlm_sandbox::DEFAULT_MAX_ANSWER_BYTES,
        }
    }
}

/// Which limit ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exhausted {
    /// A spend limit of [`RunLimits::spend`].
    Spend(rlm_llm::Exhausted),
    /// The wall-time limit.
    Time,
    /// The sub-call limit.
    Subcalls,
}

impl fmt::Display for Exhausted {
    /// The limit's name as shown to the model and the user ("the run's {} budget").
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Spend(limit) => limit.fmt(f),
            Self::Time => f.write_str("time"),
            Self::Subcalls => f.write_str("sub-call"),
        }
    }
}

/// The accounts of one run: its spend ledger, deadline and sub-call count, each bounded by
/// every ancestor run's.
#[derive(Debug)]
pub(crate) struct RunAccount {
    parent: Option<Arc<RunAccount>>,
    limits: RunLimits,
    spend: Arc<Ledger>,
    deadline: Option<Instant>,
    subcalls: AtomicU64,
    /// When this run started.
    started: Instant,
}

impl RunAccount {
    /// The account of a root run; its clock starts now.
    pub fn root(limits: RunLimits) -> Arc<Self> {
        Arc::new(Self {
            parent: None,
            spend: Ledger::with_budget(limits.spend),
            deadline: limits.timeout.map(|t| Instant::now() + t),
            limits,
            subcalls: AtomicU64::new(0),
            started: Instant::now(),
        })
    }

    /// A child run's account: its own limits, bounded by everything the parent has left.
    pub fn child(parent: &Arc<Self>, limits: RunLimits) -> Arc<Self> {
        let own = limits.timeout.map(|t| Instant::now() + t);
        let deadline = match (own, parent.deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Arc::new(Self {
            parent: Some(Arc::clone(parent)),
            spend: Ledger::child(&parent.spend, limits.spend),
            deadline,
            limits,
            subcalls: AtomicU64::new(0),
            started: Instant::now(),
        })
    }

    /// When this run started.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Sub-calls left under every `max_subcalls` on the path to the root (`None`: none set).
    pub fn subcalls_left(&self) -> Option<u64> {
        self.path()
            .filter_map(|account| {
                let max = account.limits.max_subcalls?;
                Some(max.saturating_sub(account.subcalls()))
            })
            .min()
    }

    /// Whether any limit of time, spend or sub-calls applies to this run (its own or an
    /// ancestor's).
    pub fn is_limited(&self) -> bool {
        self.deadline.is_some()
            || self.path().any(|account| {
                let spend = &account.limits.spend;
                account.limits.max_subcalls.is_some()
                    || spend.max_tokens.is_some()
                    || spend.max_cost_usd.is_some()
                    || spend.max_calls.is_some()
            })
    }

    /// This run's limits.
    pub fn limits(&self) -> &RunLimits {
        &self.limits
    }

    /// Where this run's model calls are reserved and recorded.
    pub fn spend(&self) -> &Arc<Ledger> {
        &self.spend
    }

    /// The earliest deadline of this run and its ancestors.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Sub-calls made by this run and everything below it.
    pub fn subcalls(&self) -> u64 {
        self.subcalls.load(Ordering::Relaxed)
    }

    /// Counts one sub-call here and in every ancestor.
    pub fn record_subcall(&self) {
        for account in self.path() {
            account.subcalls.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Takes back one [`Self::record_subcall`] here and in every ancestor.
    pub fn unrecord_subcall(&self) {
        for account in self.path() {
            account.subcalls.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// The first exhausted limit on the path from here to the root, if any.
    pub fn exhausted(&self) -> Option<Exhausted> {
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Some(Exhausted::Time);
        }
        if let Some(limit) = self.spend.exhausted() {
            return Some(Exhausted::Spend(limit));
        }
        self.path()
            .any(|account| {
                account
                    .limits
                    .max_subcalls
                    .is_some_and(|max| account.subcalls() >= max)
            })
            .then_some(Exhausted::Subcalls)
    }

    /// Whether one more sub-call fits every limit on the path to the root.
    pub fn subcall_allowed(&self) -> Result<(), Exhausted> {
        match self.exhausted() {
            Some(reason) => Err(reason),
            None => Ok(()),
        }
    }

    /// This run, its parent, and so on up to the root.
    fn path(&self) -> impl Iterator<Item = &RunAccount> {
        std::iter::successors(Some(self), |account| account.parent.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use rlm_llm::{ChatResponse, Usage};

    use super::*;

    fn call(input: u64, output: u64, cost_usd: Option<f64>) -> ChatResponse {
        ChatResponse {
            text: String::new(),
            tool_calls: Vec::new(),
            model: "m".to_owned(),
            finish_reason: None,
            usage: Usage {
                input_tokens: input,
                output_tokens: output,
                ..Usage::default()
            },
            usage_estimated: false,
            cost_usd,
            latency: Duration::ZERO,
            retries: 0,
            replayed: false,
        }
    }

    fn spend(budget: Budget) -> RunLimits {
        RunLimits {
            spend: budget,
            ..RunLimits::default()
        }
    }

    #[test]
    fn child_spend_is_bounded_by_the_parent() {
        let root = RunAccount::root(spend(Budget {
            max_tokens: Some(100),
            ..Budget::default()
        }));
        root.spend().record("m", &call(90, 0, None));
        let child = RunAccount::child(
            &root,
            spend(Budget {
                max_tokens: Some(1_000),
                ..Budget::default()
            }),
        );
        assert_eq!(child.exhausted(), None);
        child.spend().record("m", &call(5, 5, None));
        assert_eq!(
            child.exhausted(),
            Some(Exhausted::Spend(rlm_llm::Exhausted::Tokens))
        );
        assert_eq!(root.spend().total().usage.total(), 100);
    }

    #[test]
    fn cost_and_subcall_limits() {
        let root = RunAccount::root(RunLimits {
            max_subcalls: Some(2),
            ..RunLimits::default()
        });
        let child = RunAccount::child(&root, RunLimits::default());
        root.record_subcall();
        assert!(child.subcall_allowed().is_ok());
        child.record_subcall();
        assert_eq!(root.subcalls(), 2);
        assert_eq!(child.subcall_allowed(), Err(Exhausted::Subcalls));

        let other = RunAccount::root(spend(Budget {
            max_cost_usd: Some(1.0),
            ..Budget::default()
        }));
        other.spend().record("m", &call(1, 1, Some(0.6)));
        assert_eq!(other.exhausted(), None);
        other.spend().record("m", &call(1, 1, Some(0.6)));
        assert_eq!(
            other.exhausted(),
            Some(Exhausted::Spend(rlm_llm::Exhausted::Cost))
        );
    }

    #[test]
    fn child_deadline_is_bounded_by_parent() {
        let root = RunAccount::root(RunLimits {
            timeout: Some(Duration::from_secs(1)),
            ..RunLimits::default()
        });
        let child = RunAccount::child(
            &root,
            RunLimits {
                timeout: Some(Duration::from_secs(3600)),
                ..RunLimits::default()
            },
        );
        assert!(child.deadline() <= root.deadline());
        let expired = RunAccount::root(RunLimits {
            timeout: Some(Duration::ZERO),
            ..RunLimits::default()
        });
        assert_eq!(expired.exhausted(), Some(Exhausted::Time));
    }
}
