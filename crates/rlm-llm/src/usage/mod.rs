//! Accounting: prices, totals per model, a spend budget, and the ledger that enforces it.
//!
//! A [`Ledger`] is a node of a tree. Recording a call adds it to the node and every ancestor,
//! and a check walks every ancestor, so a child (a sub-run of the RLM, say) can never spend
//! more than its parent has left, and the root's totals are the sum over the whole tree.
//!
//! Each node keeps what it has spent and what calls in flight have reserved in one place under
//! one lock. [`Ledger::reserve`] holds a call's [`Estimate`] on every node of the path before
//! the call is sent and admits it only if spent + reserved + estimate fits every budget, so a
//! batch of concurrent calls cannot all pass the check before any reply is counted; the
//! [`Reservation`] is settled to the real usage when the reply arrives, and released when the
//! call fails or its future is dropped. One exception keeps a small budget usable: a call whose
//! worst case is larger than a whole limit (a 4,096-token answer under `--max-tokens 1000`)
//! could never fit, so it is admitted while that limit has room and nothing else is in flight
//! on the path. Overshoot is thus the estimation error of the admitted calls plus at most one
//! such oversized call, never a batch.
//!
//! All of that holds while a provider's usage fits the reservation's worst case. A reply
//! reporting more than its call could use (more output tokens than its `max_tokens`, more input
//! tokens than its prompt has bytes: [`overrun`]) is counted as reported, and from then on
//! every node of its path with a token or cost limit refuses new calls, saying why; the first
//! such reply logs a warning naming the provider. A call admitted earlier is asked again right
//! before it goes out ([`Ledger::check_send`]: the client does so after its wait for the
//! provider's limiter and before each retry, and settles a reply before its slot goes to the
//! next call), so the calls a batch reserved while the budget had room are not sent once it
//! has none. The calls already sent cannot be recalled, so such a provider overshoots a budget
//! by at most what they report.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::{ChatRequest, ChatResponse, ModelTotals, Usage, UsageReport};

mod overrun;

pub use overrun::INPUT_FRAMING_ALLOWANCE;
use overrun::Overrun;

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
    /// Cost of `usage` in US dollars: uncached input, cache reads, cache writes and output, each
    /// at its own rate.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let per = |tokens: u64, rate: f64| tokens as f64 * rate / 1_000_000.0;
        per(usage.uncached_input_tokens(), self.input_per_mtok)
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

/// Limits on what a [`Ledger`] (and everything below it) may spend.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// Maximum tokens, input plus output ([`Usage::total`]).
    pub max_tokens: Option<u64>,
    /// Maximum spend in US dollars, over the calls whose price is known.
    /// [`Ledger::check`] also refuses calls whose cost it cannot know.
    pub max_cost_usd: Option<f64>,
    /// Maximum number of calls, answered or failed.
    pub max_calls: Option<u64>,
}

/// Which spend limit ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Exhausted {
    /// [`Budget::max_tokens`].
    Tokens,
    /// [`Budget::max_cost_usd`].
    Cost,
    /// [`Budget::max_calls`].
    Calls,
}

impl fmt::Display for Exhausted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Tokens => "token",
            Self::Cost => "cost",
            Self::Calls => "call",
        })
    }
}

/// Output tokens assumed for a request that sets no `max_tokens` (the Anthropic wire format's
/// default; OpenAI-compatible servers have no fixed one).
pub const DEFAULT_OUTPUT_ESTIMATE: u64 = 4_096;

/// Bytes of text counted as one token by [`Estimate::of`]. Tokenizers such as o200k average
/// about 4 bytes a token on English and code, so dividing by 3 (rounded up) overestimates
/// ordinary text; text of mostly rare symbols can still come out higher.
pub const ESTIMATE_BYTES_PER_TOKEN: u64 = 3;

/// Tokens counted per message for role markers and framing.
const ESTIMATE_TOKENS_PER_MESSAGE: u64 = 4;

/// What a call may cost at most, held against the budgets while it is in flight.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Estimate {
    /// Input plus output tokens.
    pub tokens: u64,
    /// Dollars, `None` when the model's price is unknown.
    pub cost_usd: Option<f64>,
    /// The input part of `tokens`, estimated from the prompt's bytes (0: not known, and not
    /// checked against the reply).
    pub input_tokens: u64,
    /// The request's `max_tokens`, which no honest reply exceeds; `None` when it sets none.
    pub output_cap: Option<u64>,
}

