//! The check `SandboxBuilder::build` runs before any session: start one worker with no contexts
//! and see which OS protections it manages to apply on this machine. What a machine permits does
//! not change while a process runs, so each worker command is probed once per process: a
//! program that runs many sandboxes (the Python package's completions, `rlm mcp`'s calls) does
//! not start a worker for nothing before each run.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::{Mutex, PoisonError, mpsc};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::limits::Limits;
use crate::protocol::{FromWorker, ToWorker};
use crate::sandbox::WorkerCommand;

/// How long an empty worker may take to start and confine itself.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// What a worker process could lock down here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WorkerProtection {
    /// The protections in force.
    pub applied: Option<String>,
    /// What this machine lacks.
    pub missing: Option<String>,
}

/// Probes made in this process: the command, its limits and what its worker could apply.
/// Failed probes are not kept (the next build asks again).
static PROBED: Mutex<Vec<(WorkerCommand, Limits, WorkerProtection)>> = Mutex::new(Vec::new());

/// Most probes kept; past it the oldest goes.
const MOST_PROBES_KEPT: usize = 16;

/// What a worker started by `command` can apply here: asked once per process (see the module's
/// documentation), then remembered.
pub(crate) fn worker_protection(
    command: &WorkerCommand,
    limits: &Limits,
) -> Result<WorkerProtection> {
    let known = PROBED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .find(|(probed, probed_limits, _)| probed == command && probed_limits == limits)
        .map(|(_, _, protection)| protection.clone());
    if let Some(protection) = known {
        return Ok(protection);
    }
    let protection = probe(command, limits)?;
    let mut probed = PROBED.lock().unwrap_or_else(PoisonError::into_inner);
    if probed.len() >= MOST_PROBES_KEPT {
        probed.remove(0);
    }
    probed.push((command.clone(), limits.clone(), protection.clone()));
    Ok(protection)
}

/// Starts `command` as a worker, asks it to confine itself (allowing it to continue without a
/// protection so that it can say what is missing), and reads its answer.
fn probe(command: &WorkerCommand, limits: &Limits) -> Result<WorkerProtection> {
    let mut child = Command::new(&command.program)
        .args(&command.args)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|source| Error::Spawn {
            command: command.program.display().to_string(),
            source,
        })?;
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(Error::WorkerLost(
            "the worker's pipes were not set up".to_owned(),
        ));
    };
    let start = ToWorker::Start {
        functions: Vec::new(),
        contexts: Vec::new(),
        meta: None,
        limits: limits.clone(),
        os_limits: true,
        allow_reduced_protection: true,
    };
    let mut line = serde_json::to_vec(&start).map_err(|error| Error::Io(error.into()))?;
    line.push(b'\n');
    // Closing stdin after the start message makes the worker exit once it has answered.
    let written = stdin.write_all(&line).and_then(|()| stdin.flush());
    drop(stdin);
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut answer = String::new();
        let _ = BufReader::new(stdout).read_line(&mut answer);
        let _ = sender.send(answer);
    });
    let answer = receiver.recv_timeout(PROBE_TIMEOUT);
    let _ = child.kill();
    let _ = child.wait();
    written.map_err(Error::Io)?;
    let answer = answer.map_err(|_| {
        Error::WorkerStart("the worker did not answer a start message in time".to_owned())
    })?;
    match serde_json::from_str(&answer) {
        Ok(FromWorker::Ready {
            protection,
            reduced_protection,
        }) => Ok(WorkerProtection {
            applied: protection,
            missing: reduced_protection,
        }),
        Ok(FromWorker::StartFailed { message }) => Err(Error::WorkerStart(message)),
        Ok(other) => Err(Error::WorkerStart(format!(
            "unexpected first message {other:?}"
        ))),
        Err(_) if answer.is_empty() => Err(Error::WorkerStart(format!(
            "`{}` exited without answering; is it a sandbox worker?",
            command.program.display()
        ))),
        Err(error) => Err(Error::WorkerStart(format!(
            "the worker answered something unreadable: {error}"
        ))),
    }
}
