//! The loop of one run: ask the root model, run its code, feed back the output, until it
//! answers or a budget ends the run.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use rlm_llm::{ChatRequest, ChatResponse, FinishReason, Message, ModelTotals, UsageReport};
use rlm_trace::{
    BackendArguments, Budget, CodeBlock, CodeResult, Iteration, RunMetadata, RunOutcome, Status,
    Subcall,
};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::context::{self, ContextPart};
use crate::error::Error;
use crate::events::Event;
use crate::host::RunScope;
use crate::limits::Exhausted;
use crate::parse::{AnswerTag, parse_reply};
use crate::prompt::{fence, render, truncate};
use crate::repl::{ExecOutcome, ReplSession, SessionSpec, SubcallHost};
use crate::trace::{self, RunLog};

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

/// The outcome of a run.
#[derive(Debug, Serialize)]
pub struct RunResult {
    /// The run's id (children: `<parent>.<n>`).
    pub run_id: String,
    /// How it ended.
    pub status: Status,
    /// The answer, when [`Status::is_answered`].
    pub answer: Option<String>,
    /// The best partial answer of a run that stopped early (the `answer` variable), if any.
    pub partial_answer: Option<String>,
    /// Root-model turns taken (the last-chance request counts as one).
    pub iterations: u32,
    /// Model usage of this run and everything below it, per model and in total.
    pub usage: UsageReport,
    /// Sub-calls made (`llm_query` items and `rlm_query` runs) by this run and below it.
    pub subcalls: u64,
    /// The trajectory file, when logging.
    pub trajectory: Option<PathBuf>,
    /// Wall time in seconds.
    pub seconds: f64,
    /// Why the root model failed, for [`Status::ModelError`]: the client's error with its
    /// kind ([`rlm_llm::Error::kind`]) and causes. Serialized as one line of text.
    #[serde(serialize_with = "serialize_error")]
    pub error: Option<rlm_llm::Error>,
}

impl RunResult {
    /// [`RunResult::error`] and its causes on one line, as serialized.
    pub fn error_message(&self) -> Option<String> {
        self.error.as_ref().map(|err| error_chain(err))
    }
}

