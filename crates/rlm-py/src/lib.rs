//! `rlm_rs._native`: the Rust side of the Python package. Deliberately small — a handful of
//! functions over [`rlm::embedded`] — and the Python side (`python/rlm_rs/`) gives them their
//! shape (classes, dataclasses, exceptions, `async` variants).
//!
//! Every long call releases the GIL and runs on a thread of its own; the calling thread checks
//! for Python signals every 50 ms, and on Ctrl-C (or any exception a signal handler raises)
//! asks the command to stop — it stops as the CLI does on Ctrl-C, logs closed — then re-raises.

use std::ffi::OsString;
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rlm::embedded::{self, ApiKey, Finished, ProviderConfig, ProviderKind, StopHandle};

/// How often a waiting call looks for Ctrl-C.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Runs `work` on a thread of its own with the GIL released, checking for Python signals while
/// it runs. A signal's exception stops the work through `stop` (it returns soon after, as a
/// stopped command) and is raised.
fn run_released<T: Send + 'static>(
    py: Python<'_>,
    stop: Arc<StopHandle>,
    work: impl FnOnce() -> T + Send + 'static,
) -> PyResult<T> {
    let (sender, receiver) = mpsc::channel();
    std::thread::Builder::new()
        .name("rlm-py-call".to_owned())
        .spawn(move || {
            // The caller may have gone after an error of its own.
            let _ = sender.send(work());
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
            Ok(value) => {
                return match raised {
                    Some(err) => Err(err),
                    None => Ok(value),
                };
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

/// `(exit code, stdout, errors)` of a finished command.
type Outcome = (u8, String, Vec<String>);

fn outcome(finished: Finished) -> Outcome {
    (finished.code, finished.stdout, finished.errors)
}

/// Runs `rlm ARGS…` in this process: `(exit code, stdout, error texts)`.
#[pyfunction]
#[pyo3(signature = (args, providers=Vec::new()))]
fn run_command(
    py: Python<'_>,
    args: Vec<String>,
    providers: Vec<ProviderSpec>,
) -> PyResult<Outcome> {
    let providers = self::providers(providers)?;
    let stop = Arc::new(StopHandle::default());
    let handle = Arc::clone(&stop);
    let args: Vec<OsString> = args.into_iter().map(OsString::from).collect();
    run_released(py, stop, move || {
        outcome(embedded::run_command(args, providers, handle))
    })
}

/// What a persistent `RLM` carries from one question to the next (opaque to Python).
#[pyclass(module = "rlm_rs._native")]
#[derive(Default)]
struct Continuation {
    resume: rlm::embedded::Resume,
}

/// One question through the RLM loop: `flags` as `rlm run` takes them, `contexts` as
/// `(name, text)`, then `files` read as `--context-file` reads them. Returns `(exit code, result JSON, errors, continuation)`: the JSON is
/// `rlm --json run`'s result record (empty on an error), the continuation what the next
/// question of a persistent session starts from.
#[pyfunction]
#[pyo3(signature = (flags, query, contexts, continuation=None, providers=Vec::new(), files=Vec::new()))]
fn completion(
    py: Python<'_>,
    flags: Vec<String>,
    query: String,
    contexts: Vec<(Option<String>, String)>,
    continuation: Option<PyRef<'_, Continuation>>,
    providers: Vec<ProviderSpec>,
    files: Vec<String>,
) -> PyResult<(u8, String, Vec<String>, Continuation)> {
    let providers = self::providers(providers)?;
    let resume = continuation
        .map(|continuation| continuation.resume.clone())
        .unwrap_or_default();
    let stop = Arc::new(StopHandle::default());
    let handle = Arc::clone(&stop);
    let flags: Vec<OsString> = flags.into_iter().map(OsString::from).collect();
    let finished = run_released(py, stop, move || {
        let mut parts: Vec<_> = contexts
            .into_iter()
            .map(|(name, text)| embedded::context(text, name.as_deref()))
            .collect();
        for file in files {
            parts.push(embedded::context_file(&file)?);
        }
        embedded::completion(flags, &query, parts, &resume, providers, handle)
    })?;
    Ok(match finished {
        Ok(completed) => (
            0,
            completed.record.to_string(),
            Vec::new(),
            Continuation {
                resume: completed.resume,
            },
        ),
        Err(failed) => (
            failed.code,
            String::new(),
            failed.errors,
            Continuation::default(),
        ),
    })
}

/// The sandbox worker's loop (the package starts the interpreter on it for model code):
/// serves one session over stdin/stdout and returns the exit status.
#[pyfunction]
fn sandbox_worker(py: Python<'_>) -> u8 {
    // The worker closes descriptors and confines itself; no Python runs meanwhile.
    py.detach(|| {
        let code = embedded::worker_main();
        u8::from(code != std::process::ExitCode::SUCCESS)
    })
}

/// Makes the sandbox start `program ARGS…` as its worker (set once, before the first run).
#[pyfunction]
fn set_worker(program: String, args: Vec<String>) {
    embedded::set_worker_command(embedded::WorkerCommand::new(program, args));
}

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(run_command, module)?)?;
    module.add_function(wrap_pyfunction!(completion, module)?)?;
    module.add_function(wrap_pyfunction!(sandbox_worker, module)?)?;
    module.add_function(wrap_pyfunction!(set_worker, module)?)?;
    module.add_class::<Continuation>()?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
