//! The loop of one run: ask the root model, run its code, feed back the output, until it
//! answers or a budget ends the run.
//!
//! This file holds the loop itself and the run's state; one turn is in `turn.rs` (with the
//! cut-answer retry and the last-chance request), its code blocks run in `blocks.rs`, the answer
//! is resolved in `answer.rs`, the prompts are rendered in `prompts.rs`, and `record.rs` turns
//! the run into trajectory records.

mod answer;
mod blocks;
mod compaction;
mod evidence;
mod lazy;
mod prompts;
mod record;
mod turn;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use rlm_llm::Message;
use rlm_trace::{RunOutcome, Status, UsageSummary, VariablesSnapshot};
use serde::Serialize;

use crate::context::{self, ContextPart};
use crate::error::Error;
use crate::events::Event;
use crate::host::RunScope;
use crate::limits::Exhausted;
use crate::repl::{ReplSession, SessionSpec};
use crate::resume::{self, Resume};
use crate::trace::RunLog;
pub(crate) use rlm_llm::error_chain;

/// The outcome of a run: the trajectory's closing record, plus what only the caller gets.
#[derive(Debug, Serialize)]
pub struct RunResult {
    /// How the run ended, exactly as the trajectory's `result` line records it: status,
    /// answer, partial answer, turns, usage, sub-calls, time and the model error as text.
    #[serde(flatten)]
    pub outcome: RunOutcome,
    /// The trajectory file, when logging.
    pub trajectory: Option<PathBuf>,
    /// Why the root model failed, for [`Status::ModelError`]: the client's error with its
    /// kind ([`rlm_llm::Error::kind`]) and causes (`outcome.error` is its text).
    #[serde(skip)]
    pub error: Option<rlm_llm::Error>,
    /// The REPL's variables when the run ended (also the trajectory's `variables` line): a
    /// later run restores the plain-data ones ([`crate::Resume`]). `None` for a child run and
    /// a run whose REPL could not be read.
    #[serde(skip)]
    pub variables: Option<VariablesSnapshot>,
    /// The run's conversation without the system prompt: the user messages and the model's
    /// replies, the last reply included (a later run's `history_N`).
    #[serde(skip)]
    pub conversation: Vec<Message>,
}

/// Awaits `future`, giving up at `deadline`.
pub(crate) async fn until<T>(
    deadline: Option<Instant>,
    future: impl Future<Output = T>,
) -> Option<T> {
    match deadline {
        None => Some(future.await),
        Some(deadline) => tokio::time::timeout_at(deadline.into(), future).await.ok(),
    }
}

/// What the first message says of the data: a run with host functions (a store) is described
/// by them; contexts given as well follow their description.
fn describe_data(scope: &RunScope, contexts: &[ContextPart]) -> String {
    match (scope.host_functions(), contexts.is_empty()) {
        (Some(functions), true) => functions.describe(),
        (Some(functions), false) => {
            format!("{}\n{}", functions.describe(), context::describe(contexts))
        }
        (None, _) => context::describe(contexts),
    }
}

/// The run's REPL session, its setup done: opened now when something must be in it before the
/// first turn (restored variables, tool values, setup code, compaction's `history`), else when
/// the model first runs code; with where a failed lazy open leaves its error, and the note on
/// what a resumed session restored.
async fn open_session(
    scope: &Arc<RunScope>,
    spec: SessionSpec,
    resume: Option<&Resume>,
) -> Result<(Box<dyn ReplSession>, lazy::OpenFailure, Option<String>), Error> {
    let settings = &scope.shared.settings;
    // What must be in the REPL before the first turn opens it now; otherwise it opens when the
    // model first runs code (or reads a variable).
    let eager = resume.is_some_and(|resume| !resume.is_empty())
        || !scope.toolbox().value_bindings().is_empty()
        || (scope.depth == 0 && (settings.setup_code.is_some() || settings.compaction.is_some()));
    let open_failure = lazy::OpenFailure::default();
    let mut session: Box<dyn ReplSession> = if eager {
        lazy::open(scope.shared.repl.as_ref(), spec)
            .await
            .map_err(Error::Repl)?
    } else {
        Box::new(lazy::LazySession::new(
            Arc::clone(&scope.shared.repl),
            spec,
            Arc::clone(&open_failure),
        ))
    };
    let session_note = match resume.filter(|resume| !resume.is_empty()) {
        Some(resume) => {
            Some(resume::restore(session.as_mut(), resume, &scope.shared.settings.prompts).await?)
        }
        None => None,
    };
    prepare_session(scope, session.as_mut()).await?;
    Ok((session, open_failure, session_note))
}

