//! Accounting: prices, a shared ledger of usage per model, and a budget that can refuse calls.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::types::Usage;

/// Price of a model in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Price {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
    /// Cached-input reads; `None` means billed like plain input.
    #[serde(default)]
    pub cache_read_per_mtok: Option<f64>,
    /// Cache writes; `None` means billed like plain input.
    #[serde(default)]
    pub cache_write_per_mtok: Option<f64>,
}

impl Price {
    /// Cost of `usage` in US dollars.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let per = |tokens: u64, rate: f64| tokens as f64 * rate / 1_000_000.0;
        per(usage.input_tokens, self.input_per_mtok)
            + per(usage.output_tokens, self.output_per_mtok)
            + per(
                usage.cache_read_tokens,
                self.cache_read_per_mtok.unwrap_or(self.input_per_mtok),
            )
            + per(
                usage.cache_write_tokens,
                self.cache_write_per_mtok.unwrap_or(self.input_per_mtok),
            )
    }
}

/// Model name prefix → price. Lookups use the longest matching prefix, so
/// `claude-sonnet-4-5-20250929` finds `claude-sonnet-4-5`.
#[derive(Debug, Clone, Default)]
pub struct PriceTable {
    prices: BTreeMap<String, Price>,
}

const fn price(input: f64, output: f64, read: f64, write: Option<f64>) -> Price {
    Price {
        input_per_mtok: input,
        output_per_mtok: output,
        cache_read_per_mtok: Some(read),
        cache_write_per_mtok: write,
    }
}

/// List prices (USD per million tokens) of a few well-known models. Extend or override them
/// with [`PriceTable::insert`] (the CLI reads `[llm.prices]`).
const BUILTIN_PRICES: &[(&str, Price)] = &[
    ("claude-opus-4", price(15.0, 75.0, 1.5, Some(18.75))),
    ("claude-sonnet-4", price(3.0, 15.0, 0.3, Some(3.75))),
    ("claude-3-7-sonnet", price(3.0, 15.0, 0.3, Some(3.75))),
    ("claude-3-5-haiku", price(0.8, 4.0, 0.08, Some(1.0))),
    ("claude-haiku-4-5", price(1.0, 5.0, 0.1, Some(1.25))),
    ("gpt-4o", price(2.5, 10.0, 1.25, None)),
    ("gpt-4o-mini", price(0.15, 0.6, 0.075, None)),
    ("gpt-4.1", price(2.0, 8.0, 0.5, None)),
    ("gpt-4.1-mini", price(0.4, 1.6, 0.1, None)),
    ("gpt-4.1-nano", price(0.1, 0.4, 0.025, None)),
];

impl PriceTable {
    /// An empty table: every price unknown.
    pub fn empty() -> Self {
        Self::default()
    }

    /// The built-in prices.
    pub fn builtin() -> Self {
        let mut table = Self::default();
        for (name, price) in BUILTIN_PRICES {
            table.insert(*name, *price);
        }
        table
    }

    /// Adds or replaces the price of a model name prefix.
    pub fn insert(&mut self, model_prefix: impl Into<String>, price: Price) {
        self.prices.insert(model_prefix.into(), price);
    }

    /// The price for a model name (without provider prefix), if known.
    pub fn get(&self, model: &str) -> Option<&Price> {
        self.prices
            .iter()
            .filter(|(prefix, _)| model.starts_with(prefix.as_str()))
            .max_by_key(|(prefix, _)| prefix.len())
            .map(|(_, price)| price)
    }

    /// Cost of `usage` on `model`, `None` when the price is unknown.
    pub fn cost(&self, model: &str, usage: &Usage) -> Option<f64> {
        self.get(model).map(|price| price.cost(usage))
    }
}

/// Totals for one model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelTotals {
    /// Calls that returned an answer.
    pub calls: u64,
    /// Calls that ended in an error.
    pub failures: u64,
    pub usage: Usage,
    /// Summed wall time of the calls.
    #[serde(with = "crate::types::duration_ms")]
    pub latency: Duration,
    pub retries: u64,
    /// `None` as soon as one call had an unknown price: a partial sum would look like a total.
    pub cost_usd: Option<f64>,
}

/// A snapshot of a ledger: totals per model reference plus the grand total.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageReport {
    pub models: BTreeMap<String, ModelTotals>,
    pub total: ModelTotals,
}

/// Limits a [`UsageLedger`] enforces before each call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// Maximum tokens (all four kinds) over the ledger's life.
    pub max_tokens: Option<u64>,
    /// Maximum spend in US dollars. Calls to models with unknown prices are refused when set,
    /// because their cost cannot be checked.
    pub max_cost_usd: Option<f64>,
    /// Maximum number of calls.
    pub max_calls: Option<u64>,
}

#[derive(Debug, Default)]
struct LedgerState {
    report: UsageReport,
    budget: Budget,
}

/// Usage shared by every clone: one ledger per run, or one per process.
///
/// The client records into it after each call and asks [`UsageLedger::check`] before each call,
/// so a budget stops a fan-out once spent (calls already in flight still finish and count).
#[derive(Debug, Clone, Default)]
pub struct UsageLedger {
    state: Arc<Mutex<LedgerState>>,
}

impl UsageLedger {
    /// A ledger with no budget.
    pub fn new() -> Self {
        Self::default()
    }

