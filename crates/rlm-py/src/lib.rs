//! `rlm_rs._native`: the Rust side of the Python package. It calls `rlm-app`'s operations
//! directly: a request's fields come from Python objects (deserialized straight into the
//! operation's typed request by `pythonize`, no command line and no JSON text), its records go
//! back as Python objects with the field names `--json` prints, and its events reach a Python
//! callback. The Python half (`python/rlm_rs/`) gives them their shape (classes, dataclasses,
//! exceptions, `async` variants).
//!
//! Every call releases the GIL and runs its operation on a thread of its own; the calling
//! thread delivers events to the callback as they come and checks for Python signals every
//! 50 ms. On Ctrl-C (or any exception a signal handler raises) it asks the operation to stop —
//! it stops as the CLI does on Ctrl-C, logs closed — then re-raises.

use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

mod sandbox;
mod tools;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;
use rlm_app::requests::{
    ChatRequest, ChunkRequest, ConfigRequest, CtxAssembleRequest, CtxRequest, DeleteRequest,
    DoctorRequest, EmbedRequest, GrepRequest, InspectRequest, ListRequest, LoadRequest,
    LoopOptions, PeekRequest, PromptRequest, QueryRequest, ReindexRequest, RunRequest,
    SearchRequest, ShowRequest, StatusRequest, ViewRequest,
};
use rlm_app::settings::Sources;
use rlm_app::{Context, Event, Events, Outcome, ReplyLimit, Shown, StopHandle, operations};
use rlm_llm::{ApiKey, ProviderConfig, ProviderKind};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// How often a waiting call looks for Ctrl-C.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// What the operation's thread sends the calling thread.
enum Message {
    /// An event for the Python callback: its kind and its fields.
    Event(String, serde_json::Value),
    /// A custom tool's call, to run on the calling thread.
    Tool(tools::ToolRequest),
    /// The operation's end (its result is in the slot `run_released` reads).
    Done,
}

