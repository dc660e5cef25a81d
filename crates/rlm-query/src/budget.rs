//! Room for the report: under `--max-cost`/`--max-tokens` the pipeline keeps a reserve for
//! the synthesis and sends extractor batches only while spent + batches in flight + the next
//! batch + that reserve fit the budget. The chunks left over are reported as skipped for the
//! budget, and the report is written within the reserve.
//!
//! Every figure here is an upper estimate in the ledger's own terms
//! (`rlm_llm::ESTIMATE_BYTES_PER_TOKEN`, each call's `max_tokens` as its output), so a call
//! the gate admitted is also admitted by the ledger.

use rlm_llm::{Budget, ESTIMATE_BYTES_PER_TOKEN, ModelTotals, Price, Usage};

use crate::tools::{TOOL_OUTPUT_TOTAL_BYTES, TOOL_RESULT_MAX_BYTES, definitions_bytes};

/// Bytes of the final message around the evidence: the question's tags, the coverage
/// sentence, the instructions and the tools note.
const FINAL_FRAME_BYTES: u64 = 1_500;
/// Bytes a rendered chunk of findings takes besides the findings (its `[chunk N] source ·
/// relevance` line and labels).
const FINDINGS_FRAME_BYTES: u64 = 160;
/// Bytes an output token may take, for bounding findings by the extractor's output cap.
const OUTPUT_BYTES_PER_TOKEN: u64 = 4;
/// Bytes of tags and instructions around each chunk and each extractor batch.
const CHUNK_FRAME_BYTES: u64 = 64;
const BATCH_FRAME_BYTES: u64 = 256;
/// Tokens counted per message (as the ledger's estimate does), with room for the tool
/// turns of a round.
const MESSAGE_TOKENS: u64 = 64;

/// An upper estimate of some calls: tokens, dollars (`None` when a price is unknown), calls.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Amount {
    pub tokens: u64,
    pub cost_usd: Option<f64>,
    pub calls: u64,
}

impl Amount {
    /// `calls` calls of `input` and `output` tokens in all, at `price`.
    pub fn of(input: u64, output: u64, calls: u64, price: Option<&Price>) -> Self {
        let usage = Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        };
        Self {
            tokens: input + output,
            cost_usd: price.map(|price| price.cost(&usage)),
            calls,
        }
    }

    /// Both amounts together (the cost unknown when either is).
    pub fn plus(self, other: Self) -> Self {
        Self {
            tokens: self.tokens + other.tokens,
            cost_usd: self.cost_usd.zip(other.cost_usd).map(|(a, b)| a + b),
            calls: self.calls + other.calls,
        }
    }

    /// Removes `other` (added earlier with [`Amount::plus`]).
    pub fn minus(self, other: Self) -> Self {
        Self {
            tokens: self.tokens.saturating_sub(other.tokens),
            cost_usd: self
                .cost_usd
                .zip(other.cost_usd)
                .map(|(a, b)| (a - b).max(0.0)),
            calls: self.calls.saturating_sub(other.calls),
        }
    }

    /// The amount as the user reads it against `budget`.
    pub fn describe(&self, budget: &Budget) -> String {
        let mut parts = Vec::new();
        if budget.max_cost_usd.is_some() {
            parts.push(match self.cost_usd {
                Some(cost) => format!("${cost:.4}"),
                None => "an unknown cost".to_owned(),
            });
        }
        if budget.max_tokens.is_some() {
            parts.push(format!("{} tokens", self.tokens));
        }
        if budget.max_calls.is_some() {
            parts.push(format!("{} calls", self.calls));
        }
        parts.join(", ")
    }
}

/// A budget's limits as the user set them.
pub(crate) fn describe_limit(budget: &Budget) -> String {
    let mut parts = Vec::new();
    if let Some(cost) = budget.max_cost_usd {
        parts.push(format!("${cost:.4}"));
    }
    if let Some(tokens) = budget.max_tokens {
        parts.push(format!("{tokens} tokens"));
    }
    if let Some(calls) = budget.max_calls {
        parts.push(format!("{calls} calls"));
    }
    parts.join(", ")
}

/// Whether `spent` plus `more` stays within every limit of `budget`.
pub(crate) fn fits(budget: &Budget, spent: &ModelTotals, more: Amount) -> bool {
    if let Some(max) = budget.max_tokens
        && spent.usage.total() + more.tokens > max
    {
        return false;
    }
    if let Some(max) = budget.max_cost_usd {
        // An unknown price cannot be checked; the pipeline refuses that case up front.
        let Some(cost) = more.cost_usd else {
            return false;
        };
        if spent.cost_usd + cost > max {
            return false;
        }
    }
    if let Some(max) = budget.max_calls
        && spent.calls + spent.failures + more.calls > max
    {
        return false;
    }
    true
}

