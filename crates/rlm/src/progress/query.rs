//! Progress of `rlm query` on stderr: the plan, the selection, the time limit, the estimate,
//! batches sent and done with calls in flight, re-asks and splits, findings, tokens, cost and
//! failures, and the synthesis.

use std::io::Write as _;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rlm_context::thousands;
use rlm_query::{QueryEvent, QueryEvents};

use crate::output::{neutralize, usd};

/// Batch progress is printed at most this often (and always for the last batch).
const BATCH_PRINT_INTERVAL: Duration = Duration::from_millis(500);
/// Characters of a rejected reply's reason shown on a re-ask or split line.
const REASON_CHARS: usize = 160;

/// Prints query events to stderr.
#[derive(Debug)]
pub struct QueryProgress {
    last_print: Mutex<Option<Instant>>,
    /// When extraction began (the estimate), for the time left after each batch.
    extracting_since: Mutex<Option<Instant>>,
}

impl QueryProgress {
    pub fn new() -> Self {
        Self {
            last_print: Mutex::new(None),
            extracting_since: Mutex::new(None),
        }
    }

    /// ` · about 1m 20s left` after `done` of `total` batches, once it means something.
    fn time_left(&self, done: usize, total: usize) -> String {
        let since = *self
            .extracting_since
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        since
            .and_then(|since| {
                super::pace::time_left(
                    done as u64,
                    since.elapsed(),
                    total.saturating_sub(done) as u64,
                )
            })
            .unwrap_or_default()
    }

    /// Whether a throttled line is due (always for `last`).
    fn due(&self, last: bool) -> bool {
        let mut at = self
            .last_print
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let due = last || at.is_none_or(|at| at.elapsed() >= BATCH_PRINT_INTERVAL);
        if due {
            *at = Some(Instant::now());
        }
        due
    }

    fn line(&self, text: &str) {
        // A batch's error or the report may quote a key.
        let text = rlm_llm::secrets::mask(text);
        let mut err = anstream::stderr().lock();
        let _ = writeln!(err, "{}", neutralize(&text));
    }
}

impl QueryEvents for QueryProgress {
    fn event(&self, event: &QueryEvent<'_>) {
        match event {
            QueryEvent::Planned { .. }
            | QueryEvent::StructuredOutput { .. }
            | QueryEvent::Selected { .. }
            | QueryEvent::Estimate { .. }
            | QueryEvent::TimeLimit { .. } => self.planning(event),
            _ => self.extracting(event),
        }
    }
}

impl QueryProgress {
    /// Before extraction: the plan, the selection, the estimate, the time limit.
    fn planning(&self, event: &QueryEvent<'_>) {
        match event {
            QueryEvent::Planned {
                plan,
                source,
                fixed,
            } => {
                let fixed = if fixed.is_empty() {
                    String::new()
                } else {
                    format!(" · set by you: {}", fixed.join(", "))
                };
                self.line(&format!(
                    "plan: {} · {} · top {} · batches of {}{fixed}",
                    source.describe(),
                    plan.queries
                        .iter()
                        .map(|query| format!("{query:?}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    plan.top_k,
                    plan.batch_size,
                ));
            }
            QueryEvent::StructuredOutput { plan, extraction } => {
                let constrained = match (plan, extraction) {
                    (true, true) => "plan and extractor replies",
                    (true, false) => "the plan reply",
                    (false, true) => "extractor replies",
                    (false, false) => return,
                };
                self.line(&format!(
                    "structured output: {constrained} constrained to their JSON schema by the server"
                ));
            }
            QueryEvent::Selected { selection, batches } => {
                let how = selection
                    .mode
                    .map_or("every chunk of the selection".to_owned(), |mode| {
                        format!("{mode} search")
                    });
                self.line(&format!(
                    "selected {} chunks ({how}) → {batches} batches",
                    selection.chunks.len()
                ));
                for note in &selection.notes {
                    self.line(&format!("note: {note}"));
                }
            }
            QueryEvent::Estimate {
                calls,
                chunks,
                tokens,
                cost_usd,
            } => {
                let cost = cost_usd
                    .map_or("cost unknown (no price for the model)".to_owned(), |cost| {
                        format!("at most {}", usd(cost))
                    });
                self.line(&format!(
                    "extracting: {chunks} chunks in {calls} calls, up to {} tokens, {cost}",
                    thousands(*tokens)
                ));
                *self
                    .extracting_since
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Instant::now());
            }
            QueryEvent::TimeLimit {
                seconds,
                default,
                batches,
            } => {
                let time = Duration::from_secs_f64(*seconds);
                let source = if *default {
                    let noun = if *batches == 1 { "batch" } else { "batches" };
                    format!("default for {batches} {noun}; --timeout SECONDS to change")
                } else {
                    "--timeout".to_owned()
                };
                self.line(&format!(
                    "time limit: {} ({source})",
                    super::pace::duration(time)
                ));
            }
            _ => {}
        }
    }

    /// Extraction and the report: batches sent, retried and done, the synthesis, warnings.
    fn extracting(&self, event: &QueryEvent<'_>) {
        match event {
            // The first batch is always shown: on a slow server its answer takes minutes.
            QueryEvent::BatchSent {
                sent,
                total,
                in_flight,
            } if *sent == 1 || self.due(false) => {
                self.line(&format!(
                    "batches sent {sent}/{total} · {in_flight} in flight"
                ));
            }
            QueryEvent::BatchRetry {
                batch,
                split,
                reason,
            } => {
                let reason: String = reason.chars().take(REASON_CHARS).collect();
                let action = if *split {
                    "split in halves"
                } else {
                    "asked again"
                };
                self.line(&format!("batch {batch}: {action} ({reason})"));
            }
            QueryEvent::BatchDone {
                done,
                total,
                findings,
                in_flight,
                failed_chunks,
                tokens,
                cost_usd,
                unpriced_calls,
            } => {
                if !self.due(done == total) {
                    return;
                }
                let failed = if *failed_chunks > 0 {
                    format!(" · {failed_chunks} chunks failed")
                } else {
                    String::new()
                };
                let out = if *in_flight > 0 {
                    format!(" · {in_flight} in flight")
                } else {
                    String::new()
                };
                self.line(&format!(
                    "batches {done}/{total}{out} · {findings} findings{failed} · {} tokens · {}{}",
                    thousands(*tokens),
                    crate::output::cost(*cost_usd, *unpriced_calls),
                    self.time_left(*done, *total)
                ));
            }
            QueryEvent::Synthesizing { chunks, findings } => {
                self.line(&format!(
                    "writing the report from {findings} findings in {chunks} chunks"
                ));
            }
            QueryEvent::Warning { message } => self.line(&format!("warning: {message}")),
            _ => {}
        }
    }
}
