//! Room for the report: under `--max-cost`/`--max-tokens` the pipeline keeps a reserve for
//! the synthesis and sends extractor batches only while spent + batches in flight + the next
//! batch + that reserve fit the budget. The reserve covers every call the report will make:
//! when the findings are more than one synthesis call reads, the group reductions before it
//! ([`Reduction`]). The chunks left over are reported as skipped for the budget, and the
//! report is written within the reserve.
//!
//! Every figure here is an upper estimate in the ledger's own terms
//! (`rlm_llm::ESTIMATE_BYTES_PER_TOKEN`, each call's `max_tokens` as its output), so a call
//! the gate admitted is also admitted by the ledger.

use rlm_llm::{Budget, ESTIMATE_BYTES_PER_TOKEN, ModelTotals, Price, Usage};

use crate::synthesize::MAX_REDUCE_LEVELS;
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

/// What the report may cost at most, as [`crate::synthesize`] writes it: findings of up to
/// `evidence_bytes` go to one final call when they fit `input_chars`; more are first reduced
/// in groups, level after level (each group's notes at most `max_tokens` of output), and the
/// final call reads what the last level left. The final call has `tool_rounds` rounds of
/// tools; every call may write up to `max_tokens`.
pub(crate) fn synthesis_reserve(
    system_bytes: usize,
    question_bytes: usize,
    evidence_bytes: u64,
    input_chars: usize,
    max_tokens: u32,
    tool_rounds: u32,
    price: Option<&Price>,
) -> Amount {
    let reduction = Reduction::estimate(evidence_bytes, input_chars, max_tokens);
    let max_tokens = u64::from(max_tokens);
    let frame_bytes = system_bytes as u64 + question_bytes as u64 + FINAL_FRAME_BYTES;
    let mut amount = Amount::of(0, 0, 0, price);
    for level in &reduction.levels {
        // Every piece of the level goes to exactly one group: the groups' messages hold the
        // level's evidence once, each with its own frame.
        let bytes = level.groups * frame_bytes + in_message(level.evidence_bytes, level.pieces);
        let input =
            bytes.div_ceil(ESTIMATE_BYTES_PER_TOKEN) + level.groups * (2 * MESSAGE_TOKENS + 1);
        amount = amount.plus(Amount::of(
            input,
            level.groups * max_tokens,
            level.groups,
            price,
        ));
    }
    let mut prompt_bytes = frame_bytes + in_message(reduction.final_bytes, reduction.final_pieces);
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
    amount.plus(Amount::of(input, calls * max_tokens, calls, price))
}

/// Bytes `evidence_bytes` of findings or notes take in a message: a tenth more for the
/// neutralised tags, and each note's `<notes part="N">` wrapper (`pieces` of them; `None` for
/// findings, whose wrapper is a line each, inside the tenth).
fn in_message(evidence_bytes: u64, pieces: Option<u64>) -> u64 {
    evidence_bytes + evidence_bytes / 10 + pieces.map_or(0, |n| n * NOTES_FRAME_BYTES)
}

/// Bytes of a note's wrapper in a message (`<notes part="N">`, `</notes>`, newlines).
const NOTES_FRAME_BYTES: u64 = 40;

/// The calls of a report, estimated from above: the group calls of each reduction level, then
/// the final call's evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reduction {
    /// The levels of group calls, in order (none when the findings fit one call).
    pub levels: Vec<ReductionLevel>,
    /// Bytes of evidence the final call reads.
    pub final_bytes: u64,
    /// Notes the final call reads (`None`: the findings themselves).
    pub final_pieces: Option<u64>,
}

/// One level of group calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReductionLevel {
    /// Group calls at most.
    pub groups: u64,
    /// Bytes of evidence the level's groups read together.
    pub evidence_bytes: u64,
    /// Notes read at this level (`None`: findings, on the first level).
    pub pieces: Option<u64>,
}

