//! The commands for a program that embeds rlm in its own process — the Python package
//! (`crates/rlm-py`). Settings are read exactly as the CLI reads them (flags given as
//! arguments, then the environment, `rlm.toml`, the user file, defaults), results are the
//! records `--json` prints, and errors carry the CLI's `error:`/`hint:` text and exit code.
//!
//! Two ways in:
//! - [`run_command`]: any `rlm` command line, run on a thread of its own with its stdout
//!   collected (as `rlm mcp` runs its tools);
//! - [`completion`]: the RLM loop typed, so a caller can carry a [`Resume`] from one question
//!   to the next (the Python `RLM(persistent=True)`).
//!
//! Either stops, as Ctrl-C would stop the CLI (logs closed with `interrupted`), when the
//! caller's [`StopHandle`] asks: the embedding program keeps its own signal handlers.

use std::ffi::OsString;
use std::process::ExitCode;
use std::sync::{Arc, Once};

use clap::Parser as _;
pub use rlm_engine::Resume;
use rlm_engine::{ContextPart, RunResult};
pub use rlm_llm::{ApiKey, ProviderConfig, ProviderKind};
pub use rlm_sandbox::{WorkerCommand, worker_main};

use crate::cli::{Cli, LoopOptions};
use crate::error::Shown;
use crate::settings::{LoopSettings, Sources};
pub use crate::signals::StopHandle;

/// How a command ended: its exit code, what it printed on stdout (JSON lines with `--json`),
/// and the `error:`/`hint:` text of each error it reported.
#[derive(Debug)]
pub struct Finished {
    /// The CLI's exit code: 0, 1 (the task failed), 2 (bad input), 130 (stopped).
    pub code: u8,
    pub stdout: String,
    /// The error that ended it, then those it reported and went on after.
    pub errors: Vec<String>,
}

/// Runs `rlm ARGS…` (without the program name) in this process, on a thread of its own, and
/// waits for it. `providers` are set above every other source (a key or base URL the caller
/// passed). A panic in the command is a failed command, not the caller's.
pub fn run_command(
    args: Vec<OsString>,
    providers: Vec<ProviderConfig>,
    stop: Arc<StopHandle>,
) -> Finished {
    let mut argv = vec![OsString::from("rlm")];
    argv.extend(args);
    let cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(err) => {
            return Finished {
                code: if err.use_stderr() { 2 } else { 0 },
                stdout: if err.use_stderr() {
                    String::new()
                } else {
                    err.render().to_string()
                },
                errors: if err.use_stderr() {
                    vec![err.render().to_string().trim_end().to_owned()]
                } else {
                    Vec::new()
                },
            };
        }
    };
    init_process(&cli);
    let command = move || {
        crate::signals::with_stop_handle(stop, || {
            let sources = providers.into_iter().fold(
                Sources::from_process(cli.global.config.clone()),
                Sources::with_provider,
            );
            crate::commands::dispatch_with(cli, sources)
        })
    };
    let joined = std::thread::Builder::new()
        .name("rlm-embedded".to_owned())
        .spawn(move || crate::output::capture::run(command))
        .map(std::thread::JoinHandle::join);
    let (result, captured) = match joined {
        Ok(Ok(finished)) => finished,
        Ok(Err(_)) => {
            return Finished {
                code: 1,
                stdout: String::new(),
                errors: vec!["error: the command failed inside rlm (a bug: it panicked)".into()],
            };
        }
        Err(err) => {
            return Finished {
                code: 1,
                stdout: String::new(),
                errors: vec![format!(
                    "error: cannot start a thread for the command: {err}"
                )],
            };
        }
    };
    let mut errors = Vec::new();
    let code = match result {
        Ok(code) => exit_code(code),
        Err(err) => {
            let shown = Shown::of(&err);
            errors.push(shown.plain());
            exit_code(crate::error::report_code(&err))
        }
    };
    errors.extend(captured.reported);
    Finished {
        code,
        stdout: String::from_utf8_lossy(&captured.printed).into_owned(),
        errors,
    }
}

/// What a completion left: the `--json` result record, and what the next question of a
/// persistent session continues from.
#[derive(Debug)]
pub struct Completed {
    /// As `rlm --json run` prints it (`status`, `answer`, `usage`, `log`, …).
    pub record: serde_json::Value,
    /// The variables this run left and every conversation so far.
    pub resume: Resume,
}

