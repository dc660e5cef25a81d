//! Usage a call could not have had: a provider (a proxy that miscounts, a model that ignores
//! its cap) reporting more output tokens than the request's `max_tokens`, or more input tokens
//! than its prompt has bytes. Budgets rest on each call's reservation being its worst case, so
//! after one such call a budget stops sending: the calls it admitted next would overshoot the
//! same way.

use std::fmt;

use rlm_types::thousands;

use super::{ESTIMATE_BYTES_PER_TOKEN, Estimate};
use crate::{ChatResponse, Usage};

/// Input tokens allowed beyond one a byte of the prompt: what chat templates, a provider's own
/// framing and its tool instructions add (Anthropic's tool-use preamble is a few hundred).
/// A token is at least one byte of text under every tokenizer in use (byte-level BPE,
/// SentencePiece with byte fallback), so an honest count stays below the bytes plus this.
pub const INPUT_FRAMING_ALLOWANCE: u64 = 1_024;

/// One call's reported usage beyond what it could have used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Overrun {
    provider: String,
    model: String,
    excess: Excess,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Excess {
    /// More output tokens than the request's `max_tokens`.
    Output { reported: u64, cap: u64 },
    /// More input tokens than the prompt could be counted as.
    Input { reported: u64, most: u64 },
}

impl Overrun {
    /// Whether `response`, answered for a call reserved at `estimate`, reports more than the
    /// call could use. A request without `max_tokens` has no output cap to check.
    pub(super) fn of(estimate: &Estimate, response: &ChatResponse) -> Option<Self> {
        let excess = excess(estimate, &response.usage)?;
        let (provider, model) = response
            .model
            .split_once(':')
            .unwrap_or(("the provider", response.model.as_str()));
        Some(Self {
            provider: provider.to_owned(),
            model: model.to_owned(),
            excess,
        })
    }
}

fn excess(estimate: &Estimate, usage: &Usage) -> Option<Excess> {
    if let Some(cap) = estimate.output_cap
        && usage.output_tokens > cap
    {
        return Some(Excess::Output {
            reported: usage.output_tokens,
            cap,
        });
    }
    // No input estimate: a hand-made estimate says nothing about the prompt.
    if estimate.input_tokens == 0 {
        return None;
    }
    let most = estimate
        .input_tokens
        .saturating_mul(ESTIMATE_BYTES_PER_TOKEN)
        .saturating_add(INPUT_FRAMING_ALLOWANCE);
    (usage.input_tokens > most).then_some(Excess::Input {
        reported: usage.input_tokens,
        most,
    })
}

impl fmt::Display for Overrun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            provider, model, ..
        } = self;
        match self.excess {
            Excess::Output { reported, cap } => write!(
                f,
                "{provider} reported {} output tokens for a call to `{model}` capped at {}",
                thousands(reported),
                thousands(cap)
            ),
            Excess::Input { reported, most } => write!(
                f,
                "{provider} reported {} input tokens for a call to `{model}` whose prompt \
                 counts as {} at most",
                thousands(reported),
                thousands(most)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn estimate(input_tokens: u64, output_cap: Option<u64>) -> Estimate {
        Estimate {
            tokens: input_tokens + output_cap.unwrap_or(0),
            cost_usd: None,
            input_tokens,
            output_cap,
        }
    }

    fn usage(input_tokens: u64, output_tokens: u64) -> Usage {
        Usage {
            input_tokens,
            output_tokens,
            ..Usage::default()
        }
    }

    #[test]
    fn output_over_the_cap_and_input_over_the_bytes_are_overruns() {
        let capped = estimate(100, Some(1_024));
        assert_eq!(excess(&capped, &usage(100, 1_024)), None);
        assert_eq!(
            excess(&capped, &usage(100, 20_000)),
            Some(Excess::Output {
                reported: 20_000,
                cap: 1_024
            })
        );
        // 100 estimated tokens are at least 300 bytes: up to 300 + 1,024 tokens is honest.
        assert_eq!(excess(&capped, &usage(1_324, 10)), None);
        assert_eq!(
            excess(&capped, &usage(1_325, 10)),
            Some(Excess::Input {
                reported: 1_325,
                most: 1_324
            })
        );
        // No cap, no output check; no input estimate, no input check.
        assert_eq!(excess(&estimate(100, None), &usage(10, 1_000_000)), None);
        assert_eq!(excess(&estimate(0, Some(10)), &usage(1_000_000, 1)), None);
    }

    #[test]
    fn the_message_names_the_provider_and_the_numbers() {
        let overrun = Overrun {
            provider: "openai".to_owned(),
            model: "gpt-4o".to_owned(),
            excess: Excess::Output {
                reported: 20_000,
                cap: 1_024,
            },
        };
        assert_eq!(
            overrun.to_string(),
            "openai reported 20,000 output tokens for a call to `gpt-4o` capped at 1,024"
        );
    }
}
