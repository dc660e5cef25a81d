//! One turn: ask the root model (again, whole, when its answer was cut), run its code, resolve
//! the answer, log the turn and feed the output back; and the last-chance request once the
//! turns ran out.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Instant;

use rlm_llm::{ChatRequest, ChatResponse, Estimate, FinishReason, Message, ModelTotals};
use rlm_trace::{CodeBlock, Iteration, Status};

use super::evidence::{Judge, Verdict};
use super::{LoopState, answer, blocks, emit, prompts, record, status_from, until};
use crate::error::Error;
use crate::events::Event;
use crate::host::RunScope;
use crate::limits::Exhausted;
use crate::parse::{ParsedReply, parse_reply};
use crate::repl::ReplSession;
use crate::trace::RunLog;

/// Why a model request ended the run: the status and, for a model failure, the error.
type Failure = (Status, Option<rlm_llm::Error>);

/// What the turns of a run work with.
pub(super) struct Turns<'a> {
    pub scope: &'a Arc<RunScope>,
    pub session: &'a mut dyn ReplSession,
    pub conversation: &'a mut ChatRequest,
    pub query: &'a str,
    pub log: &'a RunLog,
    pub judge: &'a Judge,
}

/// A turn's reply: the model's text, parsed, what it cost, and notes for the log.
struct TurnReply {
    reply: ChatResponse,
    parsed: ParsedReply,
    usage: ModelTotals,
    notes: Vec<String>,
}

impl TurnReply {
    fn new(reply: ChatResponse) -> Self {
        let mut usage = ModelTotals::default();
        usage.add(&reply);
        Self {
            parsed: parse_reply(&reply.text),
            reply,
            usage,
            notes: Vec::new(),
        }
    }
}