/// Runs the loop for `scope`. Errors only when the session or the log cannot be set up.
pub(crate) async fn run_loop(
    scope: Arc<RunScope>,
    query: &str,
    contexts: Vec<ContextPart>,
    parent_run_id: Option<&str>,
    resume: Option<&Resume>,
) -> Result<RunResult, Error> {
    let started = Instant::now();
    let max_iterations = scope.account.limits().max_iterations;
    let description = describe_data(&scope, &contexts);
    let log = RunLog::create(scope.log.as_ref())?;
    log.write(&record::metadata(
        &log,
        &scope,
        query,
        parent_run_id,
        &contexts,
    ))?;
    emit(
        &scope,
        &Event::RunStarted {
            run_id: &scope.run_id,
            depth: scope.depth,
            model: &scope.model,
            log: log.path(),
        },
    );
    let data = data_chars(&scope, &contexts);
    let host: Arc<dyn rlm_sandbox::Host> = Arc::<RunScope>::clone(&scope);
    let spec = SessionSpec {
        context_meta: context::meta_value(&contexts),
        contexts,
        host,
    };
    let (mut session, open_failure, session_note) = open_session(&scope, spec, resume).await?;

    let judge = judge(&scope, query, data, &description);
    let mut conversation = prompts::opening(&scope, &description, query);
    if let (Some(note), Some(first)) = (session_note, conversation.messages.first_mut()) {
        first.content = format!("{}\n\n{}", note.trim_end(), first.content);
    }
    let mut state = LoopState::default();
    let mut interrupted = InterruptedGuard {
        scope: &scope,
        log: &log,
        started,
        iterations: 0,
        armed: true,
    };
    let mut turns = turn::Turns {
        scope: &scope,
        session: session.as_mut(),
        conversation: &mut conversation,
        query,
        log: &log,
        judge: &judge,
    };
    while state.iterations < max_iterations {
        if let Some(reason) = scope.account.exhausted() {
            state.status = Some(status_from(reason));
            break;
        }
        state.iterations += 1;
        interrupted.iterations = state.iterations;
        let flow = turns
            .take(&mut state)
            .await
            .inspect_err(|_| interrupted.armed = false)?;
        // A sandbox that could not start ends the run as it would have before the first turn.
        let failed = open_failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(error) = failed {
            interrupted.armed = false;
            return Err(Error::Repl(error));
        }
        if flow.is_break() {
            break;
        }
    }
    if state.status.is_none() {
        interrupted.iterations = state.iterations + 1;
        turns
            .last_request(&mut state)
            .await
            .inspect_err(|_| interrupted.armed = false)?;
    }
    let mut result = finish(&scope, session.as_mut(), state, &log, started).await;
    interrupted.armed = false;
    result.conversation = std::mem::take(&mut conversation.messages);
    if let Some(variables) = &result.variables {
        log.write(&record::variables(&log, variables))?;
    }
    log.write(&record::outcome(&log, &result.outcome))?;
    emit(
        &scope,
        &Event::RunFinished {
            run_id: &scope.run_id,
            depth: scope.depth,
            status: result.outcome.status,
            iterations: result.outcome.iterations,
        },
    );
    Ok(result)
}

/// How many characters of data the run's code can look at: `None` over a store (never shown
/// whole), else the contexts' total.
fn data_chars(scope: &RunScope, contexts: &[ContextPart]) -> Option<usize> {
    if scope.host_functions().is_some() {
        return None;
    }
    Some(contexts.iter().map(|part| part.size().chars).sum())
}

/// What the run's answers are judged against: the question (a root run's: a child's question
/// is its parent's prompt, data included), our instructions, and whether the data is larger
/// than its description in the first message.
fn judge(
    scope: &RunScope,
    query: &str,
    data_chars: Option<usize>,
    description: &str,
) -> evidence::Judge {
    let prompts = &scope.shared.settings.prompts;
    let question = if scope.depth == 0 { query } else { "" };
    let mut instructions = vec![
        prompts.system.as_str(),
        prompts.sandbox.as_str(),
        prompts.first_turn.as_str(),
        prompts.next_turn.as_str(),
        prompts.final_request.as_str(),
        prompts.child_task.as_str(),
        prompts.functions.as_str(),
        prompts.tools.as_str(),
        scope.shared.settings.helpers_doc.as_str(),
    ];
    if let Some(custom) = &scope.shared.settings.custom_system_prompt {
        instructions.push(custom.as_str());
    }
    evidence::Judge::new(
        question,
        &instructions,
        data_chars,
        description.chars().count(),
    )
}

