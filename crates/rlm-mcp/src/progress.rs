//! MCP progress notifications for `run` and `query`: when a call carries a `progressToken`, the
//! command's own events (the ones `rlm run` and `rlm query` print on stderr) become
//! `notifications/progress`: one per finished turn of the root run (progress = turns done,
//! total = the turn budget), one per extraction batch of a query (progress = batches done).
//!
//! The events come on the operation's threads and only queue updates; `call.rs` sends them to
//! the client, all of them before the call's result. The errors an operation reports and goes
//! on after are kept for the result (`CallEvents::problems`).

use std::sync::{Arc, Mutex, PoisonError};

use rlm_context::thousands;
use rlm_engine::{Event, EventSink};
use rlm_query::{QueryEvent, QueryEvents};
use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RequestContext};
use rmcp::task_manager::TaskContext;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use rlm_app::text::count;

/// What one notification says.
#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: String,
}

/// Where a call's updates go: the client that asked, under the token it gave; or, for a call
/// run as a task, the task's status message (what `tasks/get` shows while it works).
pub struct Reporter {
    target: Target,
}

enum Target {
    Client {
        token: ProgressToken,
        peer: Peer<RoleServer>,
    },
    Task(TaskContext),
}

impl Reporter {
    /// A reporter for a request that carries a progress token; `None` without one.
    pub fn for_request(context: &RequestContext<RoleServer>) -> Option<Self> {
        let target = Target::Client {
            token: context.meta.get_progress_token()?,
            peer: context.peer.clone(),
        };
        Some(Self { target })
    }

    /// A reporter that keeps a task's status message up to date.
    pub fn for_task(task: TaskContext) -> Self {
        Self {
            target: Target::Task(task),
        }
    }

    pub async fn send(&self, update: Update) {
        match &self.target {
            Target::Client { token, peer } => {
                let mut notification =
                    ProgressNotificationParam::new(token.clone(), update.progress)
                        .with_message(update.message);
                if let Some(total) = update.total {
                    notification = notification.with_total(total);
                }
                // A client that went away misses its progress; the call's end is handled
                // elsewhere.
                let _ = peer.notify_progress(notification).await;
            }
            Target::Task(task) => task.set_status_message(update.message),
        }
    }
}

/// What a call's operation says: run and query progress become updates (when the client
/// asked for them), and the problems it reported are kept in their plain `error:`/`hint:` text.
pub struct CallEvents {
    run: Option<RunProgress>,
    query: Option<QueryProgress>,
    problems: Mutex<Vec<String>>,
}

impl CallEvents {
    /// Events whose progress becomes updates on the returned channel.
    pub fn reporting() -> (Arc<Self>, UnboundedReceiver<Update>) {
        let (sender, receiver) = unbounded_channel();
        let events = Self {
            run: Some(RunProgress {
                updates: Updates::new(sender.clone()),
                turn: Mutex::default(),
            }),
            query: Some(QueryProgress {
                updates: Updates::new(sender),
            }),
            problems: Mutex::default(),
        };
        (Arc::new(events), receiver)
    }

    /// Events that keep only the problems.
    pub fn silent() -> Arc<Self> {
        Arc::new(Self {
            run: None,
            query: None,
            problems: Mutex::default(),
        })
    }