/// Runs `work` on a thread of its own with the GIL released; `on_event` hears its events on
/// this thread, as they come, and `tools` answers its tool calls here. A signal's exception
/// stops the work through `stop` (it returns soon after, as a stopped operation) and is raised.
fn run_released<T: Send + 'static>(
    py: Python<'_>,
    stop: Arc<StopHandle>,
    on_event: Option<&Py<PyAny>>,
    tools: Option<&Py<PyAny>>,
    work: impl FnOnce(Sender<Message>) -> T + Send + 'static,
) -> PyResult<T> {
    let (sender, receiver) = mpsc::channel();
    let events = sender.clone();
    let slot: Arc<Mutex<Option<T>>> = Arc::new(Mutex::new(None));
    let filled = Arc::clone(&slot);
    std::thread::Builder::new()
        .name("rlm-py-call".to_owned())
        .spawn(move || {
            let result = work(events);
            *filled.lock().unwrap_or_else(PoisonError::into_inner) = Some(result);
            // The caller may have gone after an error of its own.
            let _ = sender.send(Message::Done);
        })
        .map_err(|err| PyValueError::new_err(format!("cannot start a thread: {err}")))?;
    let mut raised: Option<PyErr> = None;
    let mut receiver = receiver;
    loop {
        // The receiver travels into the GIL-free closure and back (it is `Send`, not `Sync`).
        let (back, received) = py.detach(move || {
            let received = receiver.recv_timeout(SIGNAL_POLL);
            (receiver, received)
        });
        receiver = back;
        match received {
            Ok(Message::Done) => {
                let value = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
                return match (raised, value) {
                    (Some(err), _) => Err(err),
                    (None, Some(value)) => Ok(value),
                    (None, None) => Err(PyValueError::new_err(
                        "the call ended without a result (a bug in rlm)",
                    )),
                };
            }
            Ok(Message::Event(kind, fields)) => {
                if let Some(callback) = on_event
                    && raised.is_none()
                {
                    let fields = pythonize::pythonize(py, &fields)?;
                    // A callback's exception stops the operation and is raised after it.
                    if let Err(err) = callback.call1(py, (kind, fields)) {
                        stop.stop();
                        raised = Some(err);
                    }
                }
            }
            Ok(Message::Tool(request)) => {
                // Ctrl-C inside a tool (its KeyboardInterrupt) stops the run like Ctrl-C
                // anywhere else; the model code's call gets an error meanwhile.
                if let Err(err) = tools::answer(py, tools, request, raised.is_some()) {
                    stop.stop();
                    raised.get_or_insert(err);
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                if raised.is_none()
                    && let Err(err) = py.check_signals()
                {
                    stop.stop();
                    raised = Some(err);
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(raised.unwrap_or_else(|| {
                    PyValueError::new_err("the call ended without a result (a bug in rlm)")
                }));
            }
        }
    }
}

/// An operation's events, sent to the calling thread as `(kind, fields)`.
struct Forward {
    sender: Mutex<Sender<Message>>,
}

impl Events for Forward {
    fn event(&self, event: &Event<'_>) {
        let Some((kind, fields)) = describe(event) else {
            return;
        };
        let sender = self.sender.lock().unwrap_or_else(PoisonError::into_inner);
        // Nobody listens once the call has returned.
        let _ = sender.send(Message::Event(kind.to_owned(), fields));
    }
}

/// An event as the Python side sees it: a kind and plain fields.
fn describe(event: &Event<'_>) -> Option<(&'static str, serde_json::Value)> {
    use serde_json::json;
    Some(match event {
        Event::Info(text) => ("info", json!({ "text": text })),
        Event::Note(text) => ("note", json!({ "text": text })),
        Event::Warning(text) => ("warning", json!({ "text": text })),
        Event::Problem(err) => ("problem", json!({ "text": Shown::of(err).plain() })),
        Event::Run(event) => return describe_run(event),
        Event::Query(event) => ("query", json!({ "event": format!("{event:?}") })),
        Event::Loaded { report, seconds } => {
            ("loaded", json!({ "report": report, "seconds": seconds }))
        }
        Event::Embedded {
            chunks,
            model,
            seconds,
        } => (
            "embedded",
            json!({ "chunks": chunks, "model": model, "seconds": seconds }),
        ),
        _ => return None,
    })
}

/// A run's event (the root's or a child's) as the Python side sees it.
fn describe_run(event: &rlm_engine::Event) -> Option<(&'static str, serde_json::Value)> {
    use rlm_engine::Event as Run;
    use serde_json::json;
    Some(match event {
        Run::RunStarted {
            run_id,
            depth,
            model,
            log,
        } => (
            "run_started",
            json!({ "run_id": run_id, "depth": depth, "model": model, "log": log }),
        ),
        Run::IterationStarted {
            depth,
            iteration,
            max_iterations,
        } => (
            "iteration_started",
            json!({ "depth": depth, "iteration": iteration, "max_iterations": max_iterations }),
        ),
        Run::ModelReplied {
            depth,
            usage,
            progress,
        } => (
            "model_replied",
            json!({ "depth": depth, "usage": usage, "tokens": progress.tokens,
                    "cost_usd": progress.cost_usd }),
        ),
        Run::IterationFinished {
            depth,
            iteration,
            seconds,
        } => (
            "iteration_finished",
            json!({ "depth": depth, "iteration": iteration, "seconds": seconds }),
        ),
        Run::ChildRunStarted {
            depth,
            model,
            prompt_preview,
        } => (
            "child_run_started",
            json!({ "depth": depth, "model": model, "prompt_preview": prompt_preview }),
        ),
        Run::ChildRunFinished {
            depth,
            model,
            seconds,
            error,
        } => (
            "child_run_finished",
            json!({ "depth": depth, "model": model, "seconds": seconds, "error": error }),
        ),
        Run::CodeStarted { depth, code } => {
            ("code_started", json!({ "depth": depth, "code": code }))
        }
        Run::CodeFinished { depth, outcome } => (
            "code_finished",
            json!({ "depth": depth, "stdout": outcome.stdout, "error": outcome.error,
                    "seconds": outcome.seconds, "final_answer": outcome.final_answer }),
        ),
        Run::SubcallStarted {
            depth,
            kind,
            progress,
        } => (
            "subcall_started",
            json!({ "depth": depth, "kind": kind.name(), "in_flight": progress.subcalls_in_flight }),
        ),
        Run::SubcallFinished {
            depth,
            kind,
            failed,
            progress,
        } => (
            "subcall_finished",
            json!({ "depth": depth, "kind": kind.name(), "failed": failed,
                    "tokens": progress.tokens, "cost_usd": progress.cost_usd }),
        ),
        Run::RunFinished {
            run_id,
            depth,
            status,
            iterations,
        } => (
            "run_finished",
            json!({ "run_id": run_id, "depth": depth, "status": status.to_string(),
                    "iterations": iterations }),
        ),
        _ => return None,
    })
}

/// Providers the Python side sets: `(name, kind, base_url, api_key)`, kind `openai` or
/// `anthropic`.
type ProviderSpec = (String, String, String, Option<String>);

fn providers(specs: Vec<ProviderSpec>) -> PyResult<Vec<ProviderConfig>> {
    specs
        .into_iter()
        .map(|(name, kind, base_url, api_key)| {
            let kind = match kind.as_str() {
                "openai" => ProviderKind::OpenAi,
                "anthropic" => ProviderKind::Anthropic,
                other => {
                    return Err(PyValueError::new_err(format!(
                        "provider kind must be \"openai\" or \"anthropic\", not {other:?}"
                    )));
                }
            };
            let mut provider = ProviderConfig::new(name, kind, base_url);
            provider.api_key = api_key.map(ApiKey::new);
            Ok(provider)
        })
        .collect()
}

/// Where an operation works: the configuration file, the store, the providers the caller set.
struct Place {
    config: Option<PathBuf>,
    store: Option<PathBuf>,
    providers: Vec<ProviderConfig>,
    /// The most one answer carries (`max_reply_bytes`).
    reply: ReplyLimit,
}

impl Place {
    fn sources(self) -> Sources {
        let mut sources = self
            .providers
            .into_iter()
            .fold(Sources::from_process(self.config), Sources::with_provider);
        if let Some(store) = self.store {
            sources = sources.with_store(store);
        }
        sources
    }
}

/// How an operation ended, for the Python side: its records (as `--json` prints them), its
/// notes, the problems it reported and went on after, its exit status (0, 1, 2) and, when it
/// failed, the error's exit code and `error:`/`hint:` text.
#[pyclass(module = "rlm_rs._native", get_all, frozen)]
struct Finished {
    records: Py<PyList>,
    notes: Vec<String>,
    problems: Vec<String>,
    status: u8,
    error: Option<(u8, String)>,
    /// Where the next page starts, when the answer stopped at its reply ceiling.
    next_cursor: Option<String>,
}

/// An operation's end before its records are Python objects.
struct Ended<T> {
    outcome: Result<Outcome<T>, (u8, String)>,
    problems: Vec<String>,
}

fn ended<T>(result: anyhow::Result<Outcome<T>>, problems: &Problems) -> Ended<T> {
    Ended {
        outcome: result.map_err(|err| failure(&err)),
        problems: problems.take(),
    }
}

/// An error's exit code and plain text.
fn failure(err: &anyhow::Error) -> (u8, String) {
    (rlm_app::error::exit_code(err), Shown::of(err).plain())
}

fn finish<T: Serialize>(py: Python<'_>, ended: Ended<T>) -> PyResult<Finished> {
    let Ended { outcome, problems } = ended;
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(error) => {
            return Ok(Finished {
                records: PyList::empty(py).unbind(),
                notes: Vec::new(),
                problems,
                status: error.0,
                error: Some(error),
                next_cursor: None,
            });
        }
    };
    let records = PyList::empty(py);
    for record in &outcome.records {
        records.append(pythonize::pythonize(py, record)?)?;
    }
    let error = outcome.error.as_ref().map(failure);
    Ok(Finished {
        records: records.unbind(),
        notes: outcome.notes,
        problems,
        status: error
            .as_ref()
            .map_or(outcome.status.code(), |error| error.0),
        error,
        next_cursor: outcome.next_cursor,
    })
}

/// The problems an operation reported, kept apart from the events the callback hears.
#[derive(Clone, Default)]
struct Problems(Arc<Mutex<Vec<String>>>);

impl Problems {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Forwards events to the calling thread and keeps the problems.
struct Heard {
    forward: Forward,
    problems: Problems,
}

impl Events for Heard {
    fn event(&self, event: &Event<'_>) {
        if let Event::Problem(err) = event {
            self.problems
                .0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(Shown::of(err).plain());
        }
        self.forward.event(event);
    }
}

type Operation<R, T> = fn(&Sources, &R, &Context) -> anyhow::Result<Outcome<T>>;

/// Deserializes `request` into `R` (a field it does not know is an error naming it) and runs
/// `operation` on it.
fn operate<R, T>(
    py: Python<'_>,
    request: &Bound<'_, PyAny>,
    place: Place,
    on_event: Option<Py<PyAny>>,
    operation: Operation<R, T>,
) -> PyResult<Finished>
where
    R: DeserializeOwned + Send + 'static,
    T: Serialize + Send + 'static,
{
    let request: R = parse(request)?;
    let stop = StopHandle::new();
    let handle = Arc::clone(&stop);
    let limit = place.reply;
    let ended = run_released(
        py,
        Arc::clone(&stop),
        on_event.as_ref(),
        None,
        move |sender| {
            let problems = Problems::default();
            let events = Heard {
                forward: Forward {
                    sender: Mutex::new(sender),
                },
                problems: problems.clone(),
            };
            let context = Context::new(Arc::new(events), handle).with_reply_limit(limit);
            let result = operation(&place.sources(), &request, &context)
                .and_then(|outcome| rlm_app::reply::bounded(outcome, limit));
            ended(result, &problems)
        },
    )?;
    finish(py, ended)
}

/// A request from a Python mapping; an unknown key is refused, named.
fn parse<R: DeserializeOwned>(request: &Bound<'_, PyAny>) -> PyResult<R> {
    let mut unknown = Vec::new();
    let mut deserializer = pythonize::Depythonizer::from_object(request);
    let parsed: R = serde_ignored::deserialize(&mut deserializer, |path| {
        unknown.push(path.to_string());
    })
    .map_err(|err| PyValueError::new_err(format!("invalid arguments: {err}")))?;
    if let Some(name) = unknown.first() {
        return Err(PyValueError::new_err(format!("unknown argument `{name}`")));
    }
    Ok(parsed)
}

/// A page of the request's answer from its `cursor` on (these can be asked again for more).
fn search(
    sources: &Sources,
    request: &SearchRequest,
    context: &Context,
) -> anyhow::Result<Outcome<serde_json::Value>> {
    let outcome = operations::search(sources, request, context)?;
    rlm_app::reply::paged(outcome, context.reply, request.cursor.as_deref(), request)
}

fn list(
    sources: &Sources,
    request: &ListRequest,
    context: &Context,
) -> anyhow::Result<Outcome<serde_json::Value>> {
    let outcome = operations::list(sources, request, context)?;
    rlm_app::reply::paged(outcome, context.reply, request.cursor.as_deref(), request)
}

fn show(
    sources: &Sources,
    request: &ShowRequest,
    context: &Context,
) -> anyhow::Result<Outcome<serde_json::Value>> {
    let outcome = operations::show(sources, request, context)?;
    rlm_app::reply::paged(outcome, context.reply, request.cursor.as_deref(), request)
}

fn ctx_assemble(
    sources: &Sources,
    request: &CtxAssembleRequest,
    context: &Context,
) -> anyhow::Result<Outcome<operations::ctx::PlanRecord>> {
    let dir = operations::ctx::ctx_dir(request.dir.as_deref(), sources);
    operations::ctx::assemble(sources, &dir, &request.build, context)
}

/// Runs the operation `operation` with `request`'s fields (a dict), over `store` and `config`
/// when given, with `providers` set above the configuration; `on_event(kind, fields)` hears
/// its progress.
#[pyfunction]
#[pyo3(signature = (operation, request, store=None, config=None, providers=Vec::new(), on_event=None, max_reply_bytes=None))]
#[expect(
    clippy::too_many_arguments,
    reason = "a Python function's keyword arguments"
)]
fn call(
    py: Python<'_>,
    operation: &str,
    request: &Bound<'_, PyAny>,
    store: Option<PathBuf>,
    config: Option<PathBuf>,
    providers: Vec<ProviderSpec>,
    on_event: Option<Py<PyAny>>,
    max_reply_bytes: Option<usize>,
) -> PyResult<Finished> {
    // What reads the store answers within the ceiling; what the caller's program asked to
    // make (a run's answer, a page, a prompt) is its own to hold.
    let reads = ["list", "show", "peek", "grep", "search"];
    let reply = match max_reply_bytes {
        None if !reads.contains(&operation) => ReplyLimit::UNLIMITED,
        None => ReplyLimit::DEFAULT,
        Some(bytes) => ReplyLimit::bytes(bytes)
            .map_err(|err| PyValueError::new_err(Shown::of(&err).plain()))?,
    };
    let place = Place {
        config,
        store,
        providers: self::providers(providers)?,
        reply,
    };
    let inspect = |sources: &Sources, request: &InspectRequest, context: &Context| {
        let _ = sources;
        operations::inspect(request, context)
    };
    let chunk = |sources: &Sources, request: &ChunkRequest, context: &Context| {
        let _ = sources;
        operations::chunk(request, context)
    };
    match operation {
        "inspect" => operate(py, request, place, on_event, inspect),
        "chunk" => operate(py, request, place, on_event, chunk),
        "load" => operate::<LoadRequest, _>(py, request, place, on_event, operations::load),
        "list" => operate::<ListRequest, _>(py, request, place, on_event, list),
        "show" => operate::<ShowRequest, _>(py, request, place, on_event, show),
        "peek" => operate::<PeekRequest, _>(py, request, place, on_event, operations::peek),
        "grep" => operate::<GrepRequest, _>(py, request, place, on_event, operations::grep::page),
        "search" => operate::<SearchRequest, _>(py, request, place, on_event, search),
        "delete" => operate::<DeleteRequest, _>(py, request, place, on_event, operations::delete),
        "status" => operate::<StatusRequest, _>(py, request, place, on_event, operations::status),
        "doctor" => operate::<DoctorRequest, _>(py, request, place, on_event, operations::doctor),
        "reindex" => {
            operate::<ReindexRequest, _>(py, request, place, on_event, operations::reindex)
        }
        "embed" => operate::<EmbedRequest, _>(py, request, place, on_event, operations::embed),
        "run" => operate::<RunRequest, _>(py, request, place, on_event, operations::run),
        "query" => operate::<QueryRequest, _>(py, request, place, on_event, operations::query),
        "chat" => operate::<ChatRequest, _>(py, request, place, on_event, operations::chat),
        "ctx" => operate::<CtxRequest, _>(py, request, place, on_event, operations::ctx),
        "ctx_assemble" => operate(py, request, place, on_event, ctx_assemble),
        "prompt" => operate::<PromptRequest, _>(py, request, place, on_event, operations::prompt),
        "view" => operate::<ViewRequest, _>(py, request, place, on_event, operations::view),
        "config" => operate::<ConfigRequest, _>(py, request, place, on_event, operations::config),
        other => Err(PyValueError::new_err(format!(
            "unknown operation {other:?}"
        ))),
    }
}

