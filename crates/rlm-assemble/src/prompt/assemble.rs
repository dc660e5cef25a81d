//! [`PromptAssembler`]: sections, budgets and the final messages.

use std::path::PathBuf;

use sha2::{Digest as _, Sha256};

use super::context;
use super::history::{self, HISTORY_HEADING, HistorySplit};
use super::outcome::{
    BuiltPrompt, HistoryAction, HistoryReport, ModelCall, PLAN_VERSION, PromptPlan, SectionPlan,
    SummaryEstimate,
};
use super::summary_cache::{self, CachedSummary};
use super::{ChatMessage, PromptInputs, PromptOptions};
use crate::cache::TokenCache;
use crate::error::{Error, Result};

/// Builds one prompt per turn. Keeps token counts across builds (and on disk when the options
/// name a cache directory), so an agent calling it every turn only counts what is new.
#[derive(Debug)]
pub struct PromptAssembler {
    pub(crate) options: PromptOptions,
    pub(crate) cache: TokenCache,
}

/// The parts of a build that do not depend on how the history is shortened.
#[derive(Debug)]
pub(crate) struct Frame {
    pub warnings: Vec<String>,
    pub system: String,
    pub agent: String,
    pub system_tokens: u64,
    pub agent_tokens: u64,
    /// Tokens the history may take.
    pub history_budget: u64,
    pub trigger: u64,
    pub rendered: Vec<String>,
    pub message_tokens: Vec<u64>,
    pub heading_tokens: u64,
    pub split: HistorySplit,
}

impl Frame {
    /// The older messages a summary replaces, if the history needs one.
    pub fn older<'a>(&self, inputs: &'a PromptInputs) -> Option<(&'a [ChatMessage], u64)> {
        match self.split {
            HistorySplit::Summarize {
                tail_start,
                summary_budget,
            } => Some((&inputs.history[..tail_start], summary_budget)),
            HistorySplit::Verbatim => None,
        }
    }
}

/// How the history ends up in the prompt.
#[derive(Debug)]
pub(crate) enum HistoryOutcome {
    Verbatim,
    Summary {
        summary: String,
        key: String,
        cache_hit: bool,
        note: Option<String>,
    },
    /// Most recent messages that fit; `dry_run` marks a plan that would summarize. `base` is
    /// the cached summary a summary would be carried on from.
    Fallback {
        reason: String,
        key: Option<String>,
        dry_run: bool,
        base: Option<SummaryBase>,
    },
}

/// A cached summary of the first `messages` of the older messages, which a summary of them
/// all carries on from: it is sent in place of those messages.
#[derive(Debug, Clone)]
pub(crate) struct SummaryBase {
    /// Messages it replaces, from the first.
    pub messages: usize,
    /// The summary as a block of the conversation ([`history::render_summary`]).
    pub block: String,
    /// Tokens of `block`.
    pub tokens: u64,
}

impl PromptAssembler {
    /// An assembler; fails on a zero budget or a percentage outside 1–100.
    pub fn new(options: PromptOptions) -> Result<Self> {
        let budgets = options.budgets;
        for (name, value) in [
            ("system_prompt_budget", budgets.system),
            ("agent_prompt_budget", budgets.agent),
            ("chat_history_budget", budgets.history),
            ("other_context_budget", budgets.other),
            ("total budget", budgets.total()),
        ] {
            if value == 0 {
                return Err(Error::Invalid(format!("{name} must be greater than 0")));
            }
        }
        for (name, value) in [
            ("threshold_percentage", options.history.threshold_percentage),
            ("recent share", options.history.recent_share_percentage),
        ] {
            if !(1..=100).contains(&value) {
                return Err(Error::Invalid(format!(
                    "{name} must be between 1 and 100, not {value}"
                )));
            }
        }
        let token_dir = options
            .cache_dir
            .as_ref()
            .map_or_else(PathBuf::new, |dir| dir.join("tokens"));
        let cache = TokenCache::load(token_dir, options.tokenizer);
        Ok(Self { options, cache })
    }

