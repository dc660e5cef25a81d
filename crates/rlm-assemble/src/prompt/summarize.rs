//! History summaries by a model (feature `summarize`), through `rlm-llm`'s client.
//!
//! The older messages go to the model in one call when they fit its window, else in pieces
//! (at message boundaries) whose summaries are then merged, again in pieces if needed. A summary
//! longer than its budget is asked for again shorter once, then cut at a line boundary. Any
//! model failure falls back to the most recent messages that fit, reported in the plan.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rlm_llm::{ChatRequest, LlmClient};

use super::assemble::{HistoryOutcome, PromptAssembler, SummaryBase, remember};
use super::outcome::{BuiltPrompt, ModelCall};
use super::{PromptInputs, piece_limit};
use crate::error::Result;

/// Rounds of merging before giving up: each round at least halves the text unless the window
/// is too small for the summary budget, which this bounds.
const MAX_ROUNDS: usize = 8;

/// One summarizing call as it starts and ends, for a front end to show (`rlm prompt build`
/// prints a line for each: summarizing can take minutes on a local model).
#[derive(Debug, Clone)]
pub enum SummaryProgress {
    /// Call `number` (from 1) was sent; `purpose` is the plan's name for it (`summary`,
    /// `summary-update`, `summary-piece`, `summary-merge`, `summary-shorter`).
    Started {
        number: usize,
        purpose: &'static str,
        input_chars: usize,
    },
    /// It answered.
    Finished {
        number: usize,
        purpose: &'static str,
        output_tokens: u64,
        took: Duration,
    },
    /// It failed (the build goes on without a summary; the plan says why).
    Failed {
        number: usize,
        purpose: &'static str,
        took: Duration,
    },
    /// Before the first call, with [`Summarizer::window_from_server`]: the window the calls are
    /// sized by, and whether the server reported it (else the configured default stands).
    Window { tokens: u64, reported: bool },
}

type ProgressSink = Arc<dyn Fn(&SummaryProgress) + Send + Sync>;

/// The summarizing model and the client that reaches it.
#[derive(Clone)]
pub struct Summarizer {
    client: LlmClient,
    model: String,
    progress: Option<ProgressSink>,
    /// Ask the server for its window before the first call ([`Self::window_from_server`]).
    server_window: bool,
}

impl std::fmt::Debug for Summarizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Summarizer")
            .field("model", &self.model)
            .field("progress", &self.progress.is_some())
            .finish_non_exhaustive()
    }
}

impl Summarizer {
    /// Summaries by `model` (`provider:name`) through `client`.
    pub fn new(client: LlmClient, model: impl Into<String>) -> Self {
        Self {
            client,
            model: model.into(),
            progress: None,
            server_window: false,
        }
    }

    /// These summaries, sized by the window a local server reports (llama.cpp `/props`, asked
    /// through the client) in place of the options' `window_tokens` when it reports one. The
    /// server is asked only when a summary is to be made: a build answered from the cache, or
    /// with nothing to summarize, sends it nothing.
    #[must_use]
    pub fn window_from_server(mut self) -> Self {
        self.server_window = true;
        self
    }