    /// The problems reported so far, in order.
    pub fn problems(&self) -> Vec<String> {
        self.problems
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl rlm_app::Events for CallEvents {
    fn event(&self, event: &rlm_app::Event<'_>) {
        match event {
            rlm_app::Event::Run(event) => {
                if let Some(run) = &self.run {
                    run.event(event);
                }
            }
            rlm_app::Event::Query(event) => {
                if let Some(query) = &self.query {
                    query.event(event);
                }
            }
            rlm_app::Event::Problem(err) => self
                .problems
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(rlm_app::Shown::of(err).plain()),
            _ => {}
        }
    }
}

/// Queues updates whose progress only grows, as the protocol requires.
#[derive(Debug)]
struct Updates {
    sender: UnboundedSender<Update>,
    last: Mutex<f64>,
}

impl Updates {
    fn new(sender: UnboundedSender<Update>) -> Self {
        Self {
            sender,
            last: Mutex::new(0.0),
        }
    }

    fn send(&self, progress: u64, total: Option<u64>, message: String) {
        let progress = progress as f64;
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if progress <= *last {
            return;
        }
        *last = progress;
        // The receiver is gone only once the call has returned; nobody waits then.
        let _ = self.sender.send(Update {
            progress,
            total: total.filter(|total| *total > 0).map(|total| total as f64),
            message,
        });
    }
}

/// A turn of the root run as it goes.
#[derive(Debug, Default)]
struct Turn {
    number: u32,
    max_iterations: u32,
    /// Sub-calls the root run made in this turn.
    subcalls: u64,
    /// Tokens over the whole run tree so far.
    tokens: u64,
}

impl Turn {
    fn summary(&self, number: u32) -> String {
        format!(
            "turn {number}: {}, {} tokens",
            count(self.subcalls, "sub-call"),
            thousands(self.tokens)
        )
    }
}

/// `rlm run`'s events: an update when a root turn ends (the next starts, or the run ends).
#[derive(Debug)]
struct RunProgress {
    updates: Updates,
    turn: Mutex<Turn>,
}

impl EventSink for RunProgress {
    fn event(&self, event: &Event<'_>) {
        let mut turn = self.turn.lock().unwrap_or_else(PoisonError::into_inner);
        match event {
            Event::IterationStarted {
                depth: 0,
                iteration,
                max_iterations,
            } => {
                if *iteration > 1 {
                    let done = iteration - 1;
                    let total = Some(u64::from(*max_iterations));
                    self.updates
                        .send(u64::from(done), total, turn.summary(done));
                }
                turn.number = *iteration;
                turn.max_iterations = *max_iterations;
                turn.subcalls = 0;
            }
            Event::ModelReplied { progress, .. } => turn.tokens = progress.tokens,
            Event::SubcallFinished {
                depth, progress, ..
            } => {
                if *depth == 0 {
                    turn.subcalls += 1;
                }
                turn.tokens = progress.tokens;
            }
            Event::RunFinished {
                depth: 0,
                status,
                iterations,
                ..
            } => {
                let total = Some(u64::from(turn.max_iterations));
                let message = format!("{} · {status}", turn.summary(*iterations));
                self.updates.send(u64::from(*iterations), total, message);
            }
            _ => {}
        }
    }
}

/// `rlm query`'s events: an update per extraction batch done.
struct QueryProgress {
    updates: Updates,
}

impl QueryEvents for QueryProgress {
    fn event(&self, event: &QueryEvent<'_>) {
        if let QueryEvent::BatchDone {
            done,
            total,
            findings,
            tokens,
            ..
        } = event
        {
            let message = format!(
                "batch {done}/{total}: {}, {} tokens",
                count(*findings as u64, "finding"),
                thousands(*tokens)
            );
            self.updates
                .send(*done as u64, Some(*total as u64), message);
        }
    }
}

#[cfg(test)]
mod tests {
    use rlm_engine::Progress;

    use super::*;

    fn drain(receiver: &mut UnboundedReceiver<Update>) -> Vec<Update> {
        std::iter::from_fn(|| receiver.try_recv().ok()).collect()
    }

    fn progress(tokens: u64) -> Progress {
        Progress {
            tokens,
            cost_usd: 0.0,
            unpriced_calls: 0,
            subcalls_in_flight: 0,
        }
    }

    #[test]
    fn a_run_reports_each_root_turn_with_its_sub_calls_and_tokens() {
        let (events, mut receiver) = CallEvents::reporting();
        let run = events.run.as_ref().unwrap();
        let start = |iteration| Event::IterationStarted {
            depth: 0,
            iteration,
            max_iterations: 30,
        };
        run.event(&start(1));
        run.event(&Event::SubcallFinished {
            depth: 0,
            kind: rlm_engine::SubcallKind::LlmQuery,
            failed: false,
            progress: progress(700),
        });
        // A child run's turns and sub-calls are not the root's.
        run.event(&Event::IterationStarted {
            depth: 1,
            iteration: 2,
            max_iterations: 5,
        });
        run.event(&Event::SubcallFinished {
            depth: 1,
            kind: rlm_engine::SubcallKind::LlmQuery,
            failed: false,
            progress: progress(1_234),
        });
        run.event(&start(2));
        run.event(&Event::RunFinished {
            run_id: "r",
            depth: 0,
            status: rlm_engine::Status::Answered,
            iterations: 2,
        });
        let updates = drain(&mut receiver);
        assert_eq!(
            updates,
            [
                Update {
                    progress: 1.0,
                    total: Some(30.0),
                    message: "turn 1: 1 sub-call, 1,234 tokens".to_owned(),
                },
                Update {
                    progress: 2.0,
                    total: Some(30.0),
                    message: "turn 2: 0 sub-calls, 1,234 tokens · answered".to_owned(),
                },
            ]
        );
    }

    #[test]
    fn progress_never_goes_back() {
        let (events, mut receiver) = CallEvents::reporting();
        let query = events.query.as_ref().unwrap();
        let batch = |done| QueryEvent::BatchDone {
            done,
            total: 4,
            findings: 3,
            in_flight: 0,
            failed_chunks: 0,
            tokens: 2_000,
            cost_usd: 0.0,
            unpriced_calls: 0,
        };
        for done in [1, 3, 2, 3, 4] {
            query.event(&batch(done));
        }
        let updates = drain(&mut receiver);
        let seen: Vec<f64> = updates.iter().map(|update| update.progress).collect();
        assert_eq!(seen, [1.0, 3.0, 4.0]);
        assert_eq!(updates[0].message, "batch 1/4: 3 findings, 2,000 tokens");
        assert_eq!(updates[0].total, Some(4.0));
    }
}
