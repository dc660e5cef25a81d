//! What calls cost, summed: [`ModelTotals`] for one model or all, [`UsageReport`] per model.
//! `rlm-llm`'s ledger keeps them; trajectories log them as they are.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::types::{ChatResponse, Usage};

/// Totals of one or more calls (to one model, or to all of them).
///
/// This is also the shape trajectories log (`rlm-trace`): flat token counts, `latency_ms`.
/// Every field defaults when absent and a `null` cost reads as 0, so logs written before a
/// field existed still read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelTotals {
    /// Calls that returned an answer.
    pub calls: u64,
    /// Calls that ended in an error.
    #[serde(default)]
    pub failures: u64,
    /// Tokens of the answered calls.
    #[serde(flatten)]
    pub usage: Usage,
    /// Summed wall time of the calls.
    #[serde(rename = "latency_ms", with = "crate::types::duration_ms", default)]
    pub latency: Duration,
    /// Attempts that were retried.
    #[serde(default)]
    pub retries: u64,
    /// Dollars over the calls whose price is known: a lower bound when `unpriced_calls > 0`.
    #[serde(deserialize_with = "null_as_zero")]
    pub cost_usd: f64,
    /// Answered calls whose price is unknown, so their cost is not in `cost_usd`.
    #[serde(default)]
    pub unpriced_calls: u64,
    /// Answered calls whose token counts are estimates ([`ChatResponse::usage_estimated`]),
    /// so `usage` is partly estimated. Left out of JSON when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub estimated_calls: u64,
    /// Answered calls whose provider reported more tokens than the call could use (over its
    /// `max_tokens`, or more input tokens than its prompt has bytes); their usage is counted
    /// as reported. Left out of JSON when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub overrun_calls: u64,
    /// Failed calls cut off after their request went out (a deadline, a request or idle
    /// timeout, a stopped run): counted
    /// in `failures`, their tokens estimated (the request's size, the text streamed before the
    /// cut) and counted in `usage`. Left out of JSON when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cut_off_calls: u64,
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

impl ModelTotals {
    /// Adds an answered call.
    pub fn add(&mut self, response: &ChatResponse) {
        self.calls += 1;
        self.usage.add(&response.usage);
        self.latency += response.latency;
        self.retries += u64::from(response.retries);
        match response.cost_usd {
            Some(cost) => self.cost_usd += cost,
            None => self.unpriced_calls += 1,
        }
        if response.usage_estimated {
            self.estimated_calls += 1;
        }
    }

    /// Adds a failed call (no tokens are known for it).
    pub fn add_failure(&mut self, latency: Duration, retries: u32) {
        self.failures += 1;
        self.latency += latency;
        self.retries += u64::from(retries);
    }

    /// Adds a call cut off after its request went out, with its estimated `usage` and cost
    /// (`None`: unknown price, not counted).
    pub fn add_cut_off(
        &mut self,
        usage: &Usage,
        cost_usd: Option<f64>,
        latency: Duration,
        retries: u32,
    ) {
        self.add_failure(latency, retries);
        self.cut_off_calls += 1;
        self.usage.add(usage);
        self.cost_usd += cost_usd.unwrap_or(0.0);
    }

    /// Whether some answered calls had no known price, so `cost_usd` is only a lower bound.
    pub fn cost_is_partial(&self) -> bool {
        self.unpriced_calls > 0
    }
}

/// Totals per model reference plus the grand total.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageReport {
    /// Per model reference (`provider:model` as configured).
    #[serde(default)]
    pub models: BTreeMap<String, ModelTotals>,
    /// All models together.
    #[serde(default)]
    pub total: ModelTotals,
}

/// Older trajectories stored an unknown cost as `null`.
fn null_as_zero<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(0.0))
}

impl UsageReport {
    /// Adds an answered call to `model`'s totals and the grand total.
    pub fn add(&mut self, model: &str, response: &ChatResponse) {
        self.entry(model).add(response);
        self.total.add(response);
    }

    /// Adds a failed call to `model`.
    pub fn add_failure(&mut self, model: &str, latency: Duration, retries: u32) {
        self.entry(model).add_failure(latency, retries);
        self.total.add_failure(latency, retries);
    }

    /// Adds a call of `model` cut off after its request went out
    /// ([`ModelTotals::add_cut_off`]).
    pub fn add_cut_off(
        &mut self,
        model: &str,
        usage: &Usage,
        cost_usd: Option<f64>,
        latency: Duration,
        retries: u32,
    ) {
        self.entry(model)
            .add_cut_off(usage, cost_usd, latency, retries);
        self.total.add_cut_off(usage, cost_usd, latency, retries);
    }

    /// Counts an answered call of `model` (already added) as an overrun: its provider reported
    /// more tokens than the call could use (`rlm-llm`'s ledger decides).
    pub fn add_overrun(&mut self, model: &str) {
        self.entry(model).overrun_calls += 1;
        self.total.overrun_calls += 1;
    }

    fn entry(&mut self, model: &str) -> &mut ModelTotals {
        self.models.entry(model.to_owned()).or_default()
    }
}
