//! What a query may do: models, search choices, batches, concurrency, budgets.

use std::time::Duration;

use rlm_llm::Budget;
use rlm_store::SearchMode;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Chunks analysed when neither the plan nor the caller says.
pub const DEFAULT_TOP_K: usize = 40;
/// Chunks per extractor call when neither the plan nor the caller says.
pub const DEFAULT_BATCH_SIZE: usize = 10;
/// Extractor calls in flight at once (the provider's own limiter applies as well).
pub const DEFAULT_MAX_CONCURRENCY: usize = 16;
/// Output tokens an extractor call may use (also what its budget reservation assumes).
pub const DEFAULT_EXTRACT_MAX_TOKENS: u32 = 4_096;
/// Characters of findings one synthesis call takes before the findings are reduced in groups.
pub const DEFAULT_SYNTHESIS_INPUT_CHARS: usize = 120_000;
/// Output tokens a synthesis call may use (also what the budget reserves for the report).
pub const DEFAULT_SYNTHESIS_MAX_TOKENS: u32 = 4_096;
/// Wall time the extraction gets per round of batches (as many as the sub-call model's provider
/// serves at once) when the caller sets no timeout: a batch's call, its re-ask and its halves
/// at the capped reply sizes, on a slow local server.
pub const DEFAULT_SECONDS_PER_ROUND: u64 = 180;
/// Rounds of tool calls the synthesizer may make before it must answer.
pub const DEFAULT_MAX_TOOL_ROUNDS: u32 = 3;
/// Most tool rounds a caller may allow.
pub const MAX_TOOL_ROUNDS: u32 = 20;
/// Largest `top_k` a plan may choose (a caller may ask for more).
pub const MAX_PLAN_TOP_K: usize = 500;
/// Largest batch a plan may choose.
pub const MAX_PLAN_BATCH_SIZE: usize = 50;

/// Which chunks go to the extractors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ScanMode {
    /// The chunks the searches find.
    #[default]
    Search,
    /// Every chunk of the selected buffers, for questions no search can gate.
    All,
}

/// How relevant an extractor judged a chunk, lowest first (so `Ord` sorts by relevance).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Relevance {
    /// Nothing to do with the question.
    None,
    /// Tangential.
    Low,
    /// Partly relevant.
    Medium,
    /// Answers the question directly.
    High,
}

impl Relevance {
    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }

    /// Parses a wire name.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "none" => Some(Self::None),
            "low" => Some(Self::Low),
            "medium" => Some(Self::Medium),
            "high" => Some(Self::High),
            _ => None,
        }
    }
}

/// The least relevance a chunk needs for its findings to reach the synthesis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Threshold {
    /// Everything but `none`.
    #[default]
    Low,
    /// `medium` and `high`.
    Medium,
    /// `high` only.
    High,
}

impl Threshold {
    /// Whether a chunk of this relevance passes.
    pub fn admits(self, relevance: Relevance) -> bool {
        let least = match self {
            Self::Low => Relevance::Low,
            Self::Medium => Relevance::Medium,
            Self::High => Relevance::High,
        };
        relevance >= least
    }
}

