//! What a build returns: the messages and the plan (`promptplan.json`).

use serde::Serialize;

use super::context::PlannedItem;
use super::{ChatMessage, Stage};

/// Version of the plan's JSON shape.
pub const PLAN_VERSION: u32 = 1;

/// A built prompt.
#[derive(Debug, Clone, Serialize)]
pub struct BuiltPrompt {
    /// A system message (system and stage sections) and a user message (conversation and
    /// context).
    pub messages: Vec<ChatMessage>,
    /// What went in and why.
    pub plan: PromptPlan,
}

/// One section against its budget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SectionPlan {
    /// `system`, `agent`, `history` or `context`.
    pub name: &'static str,
    /// The budget it was given (its own, or less when the total ran short).
    pub budget: u64,
    /// Tokens of its text.
    pub tokens: u64,
}

/// What happened to the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HistoryAction {
    /// No history given.
    Empty,
    /// All messages verbatim.
    Verbatim,
    /// Older messages summarized, recent ones verbatim.
    Summarized,
    /// Summarizing was needed but not done: only the most recent messages that fit are in.
    Fallback,
    /// Dry run: the history would be summarized.
    WouldSummarize,
}

/// Cost estimate of a summary not yet made.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummaryEstimate {
    /// Calls needed (more than one when the input exceeds the model's window).
    pub calls: u64,
    /// Input tokens over all calls (prompt included).
    pub input_tokens: u64,
    /// Output tokens at most over all calls.
    pub max_output_tokens: u64,
    /// What that would cost in US dollars, when the caller knows the model's price.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// The conversation's line in the plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistoryReport {
    /// What was done.
    pub action: HistoryAction,
    /// Messages given.
    pub messages: usize,
    /// Tokens of all messages rendered verbatim.
    pub tokens: u64,
    /// Above this many tokens the history is summarized.
    pub trigger_tokens: u64,
    /// Messages in the prompt verbatim (the most recent ones).
    pub verbatim_messages: usize,
    /// Older messages replaced by the summary (for `would-summarize`: the ones a build with
    /// a summarizing model would summarize).
    pub summarized_messages: usize,
    /// Older messages left out (fallback).
    pub dropped_messages: usize,
    /// Tokens of the summary text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary_tokens: Option<u64>,
    /// `sha256:` key of the summary in the cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_key: Option<String>,
    /// Whether the summary came from the cache.
    pub cache_hit: bool,
    /// What a summary would cost (dry run or fallback).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimate: Option<SummaryEstimate>,
    /// Why a fallback happened, or how the summary was made to fit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One model call made for this build.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelCall {
    /// The model as requested.
    pub model: String,
    /// `summary`, `summary-update` (a cached summary carried on), `summary-piece`,
    /// `summary-merge` or `summary-shorter`.
    pub purpose: &'static str,
    /// Input tokens the provider reported.
    pub input_tokens: u64,
    /// Output tokens the provider reported.
    pub output_tokens: u64,
    /// Cost in US dollars when the price is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// The plan (`promptplan.json`).
#[derive(Debug, Clone, Serialize)]
pub struct PromptPlan {
    /// Shape version.
    pub version: u32,
    /// The stage used.
    pub stage: Stage,
    /// Tokenizer used for counts.
    pub tokenizer: &'static str,
    /// The total budget.
    pub budget_total: u64,
    /// Tokens of all sections (equal to counting the messages' texts).
    pub tokens_total: u64,
    /// Each section in prompt order.
    pub sections: Vec<SectionPlan>,
    /// The conversation.
    pub history: HistoryReport,
    /// The material, in priority order.
    pub items: Vec<PlannedItem>,
    /// Model calls made by this build (none when the summary was cached).
    pub model_calls: Vec<ModelCall>,
    /// Their cost; `None` when a price was unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Warnings (unknown stage, fallback, ...), also for stderr.
    pub warnings: Vec<String>,
    /// `sha256:` of the messages as JSON.
    pub digest: String,
}