impl Reduction {
    /// The reduction of findings of at most `evidence_bytes` by a synthesizer that reads
    /// `input_chars` per call and writes notes of at most `max_tokens`.
    ///
    /// Groups are packed greedily in order ([`crate::synthesize`]), so any two consecutive
    /// groups hold more than `input_chars` together: `n` bytes make at most
    /// `2·⌈n / input_chars⌉ − 1` groups. Notes are at most `max_tokens` tokens each, which
    /// also bounds a group from below (`input_chars − note`) and so their number once more.
    pub fn estimate(evidence_bytes: u64, input_chars: usize, max_tokens: u32) -> Self {
        let limit = (input_chars as u64).max(1);
        let note_bytes = u64::from(max_tokens) * OUTPUT_BYTES_PER_TOKEN;
        let mut levels = Vec::new();
        let mut total = evidence_bytes;
        let mut pieces: Option<u64> = None;
        while levels.len() < MAX_REDUCE_LEVELS && total > limit && pieces.is_none_or(|n| n > 1) {
            let mut groups = 2 * total.div_ceil(limit) - 1;
            if let Some(notes) = pieces {
                groups = groups.min(notes);
                if note_bytes < limit {
                    groups = groups.min(total / (limit - note_bytes) + 1);
                }
            }
            levels.push(ReductionLevel {
                groups,
                evidence_bytes: total,
                pieces,
            });
            total = groups * note_bytes;
            pieces = Some(groups);
        }
        Self {
            levels,
            final_bytes: total,
            final_pieces: pieces,
        }
    }
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
        let unpriced = synthesis_reserve(1_000, 50, 3_000, 120_000, 100, 0, None);
        assert_eq!(unpriced.cost_usd, None);
        let tools = synthesis_reserve(1_000, 50, 3_000, 120_000, 100, 3, Some(&price()));
        assert_eq!(tools.calls, 4);
        assert!(
            tools.tokens > 4 * (plain.tokens + (TOOL_OUTPUT_TOTAL_BYTES as u64) / 3),
            "{tools:?}"
        );
    }

    #[test]
    fn findings_over_one_call_reserve_every_group_reduction() {
        // Fits one call: no reduction.
        let fits_one = Reduction::estimate(3_000, 120_000, 100);
        assert!(fits_one.levels.is_empty());
        assert_eq!((fits_one.final_bytes, fits_one.final_pieces), (3_000, None));
        // 2.5 calls' worth of findings: at most 5 groups, whose notes then fit one call.
        let one_level = Reduction::estimate(250_000, 100_000, 1_000);
        assert_eq!(
            one_level.levels,
            [ReductionLevel {
                groups: 5,
                evidence_bytes: 250_000,
                pieces: None
            }]
        );
        assert_eq!(one_level.final_bytes, 5 * 4_000);
        assert_eq!(one_level.final_pieces, Some(5));
        // Notes that do not fit either are reduced again, level after level, up to the
        // synthesizer's limit; the final call then reads what is left.
        let deep = Reduction::estimate(1_000_000, 10_000, 2_000);
        assert_eq!(deep.levels.len(), MAX_REDUCE_LEVELS);
        assert_eq!(deep.levels[0].groups, 199);
        assert!(deep.levels[1..].iter().all(|level| level.groups <= 199));
        assert_eq!(deep.final_pieces, Some(deep.levels[3].groups));
        // Small notes shrink each level: 199 groups of 400-byte notes need 9 then 1 call.
        let shrinking = Reduction::estimate(1_000_000, 10_000, 100);
        let groups: Vec<u64> = shrinking.levels.iter().map(|level| level.groups).collect();
        assert_eq!(groups, [199, 9]);
        assert_eq!(shrinking.final_bytes, 9 * 400);

        // The reserve pays for every one of those calls.
        let plain = synthesis_reserve(1_000, 50, 90_000, 100_000, 1_000, 0, Some(&price()));
        let reduced = synthesis_reserve(1_000, 50, 250_000, 100_000, 1_000, 0, Some(&price()));
        assert_eq!(plain.calls, 1);
        assert_eq!(reduced.calls, 6);
        // Five group calls' output and frames besides reading all the findings once.
        assert!(
            reduced.tokens > 250_000 / 3 + 6 * (1_000 + 1_050 / 3),
            "{reduced:?}"
        );
        let with_tools = synthesis_reserve(1_000, 50, 250_000, 100_000, 1_000, 2, Some(&price()));
        assert_eq!(with_tools.calls, 8);
    }

    /// The group count is an upper bound of what the synthesizer's packer makes, whatever the
    /// sizes of the pieces.
    #[test]
    fn the_group_bound_holds_for_the_packer() {
        let mut seed = 7_u64;
        for limit in [50_usize, 300, 1_000] {
            for round in 0..200 {
                let count = 1 + round % 40;
                let pieces: Vec<String> = (0..count)
                    .map(|_| {
                        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                        "x".repeat(1 + (seed >> 33) as usize % (limit * 2))
                    })
                    .collect();
                let total: u64 = pieces.iter().map(|piece| piece.len() as u64).sum();
                let groups = crate::synthesize::pack(&pieces, limit).len() as u64;
                let estimate = Reduction::estimate(total, limit, 1);
                let bound = estimate.levels.first().map_or(1, |level| level.groups);
                assert!(
                    groups <= bound,
                    "{groups} > {bound}: {total} bytes, limit {limit}"
                );
            }
        }
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