/// An error and its causes on one line (`error: cause: cause`). Model errors never carry
/// credentials.
pub(crate) fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn serialize_error<S: Serializer>(
    error: &Option<rlm_llm::Error>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match error {
        Some(error) => serializer.serialize_str(&error_chain(error)),
        None => serializer.serialize_none(),
    }
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

/// Runs the loop for `scope`. Errors only when the session or the log cannot be set up.
pub(crate) async fn run_loop(
    scope: Arc<RunScope>,
    query: &str,
    contexts: Vec<ContextPart>,
    parent_run_id: Option<&str>,
) -> Result<RunResult, Error> {
    let started = Instant::now();
    let settings = &scope.shared.settings;
    let limits = scope.account.limits().clone();
    let description = context::describe(&contexts);
    let log = RunLog::create(scope.log.as_ref())?;
    log.write(&RunMetadata {
        run_id: scope.run_id.clone(),
        parent_run_id: parent_run_id.map(str::to_owned),
        depth: scope.depth,
        root_model: scope.model.clone(),
        subcall_model: settings.subcall_model.clone(),
        max_depth: settings.max_depth,
        max_iterations: limits.max_iterations,
        backend: "rlm".to_owned(),
        backend_kwargs: BackendArguments {
            model_name: scope.model.clone(),
        },
        environment_type: settings.environment_name.clone(),
        environment_kwargs: Map::new(),
        other_backends: vec![settings.subcall_model.clone()],
        query: query.to_owned(),
        contexts: context::contexts_info(&contexts),
        budget: Budget {
            max_tokens: limits.spend.max_tokens,
            max_cost_usd: limits.spend.max_cost_usd,
            max_calls: limits.spend.max_calls,
            timeout_seconds: limits.timeout.map(|t| t.as_secs_f64()),
            max_subcalls: limits.max_subcalls,
            max_consecutive_errors: limits.max_consecutive_errors,
        },
    })?;
    emit(
        &scope,
        &Event::RunStarted {
            run_id: &scope.run_id,
            depth: scope.depth,
            model: &scope.model,
            log: log.path(),
        },
    );
    let host: Arc<dyn SubcallHost> = Arc::new(Arc::clone(&scope));
    let spec = SessionSpec {
        context_meta: context::meta_value(&contexts),
        contexts,
        host,
    };
    let mut session = scope.shared.repl.open(spec).await.map_err(Error::Repl)?;

    let max_iterations = limits.max_iterations.to_string();
    let output_limit = settings.output_limit.to_string();
    let window = settings.subcall_window_chars.to_string();
    let chunk = settings.chunk_chars.to_string();
    let system = render(
        &settings.prompts.system,
        &[
            ("output_limit", output_limit.as_str()),
            ("subcall_window_chars", window.as_str()),
            ("chunk_chars", chunk.as_str()),
            (
                "recursion_note",
                recursion_note(scope.depth, settings.max_depth),
            ),
            ("helpers", settings.helpers_doc.as_str()),
        ],
    );
    let first = render(
        &settings.prompts.first_turn,
        &[
            ("context_description", description.as_str()),
            ("query", query),
            ("max_iterations", max_iterations.as_str()),
        ],
    );
    let mut conversation = ChatRequest::new(scope.model.as_str())
        .system(system)
        .user(first);
    conversation.stop.clone_from(&settings.stop);
    conversation.max_tokens = settings.root_max_output_tokens;
    let mut state = LoopState::default();

    while state.iterations < limits.max_iterations {
        if let Some(reason) = scope.account.exhausted() {
            state.status = Some(status_from(reason));
            break;
        }
        state.iterations += 1;
        let turn_started = Instant::now();
        emit(
            &scope,
            &Event::IterationStarted {
                depth: scope.depth,
                iteration: state.iterations,
                max_iterations: limits.max_iterations,
            },
        );
        let mut reply = match ask(&scope, &conversation).await {
            Ok(reply) => reply,
            Err(status) => {
                state.fail(status);
                break;
            }
        };
        let mut turn_usage = ModelTotals::default();
        turn_usage.add(&reply);
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
                "the reply was cut inside FINAL(...); asked again without stop sequences"
                    .to_owned(),
            );
            let stop = std::mem::take(&mut conversation.stop);
            let again = ask(&scope, &conversation).await;
            conversation.stop = stop;
            reply = match again {
                Ok(reply) => reply,
                Err(status) => {
                    state.fail(status);
                    break;
                }
            };
            // The turn's log counts both calls, as the ledger does.
            turn_usage.add(&reply);
            parsed = parse_reply(&reply.text);
        }
        let mut blocks = Vec::new();
        let mut final_answer = None;
        let mut timed_out = false;
        for code in &parsed.code_blocks {
            emit(
                &scope,
                &Event::CodeStarted {
                    depth: scope.depth,
                    code,
                },
            );
            let outcome = match until(scope.account.deadline(), session.execute(code)).await {
                None => {
                    timed_out = true;
                    ExecOutcome {
                        error: Some("the run's time budget ran out during this block".into()),
                        ..ExecOutcome::default()
                    }
                }
                Some(Ok(outcome)) => outcome,
                Some(Err(err)) => ExecOutcome {
                    error: Some(format!("the REPL failed: {err}")),
                    ..ExecOutcome::default()
                },
            };
            emit(
                &scope,
                &Event::CodeFinished {
                    depth: scope.depth,
                    outcome: &outcome,
                },
            );
            final_answer = final_answer.or(outcome.final_answer.clone());
            blocks.push(block_record(code, outcome, scope.take_records()));
            if final_answer.is_some() || timed_out {
                break;
            }
        }
        let errored = blocks.iter().any(|b| b.result.error.is_some());
        state.consecutive_errors = if errored {
            state.consecutive_errors + 1
        } else {
            0
        };
        if final_answer.is_none() && !timed_out {
            final_answer = resolve_tag(session.as_mut(), parsed.answer.as_ref(), &mut notes).await;
        }
        if final_answer.is_none() && !timed_out && !blocks.is_empty() {
            final_answer = read_answer_variable(session.as_mut(), &mut state).await;
        }
        log.write(&Iteration {
            iteration: state.iterations,
            run_id: scope.run_id.clone(),
            prompt: trace::transcript(&conversation),
            response: reply.text.clone(),
            code_blocks: blocks.clone(),
            final_answer: final_answer.clone(),
            seconds: turn_started.elapsed().as_secs_f64(),
            usage: trace::totals(&turn_usage),
            notes: notes.clone(),
        })?;
        if let Some(answer) = final_answer {
            state.answer = Some(answer);
            state.status = Some(Status::Answered);
            break;
        }
        if timed_out {
            state.status = Some(Status::Timeout);
            break;
        }
        if state.consecutive_errors >= limits.max_consecutive_errors {
            state.status = Some(Status::ErrorLimit);
            break;
        }
        let mut history = reply.text.clone();
        if parsed.unterminated {
            history.push_str("\n```");
        }
        conversation.messages.push(Message::assistant(history));
        let turn = (state.iterations + 1).to_string();
        let next = render(
            &settings.prompts.next_turn,
            &[
                ("turn", turn.as_str()),
                ("max_iterations", max_iterations.as_str()),
                ("query", query),
            ],
        );
        conversation.messages.push(Message::user(feedback(
            &blocks,
            &notes,
            &parsed,
            settings.output_limit,
            &next,
        )));
    }

    if state.status.is_none() {
        last_request(
            &scope,
            session.as_mut(),
            &mut conversation,
            query,
            &mut state,
            &log,
        )
        .await?;
    }
    if state.answer.is_none()
        && state.partial.is_none()
        && let Ok(Some(value)) = session.variable("answer").await
    {
        state.partial = Some(answer_content(&value));
    }
    let status = state.status.unwrap_or(Status::IterationLimit);
    let result = RunResult {
        run_id: scope.run_id.clone(),
        status,
        answer: state.answer.filter(|_| status.is_answered()),
        partial_answer: state.partial,
        iterations: state.iterations,
        usage: scope.account.spend().report(),
        subcalls: scope.account.subcalls(),
        trajectory: log.path().map(Path::to_path_buf),
        seconds: started.elapsed().as_secs_f64(),
        error: state.error,
    };
    log.write(&RunOutcome {
        run_id: result.run_id.clone(),
        status: result.status,
        answer: result.answer.clone(),
        partial_answer: result.partial_answer.clone(),
        iterations: result.iterations,
        usage: trace::usage_report(&result.usage),
        subcalls: result.subcalls,
        usage_summary: trace::usage_summary(&result.usage),
        seconds: result.seconds,
        error: result.error_message(),
    })?;
    emit(
        &scope,
        &Event::RunFinished {
            run_id: &scope.run_id,
            depth: scope.depth,
            status,
            iterations: state.iterations,
        },
    );
    Ok(result)
}