    /// The options in use.
    pub fn options(&self) -> &PromptOptions {
        &self.options
    }

    /// Writes the token counts used so far to the cache directory (no-op without one).
    pub fn save_cache(&self) -> Result<()> {
        if self.options.cache_dir.is_some() {
            self.cache.save()?;
        }
        Ok(())
    }

    /// Builds without calling a model: a history above the trigger uses a cached summary when
    /// there is one, else the most recent messages that fit (reported in the plan).
    pub fn build_offline(&mut self, inputs: &PromptInputs) -> Result<BuiltPrompt> {
        self.build_without_model(inputs, false)
    }

    /// A dry run: like [`PromptAssembler::build_offline`], but the plan says what would be
    /// summarized and how many tokens that would take.
    pub fn plan(&mut self, inputs: &PromptInputs) -> Result<BuiltPrompt> {
        self.build_without_model(inputs, true)
    }

    fn build_without_model(&mut self, inputs: &PromptInputs, dry_run: bool) -> Result<BuiltPrompt> {
        let frame = self.frame(inputs)?;
        let outcome = match frame.older(inputs) {
            None => HistoryOutcome::Verbatim,
            Some((older, budget)) => {
                let key = self.summary_key(older, budget);
                match key
                    .as_deref()
                    .and_then(|key| summary_cache::read(self.options.cache_dir.as_deref(), key))
                {
                    Some(cached) => HistoryOutcome::Summary {
                        summary: cached.summary,
                        key: key.unwrap_or_default(),
                        cache_hit: true,
                        note: None,
                    },
                    None => HistoryOutcome::Fallback {
                        base: self.summary_base(older, budget),
                        reason: if dry_run {
                            "dry run: the older messages would be summarized".into()
                        } else if self.options.history.model.is_none() {
                            "no summarizing model is configured".into()
                        } else {
                            "no summary is cached and no model was called".into()
                        },
                        key,
                        dry_run,
                    },
                }
            }
        };
        Ok(self.finish(inputs, frame, outcome, Vec::new()))
    }

    /// The cache key of a summary of `older` (None without a model).
    pub(crate) fn summary_key(&self, older: &[ChatMessage], budget: u64) -> Option<String> {
        let model = self.options.history.model.as_deref()?;
        let prompt = &self.options.texts.summarize;
        Some(summary_cache::summary_key(model, prompt, budget, older))
    }

    /// The longest cached summary of a first part of `older` (not all of it), to carry on
    /// from; `None` without a model or a cache directory, or when there is none.
    pub(crate) fn summary_base(
        &mut self,
        older: &[ChatMessage],
        budget: u64,
    ) -> Option<SummaryBase> {
        let model = self.options.history.model.as_deref()?;
        let (messages, cached) = summary_cache::longest_cached_prefix(
            self.options.cache_dir.as_deref(),
            model,
            &self.options.texts.summarize,
            budget,
            older,
        )?;
        let block = history::render_summary(&cached.summary, messages);
        let tokens = self.cache.count(&[&block])[0];
        Some(SummaryBase {
            messages,
            block,
            tokens,
        })
    }

    /// Renders and counts the fixed sections and the messages, checks the budgets and
    /// decides whether the history needs a summary.
    pub(crate) fn frame(&mut self, inputs: &PromptInputs) -> Result<Frame> {
        let budgets = self.options.budgets;
        let total = budgets.total();
        let texts = &self.options.texts;
        let system = format!("{}\n\n", texts.system.trim_end());
        let agent = format!(
            "## Current stage: {}\n{}\n\n",
            inputs.stage.name(),
            texts.stage(inputs.stage).trim_end()
        );
        let counts = self.cache.count(&[&system, &agent, HISTORY_HEADING]);
        let (system_tokens, agent_tokens, heading_tokens) = (counts[0], counts[1], counts[2]);
        check("system prompt", system_tokens, "its budget", budgets.system)?;
        check("system prompt", system_tokens, "the total budget", total)?;
        check("stage prompt", agent_tokens, "its budget", budgets.agent)?;
        let left = total - system_tokens;
        check("stage prompt", agent_tokens, "the total budget left", left)?;
        let history_budget = budgets.history.min(left - agent_tokens);
        let rendered: Vec<String> = inputs.history.iter().map(history::render_message).collect();
        let texts: Vec<&str> = rendered.iter().map(String::as_str).collect();
        let message_tokens = self.cache.count(&texts);
        let options = &self.options.history;
        let split = history::split(
            &message_tokens,
            heading_tokens,
            history_budget,
            options.threshold_percentage,
            options.recent_share_percentage,
        );
        Ok(Frame {
            warnings: Vec::new(),
            system,
            agent,
            system_tokens,
            agent_tokens,
            history_budget,
            trigger: history_budget * u64::from(options.threshold_percentage) / 100,
            rendered,
            message_tokens,
            heading_tokens,
            split,
        })
    }

