//! One turn: ask the root model (again, whole, when its answer was cut), run its code, resolve
//! the answer, log the turn and feed the output back; and the last-chance request once the
//! turns ran out.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Instant;

use rlm_llm::{ChatRequest, ChatResponse, FinishReason, Message, ModelTotals};
use rlm_trace::{Iteration, Status};

use super::{LoopState, answer, blocks, emit, prompts, record, status_from, until};
use crate::error::Error;
use crate::events::Event;
use crate::host::RunScope;
use crate::parse::{ParsedReply, parse_reply};
use crate::repl::ReplSession;
use crate::trace::RunLog;

/// Why a model request ended the run: the status and, for a model failure, the error.
type Failure = (Status, Option<rlm_llm::Error>);

/// What one turn works with.
pub(super) struct Turn<'a> {
    pub scope: &'a Arc<RunScope>,
    pub session: &'a mut dyn ReplSession,
    pub conversation: &'a mut ChatRequest,
    pub query: &'a str,
    pub log: &'a RunLog,
}

/// A turn's reply: the model's text, parsed, what it cost, and notes for the log.
struct TurnReply {
    reply: ChatResponse,
    parsed: ParsedReply,
    usage: ModelTotals,
    notes: Vec<String>,
}

impl Turn<'_> {
    /// Takes turn `state.iterations`. Breaks when the run is over (answered, or a limit or a
    /// failure set `state.status`); errors only when the log cannot be written.
    pub async fn take(self, state: &mut LoopState) -> Result<ControlFlow<()>, Error> {
        let Self {
            scope,
            session,
            conversation,
            query,
            log,
        } = self;
        let limits = scope.account.limits();
        let started = Instant::now();
        emit(
            scope,
            &Event::IterationStarted {
                depth: scope.depth,
                iteration: state.iterations,
                max_iterations: limits.max_iterations,
            },
        );
        let TurnReply {
            reply,
            parsed,
            usage,
            mut notes,
        } = match ask_whole(scope, conversation).await {
            Ok(reply) => reply,
            Err(failure) => {
                state.fail(failure);
                return Ok(ControlFlow::Break(()));
            }
        };
        let run = blocks::run(scope, session, &parsed.code_blocks).await;
        state.consecutive_errors = if run.errored() {
            state.consecutive_errors + 1
        } else {
            0
        };
        let final_answer = answer::resolve(
            session,
            parsed.answer.as_ref(),
            &run,
            &mut notes,
            &mut state.partial,
        )
        .await;
        log.write(&Iteration {
            code_blocks: run.blocks.clone(),
            final_answer: final_answer.clone(),
            notes: notes.clone(),
            ..record::iteration(
                scope,
                state.iterations,
                conversation,
                &reply,
                &usage,
                started,
            )
        })?;
        if let Some(answer) = final_answer {
            state.answer = Some(answer);
            state.status = Some(Status::Answered);
            return Ok(ControlFlow::Break(()));
        }
        if run.timed_out {
            state.status = Some(Status::Timeout);
            return Ok(ControlFlow::Break(()));
        }
        if state.consecutive_errors >= limits.max_consecutive_errors {
            state.status = Some(Status::ErrorLimit);
            return Ok(ControlFlow::Break(()));
        }
        let mut history = reply.text;
        if parsed.unterminated {
            history.push_str("\n```");
        }
        conversation.messages.push(Message::assistant(history));
        conversation
            .messages
            .push(Message::user(prompts::after_turn(
                scope,
                &run,
                &notes,
                &parsed,
                state.iterations,
                query,
            )));
        Ok(ControlFlow::Continue(()))
    }

    /// The turns ran out: one request for a final answer, parsed like any reply.
    pub async fn last_request(self, state: &mut LoopState) -> Result<(), Error> {
        let Self {
            scope,
            session,
            conversation,
            query,
            log,
        } = self;
        if let Some(reason) = scope.account.exhausted() {
            state.status = Some(status_from(reason));
            return Ok(());
        }
        conversation
            .messages
            .push(Message::user(prompts::final_request(scope, query)));
        state.iterations += 1;
        let started = Instant::now();
        // The last request asks for prose; a stop sequence after a code block would cut it.
        let stop = std::mem::take(&mut conversation.stop);
        let asked = ask(scope, conversation).await;
        conversation.stop = stop;
        let reply = match asked {
            Ok(reply) => reply,
            Err(failure) => {
                state.fail(failure);
                return Ok(());
            }
        };
        let mut usage = ModelTotals::default();
        usage.add(&reply);
        let parsed = parse_reply(&reply.text);
        let mut notes = Vec::new();
        let mut answer = answer::resolve_tag(session, parsed.answer.as_ref(), &mut notes).await;
        if answer.is_none() && parsed.answer.is_none() {
            // No tag at all: the model answered in prose, which is what was asked for.
            let text = reply.text.trim();
            answer = (!text.is_empty()).then(|| text.to_owned());
        }
        log.write(&Iteration {
            final_answer: answer.clone(),
            notes,
            ..record::iteration(
                scope,
                state.iterations,
                conversation,
                &reply,
                &usage,
                started,
            )
        })?;
        state.status = Some(if answer.is_some() {
            Status::ForcedAnswer
        } else {
            Status::IterationLimit
        });
        state.answer = answer;
        Ok(())
    }
}

/// Asks for a turn's reply. When the reply was cut inside `FINAL(...)`, asks once more without
/// stop sequences; the turn then counts both calls, as the ledger does.
async fn ask_whole(scope: &RunScope, conversation: &mut ChatRequest) -> Result<TurnReply, Failure> {
    let mut reply = ask(scope, conversation).await?;
    let mut usage = ModelTotals::default();
    usage.add(&reply);
    let mut parsed = parse_reply(&reply.text);
    let mut notes = Vec::new();
    if parsed.answer_unclosed
        && !conversation.stop.is_empty()
        && reply.finish() != FinishReason::Length
        && scope.account.exhausted().is_none()
    {
        // The stop sequence that ends a reply after its code block also matches a code
        // fence closing inside `FINAL(...)`, which cut the answer short. (OpenAI reports a
        // stop sequence as an ordinary stop, so the finish reason cannot tell.) The same
        // request without stop sequences gets the whole answer.
        notes.push(
            "the reply was cut inside FINAL(...); asked again without stop sequences".to_owned(),
        );
        let stop = std::mem::take(&mut conversation.stop);
        let again = ask(scope, conversation).await;
        conversation.stop = stop;
        reply = again?;
        usage.add(&reply);
        parsed = parse_reply(&reply.text);
    }
    Ok(TurnReply {
        reply,
        parsed,
        usage,
        notes,
    })
}

/// Asks the root model, records usage, and reports progress.
async fn ask(scope: &RunScope, request: &ChatRequest) -> Result<ChatResponse, Failure> {
    let started = Instant::now();
    match until(
        scope.account.deadline(),
        scope.shared.client.complete(request),
    )
    .await
    {
        None => Err((Status::Timeout, None)),
        Some(Err(err)) => {
            scope
                .account
                .spend()
                .record_failure(&scope.model, started.elapsed(), 0);
            Err((Status::ModelError, Some(err)))
        }
        Some(Ok(reply)) => {
            scope.account.spend().record(&scope.model, &reply);
            emit(
                scope,
                &Event::ModelReplied {
                    depth: scope.depth,
                    usage: &reply.usage,
                    progress: scope.progress(),
                },
            );
            Ok(reply)
        }
    }
}