#[derive(Debug, Default)]
struct LoopState {
    iterations: u32,
    consecutive_errors: u32,
    status: Option<Status>,
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

/// Asks the root model, records usage, and reports progress.
async fn ask(
    scope: &RunScope,
    request: &ChatRequest,
) -> Result<ChatResponse, (Status, Option<rlm_llm::Error>)> {
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

/// The turns ran out: one request for a final answer, parsed like any reply.
async fn last_request(
    scope: &Arc<RunScope>,
    session: &mut dyn ReplSession,
    conversation: &mut ChatRequest,
    query: &str,
    state: &mut LoopState,
    log: &RunLog,
) -> Result<(), Error> {
    if let Some(reason) = scope.account.exhausted() {
        state.status = Some(status_from(reason));
        return Ok(());
    }
    let settings = &scope.shared.settings;
    let max_iterations = scope.account.limits().max_iterations.to_string();
    conversation.messages.push(Message::user(render(
        &settings.prompts.final_request,
        &[
            ("max_iterations", max_iterations.as_str()),
            ("query", query),
        ],
    )));
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
    let mut turn_usage = ModelTotals::default();
    turn_usage.add(&reply);
    let parsed = parse_reply(&reply.text);
    let mut notes = Vec::new();
    let mut answer = resolve_tag(session, parsed.answer.as_ref(), &mut notes).await;
    if answer.is_none() && parsed.answer.is_none() {
        // No tag at all: the model answered in prose, which is what was asked for.
        let text = reply.text.trim();
        answer = (!text.is_empty()).then(|| text.to_owned());
    }
    log.write(&Iteration {
        iteration: state.iterations,
        run_id: scope.run_id.clone(),
        prompt: trace::transcript(conversation),
        response: reply.text.clone(),
        code_blocks: Vec::new(),
        final_answer: answer.clone(),
        seconds: started.elapsed().as_secs_f64(),
        usage: trace::totals(&turn_usage),
        notes,
    })?;
    state.status = Some(if answer.is_some() {
        Status::ForcedAnswer
    } else {
        Status::IterationLimit
    });
    state.answer = answer;
    Ok(())
}

/// Turns an answer tag into the answer; a `FINAL_VAR` of a missing variable becomes a note for
/// the model instead.
async fn resolve_tag(
    session: &mut dyn ReplSession,
    tag: Option<&AnswerTag>,
    notes: &mut Vec<String>,
) -> Option<String> {
    match tag? {
        AnswerTag::Text(text) => Some(text.clone()),
        AnswerTag::Variable(name) if !is_identifier(name) => {
            notes.push(format!(
                "FINAL_VAR({name}) is not a variable name. Use FINAL_VAR(name) with the name of a \
                 REPL variable, or FINAL(answer) with the answer itself."
            ));
            None
        }
        AnswerTag::Variable(name) => match session.variable(name).await {
            Ok(Some(value)) => Some(value_text(&value)),
            Ok(None) => {
                notes.push(format!(
                    "FINAL_VAR({name}) was not accepted: no variable named `{name}` exists in the \
                     REPL. Create it in a ```repl block first, or answer with FINAL(answer)."
                ));
                None
            }
            Err(err) => {
                notes.push(format!("FINAL_VAR({name}) could not be read: {err}"));
                None
            }
        },
    }
}

/// `answer = {"content": ..., "ready": True}` finishes the run; any other `answer` is kept as
/// the best partial answer.
async fn read_answer_variable(
    session: &mut dyn ReplSession,
    state: &mut LoopState,
) -> Option<String> {
    let value = session.variable("answer").await.ok()??;
    let ready = value.get("ready").and_then(Value::as_bool) == Some(true);
    let content = answer_content(&value);
    if ready {
        return Some(content);
    }
    state.partial = Some(content);
    None
}

fn answer_content(value: &Value) -> String {
    match value.get("content") {
        Some(content) => value_text(content),
        None => value_text(value),
    }
}

fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

fn block_record(code: &str, outcome: ExecOutcome, subcalls: Vec<Subcall>) -> CodeBlock {
    CodeBlock {
        code: code.to_owned(),
        result: CodeResult {
            stdout: outcome.stdout,
            stderr: outcome.stderr,
            error: outcome.error,
            final_answer: outcome.final_answer,
            seconds: outcome.seconds,
            subcalls,
        },
    }
}

/// The user message after a turn: each block's output (fenced, truncated), notes, next turn.
fn feedback(
    blocks: &[CodeBlock],
    notes: &[String],
    parsed: &crate::parse::ParsedReply,
    limit: usize,
    next: &str,
) -> String {
    let mut out = String::new();
    for (index, block) in blocks.iter().enumerate() {
        let result = &block.result;
        let mut text = result.stdout.clone();
        if !result.stderr.is_empty() {
            text.push_str(&format!("\n[stderr]\n{}", result.stderr));
        }
        if let Some(error) = &result.error {
            text.push_str(&format!("\n[error]\n{error}"));
        }
        if text.trim().is_empty() {
            text = "(no output; print what you want to see)".to_owned();
        }
        let calls = result.subcalls.len();
        let header = if calls > 0 {
            format!("Output of block {} ({calls} sub-calls):\n", index + 1)
        } else {
            format!("Output of block {}:\n", index + 1)
        };
        out.push_str(&header);
        out.push_str(&fence(&truncate(text.trim_start_matches('\n'), limit)));
        out.push_str("\n\n");
    }
    if blocks.is_empty() && parsed.answer.is_none() {
        out.push_str(
            "Your reply had no ```repl block and no answer. Write code in a ```repl block, or \
             answer with FINAL(...) or FINAL_VAR(...) on its own line.\n\n",
        );
    }
    for note in notes {
        out.push_str(note);
        out.push_str("\n\n");
    }
    out.push_str(next);
    out
}

fn recursion_note(depth: u32, max_depth: u32) -> &'static str {
    if depth + 1 < max_depth {
        "each call starts a fresh REPL run of its own over the prompt (a recursive sub-run). Use it \
         for sub-tasks that themselves need code to solve; it is slower and costs more than \
         `llm_query`.\n"
    } else {
        "at this depth they are plain sub-model calls, exactly like `llm_query`.\n"
    }
}

fn emit(scope: &RunScope, event: &Event<'_>) {
    if let Some(sink) = &scope.shared.events {
        sink.event(event);
    }
}