/// What the report may cost at most: the final call over `evidence_bytes` of findings (at
/// most `input_chars`: more are reduced in groups first, which this does not cover), with
/// `tool_rounds` rounds of tools, each call up to `max_tokens` of output.
pub(crate) fn synthesis_reserve(
    system_bytes: usize,
    question_bytes: usize,
    evidence_bytes: u64,
    input_chars: usize,
    max_tokens: u32,
    tool_rounds: u32,
    price: Option<&Price>,
) -> Amount {
    let max_tokens = u64::from(max_tokens);
    let mut prompt_bytes = system_bytes as u64
        + question_bytes as u64
        + FINAL_FRAME_BYTES
        + (evidence_bytes + evidence_bytes / 10).min(input_chars as u64);
    if tool_rounds > 0 {
        // Definitions go with every call; results add up to the report's limit (one result
        // may pass it before the limit is noticed).
        prompt_bytes +=
            (definitions_bytes() + TOOL_OUTPUT_TOTAL_BYTES + TOOL_RESULT_MAX_BYTES) as u64;
    }
    let base = prompt_bytes.div_ceil(ESTIMATE_BYTES_PER_TOKEN) + 2 * MESSAGE_TOKENS;
    let calls = u64::from(tool_rounds) + 1;
    // Call i also carries the i answers before it (tool calls and their arguments).
    let input: u64 = (0..calls)
        .map(|round| base + round * (2 * max_tokens + MESSAGE_TOKENS))
        .sum();
    Amount::of(input, calls * max_tokens, calls, price)
}

/// Upper bound of the findings bytes one batch of `chunks` chunks can add (its reply is at
/// most `extract_max_tokens` tokens).
pub(crate) fn findings_bound(chunks: usize, source_bytes: u64, extract_max_tokens: u32) -> u64 {
    u64::from(extract_max_tokens) * OUTPUT_BYTES_PER_TOKEN
        + chunks as u64 * FINDINGS_FRAME_BYTES
        + source_bytes
}

/// One extractor call over chunks of `chunk_bytes` text in all (`chunks` of them), as the
/// ledger will estimate it.
pub(crate) fn batch_amount(
    chunk_bytes: u64,
    chunks: usize,
    fixed_bytes: usize,
    max_tokens: u32,
    price: Option<&Price>,
) -> Amount {
    let bytes =
        fixed_bytes as u64 + BATCH_FRAME_BYTES + chunk_bytes + chunks as u64 * CHUNK_FRAME_BYTES;
    Amount::of(
        bytes.div_ceil(ESTIMATE_BYTES_PER_TOKEN) + 2 * MESSAGE_TOKENS,
        u64::from(max_tokens),
        1,
        price,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn price() -> Price {
        Price {
            input_per_mtok: 1_000_000.0,
            output_per_mtok: 2_000_000.0,
            cache_read_per_mtok: None,
            cache_write_per_mtok: None,
        }
    }

    #[test]
    fn the_reserve_grows_with_evidence_and_tool_rounds_and_caps_at_the_input_size() {
        let plain = synthesis_reserve(1_000, 50, 3_000, 120_000, 100, 0, Some(&price()));
        assert_eq!(plain.calls, 1);
        assert_eq!(plain.cost_usd, Some(plain.tokens as f64 + 100.0));
        let more = synthesis_reserve(1_000, 50, 30_000, 120_000, 100, 0, Some(&price()));
        assert!(more.tokens > plain.tokens + 9_000, "{more:?} vs {plain:?}");
        let capped = synthesis_reserve(1_000, 50, 10_000_000, 1_000, 100, 0, None);
        assert!(capped.tokens < 3_000, "{capped:?}");
        assert_eq!(capped.cost_usd, None);
        let tools = synthesis_reserve(1_000, 50, 3_000, 120_000, 100, 3, Some(&price()));
        assert_eq!(tools.calls, 4);
        assert!(
            tools.tokens > 4 * (plain.tokens + (TOOL_OUTPUT_TOTAL_BYTES as u64) / 3),
            "{tools:?}"
        );
    }

    #[test]
    fn fits_checks_every_limit() {
        let spent = ModelTotals {
            calls: 2,
            cost_usd: 0.5,
            usage: Usage {
                input_tokens: 900,
                ..Usage::default()
            },
            ..ModelTotals::default()
        };
        let more = Amount {
            tokens: 100,
            cost_usd: Some(0.5),
            calls: 1,
        };
        assert!(fits(&Budget::default(), &spent, more));
        let tokens = Budget {
            max_tokens: Some(1_000),
            ..Budget::default()
        };
        assert!(fits(&tokens, &spent, more));
        assert!(!fits(&tokens, &spent, more.plus(more)));
        let cost = Budget {
            max_cost_usd: Some(1.0),
            ..Budget::default()
        };
        assert!(fits(&cost, &spent, more));
        assert!(!fits(&cost, &spent, more.plus(more)));
        let unknown = Amount {
            cost_usd: None,
            ..more
        };
        assert!(!fits(&cost, &spent, unknown));
        let calls = Budget {
            max_calls: Some(3),
            ..Budget::default()
        };
        assert!(fits(&calls, &spent, more));
        assert!(!fits(&calls, &spent, more.plus(more)));
        assert_eq!(more.plus(more).minus(more), more);
    }
}