/// One question through the RLM loop, built as `rlm run` builds it from `flags` (the loop's
/// flags: `--model`, `--max-depth`, `--max-cost`, `--log`, …), over `contexts`, continuing
/// from `resume`. The sandbox worker is [`set_worker_command`]'s, else this executable.
pub fn completion(
    flags: Vec<OsString>,
    query: &str,
    contexts: Vec<ContextPart>,
    resume: &Resume,
    providers: Vec<ProviderConfig>,
    stop: Arc<StopHandle>,
) -> Result<Completed, Finished> {
    let failed = |err: anyhow::Error| Finished {
        code: exit_code(crate::error::report_code(&err)),
        stdout: String::new(),
        errors: vec![Shown::of(&err).plain()],
    };
    let mut argv = vec![OsString::from("rlm run")];
    argv.extend(flags);
    let args = LoopFlags::try_parse_from(argv).map_err(|err| Finished {
        code: 2,
        stdout: String::new(),
        errors: vec![err.render().to_string().trim_end().to_owned()],
    })?;
    let sources = providers
        .into_iter()
        .fold(Sources::from_process(None), Sources::with_provider);
    let settings = LoopSettings::resolve(&args.flags, &sources).map_err(failed)?;
    let rlm = crate::engine::builder(settings)
        .and_then(|builder| builder.build().map_err(crate::error::engine_error))
        .map_err(failed)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| failed(anyhow::anyhow!("cannot start the async runtime: {err}")))?;
    let outcome = crate::signals::with_stop_handle(stop, || {
        runtime.block_on(async {
            tokio::select! {
                result = rlm.completion_resuming(query, contexts, resume) => Ok(result),
                signal = crate::signals::stop_requested() => Err(signal),
            }
        })
    });
    // The run's log gets its `interrupted` result as its future goes with the runtime.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    let result: RunResult = match outcome {
        Ok(result) => result.map_err(|err| failed(anyhow::Error::new(err)))?,
        Err(signal) => return Err(failed(crate::error::AppError::stopped(signal).into())),
    };
    let mut histories = resume.histories.clone();
    histories.push(result.conversation.clone());
    let next = Resume {
        variables: result
            .variables
            .as_ref()
            .map(|snapshot| snapshot.variables.clone())
            .unwrap_or_default(),
        histories,
    };
    Ok(Completed {
        record: serde_json::to_value(crate::commands::run::RunRecord::Result(
            crate::commands::run::RunSummary::of(&result),
        ))
        .unwrap_or_default(),
        resume: next,
    })
}

/// A context for [`completion`]: `text` described as a file named `name` would be.
pub fn context(text: String, name: Option<&str>) -> ContextPart {
    ContextPart::analyzed(text, name)
}

/// A context read from the file at `path` as `--context-file` reads it (named by the path as
/// given, its metadata analysed as it streams in); a file that cannot be read is a failed
/// command with the CLI's message.
pub fn context_file(path: &str) -> Result<ContextPart, Finished> {
    crate::contexts::file_part(std::path::Path::new(path)).map_err(|err| Finished {
        code: exit_code(crate::error::report_code(&err)),
        stdout: String::new(),
        errors: vec![Shown::of(&err).plain()],
    })
}

/// The program the sandbox starts as its worker (e.g. the Python interpreter importing the
/// extension and calling [`worker_main`]), instead of this executable. Set once, before the
/// first run.
pub fn set_worker_command(command: WorkerCommand) {
    crate::sandbox::set_worker_command(command);
}

/// The loop's flags alone, as `rlm run` reads them.
#[derive(Debug, clap::Parser)]
#[command(no_binary_name = false)]
struct LoopFlags {
    #[command(flatten)]
    flags: LoopOptions,
}

/// Colour and logging, once per process, from the first command's global flags.
fn init_process(cli: &Cli) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        crate::output::init_color(cli.global.color);
        crate::logging::init(&cli.global);
    });
}

/// The number behind an [`ExitCode`] (it keeps it private; every code it can hold is tried).
fn exit_code(code: ExitCode) -> u8 {
    (0..=u8::MAX)
        .find(|value| ExitCode::from(*value) == code)
        .unwrap_or(1)
}