impl Estimate {
    /// The worst case of `request` at `price`: input tokens estimated from the text
    /// ([`ESTIMATE_BYTES_PER_TOKEN`]), output at most the request's `max_tokens`
    /// (else [`DEFAULT_OUTPUT_ESTIMATE`]).
    pub fn of(request: &ChatRequest, price: Option<&Price>) -> Self {
        let text_tokens = |text: &str| (text.len() as u64).div_ceil(ESTIMATE_BYTES_PER_TOKEN);
        let input = request.system.as_deref().map_or(0, text_tokens)
            + request
                .messages
                .iter()
                .map(|message| text_tokens(&message.content) + ESTIMATE_TOKENS_PER_MESSAGE)
                .sum::<u64>()
            + (crate::tools::request_tool_bytes(request) as u64).div_ceil(ESTIMATE_BYTES_PER_TOKEN);
        let output = request
            .max_tokens
            .map_or(DEFAULT_OUTPUT_ESTIMATE, u64::from);
        let usage = Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        };
        Self {
            tokens: input + output,
            cost_usd: price.map(|price| price.cost(&usage)),
            input_tokens: input,
            output_cap: request.max_tokens.map(u64::from),
        }
    }
}

/// What calls in flight have reserved on a ledger node.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Reserved {
    /// Calls in flight.
    pub calls: u64,
    /// Their estimated tokens.
    pub tokens: u64,
    /// Their estimated dollars (priced calls only).
    pub cost_usd: f64,
}

impl Reserved {
    fn add(&mut self, estimate: &Estimate) {
        self.calls += 1;
        self.tokens += estimate.tokens;
        self.cost_usd += estimate.cost_usd.unwrap_or(0.0);
    }

    fn remove(&mut self, estimate: &Estimate) {
        self.calls = self.calls.saturating_sub(1);
        self.tokens = self.tokens.saturating_sub(estimate.tokens);
        self.cost_usd -= estimate.cost_usd.unwrap_or(0.0);
        if self.calls == 0 {
            // No float residue once nothing is in flight.
            self.cost_usd = 0.0;
        }
    }
}

/// What is left under a ledger's budgets and its ancestors' ([`Ledger::remaining`]).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Remaining {
    /// Tokens, input plus output; `None`: no token limit.
    pub tokens: Option<u64>,
    /// Dollars; `None`: no money limit.
    pub cost_usd: Option<f64>,
    /// Model calls; `None`: no call limit.
    pub calls: Option<u64>,
    /// Why nothing more may be sent although a limit shows room: a provider over-reported,
    /// or the spend under a money limit is unknown.
    pub stopped: Option<String>,
}

/// What one ledger node has spent, with everything below it, what its calls in flight have
/// reserved, and the first reply below it that reported more than its call could use.
#[derive(Debug, Default)]
struct Account {
    spent: UsageReport,
    reserved: Reserved,
    overrun: Option<Overrun>,
}

impl Account {
    /// The overrun that stops this node's `budget`, if any.
    fn stopped_by(&self, budget: &Budget) -> Option<(Exhausted, &Overrun)> {
        Some((budget.spend_limit()?, self.overrun.as_ref()?))
    }
}

/// An admitted call's hold on the budgets of a ledger and its ancestors. Settle it with the
/// reply ([`Reservation::settle`]) or the failure ([`Reservation::fail`]); dropping it (a
/// cancelled call) releases the hold without recording anything.
#[derive(Debug)]
#[must_use = "dropping a reservation releases it at once"]
pub struct Reservation {
    ledger: Arc<Ledger>,
    estimate: Estimate,
    open: bool,
}

impl Reservation {
    /// The estimate held.
    pub fn estimate(&self) -> &Estimate {
        &self.estimate
    }

    /// Whether the call may still be sent: [`Ledger::check_send`] on the ledger it was
    /// reserved on. Ask it right before each request goes out.
    pub fn check_send(&self) -> Result<()> {
        self.ledger.check_send()
    }

    /// Replaces the hold with the answered call, under `model`, on every node of the path.
    ///
    /// A reply reporting more than the call could use (see the module docs) is counted as
    /// reported and marks every node of the path: from then on a node with a token or cost
    /// limit refuses new calls. The first time that stops a budget on the path, a warning
    /// names the provider.
    pub fn settle(mut self, model: &str, response: &ChatResponse) {
        self.open = false;
        let overrun = Overrun::of(&self.estimate, response);
        let mut stopped_before = false;
        let mut stops = false;
        for ledger in self.ledger.path() {
            let mut account = ledger.lock();
            account.reserved.remove(&self.estimate);
            account.spent.add(model, response);
            if let Some(overrun) = &overrun {
                account.spent.add_overrun(model);
                stopped_before |= account.stopped_by(&ledger.budget).is_some();
                account.overrun.get_or_insert_with(|| overrun.clone());
                stops |= account.stopped_by(&ledger.budget).is_some();
            }
        }
        match overrun {
            Some(overrun) if stops && !stopped_before => tracing::warn!(
                "{overrun}; its usage is counted as reported, and no further calls are sent \
                 under this budget"
            ),
            Some(overrun) => tracing::debug!("{overrun}; its usage is counted as reported"),
            None => {}
        }
    }