    /// These summaries, telling `sink` as each call starts and ends.
    #[must_use]
    pub fn on_progress(mut self, sink: impl Fn(&SummaryProgress) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(sink));
        self
    }

    fn tell(&self, event: &SummaryProgress) {
        if let Some(sink) = &self.progress {
            sink(event);
        }
    }

    /// The model.
    pub fn model(&self) -> &str {
        &self.model
    }

    async fn call(
        &self,
        system: &str,
        user: String,
        max_tokens: u64,
        purpose: &'static str,
        calls: &mut Vec<ModelCall>,
    ) -> std::result::Result<String, rlm_llm::Error> {
        let request = ChatRequest::new(self.model.clone())
            .system(system)
            .user(user)
            .max_tokens(u32::try_from(max_tokens).unwrap_or(u32::MAX))
            .temperature(0.0);
        let number = calls.len() + 1;
        self.tell(&SummaryProgress::Started {
            number,
            purpose,
            input_chars: request
                .messages
                .iter()
                .map(|m| m.content.len())
                .sum::<usize>()
                + request.system.as_ref().map_or(0, String::len),
        });
        let started = Instant::now();
        let response = match self.client.chat(&request).await {
            Ok(response) => response,
            Err(err) => {
                self.tell(&SummaryProgress::Failed {
                    number,
                    purpose,
                    took: started.elapsed(),
                });
                return Err(err);
            }
        };
        self.tell(&SummaryProgress::Finished {
            number,
            purpose,
            output_tokens: response.usage.output_tokens,
            took: started.elapsed(),
        });
        calls.push(ModelCall {
            model: self.model.clone(),
            purpose,
            input_tokens: response.usage.input_tokens,
            output_tokens: response.usage.output_tokens,
            cost_usd: response.cost_usd,
        });
        Ok(response.text)
    }
}

/// Why summarizing failed (the calls made before the failure stay in the plan: they cost).
struct Failed {
    reason: String,
}

impl PromptAssembler {
    /// Builds the prompt, asking `summarizer` for a summary when the history is above the
    /// trigger and none is cached. Without a summarizer this is
    /// [`PromptAssembler::build_offline`]. Model failures do not fail the build: the plan says
    /// what happened and the most recent messages that fit are used.
    ///
    /// Cancel safety: dropping the future drops the model call in flight; nothing is written
    /// to the cache before a summary is complete.
    pub async fn build(
        &mut self,
        inputs: &PromptInputs,
        summarizer: Option<&Summarizer>,
    ) -> Result<BuiltPrompt> {
        let Some(summarizer) = summarizer else {
            return self.build_offline(inputs);
        };
        if self.options.history.model.as_deref() != Some(summarizer.model()) {
            self.options.history.model = Some(summarizer.model().to_owned());
        }
        let mut frame = self.frame(inputs)?;
        let Some((older, budget)) = frame.older(inputs) else {
            return Ok(self.finish(inputs, frame, HistoryOutcome::Verbatim, Vec::new()));
        };
        let key = self.summary_key(older, budget).unwrap_or_default();
        let cache_dir = self.options.cache_dir.as_deref();
        let cached = if self.options.history.refresh {
            None
        } else {
            super::summary_cache::read(cache_dir, &key)
        };
        if let Some(cached) = cached {
            let outcome = HistoryOutcome::Summary {
                summary: cached.summary,
                key,
                cache_hit: true,
                note: None,
            };
            return Ok(self.finish(inputs, frame, outcome, Vec::new()));
        }
        let tail_start = older.len();
        // A history that grew since its older part was summarized carries that summary on:
        // the summary stands in for the messages it covers, and only the ones after it are
        // sent. `refresh` summarizes everything again.
        let base = if self.options.history.refresh {
            None
        } else {
            self.summary_base(older, budget)
        };
        let from = base.as_ref().map_or(0, |base| base.messages);
        let mut rendered = Vec::with_capacity(tail_start - from + 1);
        let mut tokens = Vec::with_capacity(tail_start - from + 1);
        if let Some(base) = &base {
            rendered.push(base.block.clone());
            tokens.push(base.tokens);
        }
        rendered.extend_from_slice(&frame.rendered[from..tail_start]);
        tokens.extend_from_slice(&frame.message_tokens[from..tail_start]);
        if summarizer.server_window {
            self.ask_window(summarizer).await;
        }
        let mut calls = Vec::new();
        let summarized = self
            .summarize(
                summarizer,
                &rendered,
                &tokens,
                budget,
                base.as_ref(),
                &mut calls,
            )
            .await
            .and_then(|(summary, note)| {
                // Refused before it is cached: a cached loop would come back on every build.
                match super::degenerate::problem(&summary, &self.options.texts.summarize) {
                    Some(reason) => Err(Failed { reason }),
                    None => Ok((summary, note)),
                }
            });
        let outcome = match summarized {
            Ok((summary, note)) => {
                if let Some(warning) = remember(&self.options, &key, &summary, tail_start) {
                    frame.warnings.push(warning);
                }
                let carried = base.as_ref().map(|base| {
                    format!(
                        "carried on from the cached summary of the first {} messages with the {} after them",
                        base.messages,
                        tail_start - base.messages
                    )
                });
                let note = match (carried, note) {
                    (Some(carried), Some(note)) => Some(format!("{carried}; {note}")),
                    (carried, note) => carried.or(note),
                };
                HistoryOutcome::Summary {
                    summary,
                    key,
                    cache_hit: false,
                    note,
                }
            }
            Err(failed) => HistoryOutcome::Fallback {
                reason: failed.reason,
                key: Some(key),
                dry_run: false,
                base,
            },
        };
        Ok(self.finish(inputs, frame, outcome, calls))
    }