/// Everything a query may do. Fields left `None` are chosen by the plan (or the defaults);
/// fields the caller sets always win over the plan.
#[derive(Debug, Clone)]
pub struct QueryOptions {
    /// The model that plans and writes the report.
    pub model: String,
    /// The model the extractors use.
    pub subcall_model: String,
    /// Search mode; `None` lets the plan choose.
    pub mode: Option<SearchMode>,
    /// Search, or send every chunk of the selection.
    pub scan: ScanMode,
    /// Chunks analysed at most (search mode); `None` lets the plan choose.
    pub top_k: Option<usize>,
    /// Chunks per extractor call; `None` lets the plan choose.
    pub batch_size: Option<usize>,
    /// Only these buffers (names or ids); empty lets the plan choose.
    pub buffers: Vec<String>,
    /// Only buffers whose name or path matches this glob.
    pub path_glob: Option<String>,
    /// Extractor calls in flight at once (at most the sub-call model's provider's own limit).
    pub max_concurrency: usize,
    /// Whether a limit the sub-call model's provider learned from its server (a local
    /// llama.cpp, TGI or SGLang saying how many requests it serves at once) replaces
    /// `max_concurrency`, larger or smaller. On by default; a caller that chose
    /// `max_concurrency` itself turns it off.
    pub concurrency_from_server: bool,
    /// Tokens, dollars and calls the whole query may spend.
    pub budget: Budget,
    /// Wall time for the whole query: the plan call gets a fifth of it, batches are sent until
    /// four fifths (those not done are reported), and the report is written from what finished
    /// by the end, or the findings are returned as they are.
    pub timeout: Option<Duration>,
    /// Search with the question itself instead of asking the model for a plan.
    pub skip_plan: bool,
    /// Least relevance whose findings reach the synthesis.
    pub threshold: Threshold,
    /// Output tokens per extractor call at most; each call's own cap is sized to its batch
    /// ([`crate::extract::reply_cap`]).
    pub extract_max_tokens: u32,
    /// Characters of findings one synthesis call takes before reducing in groups.
    pub synthesis_input_chars: usize,
    /// Output tokens per synthesis call.
    pub synthesis_max_tokens: u32,
    /// The most output tokens any call of the query may use (the user's `--max-output-tokens`);
    /// each call's own cap (the plan's, an extractor's sized to its batch, the report's)
    /// applies below it. `None`: only the calls' own caps.
    pub max_output_tokens: Option<u32>,
    /// Rounds of tool calls (`get_chunks`, `search`, `grep`) the report's writer may make;
    /// 0 writes it without tools. Models without tool calling always write without.
    pub max_tool_rounds: u32,
    /// The smallest context window of the two models, in tokens, when known (a local server's
    /// `/props`, or configured): extractor batches and the synthesis input are cut to fit it,
    /// so no request is sent that the server must refuse. `None`: no limit but the others.
    pub window_tokens: Option<u64>,
}

impl QueryOptions {
    /// Defaults for everything but the two models.
    pub fn new(model: impl Into<String>, subcall_model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            subcall_model: subcall_model.into(),
            mode: None,
            scan: ScanMode::Search,
            top_k: None,
            batch_size: None,
            buffers: Vec::new(),
            path_glob: None,
            max_concurrency: DEFAULT_MAX_CONCURRENCY,
            concurrency_from_server: true,
            budget: Budget::default(),
            timeout: None,
            skip_plan: false,
            threshold: Threshold::Low,
            extract_max_tokens: DEFAULT_EXTRACT_MAX_TOKENS,
            synthesis_input_chars: DEFAULT_SYNTHESIS_INPUT_CHARS,
            synthesis_max_tokens: DEFAULT_SYNTHESIS_MAX_TOKENS,
            max_output_tokens: None,
            max_tool_rounds: DEFAULT_MAX_TOOL_ROUNDS,
            window_tokens: None,
        }
    }

    /// Refuses values no query can run with.
    pub fn validate(&self) -> Result<()> {
        let invalid = |message: &str| Err(Error::InvalidOption(message.to_owned()));
        if self.batch_size == Some(0) {
            return invalid("the batch size must be at least 1");
        }
        if self.top_k == Some(0) {
            return invalid("top-k must be at least 1");
        }
        if self.max_concurrency == 0 {
            return invalid("the concurrency must be at least 1");
        }
        if let Some(cost) = self.budget.max_cost_usd
            && !(cost.is_finite() && cost > 0.0)
        {
            return Err(Error::InvalidOption(format!(
                "the cost limit {cost} is not a positive amount"
            )));
        }
        if self.budget.max_tokens == Some(0) {
            return invalid("the token limit must be at least 1");
        }
        if self.extract_max_tokens == 0
            || self.synthesis_input_chars == 0
            || self.synthesis_max_tokens == 0
            || self.max_output_tokens == Some(0)
        {
            return invalid("the extractor and synthesis sizes must be at least 1");
        }
        if self.max_tool_rounds > MAX_TOOL_ROUNDS {
            return Err(Error::InvalidOption(format!(
                "{} tool rounds is more than the {MAX_TOOL_ROUNDS} allowed",
                self.max_tool_rounds
            )));
        }
        Ok(())
    }
}

impl QueryOptions {
    /// The output cap of a call whose own cap is `own`: the smaller of it and
    /// `max_output_tokens`.
    pub fn output_cap(&self, own: u32) -> u32 {
        self.max_output_tokens.map_or(own, |cap| own.min(cap))
    }

    /// The output cap of an extractor call for `chunks` chunks.
    pub fn extract_cap(&self, chunks: usize) -> u32 {
        crate::extract::reply_cap(self.output_cap(self.extract_max_tokens), chunks)
    }

