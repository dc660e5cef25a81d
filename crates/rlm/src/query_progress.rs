//! Progress of `rlm query` on stderr: the plan, the selection, the estimate, batches done with
//! findings, tokens, cost and failures, and the synthesis.

use std::io::Write as _;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rlm_engine::group_digits;
use rlm_query::{QueryEvent, QueryEvents};

use crate::output::{neutralize, usd};

/// Batch progress is printed at most this often (and always for the last batch).
const BATCH_PRINT_INTERVAL: Duration = Duration::from_millis(500);

/// Prints query events to stderr.
#[derive(Debug)]
pub struct QueryProgress {
    last_print: Mutex<Option<Instant>>,
}

impl QueryProgress {
    pub fn new() -> Self {
        Self {
            last_print: Mutex::new(None),
        }
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
                    group_digits(*tokens as usize)
                ));
            }
            QueryEvent::BatchDone {
                done,
                total,
                findings,
                failed_chunks,
                tokens,
                cost_usd,
            } => {
                let mut last = self
                    .last_print
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let due = last.is_none_or(|at| at.elapsed() >= BATCH_PRINT_INTERVAL);
                if !(due || done == total) {
                    return;
                }
                *last = Some(Instant::now());
                let failed = if *failed_chunks > 0 {
                    format!(" · {failed_chunks} chunks failed")
                } else {
                    String::new()
                };
                self.line(&format!(
                    "batches {done}/{total} · {findings} findings{failed} · {} tokens · {}",
                    group_digits(*tokens as usize),
                    usd(*cost_usd)
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