    /// Sizes the calls by the window the summarizing model's server reports, if it reports one,
    /// and says which window stands.
    async fn ask_window(&mut self, summarizer: &Summarizer) {
        let reported = summarizer
            .client
            .server_props(&summarizer.model)
            .await
            .and_then(|props| props.context_window);
        if let Some(window) = reported {
            self.options.history.window_tokens = window;
        }
        summarizer.tell(&SummaryProgress::Window {
            tokens: self.options.history.window_tokens,
            reported: reported.is_some(),
        });
    }

    /// The summary of `rendered` messages in at most `budget` tokens, and a note when it had to
    /// be shortened. With `base`, the first of them is that cached summary of the messages
    /// before the others.
    async fn summarize(
        &mut self,
        summarizer: &Summarizer,
        rendered: &[String],
        tokens: &[u64],
        budget: u64,
        base: Option<&SummaryBase>,
        calls: &mut Vec<ModelCall>,
    ) -> std::result::Result<(String, Option<String>), Failed> {
        let system = self.options.texts.summarize.clone();
        let prompt_tokens = self.cache.count(&[&system])[0];
        let limit = piece_limit(self.options.history.window_tokens, prompt_tokens, budget);
        let model_failed = |error: rlm_llm::Error| Failed {
            reason: format!("the summarizing model failed: {error}"),
        };
        let mut pieces = pack(rendered, tokens, limit);
        let mut merging = false;
        let mut summary = None;
        for _ in 0..MAX_ROUNDS {
            if pieces.len() == 1 {
                let (user, purpose) = match (merging, base) {
                    (true, _) => (
                        request_text(
                            "summaries of consecutive parts of one conversation",
                            &pieces[0],
                            budget,
                        ),
                        "summary-merge",
                    ),
                    (false, Some(base)) => (
                        carry_on_text(base.messages, &pieces[0], budget),
                        "summary-update",
                    ),
                    (false, None) => (
                        request_text("messages of a conversation", &pieces[0], budget),
                        "summary",
                    ),
                };
                let text = summarizer
                    .call(&system, user, budget, purpose, calls)
                    .await
                    .map_err(model_failed)?;
                summary = Some(text);
                break;
            }
            let mut parts = Vec::with_capacity(pieces.len());
            let count = pieces.len();
            for (index, piece) in pieces.iter().enumerate() {
                let what = if merging {
                    "summaries of consecutive parts of one conversation"
                } else {
                    "messages of a conversation"
                };
                let user = format!(
                    "Part {} of {count}.\n{}",
                    index + 1,
                    request_text(what, piece, budget)
                );
                let text = summarizer
                    .call(&system, user, budget, "summary-piece", calls)
                    .await
                    .map_err(model_failed)?;
                parts.push(format!("### Part {}\n{}\n\n", index + 1, text.trim_end()));
            }
            let part_texts: Vec<&str> = parts.iter().map(String::as_str).collect();
            let part_tokens = self.cache.count(&part_texts);
            pieces = pack(&parts, &part_tokens, limit);
            merging = true;
        }
        let Some(summary) = summary else {
            return Err(Failed {
                reason: format!(
                    "the history did not shrink to one call within {MAX_ROUNDS} rounds \
                     (window {} tokens)",
                    self.options.history.window_tokens
                ),
            });
        };
        self.fit_summary(summarizer, summary, budget, calls)
            .await
            .map_err(model_failed)
    }

