//! A live REPL session: the async API the engine calls.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::context::{ContextInput, PreparedContexts};
use crate::error::{Error, Result};
use crate::host::{Host, dispatch};
use crate::limits::Limits;
use crate::link::{Link, WorkerDeath};
use crate::monty_glue::is_identifier;
use crate::protocol::{FromWorker, ToWorker, Variable, WorkerReport};
use crate::result::{ExceptionInfo, ExecutionResult, SubCall, append_line};
use crate::sandbox::{Isolation, Sandbox};

/// How long a fresh worker may take to load its contexts before the start is abandoned.
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// A Python session whose variables persist across [`Session::execute`] calls.
///
/// Dropping the session kills its worker process and deletes its temporary context files.
pub struct Session {
    sandbox: Sandbox,
    contexts: PreparedContexts,
    meta: Option<serde_json::Value>,
    host: Arc<dyn Host>,
    /// The host's further functions, bound again in every replacement worker.
    functions: Vec<crate::host::FunctionSpec>,
    link: Link,
    /// Set while a request is in flight; still set on the next call means that call's future was
    /// dropped midway, so the worker's state is unknown and it gets replaced.
    in_flight: bool,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Session")
            .field("sandbox", &self.sandbox)
            .field("contexts", &self.contexts)
            .field("in_flight", &self.in_flight)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Starts a worker, loads the contexts into it and binds `context` (`context_0..n` when
    /// several), plus `contextMeta` when `meta` is given.
    ///
    /// # Errors
    /// When a context file cannot be written or read, the worker cannot start, or a context is
    /// not valid UTF-8 / JSON.
    pub async fn start(
        sandbox: &Sandbox,
        contexts: Vec<ContextInput>,
        meta: Option<serde_json::Value>,
        host: Arc<dyn Host>,
    ) -> Result<Self> {
        // Writing a 100 MB context to its file is blocking work.
        let contexts = tokio::task::spawn_blocking(move || PreparedContexts::prepare(contexts))
            .await
            .map_err(|error| Error::Io(std::io::Error::other(error)))??;
        let functions = host.functions();
        let link = start_link(sandbox, &contexts, meta.clone(), &functions).await?;
        Ok(Self {
            sandbox: sandbox.clone(),
            contexts,
            meta,
            host,
            functions,
            link,
            in_flight: false,
        })
    }

    /// The limits this session runs under.
    #[must_use]
    pub fn limits(&self) -> &Limits {
        &self.sandbox.limits
    }

    /// Runs a code cell and reports what happened. Python errors, timeouts, denied operations and
    /// even a crashed worker are reported in the result, not as `Err`.
    ///
    /// Cancel safety: dropping the future leaves the session usable; the next call replaces the
    /// worker (variables are lost, and that result says so).
    ///
    /// # Errors
    /// Only when a replacement worker cannot be started.
    pub async fn execute(&mut self, code: &str) -> Result<ExecutionResult> {
        let started = Instant::now();
        let mut result = ExecutionResult::default();
        if self.in_flight {
            let note = self.replace_worker(&Lost::Cancelled).await?;
            // The code below runs on the fresh worker; say why its variables are gone.
            append_line(&mut result.stderr, &format!("note: {note}"));
            result.worker_restarted = Some(note);
        }
        self.in_flight = true;
        let outcome = self.run(code, &mut result).await;
        self.in_flight = false;
        match outcome {
            Ok(report) => merge_report(&mut result, report),
            Err(lost) => {
                let note = self.replace_worker(&lost).await?;
                let kind = match lost {
                    Lost::Timeout(_) => "TimeoutError",
                    _ => "SandboxError",
                };
                append_line(&mut result.stderr, &format!("{kind}: {note}"));
                result.exception = Some(ExceptionInfo {
                    kind: kind.to_owned(),
                    message: note.clone(),
                    line: None,
                });
                result.worker_restarted = Some(note);
            }
        }
        result.duration = started.elapsed();
        Ok(result)
    }

    /// `str()` of a global variable, e.g. to resolve `FINAL_VAR(name)`. `Ok(None)` when no such
    /// variable exists.
    ///
    /// # Errors
    /// For a name that is not an identifier, or a worker that cannot be reached.
    pub async fn variable_str(&mut self, name: &str) -> Result<Option<String>> {
        self.variable(name, false).await
    }

    /// `repr()` of a global variable; `Ok(None)` when no such variable exists.
    ///
    /// # Errors
    /// For a name that is not an identifier, or a worker that cannot be reached.
    pub async fn variable_repr(&mut self, name: &str) -> Result<Option<String>> {
        self.variable(name, true).await
    }

    /// The session's variables with their type names (the contexts included).
    ///
    /// # Errors
    /// When the worker cannot be reached.
    pub async fn variables(&mut self) -> Result<Vec<Variable>> {
        match self.request(ToWorker::Variables).await? {
            FromWorker::Variables { variables } => Ok(variables),
            other => Err(Error::WorkerLost(format!("unexpected answer {other:?}"))),
        }
    }

    /// The session's variable names, sorted.
    ///
    /// # Errors
    /// When the worker cannot be reached.
    pub async fn variable_names(&mut self) -> Result<Vec<String>> {
        Ok(self
            .variables()
            .await?
            .into_iter()
            .map(|variable| variable.name)
            .collect())
    }

    async fn variable(&mut self, name: &str, repr: bool) -> Result<Option<String>> {
        if !is_identifier(name) {
            return Err(Error::InvalidName(name.to_owned()));
        }
        match self
            .request(ToWorker::Variable {
                name: name.to_owned(),
                repr,
            })
            .await?
        {
            FromWorker::Value { value: None } => Ok(None),
            FromWorker::Value {
                value: Some(Ok(text)),
            } => Ok(Some(text)),
            FromWorker::Value {
                value: Some(Err(error)),
            } => Ok(Some(format!("<str() failed: {error}>"))),
            FromWorker::TooLarge { message } => Err(Error::TooLarge(message)),
            other => Err(Error::WorkerLost(format!("unexpected answer {other:?}"))),
        }
    }

    /// A request with a direct answer (no host calls), bounded by the kill timeout.
    async fn request(&mut self, message: ToWorker) -> Result<FromWorker> {
        if self.in_flight {
            self.replace_worker(&Lost::Cancelled).await?;
        }
        self.in_flight = true;
        self.link.send(message).await?;
        let deadline = self.sandbox.limits.kill_after();
        let answer = tokio::time::timeout(deadline, self.link.receive()).await;
        self.in_flight = false;
        match answer {
            Ok(Some(answer)) => Ok(answer),
            Ok(None) => {
                let death = self.link.death().await;
                let detail = death.detail.clone();
                self.replace_worker(&Lost::Died(death)).await?;
                Err(Error::WorkerLost(detail))
            }
            Err(_) => {
                self.replace_worker(&Lost::Timeout(deadline)).await?;
                Err(Error::WorkerLost(
                    "the worker did not answer in time; it was replaced".to_owned(),
                ))
            }
        }
    }

    /// Drives one execution. `Err` means the worker is gone or must be replaced.
    async fn run(
        &mut self,
        code: &str,
        result: &mut ExecutionResult,
    ) -> Result<WorkerReport, Lost> {
        if let Err(error) = self
            .link
            .send(ToWorker::Execute {
                code: code.to_owned(),
            })
            .await
        {
            return Err(self.lost_link(&error).await);
        }
        let kill_after = self.sandbox.limits.kill_after();
        // Only time the worker spends computing counts; waiting on the host does not.
        let mut worker_time = Duration::ZERO;
        loop {
            let waiting_since = Instant::now();
            let budget = kill_after.saturating_sub(worker_time);
            let message = if self.link.can_kill() {
                match tokio::time::timeout(budget, self.link.receive()).await {
                    Ok(message) => message,
                    Err(_) => {
                        self.link.kill().await;
                        return Err(Lost::Timeout(kill_after));
                    }
                }
            } else {
                self.link.receive().await
            };
            worker_time += waiting_since.elapsed();
            match message {
                Some(FromWorker::Done { report }) => return Ok(report),
                Some(FromWorker::HostCall {
                    kind,
                    prompts,
                    model,
                }) => {
                    let prompt_chars: Vec<usize> = prompts
                        .iter()
                        .map(|prompt| prompt.chars().count())
                        .collect();
                    let asked_at = Instant::now();
                    let answers = dispatch(self.host.as_ref(), kind, prompts, model.clone()).await;
                    let latency = asked_at.elapsed();
                    for (index, (answer, prompt_chars)) in
                        answers.iter().zip(prompt_chars).enumerate()
                    {
                        result.sub_calls.push(SubCall {
                            kind,
                            batch_index: index,
                            model: model.clone(),
                            prompt_chars,
                            response_chars: match answer {
                                Ok(text) | Err(text) => text.chars().count(),
                            },
                            latency,
                            error: answer.as_ref().err().cloned(),
                        });
                    }
                    if let Err(error) = self
                        .link
                        .send(ToWorker::HostReply { results: answers })
                        .await
                    {
                        return Err(self.lost_link(&error).await);
                    }
                }
                Some(FromWorker::FunctionCall { name, arguments }) => {
                    let result = self.host.call_function(name, arguments).await;
                    if let Err(error) = self.link.send(ToWorker::FunctionReply { result }).await {
                        return Err(self.lost_link(&error).await);
                    }
                }
                Some(other) => return Err(Lost::Protocol(format!("unexpected {other:?}"))),
                None => return Err(Lost::Died(self.link.death().await)),
            }
        }
    }

    /// A send failed: usually the worker died just before; say how if it did.
    async fn lost_link(&mut self, error: &Error) -> Lost {
        let death = self.link.death().await;
        Lost::Died(WorkerDeath {
            detail: format!("{error}; {}", death.detail),
            ..death
        })
    }

    /// Replaces the worker; returns the note for the result: one plain sentence for the model
    /// (the technical detail goes to the log).
    async fn replace_worker(&mut self, lost: &Lost) -> Result<String> {
        let what = match lost {
            Lost::Timeout(after) => format!(
                "was stopped after the code ran {:.1} s without reaching a time check",
                after.as_secs_f64()
            ),
            Lost::Died(death) => {
                tracing::debug!(detail = %death.detail, "sandbox worker died");
                death.plain.clone()
            }
            Lost::Cancelled => "was in an unknown state after a cancelled call".to_owned(),
            Lost::Protocol(detail) => {
                tracing::warn!(%detail, "sandbox worker broke the protocol");
                "sent a message out of turn".to_owned()
            }
        };
        self.link.kill().await;
        self.link = start_link(
            &self.sandbox,
            &self.contexts,
            self.meta.clone(),
            &self.functions,
        )
        .await?;
        self.in_flight = false;
        Ok(format!(
            "The sandbox worker {what} and was replaced: all variables were reset and the \
             contexts were loaded again."
        ))
    }
}

/// Why a worker had to be replaced.
#[derive(Debug)]
enum Lost {
    /// Busy past the kill deadline.
    Timeout(Duration),
    /// The process ended.
    Died(WorkerDeath),
    /// An earlier call's future was dropped midway.
    Cancelled,
    /// The worker sent something unexpected.
    Protocol(String),
}

fn merge_report(result: &mut ExecutionResult, report: WorkerReport) {
    result.stdout = report.stdout;
    result.stdout_truncated_chars = report.stdout_truncated_chars;
    result.stderr.push_str(&report.stderr);
    result.exception = report.exception;
    result.final_answer = report.final_answer;
    result.denied_operations = report.denied_operations;
}

async fn start_link(
    sandbox: &Sandbox,
    contexts: &PreparedContexts,
    meta: Option<serde_json::Value>,
    functions: &[crate::host::FunctionSpec],
) -> Result<Link> {
    let mut link = match (sandbox.isolation, &sandbox.worker_command) {
        (Isolation::Process, Some(command)) => Link::spawn_process(command)?,
        (Isolation::Process, None) => {
            return Err(Error::Unavailable(
                "process isolation needs a worker command".to_owned(),
            ));
        }
        (Isolation::InProcess, _) => Link::spawn_thread()?,
    };
    link.send(ToWorker::Start {
        contexts: contexts.files.clone(),
        meta,
        limits: sandbox.limits.clone(),
        os_limits: true,
        allow_reduced_protection: sandbox.allow_reduced_protection,
        functions: functions.to_vec(),
    })
    .await?;
    match tokio::time::timeout(START_TIMEOUT, link.receive()).await {
        Ok(Some(FromWorker::Ready {
            reduced_protection, ..
        })) => {
            // `build` already warned about what it found missing; anything else is news.
            if let Some(missing) = reduced_protection
                && sandbox.reduced_protection.as_deref() != Some(missing.as_str())
            {
                tracing::warn!("the sandbox worker runs with REDUCED protection: {missing}");
            }
            Ok(link)
        }
        Ok(Some(FromWorker::StartFailed { message })) => Err(Error::WorkerStart(message)),
        Ok(Some(other)) => Err(Error::WorkerStart(format!(
            "unexpected first message {other:?}"
        ))),
        Ok(None) => Err(Error::WorkerStart(link.death().await.detail)),
        Err(_) => {
            link.kill().await;
            Err(Error::WorkerStart(
                "the worker did not load its contexts in time".to_owned(),
            ))
        }
    }
}