impl Turns<'_> {
    /// Takes turn `state.iterations`. Breaks when the run is over (answered, or a limit or a
    /// failure set `state.status`); errors only when the log cannot be written.
    pub async fn take(&mut self, state: &mut LoopState) -> Result<ControlFlow<()>, Error> {
        let limits = self.scope.account.limits();
        let compacted = self
            .compact_if_needed(state.iterations, &mut state.compactions)
            .await;
        let started = Instant::now();
        emit(
            self.scope,
            &Event::IterationStarted {
                depth: self.scope.depth,
                iteration: state.iterations,
                max_iterations: limits.max_iterations,
            },
        );
        let mut turn = match ask_whole(self.scope, self.conversation).await {
            Ok(turn) => turn,
            Err(failure) => {
                state.fail(failure);
                return Ok(ControlFlow::Break(()));
            }
        };
        turn.notes.splice(0..0, compacted);
        let mut run = blocks::run(self.scope, self.session, &turn.parsed.code_blocks).await;
        state.consecutive_errors = if run.errored() {
            state.consecutive_errors + 1
        } else {
            0
        };
        let resolved = answer::resolve(
            self.session,
            turn.parsed.answer.as_ref(),
            &mut run,
            &mut turn.notes,
            &mut state.partial,
            limits.max_answer_bytes,
        )
        .await;
        state.code_ran |= !run.blocks.is_empty();
        let final_answer = resolved.and_then(|answer| {
            let sent_back = state.sent_back_without_code;
            self.accept(state, answer, sent_back, &mut turn.notes)
        });
        let mut logged_blocks: Vec<CodeBlock> =
            run.blocks.iter().map(|b| self.log.code_block(b)).collect();
        if let (Some(index), Some(answer)) = (run.answered_block, &final_answer)
            && let Some(block) = logged_blocks.get_mut(index)
        {
            block.result.final_answer = Some(self.log.text(answer));
        }
        self.log_turn(
            state,
            &turn,
            started,
            logged_blocks,
            final_answer.as_deref(),
        )?;
        emit(
            self.scope,
            &Event::IterationFinished {
                depth: self.scope.depth,
                iteration: state.iterations,
                seconds: started.elapsed().as_secs_f64(),
            },
        );
        // The reply joins the conversation once it is logged (the log holds what was sent).
        let mut history = std::mem::take(&mut turn.reply.text);
        if turn.parsed.unterminated {
            history.push_str("\n```");
        }
        self.conversation.messages.push(Message::assistant(history));
        if let Some(answer) = final_answer {
            state.answer = Some(answer);
            state.status = Some(state.status.unwrap_or(Status::Answered));
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
        let feedback = prompts::after_turn(
            self.scope,
            &run,
            &turn.notes,
            &turn.parsed,
            state.iterations,
            self.query,
        );
        self.conversation.messages.push(Message::user(feedback));
        Ok(ControlFlow::Continue(()))
    }

    /// The turns ran out: one request for a final answer, parsed like any reply.
    pub async fn last_request(&mut self, state: &mut LoopState) -> Result<(), Error> {
        if let Some(reason) = self.scope.account.exhausted() {
            state.status = Some(status_from(reason));
            return Ok(());
        }
        self.conversation
            .messages
            .push(Message::user(prompts::final_request(
                self.scope, self.query,
            )));
        state.iterations += 1;
        let started = Instant::now();
        // The last request asks for prose; a stop sequence after a code block would cut it.
        let stop = std::mem::take(&mut self.conversation.stop);
        let asked = ask(self.scope, self.conversation).await;
        self.conversation.stop = stop;
        let mut turn = match asked {
            Ok(reply) => TurnReply::new(reply),
            Err(failure) => {
                state.fail(failure);
                return Ok(());
            }
        };
        let tag = turn.parsed.answer.as_ref();
        let max_bytes = self.scope.account.limits().max_answer_bytes;
        let mut answer = answer::resolve_tag(self.session, tag, &mut turn.notes, max_bytes).await;
        if answer.is_none()
            && turn.parsed.answer.is_none()
            && let Some(call) = lone_final_call(&turn.parsed.code_blocks)
        {
            answer = self.run_final_call(&call, max_bytes, &mut turn.notes).await;
        }
        if answer.is_none() && turn.parsed.answer.is_none() {
            // No tag at all: prose is what was asked for and counts as the answer; code is
            // not an answer (it was never run), so the run ends without one.
            let text = turn.reply.text.trim();
            let has_code = !turn.parsed.code_blocks.is_empty() || text.starts_with("```");
            if has_code {
                turn.notes.push(
                    "the reply to the last request was code, not an answer; it was not run"
                        .to_owned(),
                );
            }
            let prose = (!text.is_empty() && !has_code).then(|| text.to_owned());
            answer = answer::within(prose, max_bytes, &mut turn.notes);
        }
        // The last chance: an answer without code is not sent back, it ends the run as such.
        let answer = answer.and_then(|answer| self.accept(state, answer, true, &mut turn.notes));
        self.log_turn(state, &turn, started, Vec::new(), answer.as_deref())?;
        self.conversation
            .messages
            .push(Message::assistant(turn.reply.text));
        state.status = Some(match (&answer, state.status) {
            (Some(_), Some(Status::NoEvidence)) => Status::NoEvidence,
            (Some(_), _) => Status::ForcedAnswer,
            (None, _) => Status::IterationLimit,
        });
        state.answer = answer;
        Ok(())
    }

    /// Runs the one `FINAL(...)`/`FINAL_VAR(...)` call a reply to the last request wrote as
    /// code: the answer it gives, if any (a note says what happened either way).
    async fn run_final_call(
        &mut self,
        call: &str,
        max_bytes: usize,
        notes: &mut Vec<String>,
    ) -> Option<String> {
        match self.session.execute(call).await {
            Ok(outcome) if outcome.final_answer.is_some() => {
                notes.push(
                    "the reply to the last request was one answer call written as code; that \
                     call was run for its answer"
                        .to_owned(),
                );
                answer::within(outcome.final_answer, max_bytes, notes)
            }
            Ok(outcome) => {
                let why = outcome
                    .error
                    .unwrap_or_else(|| "it gave no answer".to_owned());
                notes.push(format!("the last request's answer call failed: {why}"));
                None
            }
            Err(error) => {
                notes.push(format!(
                    "the last request's answer call could not run: {}",
                    error.message
                ));
                None
            }
        }
    }

    /// Judges `answer` (see [`Judge`]): the answer to keep, if any, with a note for the model
    /// when it is sent back; an answer kept without evidence sets the run's status to
    /// [`Status::NoEvidence`].
    fn accept(
        &self,
        state: &mut LoopState,
        answer: String,
        sent_back: bool,
        notes: &mut Vec<String>,
    ) -> Option<String> {
        match self.judge.judge(&answer, state.code_ran, sent_back) {
            Verdict::Accepted => Some(answer),
            Verdict::WithoutEvidence => {
                state.status = Some(Status::NoEvidence);
                Some(answer)
            }
            Verdict::Echo(note) => {
                notes.push(note);
                None
            }
            Verdict::NoCodeYet(note) => {
                state.sent_back_without_code = true;
                notes.push(note);
                None
            }
        }
    }

    /// Appends turn `state.iterations` to the log, timed from `started` to now.
    fn log_turn(
        &self,
        state: &LoopState,
        turn: &TurnReply,
        started: Instant,
        code_blocks: Vec<CodeBlock>,
        final_answer: Option<&str>,
    ) -> Result<(), Error> {
        self.log.write(&Iteration {
            code_blocks,
            final_answer: self.log.optional(final_answer),
            notes: turn.notes.clone(),
            ..record::iteration(
                self.log,
                self.scope,
                state.iterations,
                self.conversation,
                &turn.reply,
                &turn.usage,
                started,
            )
        })
    }
}