    /// Replaces the hold with a failed call.
    pub fn fail(mut self, model: &str, latency: Duration, retries: u32) {
        self.open = false;
        for ledger in self.ledger.path() {
            let mut account = ledger.lock();
            account.reserved.remove(&self.estimate);
            account.spent.add_failure(model, latency, retries);
        }
    }
}

impl Reservation {
    /// Replaces the hold with a call cut off after its request went out, at its estimated
    /// `usage` and cost ([`rlm_types::ModelTotals::add_cut_off`]).
    pub fn cut_off(
        mut self,
        model: &str,
        usage: &Usage,
        cost_usd: Option<f64>,
        latency: Duration,
        retries: u32,
    ) {
        self.open = false;
        for ledger in self.ledger.path() {
            let mut account = ledger.lock();
            account.reserved.remove(&self.estimate);
            account
                .spent
                .add_cut_off(model, usage, cost_usd, latency, retries);
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if self.open {
            for ledger in self.ledger.path() {
                ledger.lock().reserved.remove(&self.estimate);
            }
        }
    }
}

/// Spending of one node of a tree (a process, a run, a sub-run), checked against its budget
/// and every ancestor's. Share it as `Arc<Ledger>`.
#[derive(Debug)]
pub struct Ledger {
    parent: Option<Arc<Ledger>>,
    budget: Budget,
    account: Mutex<Account>,
}

impl Ledger {
    /// A root ledger with no limits.
    pub fn new() -> Arc<Self> {
        Self::with_budget(Budget::default())
    }

    /// A root ledger that refuses calls beyond `budget`.
    pub fn with_budget(budget: Budget) -> Arc<Self> {
        Arc::new(Self {
            parent: None,
            budget,
            account: Mutex::default(),
        })
    }

    /// A child of `parent` with its own budget, bounded by everything the parent has left.
    pub fn child(parent: &Arc<Self>, budget: Budget) -> Arc<Self> {
        Arc::new(Self {
            parent: Some(Arc::clone(parent)),
            budget,
            account: Mutex::default(),
        })
    }

    /// This node's own budget.
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// The first spend limit that has run out on the path from here to the root, or that a
    /// reply reporting more than its call could use has stopped. The cost counted is a lower
    /// bound: calls without a known price add nothing to it.
    pub fn exhausted(&self) -> Option<Exhausted> {
        self.path().find_map(|ledger| {
            let account = ledger.lock();
            ledger
                .budget
                .exhausted_by(&account.spent.total)
                .or_else(|| account.stopped_by(&ledger.budget).map(|(limit, _)| limit))
        })
    }

    /// Errors with [`Error::BudgetExhausted`] when another call would exceed a budget on the
    /// path to the root. Stricter than [`Ledger::exhausted`] about money: under a cost limit,
    /// a call is refused when its cost cannot be known (`price_known` is false) or when an
    /// earlier call's could not. After an overrun (see the module docs) a token or cost limit
    /// refuses every call, naming the provider and what it reported.
    pub fn check(&self, price_known: bool) -> Result<()> {
        for ledger in self.path() {
            let budget = &ledger.budget;
            let account = ledger.lock();
            ledger.refuse_spent(&account)?;
            if budget.max_cost_usd.is_some() {
                let refuse = |detail: &str| {
                    Err(Error::BudgetExhausted {
                        limit: Exhausted::Cost,
                        detail: detail.to_owned(),
                    })
                };
                if account.spent.total.cost_is_partial() {
                    return refuse("spend is unknown (a model without a price was used)");
                }
                if !price_known {
                    return refuse("a money budget is set but this model has no known price");
                }
            }
        }
        Ok(())
    }

