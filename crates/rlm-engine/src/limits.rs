//! Budgets and the usage ledger shared down the recursion tree.
//!
//! Every run has a [`Ledger`]. A child run's ledger points at its parent's: recording usage adds
//! it to every ancestor, and a check walks every ancestor, so a child can never spend more than
//! its parent has left, and the root's totals are the sum over the whole tree.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::model::CallUsage;

/// Limits for one run (and, through the ledger, for everything below it).
#[derive(Debug, Clone, PartialEq)]
pub struct Budget {
    /// Root-model turns before the engine asks for a final answer. Default 30.
    pub max_iterations: u32,
    /// Input + output tokens over every model call of the tree.
    pub max_tokens: Option<u64>,
    /// US dollars over every priced model call of the tree.
    pub max_cost_usd: Option<f64>,
    /// Wall time of the whole run.
    pub timeout: Option<Duration>,
    /// Sub-calls (`llm_query` items, `rlm_query` runs) over the tree.
    pub max_subcalls: Option<u64>,
    /// Iterations in a row whose code raised an error. Default 5.
    pub max_consecutive_errors: u32,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            max_iterations: 30,
            max_tokens: None,
            max_cost_usd: None,
            timeout: None,
            max_subcalls: None,
            max_consecutive_errors: 5,
        }
    }
}

/// Which budget ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Exhausted {
    /// The token budget.
    Tokens,
    /// The cost budget.
    Cost,
    /// The wall-time budget.
    Time,
    /// The sub-call budget.
    Subcalls,
}

/// Usage of one model over a run tree.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModelTotals {
    /// Calls made.
    pub calls: u64,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from the provider cache.
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider cache.
    pub cache_write_tokens: u64,
    /// Dollars over priced calls.
    pub cost_usd: f64,
    /// Calls whose price is unknown (their cost is not in `cost_usd`).
    pub unpriced_calls: u64,
}

/// Usage summed over a run and everything below it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Usage {
    /// Per model name.
    pub models: BTreeMap<String, ModelTotals>,
    /// Sub-calls made (`llm_query` items and `rlm_query` runs).
    pub subcalls: u64,
}

impl Usage {
    /// Input + output tokens over all models.
    pub fn total_tokens(&self) -> u64 {
        self.models
            .values()
            .map(|m| m.input_tokens + m.output_tokens)
            .sum()
    }

    /// Dollars over priced calls.
    pub fn cost_usd(&self) -> f64 {
        self.models.values().map(|m| m.cost_usd).sum()
    }

    /// Whether some calls had no known price (so `cost_usd` is a lower bound).
    pub fn cost_is_partial(&self) -> bool {
        self.models.values().any(|m| m.unpriced_calls > 0)
    }

    /// Model calls over all models.
    pub fn calls(&self) -> u64 {
        self.models.values().map(|m| m.calls).sum()
    }

    fn add(&mut self, model: &str, call: &CallUsage) {
        let totals = self.models.entry(model.to_owned()).or_default();
        totals.calls += 1;
        totals.input_tokens += call.input_tokens;
        totals.output_tokens += call.output_tokens;
        totals.cache_read_tokens += call.cache_read_tokens;
        totals.cache_write_tokens += call.cache_write_tokens;
        match call.cost_usd {
            Some(cost) => totals.cost_usd += cost,
            None => totals.unpriced_calls += 1,
        }
    }
}

/// Spending of one run subtree, checked against its budget and every ancestor's.
#[derive(Debug)]
pub struct Ledger {
    parent: Option<Arc<Ledger>>,
    budget: Budget,
    deadline: Option<Instant>,
    usage: Mutex<Usage>,
}

impl Ledger {
    /// The ledger of a root run; its clock starts now.
    pub fn root(budget: Budget) -> Arc<Self> {
        let deadline = budget.timeout.map(|t| Instant::now() + t);
        Arc::new(Self {
            parent: None,
            budget,
            deadline,
            usage: Mutex::new(Usage::default()),
        })
    }