/// Asks for a turn's reply. When the reply was cut inside `FINAL(...)`, asks once more without
/// stop sequences; the turn then counts both calls, as the ledger does.
async fn ask_whole(scope: &RunScope, conversation: &mut ChatRequest) -> Result<TurnReply, Failure> {
    let mut turn = TurnReply::new(ask(scope, conversation).await?);
    if turn.parsed.answer_unclosed
        && !conversation.stop.is_empty()
        && turn.reply.finish() != FinishReason::Length
        && scope.account.exhausted().is_none()
    {
        // The stop sequence that ends a reply after its code block also matches a code
        // fence closing inside `FINAL(...)`, which cut the answer short. (OpenAI reports a
        // stop sequence as an ordinary stop, so the finish reason cannot tell.) The same
        // request without stop sequences gets the whole answer.
        turn.notes.push(
            "the reply was cut inside FINAL(...); asked again without stop sequences".to_owned(),
        );
        let stop = std::mem::take(&mut conversation.stop);
        let again = ask(scope, conversation).await;
        conversation.stop = stop;
        let again = again?;
        // The turn's log counts both calls, as the ledger does.
        turn.usage.add(&again);
        turn.parsed = parse_reply(&again.text);
        turn.reply = again;
    }
    Ok(turn)
}

/// Asks the root model, records usage, and reports progress.
pub(super) async fn ask(scope: &RunScope, request: &ChatRequest) -> Result<ChatResponse, Failure> {
    if let Err(too_long) = scope.shared.settings.context_windows.check(request) {
        let error = rlm_llm::Error::ContextWindow {
            model: request.model.clone(),
            estimated_tokens: too_long.estimated_tokens,
            window: too_long.window,
        };
        return Err((Status::ModelError, Some(error)));
    }
    let price = scope.shared.client.price(&request.model);
    let reservation = match scope
        .account
        .spend()
        .reserve(Estimate::of(request, price.as_ref()))
    {
        Ok(reservation) => reservation,
        Err(rlm_llm::Error::BudgetExhausted { limit, .. }) => {
            return Err((status_from(Exhausted::Spend(limit)), None));
        }
        Err(err) => return Err((Status::ModelError, Some(err))),
    };
    // The client asks the reservation again right before it sends (the call may wait for a
    // slot behind the run's sub-calls) and settles it.
    match until(
        scope.account.deadline(),
        scope.shared.client.complete(request, reservation),
    )
    .await
    {
        None => Err((Status::Timeout, None)),
        Some(Err(rlm_llm::Error::BudgetExhausted { limit, .. })) => {
            Err((status_from(Exhausted::Spend(limit)), None))
        }
        Some(Err(err)) => Err((Status::ModelError, Some(err))),
        Some(Ok(reply)) => {
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

/// The code of a reply to the last request that is nothing but one answer call: a single block
/// whose one line is `FINAL(...)` or `FINAL_VAR(...)` (small models answer so, in a ```repl
/// block, after they were told not to write code), the name in any case (`Final(10)`, which
/// Qwen2.5-Coder-1.5B wrote) and written back in capitals. Any other code is not run there.
fn lone_final_call(blocks: &[String]) -> Option<String> {
    let [block] = blocks else {
        return None;
    };
    let line = block.trim();
    if line.contains('\n') || !line.ends_with(')') {
        return None;
    }
    let (name, rest) = line.split_once('(')?;
    ["FINAL", "FINAL_VAR"]
        .into_iter()
        .find(|known| name.eq_ignore_ascii_case(known))
        .map(|known| format!("{known}({rest}"))
}