    /// Errors with [`Error::BudgetExhausted`] when a call admitted earlier must not be sent
    /// now: what is spent on the path has reached a limit, or a reply reporting more than its
    /// call could use has stopped a token or cost limit there since. A client asks this right
    /// before each request goes out — after its wait for the provider's limiter and before
    /// every retry — so the calls a batch reserved while the budget had room are not sent once
    /// it has none ([`Reservation::check_send`]).
    pub fn check_send(&self) -> Result<()> {
        self.path()
            .try_for_each(|ledger| ledger.refuse_spent(&ledger.lock()))
    }

    /// This node's refusal, from what it has spent alone: an overrun that stopped its budget,
    /// or a limit reached.
    fn refuse_spent(&self, account: &Account) -> Result<()> {
        let budget = &self.budget;
        let spent = &account.spent.total;
        let refuse =
            |limit: Exhausted, detail: String| Err(Error::BudgetExhausted { limit, detail });
        if let Some((limit, overrun)) = account.stopped_by(budget) {
            return refuse(
                limit,
                format!("{overrun}; no further calls are sent under this budget"),
            );
        }
        match budget.exhausted_by(spent) {
            None => Ok(()),
            Some(limit @ Exhausted::Calls) => refuse(
                limit,
                format!("{} calls allowed", budget.max_calls.unwrap_or(0)),
            ),
            Some(limit @ Exhausted::Tokens) => refuse(
                limit,
                format!(
                    "{} of {} tokens used",
                    spent.usage.total(),
                    budget.max_tokens.unwrap_or(0)
                ),
            ),
            Some(limit @ Exhausted::Cost) => refuse(
                limit,
                format!(
                    "${:.4} of ${:.4} spent",
                    spent.cost_usd,
                    budget.max_cost_usd.unwrap_or(0.0)
                ),
            ),
        }
    }