    /// A ledger that refuses calls beyond `budget`.
    pub fn with_budget(budget: Budget) -> Self {
        let ledger = Self::default();
        ledger.lock().budget = budget;
        ledger
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LedgerState> {
        // A panic while holding this lock cannot leave the totals half-updated in a way that
        // matters more than losing them, so keep going with the inner value.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Replaces the budget.
    pub fn set_budget(&self, budget: Budget) {
        self.lock().budget = budget;
    }

    /// Errors with [`Error::BudgetExhausted`] when another call would exceed the budget.
    /// `price_known` tells whether the model about to be called has a price.
    pub fn check(&self, price_known: bool) -> Result<()> {
        let state = self.lock();
        let total = &state.report.total;
        let budget = &state.budget;
        if let Some(max) = budget.max_calls
            && total.calls + total.failures >= max
        {
            return Err(Error::BudgetExhausted {
                reason: format!("{max} calls allowed"),
            });
        }
        if let Some(max) = budget.max_tokens
            && total.usage.total() >= max
        {
            return Err(Error::BudgetExhausted {
                reason: format!("{} of {max} tokens used", total.usage.total()),
            });
        }
        if let Some(max) = budget.max_cost_usd {
            match total.cost_usd {
                Some(spent) if spent >= max => {
                    return Err(Error::BudgetExhausted {
                        reason: format!("${spent:.4} of ${max:.4} spent"),
                    });
                }
                None if total.calls > 0 => {
                    return Err(Error::BudgetExhausted {
                        reason: "spend is unknown (a model without a price was used)".to_owned(),
                    });
                }
                _ if !price_known => {
                    return Err(Error::BudgetExhausted {
                        reason: "a money budget is set but this model has no known price"
                            .to_owned(),
                    });
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Adds a successful call.
    pub fn record(
        &self,
        model: &str,
        usage: &Usage,
        cost_usd: Option<f64>,
        latency: Duration,
        retries: u32,
    ) {
        let mut state = self.lock();
        for totals in model_and_total(&mut state.report, model) {
            let first = totals.calls == 0;
            totals.calls += 1;
            totals.usage.add(usage);
            totals.latency += latency;
            totals.retries += u64::from(retries);
            totals.cost_usd = match (first, totals.cost_usd, cost_usd) {
                (true, _, cost) => cost,
                (false, Some(sum), Some(cost)) => Some(sum + cost),
                _ => None,
            };
        }
    }

    /// Adds a failed call (no tokens are known for it).
    pub fn record_failure(&self, model: &str, latency: Duration, retries: u32) {
        let mut state = self.lock();
        for totals in model_and_total(&mut state.report, model) {
            totals.failures += 1;
            totals.latency += latency;
            totals.retries += u64::from(retries);
        }
    }

    /// The totals so far.
    pub fn report(&self) -> UsageReport {
        self.lock().report.clone()
    }
}

/// The per-model entry and the run total, which every call updates alike.
fn model_and_total<'a>(report: &'a mut UsageReport, model: &str) -> [&'a mut ModelTotals; 2] {
    [
        report
            .models
            .entry(model.to_owned())
            .or_insert_with(fresh_totals),
        &mut report.total,
    ]
}

fn fresh_totals() -> ModelTotals {
    ModelTotals::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, output: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        }
    }

    #[test]
    fn longest_prefix_price_wins() {
        let table = PriceTable::builtin();
        let mini = table.get("gpt-4o-mini-2024-07-18").unwrap();
        assert_eq!(mini.input_per_mtok, 0.15);
        assert!(table.get("qwen2.5:7b").is_none());
        let cost = table.cost("gpt-4o", &usage(1_000_000, 1_000_000)).unwrap();
        assert!((cost - 12.5).abs() < 1e-9);
    }

    #[test]
    fn cache_tokens_use_their_own_rates() {
        let table = PriceTable::builtin();
        let used = Usage {
            cache_read_tokens: 1_000_000,
            cache_write_tokens: 1_000_000,
            ..Usage::default()
        };
        let cost = table.cost("claude-sonnet-4-5", &used).unwrap();
        assert!((cost - (0.3 + 3.75)).abs() < 1e-9);
    }

    #[test]
    fn unknown_price_makes_the_sum_unknown_not_zero() {
        let ledger = UsageLedger::new();
        ledger.record(
            "a:priced",
            &usage(10, 5),
            Some(0.5),
            Duration::from_millis(10),
            1,
        );
        assert_eq!(ledger.report().total.cost_usd, Some(0.5));
        ledger.record("b:local", &usage(7, 3), None, Duration::from_millis(20), 0);
        let report = ledger.report();
        assert_eq!(report.total.cost_usd, None);
        assert_eq!(report.models["a:priced"].cost_usd, Some(0.5));
        assert_eq!(report.models["b:local"].cost_usd, None);
        assert_eq!(report.total.usage.total(), 25);
        assert_eq!(report.total.retries, 1);
        assert_eq!(report.total.latency, Duration::from_millis(30));
    }

    #[test]
    fn budget_refuses_once_spent() {
        let ledger = UsageLedger::with_budget(Budget {
            max_tokens: Some(20),
            ..Budget::default()
        });
        assert!(ledger.check(false).is_ok());
        ledger.record("m", &usage(15, 10), None, Duration::ZERO, 0);
        assert!(matches!(
            ledger.check(false),
            Err(Error::BudgetExhausted { .. })
        ));

        let money = UsageLedger::with_budget(Budget {
            max_cost_usd: Some(1.0),
            ..Budget::default()
        });
        assert!(
            money.check(false).is_err(),
            "unknown price cannot be checked"
        );
        assert!(money.check(true).is_ok());
        money.record("m", &usage(1, 1), Some(1.5), Duration::ZERO, 0);
        assert!(money.check(true).is_err());
    }
}