    /// The output cap of a report or reduction call.
    pub fn synthesis_cap(&self) -> u32 {
        self.output_cap(self.synthesis_max_tokens)
    }

    /// Chunks per extractor call within [`Self::window_tokens`]: `planned`, or fewer when a
    /// batch of chunks of `largest_chunk_bytes` each (framing included), with the
    /// `fixed_bytes` of prompt and question and the batch's reply cap, would not fit; at
    /// least 1 (a single chunk over the window fails on its own, as before).
    pub fn batch_size_within_window(
        &self,
        planned: usize,
        largest_chunk_bytes: u64,
        fixed_bytes: u64,
    ) -> usize {
        let Some(window) = self.window_tokens else {
            return planned;
        };
        let tokens = |bytes: u64| bytes.div_ceil(rlm_llm::ESTIMATE_BYTES_PER_TOKEN);
        (1..=planned.max(1))
            .rev()
            .find(|&size| {
                let input = tokens(fixed_bytes + largest_chunk_bytes * size as u64);
                input + u64::from(self.extract_cap(size)) <= window
            })
            .unwrap_or(1)
    }

    /// Characters of findings one synthesis call takes: [`Self::synthesis_input_chars`],
    /// fewer when [`Self::window_tokens`] cannot hold them with the `fixed_bytes` of prompt
    /// and question and the report's output cap (more reduction rounds instead of a refused
    /// request); at least 1.
    pub fn synthesis_input_within_window(&self, fixed_bytes: u64) -> usize {
        let Some(window) = self.window_tokens else {
            return self.synthesis_input_chars;
        };
        let room = window
            .saturating_sub(u64::from(self.synthesis_cap()))
            .saturating_mul(rlm_llm::ESTIMATE_BYTES_PER_TOKEN)
            .saturating_sub(fixed_bytes);
        // Characters are at least a byte each, so bytes of room bound the characters.
        let room = usize::try_from(room).unwrap_or(usize::MAX);
        self.synthesis_input_chars.min(room).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threshold_admits_by_relevance_order() {
        assert!(!Threshold::Low.admits(Relevance::None));
        assert!(Threshold::Low.admits(Relevance::Low));
        assert!(!Threshold::Medium.admits(Relevance::Low));
        assert!(Threshold::Medium.admits(Relevance::High));
        assert!(!Threshold::High.admits(Relevance::Medium));
    }

    #[test]
    fn batches_and_the_synthesis_input_fit_a_known_window() {
        let mut options = QueryOptions::new("m", "s");
        options.max_output_tokens = Some(500);
        // No window: the plan's batch and the configured input stand.
        assert_eq!(options.batch_size_within_window(10, 3_000, 3_000), 10);
        assert_eq!(
            options.synthesis_input_within_window(3_000),
            options.synthesis_input_chars
        );
        // 8,192 tokens: 1,000 prompt tokens, 1,000 per chunk and a 500-token reply: 6 chunks.
        options.window_tokens = Some(8_192);
        assert_eq!(options.batch_size_within_window(10, 3_000, 3_000), 6);
        assert_eq!(options.batch_size_within_window(4, 3_000, 3_000), 4);
        assert_eq!(options.batch_size_within_window(10, 30_000, 3_000), 1);
        let input = options.synthesis_input_within_window(3_000);
        assert_eq!(input, (8_192 - 500) * 3 - 3_000);
        assert!(input < options.synthesis_input_chars);
        options.window_tokens = Some(100);
        assert_eq!(options.synthesis_input_within_window(3_000), 1);
    }

    #[test]
    fn bad_options_are_refused() {
        let ok = QueryOptions::new("m", "s");
        assert!(ok.validate().is_ok());
        let mut bad = ok.clone();
        bad.batch_size = Some(0);
        assert!(
            bad.validate()
                .unwrap_err()
                .to_string()
                .contains("batch size")
        );
        let mut bad = ok.clone();
        bad.max_concurrency = 0;
        assert!(bad.validate().is_err());
        let mut bad = ok.clone();
        bad.max_tool_rounds = MAX_TOOL_ROUNDS + 1;
        assert!(
            bad.validate()
                .unwrap_err()
                .to_string()
                .contains("tool rounds")
        );
        let mut bad = ok;
        bad.budget.max_cost_usd = Some(-1.0);
        assert!(bad.validate().unwrap_err().to_string().contains("-1"));
    }
}