    /// Puts the sections together and writes the plan.
    pub(crate) fn finish(
        &mut self,
        inputs: &PromptInputs,
        mut frame: Frame,
        outcome: HistoryOutcome,
        calls: Vec<ModelCall>,
    ) -> BuiltPrompt {
        let (history_text, report) = self.history_section(&mut frame, outcome);
        let history_tokens = if history_text.is_empty() {
            0
        } else {
            self.cache.count(&[&history_text])[0]
        };
        let total = self.options.budgets.total();
        let other_budget =
            self.options.budgets.other.min(
                total.saturating_sub(frame.system_tokens + frame.agent_tokens + history_tokens),
            );
        let (context_text, items) = context::fit(
            &inputs.items,
            inputs.stage,
            &self.options.priorities,
            other_budget,
            &mut self.cache,
        );
        let context_tokens = if context_text.is_empty() {
            0
        } else {
            self.cache.count(&[&context_text])[0]
        };
        let messages = vec![
            ChatMessage::new("system", format!("{}{}", frame.system, frame.agent)),
            ChatMessage::new("user", format!("{history_text}{context_text}")),
        ];
        let budgets = self.options.budgets;
        let sections = vec![
            SectionPlan {
                name: "system",
                budget: budgets.system,
                tokens: frame.system_tokens,
            },
            SectionPlan {
                name: "agent",
                budget: budgets.agent,
                tokens: frame.agent_tokens,
            },
            SectionPlan {
                name: "history",
                budget: frame.history_budget,
                tokens: history_tokens,
            },
            SectionPlan {
                name: "context",
                budget: other_budget,
                tokens: context_tokens,
            },
        ];
        let json = serde_json::to_string(&messages).unwrap_or_default();
        let digest = format!("sha256:{}", hex::encode(Sha256::digest(json.as_bytes())));
        let cost_usd = calls
            .iter()
            .try_fold(0.0, |sum, call| call.cost_usd.map(|cost| sum + cost))
            .filter(|_| !calls.is_empty());
        let plan = PromptPlan {
            version: PLAN_VERSION,
            stage: inputs.stage,
            tokenizer: self.options.tokenizer.name(),
            budget_total: total,
            tokens_total: sections.iter().map(|section| section.tokens).sum(),
            sections,
            history: report,
            items,
            model_calls: calls,
            cost_usd,
            warnings: frame.warnings,
            digest,
        };
        BuiltPrompt { messages, plan }
    }