    /// A child ledger: its own budget, bounded by everything the parent has left.
    pub fn child(parent: &Arc<Self>, budget: Budget) -> Arc<Self> {
        let own = budget.timeout.map(|t| Instant::now() + t);
        let deadline = match (own, parent.deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Arc::new(Self {
            parent: Some(Arc::clone(parent)),
            budget,
            deadline,
            usage: Mutex::new(Usage::default()),
        })
    }

    /// This run's budget.
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// The earliest deadline of this ledger and its ancestors.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Records one model call here and in every ancestor.
    pub fn record_call(&self, model: &str, call: &CallUsage) {
        self.each(|ledger| ledger.lock().add(model, call));
    }

    /// Counts one sub-call here and in every ancestor.
    pub fn record_subcall(&self) {
        self.each(|ledger| ledger.lock().subcalls += 1);
    }

    /// A snapshot of what this subtree spent.
    pub fn usage(&self) -> Usage {
        self.lock().clone()
    }

    /// The first exhausted budget on the path from here to the root, if any.
    pub fn exhausted(&self) -> Option<Exhausted> {
        let mut current = Some(self);
        while let Some(ledger) = current {
            if let Some(reason) = ledger.own_exhausted() {
                return Some(reason);
            }
            current = ledger.parent.as_deref();
        }
        None
    }

    /// Whether one more sub-call fits every budget on the path to the root.
    pub fn subcall_allowed(&self) -> Result<(), Exhausted> {
        if let Some(reason) = self.exhausted() {
            return Err(reason);
        }
        Ok(())
    }

    fn own_exhausted(&self) -> Option<Exhausted> {
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Some(Exhausted::Time);
        }
        let usage = self.lock();
        if self
            .budget
            .max_tokens
            .is_some_and(|max| usage.total_tokens() >= max)
        {
            return Some(Exhausted::Tokens);
        }
        if self
            .budget
            .max_cost_usd
            .is_some_and(|max| usage.cost_usd() >= max)
        {
            return Some(Exhausted::Cost);
        }
        if self
            .budget
            .max_subcalls
            .is_some_and(|max| usage.subcalls >= max)
        {
            return Some(Exhausted::Subcalls);
        }
        None
    }

    fn each(&self, mut apply: impl FnMut(&Ledger)) {
        let mut current = Some(self);
        while let Some(ledger) = current {
            apply(ledger);
            current = ledger.parent.as_deref();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Usage> {
        // A panic while holding this lock cannot leave a half-updated sum worth refusing.
        self.usage.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(input: u64, output: u64, cost: Option<f64>) -> CallUsage {
        CallUsage {
            input_tokens: input,
            output_tokens: output,
            cost_usd: cost,
            ..CallUsage::default()
        }
    }

    #[test]
    fn usage_sums_up_the_tree() {
        let root = Ledger::root(Budget::default());
        let child = Ledger::child(&root, Budget::default());
        let grandchild = Ledger::child(&child, Budget::default());
        root.record_call("big", &call(100, 10, Some(0.5)));
        grandchild.record_call("small", &call(7, 3, None));
        grandchild.record_subcall();
        assert_eq!(grandchild.usage().total_tokens(), 10);
        assert_eq!(child.usage().total_tokens(), 10);
        let total = root.usage();
        assert_eq!(total.total_tokens(), 120);
        assert_eq!(total.subcalls, 1);
        assert_eq!(total.calls(), 2);
        assert!((total.cost_usd() - 0.5).abs() < 1e-9);
        assert!(total.cost_is_partial());
        assert_eq!(total.models["small"].unpriced_calls, 1);
    }

    #[test]
    fn child_cannot_outspend_parent() {
        let root = Ledger::root(Budget {
            max_tokens: Some(100),
            ..Budget::default()
        });
        root.record_call("m", &call(90, 0, None));
        // The child's own budget is larger, but the parent has only 10 tokens left.
        let child = Ledger::child(
            &root,
            Budget {
                max_tokens: Some(1_000),
                ..Budget::default()
            },
        );
        assert_eq!(child.exhausted(), None);
        child.record_call("m", &call(5, 5, None));
        assert_eq!(child.exhausted(), Some(Exhausted::Tokens));
        assert_eq!(child.usage().total_tokens(), 10);
    }

    #[test]
    fn cost_and_subcall_limits() {
        let root = Ledger::root(Budget {
            max_cost_usd: Some(1.0),
            max_subcalls: Some(2),
            ..Budget::default()
        });
        root.record_subcall();
        assert!(root.subcall_allowed().is_ok());
        root.record_subcall();
        assert_eq!(root.subcall_allowed(), Err(Exhausted::Subcalls));
        let other = Ledger::root(Budget {
            max_cost_usd: Some(1.0),
            ..Budget::default()
        });
        other.record_call("m", &call(1, 1, Some(0.6)));
        assert_eq!(other.exhausted(), None);
        other.record_call("m", &call(1, 1, Some(0.6)));
        assert_eq!(other.exhausted(), Some(Exhausted::Cost));
    }

    #[test]
    fn child_deadline_is_bounded_by_parent() {
        let root = Ledger::root(Budget {
            timeout: Some(Duration::from_secs(1)),
            ..Budget::default()
        });
        let child = Ledger::child(
            &root,
            Budget {
                timeout: Some(Duration::from_secs(3600)),
                ..Budget::default()
            },
        );
        assert!(child.deadline() <= root.deadline());
        let expired = Ledger::root(Budget {
            timeout: Some(Duration::ZERO),
            ..Budget::default()
        });
        assert_eq!(expired.exhausted(), Some(Exhausted::Time));
    }
}