    /// Makes `summary` fit `budget`: one request for a shorter version, then a cut at a line
    /// boundary.
    async fn fit_summary(
        &mut self,
        summarizer: &Summarizer,
        summary: String,
        budget: u64,
        calls: &mut Vec<ModelCall>,
    ) -> std::result::Result<(String, Option<String>), rlm_llm::Error> {
        let tokens = self.cache.count(&[&summary])[0];
        if tokens <= budget {
            return Ok((summary, None));
        }
        let system = self.options.texts.summarize.clone();
        let user = format!(
            "This summary is {tokens} tokens long. Rewrite it in at most {budget} tokens, \
             keeping its headings and the facts that matter most for continuing the work.\n\n\
             {summary}"
        );
        let shorter = summarizer
            .call(&system, user, budget, "summary-shorter", calls)
            .await?;
        let shorter_tokens = self.cache.count(&[&shorter])[0];
        if shorter_tokens <= budget {
            let note = format!("summary of {tokens} tokens asked again shorter");
            return Ok((shorter, Some(note)));
        }
        let mut lines: Vec<&str> = shorter.lines().collect();
        while !lines.is_empty() && self.cache.tokenizer().count(&lines.join("\n")) as u64 > budget {
            lines.pop();
        }
        let note = format!(
            "summary still {shorter_tokens} tokens after asking again; cut to its first {} lines",
            lines.len()
        );
        Ok((lines.join("\n"), Some(note)))
    }
}

fn request_text(what: &str, text: &str, budget: u64) -> String {
    format!("Below are {what}, oldest first. Summarize them in at most {budget} tokens.\n\n{text}")
}

/// The request that carries a summary on: `text` starts with the summary of the first
/// `messages` messages, then the messages that came after them.
fn carry_on_text(messages: usize, text: &str, budget: u64) -> String {
    format!(
        "Below is a summary of the first {messages} messages of a conversation, then the \
         messages that followed them, oldest first. Write one summary of the whole conversation \
         in at most {budget} tokens: keep what the earlier summary records that still holds, \
         and bring in what the later messages add or change.\n\n{text}"
    )
}

/// Groups rendered texts into pieces of at most `limit` tokens, at text boundaries; a text
/// larger than `limit` is split into equal character runs.
fn pack(texts: &[String], tokens: &[u64], limit: u64) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut current = String::new();
    let mut used = 0;
    for (text, &count) in texts.iter().zip(tokens) {
        if count > limit {
            if !current.is_empty() {
                pieces.push(std::mem::take(&mut current));
                used = 0;
            }
            // A quarter of slack for the uneven spread of tokens over characters.
            let parts = (count + count / 4).div_ceil(limit).max(2) as usize;
            pieces.extend(split_chars(text, parts));
            continue;
        }
        if used + count > limit && !current.is_empty() {
            pieces.push(std::mem::take(&mut current));
            used = 0;
        }
        current.push_str(text);
        used += count;
    }
    if !current.is_empty() || pieces.is_empty() {
        pieces.push(current);
    }
    pieces
}

fn split_chars(text: &str, parts: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let size = chars.len().div_ceil(parts).max(1);
    chars.chunks(size).map(|run| run.iter().collect()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_keeps_boundaries_and_splits_giants() {
        let texts: Vec<String> = ["a", "b", "c", "dddddddd"].map(String::from).to_vec();
        let pieces = pack(&texts, &[4, 4, 4, 40], 10);
        assert_eq!(pieces[0], "ab");
        assert_eq!(pieces[1], "c");
        // 40 tokens (+25% slack) over a limit of 10: five runs of at most two characters.
        assert_eq!(pieces[2..].concat(), "dddddddd");
        assert!(pieces[2..].iter().all(|piece| piece.len() <= 2));
    }
}