    fn history_section(
        &mut self,
        frame: &mut Frame,
        outcome: HistoryOutcome,
    ) -> (String, HistoryReport) {
        let count = frame.rendered.len();
        let mut report = HistoryReport {
            action: HistoryAction::Verbatim,
            messages: count,
            tokens: frame.heading_tokens + frame.message_tokens.iter().sum::<u64>(),
            trigger_tokens: frame.trigger,
            verbatim_messages: count,
            summarized_messages: 0,
            dropped_messages: 0,
            summary_tokens: None,
            cache_key: None,
            cache_hit: false,
            estimate: None,
            note: None,
        };
        if count == 0 {
            report.action = HistoryAction::Empty;
            report.tokens = 0;
            return (String::new(), report);
        }
        let mut text = HISTORY_HEADING.to_owned();
        let start = match outcome {
            HistoryOutcome::Verbatim => 0,
            HistoryOutcome::Summary {
                summary,
                key,
                cache_hit,
                note,
            } => {
                let tail_start = match frame.split {
                    HistorySplit::Summarize { tail_start, .. } => tail_start,
                    HistorySplit::Verbatim => 0,
                };
                report.action = HistoryAction::Summarized;
                report.summarized_messages = tail_start;
                report.summary_tokens = Some(self.cache.count(&[&summary])[0]);
                report.cache_key = Some(key);
                report.cache_hit = cache_hit;
                report.note = note;
                text.push_str(&history::render_summary(&summary, tail_start));
                tail_start
            }
            HistoryOutcome::Fallback {
                reason,
                key,
                dry_run,
                base,
            } => {
                let start = history::recent_that_fit(
                    &frame.message_tokens,
                    frame.heading_tokens,
                    frame.history_budget,
                );
                report.dropped_messages = start;
                report.cache_key = key;
                report.estimate = self.estimate(frame, base.as_ref());
                if dry_run {
                    // What a build would do: summarize the messages before the split's tail
                    // (the prompt shown meanwhile keeps the most recent that fit).
                    report.action = HistoryAction::WouldSummarize;
                    if let HistorySplit::Summarize { tail_start, .. } = frame.split {
                        report.summarized_messages = tail_start;
                    }
                    report.note = Some(reason);
                } else {
                    report.action = HistoryAction::Fallback;
                    let message = format!(
                        "history not summarized ({reason}): kept the {} most recent of {count} messages",
                        count - start
                    );
                    frame.warnings.push(format!("warning: {message}"));
                    report.note = Some(message);
                }
                start
            }
        };
        report.verbatim_messages = count - start;
        for message in &frame.rendered[start..] {
            text.push_str(message);
        }
        (text, report)
    }

    /// What summarizing the older messages would take: all of them, or with `base` the
    /// cached summary and the messages after it.
    fn estimate(&mut self, frame: &Frame, base: Option<&SummaryBase>) -> Option<SummaryEstimate> {
        let HistorySplit::Summarize {
            tail_start,
            summary_budget,
        } = frame.split
        else {
            return None;
        };
        let prompt_tokens = self.cache.count(&[&self.options.texts.summarize])[0];
        let older: u64 = match base {
            Some(base) => {
                base.tokens
                    + frame.message_tokens[base.messages..tail_start]
                        .iter()
                        .sum::<u64>()
            }
            None => frame.message_tokens[..tail_start].iter().sum(),
        };
        let limit = super::piece_limit(
            self.options.history.window_tokens,
            prompt_tokens,
            summary_budget,
        );
        let pieces = older.div_ceil(limit).max(1);
        let merges = if pieces > 1 { 1 } else { 0 };
        Some(SummaryEstimate {
            calls: pieces + merges,
            input_tokens: older
                + (pieces + merges) * prompt_tokens
                + merges * pieces * summary_budget,
            max_output_tokens: (pieces + merges) * summary_budget,
            cost_usd: None,
        })
    }
}

/// Fails when a fixed section needs more than `budget`.
fn check(section: &'static str, needed: u64, what: &'static str, budget: u64) -> Result<()> {
    if needed > budget {
        return Err(Error::SectionTooLarge {
            section,
            needed,
            what,
            budget,
        });
    }
    Ok(())
}

/// Caches a summary; a failure only costs the next build a model call, so it is a warning.
#[cfg_attr(
    not(feature = "summarize"),
    expect(dead_code, reason = "used by the summarizer")
)]
pub(crate) fn remember(
    options: &PromptOptions,
    key: &str,
    summary: &str,
    messages: usize,
) -> Option<String> {
    let dir = options.cache_dir.as_deref()?;
    let entry = CachedSummary {
        summary: summary.to_owned(),
        messages,
    };
    summary_cache::write(dir, key, &entry)
        .err()
        .map(|error| format!("warning: could not cache the summary: {error}"))
}