/// What a persistent `RLM` carries from one question to the next (opaque to Python).
#[pyclass(module = "rlm_rs._native")]
#[derive(Default)]
struct Continuation {
    resume: rlm_engine::Resume,
}

/// One question through the RLM loop: `options` are the loop's (models, budgets, log), the
/// contexts are `(name, text)` pairs, then files read as `--context-file` reads them; `tools`
/// and `sub_tools` declare the custom tools of the root run and of its child runs (`None`:
/// the root's), whose callables `tool_dispatch(table, name, arguments, seconds)` calls on this
/// thread. Returns how it ended and what the next question of a persistent session continues
/// from (`None` when it failed: the session stays as it was).
#[pyfunction]
#[pyo3(signature = (options, query, contexts, continuation=None, providers=Vec::new(), files=Vec::new(), config=None, on_event=None, tools=None, sub_tools=None, tool_dispatch=None, tool_timeout=60.0))]
#[expect(
    clippy::too_many_arguments,
    reason = "a Python function's keyword arguments"
)]
fn completion(
    py: Python<'_>,
    options: &Bound<'_, PyAny>,
    query: String,
    contexts: Vec<(Option<String>, String)>,
    continuation: Option<PyRef<'_, Continuation>>,
    providers: Vec<ProviderSpec>,
    files: Vec<String>,
    config: Option<PathBuf>,
    on_event: Option<Py<PyAny>>,
    tools: Option<&Bound<'_, PyAny>>,
    sub_tools: Option<&Bound<'_, PyAny>>,
    tool_dispatch: Option<Py<PyAny>>,
    tool_timeout: f64,
) -> PyResult<(Finished, Option<Continuation>)> {
    let options: LoopOptions = parse(options)?;
    if !(tool_timeout.is_finite() && tool_timeout > 0.0) {
        return Err(PyValueError::new_err(format!(
            "tool_timeout must be a number of seconds above 0, not {tool_timeout}"
        )));
    }
    let declaration = tools::Declaration {
        root: tools.map(parse).transpose()?,
        children: sub_tools.map(parse).transpose()?,
        timeout: Duration::from_secs_f64(tool_timeout),
    };
    let place = Place {
        config,
        store: None,
        providers: self::providers(providers)?,
        // A completion's answer is the caller's to hold, as the reference's is.
        reply: ReplyLimit::UNLIMITED,
    };
    let resume = continuation
        .map(|continuation| continuation.resume.clone())
        .unwrap_or_default();
    let stop = StopHandle::new();
    let handle = Arc::clone(&stop);
    let work = move |sender: Sender<Message>| {
        let problems = Problems::default();
        let toolboxes = declaration.toolboxes(&sender);
        let events = Heard {
            forward: Forward {
                sender: Mutex::new(sender),
            },
            problems: problems.clone(),
        };
        let context = Context::new(Arc::new(events), handle);
        let failed = |err: anyhow::Error| (ended(Err(err), &problems), None);
        let toolboxes = match toolboxes {
            Ok(toolboxes) => toolboxes,
            Err(err) => return failed(rlm_app::error::engine_error(err)),
        };
        let mut parts: Vec<rlm_engine::ContextPart> = contexts
            .into_iter()
            .map(|(name, text)| rlm_engine::ContextPart::analyzed(text, name.as_deref()))
            .collect();
        for file in files {
            let part = rlm_app::contexts::file_part(std::path::Path::new(&file))
                .and_then(|part| rlm_app::contexts::refuse_binary(&part).map(|()| part));
            match part {
                Ok(part) => parts.push(part),
                Err(err) => return failed(err),
            }
        }
        let sources = place.sources();
        let completed = operations::run::completion(
            &sources, &options, &query, parts, toolboxes, &resume, &context,
        );
        match completed {
            Ok(completed) => (
                ended(Ok(completed.outcome), &problems),
                Some(completed.resume),
            ),
            Err(err) => failed(err),
        }
    };
    let (ended, resume) = run_released(py, stop, on_event.as_ref(), tool_dispatch.as_ref(), work)?;
    // A question that failed leaves the session as it was (`None`).
    let continuation = resume.map(|resume| Continuation { resume });
    Ok((finish(py, ended)?, continuation))
}