    /// Admits a call estimated at `estimate` if it fits every budget on the path to the root
    /// with what is spent and reserved there, and holds it until the returned
    /// [`Reservation`] is settled or dropped. Refuses like [`Ledger::check`] (which includes
    /// an unknown price under a cost limit), and also when the estimate does not fit, unless
    /// it is larger than the whole limit and nothing is in flight on the path (such a call
    /// may use what is left, alone).
    pub fn reserve(self: &Arc<Self>, estimate: Estimate) -> Result<Reservation> {
        self.check(estimate.cost_usd.is_some())?;
        // Locks are always taken leaf to root, so two reservations cannot deadlock, and the
        // whole path is held so concurrent reservations see each other.
        let mut accounts: Vec<(&Ledger, MutexGuard<'_, Account>)> =
            self.path().map(|ledger| (ledger, ledger.lock())).collect();
        let alone = accounts
            .iter()
            .all(|(_, account)| account.reserved.calls == 0);
        for (ledger, account) in &accounts {
            ledger
                .budget
                .refuse_reservation(account, &estimate, alone)?;
        }
        for (_, account) in &mut accounts {
            account.reserved.add(&estimate);
        }
        drop(accounts);
        Ok(Reservation {
            ledger: Arc::clone(self),
            estimate,
            open: true,
        })
    }

    /// What is left under every budget on the path from here to the root, for a caller
    /// planning its work (a run's code asking before it fans out): each limit's room after what
    /// is spent and what calls in flight hold, the smallest along the path; `None` where no
    /// node limits it. A budget stopped by a reply that reported more than its call could use,
    /// or one whose spend is unknown, has nothing left, and [`Remaining::stopped`] says why.
    pub fn remaining(&self) -> Remaining {
        let mut remaining = Remaining::default();
        for ledger in self.path() {
            let budget = &ledger.budget;
            let account = ledger.lock();
            let spent = &account.spent.total;
            let held = &account.reserved;
            let fewest = |known: Option<u64>, left: u64| Some(known.map_or(left, |k| k.min(left)));
            if let Some(max) = budget.max_calls {
                let used = spent.calls + spent.failures + held.calls;
                remaining.calls = fewest(remaining.calls, max.saturating_sub(used));
            }
            let stopped = account
                .stopped_by(budget)
                .map(|(_, overrun)| overrun.to_string());
            let unknown_cost = budget.max_cost_usd.is_some() && spent.cost_is_partial();
            if let Some(max) = budget.max_tokens {
                let left = if stopped.is_some() {
                    0
                } else {
                    max.saturating_sub(spent.usage.total() + held.tokens)
                };
                remaining.tokens = fewest(remaining.tokens, left);
            }
            if let Some(max) = budget.max_cost_usd {
                let left = if stopped.is_some() || unknown_cost {
                    0.0
                } else {
                    (max - spent.cost_usd - held.cost_usd).max(0.0)
                };
                remaining.cost_usd = Some(remaining.cost_usd.map_or(left, |known| known.min(left)));
            }
            if remaining.stopped.is_none() {
                remaining.stopped = stopped.or_else(|| {
                    unknown_cost
                        .then(|| "spend is unknown (a model without a price was used)".to_owned())
                });
            }
        }
        remaining
    }

    /// What calls in flight hold on this node (and below it).
    pub fn reserved(&self) -> Reserved {
        self.lock().reserved
    }

    /// Adds an answered call here and in every ancestor, under `model`: the caller's name for
    /// it (the client itself uses the resolved `provider:model`, as in `response.model`).
    pub fn record(&self, model: &str, response: &ChatResponse) {
        for ledger in self.path() {
            ledger.lock().spent.add(model, response);
        }
    }

    /// Adds a failed call here and in every ancestor.
    pub fn record_failure(&self, model: &str, latency: Duration, retries: u32) {
        for ledger in self.path() {
            ledger.lock().spent.add_failure(model, latency, retries);
        }
    }

    /// What this node and everything below it spent.
    pub fn report(&self) -> UsageReport {
        self.lock().spent.clone()
    }

    /// The grand total of [`Ledger::report`], without copying the per-model table.
    pub fn total(&self) -> ModelTotals {
        self.lock().spent.total.clone()
    }

    /// This node, its parent, and so on up to the root.
    fn path(&self) -> impl Iterator<Item = &Ledger> {
        std::iter::successors(Some(self), |ledger| ledger.parent.as_deref())
    }

    fn lock(&self) -> MutexGuard<'_, Account> {
        // A panic while holding this lock cannot leave a half-updated sum worth refusing.
        self.account.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Budget {
    /// Errors when `estimate` on top of what `account` has spent and reserved would pass a
    /// limit, unless the call is `alone` in flight and its estimate exceeds the whole limit
    /// (it could never fit; [`Ledger::check`] has made sure the limit still has room).
    fn refuse_reservation(
        &self,
        account: &Account,
        estimate: &Estimate,
        alone: bool,
    ) -> Result<()> {
        let spent = &account.spent.total;
        let reserved = &account.reserved;
        let refuse =
            |limit: Exhausted, detail: String| Err(Error::BudgetExhausted { limit, detail });
        if let Some(max) = self.max_calls
            && spent.calls + spent.failures + reserved.calls + 1 > max
        {
            return refuse(
                Exhausted::Calls,
                format!("{max} calls allowed, {} in flight", reserved.calls),
            );
        }
        if let Some(max) = self.max_tokens
            && spent.usage.total() + reserved.tokens + estimate.tokens > max
            && !(alone && estimate.tokens > max)
        {
            return refuse(
                Exhausted::Tokens,
                format!(
                    "{} of {max} tokens used, {} held by calls in flight, this call may use {}",
                    spent.usage.total(),
                    reserved.tokens,
                    estimate.tokens
                ),
            );
        }
        if let Some(max) = self.max_cost_usd
            && spent.cost_usd + reserved.cost_usd + estimate.cost_usd.unwrap_or(0.0) > max
            && !(alone && estimate.cost_usd.unwrap_or(0.0) > max)
        {
            return refuse(
                Exhausted::Cost,
                format!(
                    "${:.4} of ${max:.4} spent, ${:.4} held by calls in flight, this call may cost ${:.4}",
                    spent.cost_usd,
                    reserved.cost_usd,
                    estimate.cost_usd.unwrap_or(0.0)
                ),
            );
        }
        Ok(())
    }

    /// The limit an overrun stops: the cost one when set, else the token one; `None` when the
    /// budget limits neither (a call limit does not depend on what providers report).
    fn spend_limit(&self) -> Option<Exhausted> {
        if self.max_cost_usd.is_some() {
            Some(Exhausted::Cost)
        } else if self.max_tokens.is_some() {
            Some(Exhausted::Tokens)
        } else {
            None
        }
    }

    /// The first limit `spent` has reached.
    fn exhausted_by(&self, spent: &ModelTotals) -> Option<Exhausted> {
        if self
            .max_calls
            .is_some_and(|max| spent.calls + spent.failures >= max)
        {
            return Some(Exhausted::Calls);
        }
        if self
            .max_tokens
            .is_some_and(|max| spent.usage.total() >= max)
        {
            return Some(Exhausted::Tokens);
        }
        if self.max_cost_usd.is_some_and(|max| spent.cost_usd >= max) {
            return Some(Exhausted::Cost);
        }
        None
    }
}

#[cfg(test)]
mod tests;