/// Binds the run's tool values and, in a root run, runs the user's setup code. A value that
/// cannot be bound or setup code that raises stops the run before its first turn: the model
/// would be told of tools it does not have.
async fn prepare_session(scope: &RunScope, session: &mut dyn ReplSession) -> Result<(), Error> {
    for (name, code) in scope.toolbox().value_bindings() {
        let outcome = session.execute(&code).await.map_err(Error::Repl)?;
        if let Some(error) = outcome.error {
            return Err(Error::Repl(crate::repl::ReplError::new(format!(
                "could not bind the tool `{name}`: {error}"
            ))));
        }
    }
    if scope.depth == 0 && scope.shared.settings.compaction.is_some() {
        let outcome = session
            .execute(compaction::EMPTY_HISTORY)
            .await
            .map_err(Error::Repl)?;
        if let Some(error) = outcome.error {
            return Err(Error::Repl(crate::repl::ReplError::new(format!(
                "could not bind `history`: {error}"
            ))));
        }
    }
    if scope.depth == 0
        && let Some(code) = &scope.shared.settings.setup_code
    {
        let outcome = session.execute(code).await.map_err(Error::Repl)?;
        if let Some(error) = outcome.error {
            return Err(Error::Repl(crate::repl::ReplError::new(format!(
                "the setup code failed: {error}"
            ))));
        }
    }
    Ok(())
}

/// Writes an `interrupted` result line when the run's future is dropped before it wrote its
/// own (Ctrl-C in the binary drops it), so a stopped run's log still ends with a result.
struct InterruptedGuard<'a> {
    scope: &'a RunScope,
    log: &'a RunLog,
    started: Instant,
    /// Turns started so far.
    iterations: u32,
    /// Cleared once the run writes its own result line.
    armed: bool,
}

impl Drop for InterruptedGuard<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let usage = self.scope.account.spend().report();
        let outcome = RunOutcome {
            run_id: self.scope.run_id.clone(),
            status: Status::Interrupted,
            answer: None,
            partial_answer: None,
            iterations: self.iterations,
            usage_summary: UsageSummary::of(&usage),
            usage,
            subcalls: self.scope.account.subcalls(),
            seconds: self.started.elapsed().as_secs_f64(),
            error: None,
        };
        // Nothing can report a failed write from a destructor; the log just ends earlier.
        let _ = self.log.write(&outcome);
    }
}

/// The run's result once the loop has stopped: the answer, or the best partial answer.
async fn finish(
    scope: &RunScope,
    session: &mut dyn ReplSession,
    mut state: LoopState,
    log: &RunLog,
    started: Instant,
) -> RunResult {
    if state.answer.is_none()
        && state.partial.is_none()
        && let Ok(Some(value)) = session.variable("answer").await
    {
        state.partial = answer::partial_content(&value);
    }
    let status = state.status.unwrap_or(Status::IterationLimit);
    // Only a root run's REPL outlives it (in a session); a child's is gone with it.
    let variables = if scope.depth == 0 {
        let mut snapshot = resume::snapshot(session, &scope.run_id).await;
        // The tools are bound again by the next run; they are not the model's variables.
        let toolbox = scope.toolbox();
        snapshot.variables.retain(|variable| {
            !toolbox
                .tools()
                .iter()
                .any(|tool| tool.name == variable.name)
        });
        Some(snapshot)
    } else {
        None
    };
    let usage = scope.account.spend().report();
    RunResult {
        outcome: RunOutcome {
            run_id: scope.run_id.clone(),
            status,
            answer: state.answer.filter(|_| status.is_answered()),
            partial_answer: state.partial,
            iterations: state.iterations,
            usage_summary: UsageSummary::of(&usage),
            usage,
            subcalls: scope.account.subcalls(),
            seconds: started.elapsed().as_secs_f64(),
            error: state.error.as_ref().map(|err| error_chain(err)),
        },
        trajectory: log.path().map(Path::to_path_buf),
        error: state.error,
        variables,
        conversation: Vec::new(),
    }
}

/// What the loop knows between turns.
#[derive(Debug, Default)]
struct LoopState {
    iterations: u32,
    /// Times the conversation was compacted.
    compactions: u32,
    consecutive_errors: u32,
    status: Option<Status>,
    /// Some code of the run has run.
    code_ran: bool,
    /// An answer given before any code ran was sent back (it is, once).
    sent_back_without_code: bool,
    answer: Option<String>,
    partial: Option<String>,
    error: Option<rlm_llm::Error>,
}

impl LoopState {
    fn fail(&mut self, (status, error): (Status, Option<rlm_llm::Error>)) {
        self.status = Some(status);
        self.error = error;
    }
}

/// The status a spent limit ends a run with.
fn status_from(reason: Exhausted) -> Status {
    match reason {
        Exhausted::Spend(rlm_llm::Exhausted::Tokens) => Status::TokenBudget,
        Exhausted::Spend(rlm_llm::Exhausted::Cost) => Status::CostBudget,
        Exhausted::Spend(_) => Status::CallBudget,
        Exhausted::Time => Status::Timeout,
        Exhausted::Subcalls => Status::SubcallBudget,
    }
}

fn emit(scope: &RunScope, event: &Event<'_>) {
    if let Some(sink) = &scope.shared.events {
        sink.event(event);
    }
}