/// The sandbox worker's loop (the package starts the interpreter on it for model code):
/// serves one session over stdin/stdout and returns the exit status.
#[pyfunction]
fn sandbox_worker(py: Python<'_>) -> u8 {
    // The worker closes descriptors and confines itself; no Python runs meanwhile.
    py.detach(|| {
        let code = rlm_sandbox::worker_main();
        u8::from(code != std::process::ExitCode::SUCCESS)
    })
}

/// Makes the sandbox start `program ARGS…` as its worker (set once, before the first run).
#[pyfunction]
fn set_worker(program: String, args: Vec<String>) {
    rlm_app::sandbox::set_worker_command(rlm_sandbox::WorkerCommand::new(program, args));
}

/// The JSON schema of an operation's request (its fields and their types), for the Python
/// side's argument checks.
#[pyfunction]
fn request_schema(py: Python<'_>, operation: &str) -> PyResult<Py<PyAny>> {
    let schema = match operation {
        "query" => schemars::schema_for!(QueryRequest),
        "run" | "completion" => schemars::schema_for!(LoopOptions),
        "search" => schemars::schema_for!(SearchRequest),
        "load" => schemars::schema_for!(LoadRequest),
        "prompt_build" => schemars::schema_for!(rlm_app::requests::PromptBuildRequest),
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown operation {other:?}"
            )));
        }
    };
    Ok(pythonize::pythonize(py, &schema)?.unbind())
}

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(call, module)?)?;
    module.add_function(wrap_pyfunction!(completion, module)?)?;
    module.add_function(wrap_pyfunction!(request_schema, module)?)?;
    module.add_function(wrap_pyfunction!(sandbox_worker, module)?)?;
    module.add_function(wrap_pyfunction!(set_worker, module)?)?;
    module.add_class::<Continuation>()?;
    module.add_class::<sandbox::Sandbox>()?;
    module.add_class::<Finished>()?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
