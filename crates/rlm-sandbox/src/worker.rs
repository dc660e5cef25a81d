//! The interpreter side: the loop a worker process (or thread) runs.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::ExitCode;

use crate::host::{FunctionError, FunctionSpec, RaisedKind, SubCallKind};
use crate::limits::Limits;
use crate::monty_glue::{ContextData, HostBridge, MontyInterpreter};
use crate::protocol::{ContextFile, ContextFormat, FromWorker, ToWorker};

/// Moves protocol messages between the worker loop and the session.
pub(crate) trait WorkerChannel {
    /// The next message, or `None` once the session has gone.
    fn receive(&mut self) -> Option<ToWorker>;
    /// Sends a message; `false` once the session has gone.
    fn send(&mut self, message: FromWorker) -> bool;
}

/// Entry point of the hidden worker mode (`rlm __sandbox-worker`): serves one session over
/// stdin/stdout as JSON lines, then exits. Not meant to be run by hand.
#[must_use]
pub fn worker_main() -> ExitCode {
    close_inherited_descriptors();
    let mut channel = PipeChannel {
        reader: BufReader::new(std::io::stdin().lock()),
        writer: BufWriter::new(std::io::stdout().lock()),
        line: String::new(),
    };
    serve(&mut channel, true);
    ExitCode::SUCCESS
}

/// Closes every file descriptor but standard input, output and error. A worker inherits what
/// its parent left open without close-on-exec (a descriptor `rlm`'s own parent passed down, a
/// library's socket): model code must not find a way out through one of them. Called first,
/// while nothing in this process owns a descriptor above 2.
fn close_inherited_descriptors() {
    #[cfg(target_os = "linux")]
    {
        #[allow(
            unsafe_code,
            reason = "close_range takes integers; nothing in the worker owns a descriptor yet"
        )]
        // SAFETY: called first in the worker process, before any code opened a descriptor
        // (the standard streams are 0-2 and are kept), so no Rust value owns one that closes.
        let closed = unsafe { libc::syscall(libc::SYS_close_range, 3_u32, u32::MAX, 0_u32) };
        if closed == 0 {
            return;
        }
        // Kernels before 5.9: close what /proc lists (the listing's own descriptor is gone
        // by the time the loop runs).
        let open: Vec<i32> = std::fs::read_dir("/proc/self/fd")
            .map(|entries| {
                entries
                    .flatten()
                    .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
                    .filter(|fd| *fd > 2)
                    .collect()
            })
            .unwrap_or_default();
        for fd in open {
            #[allow(
                unsafe_code,
                reason = "see above: no Rust value owns these descriptors"
            )]
            // SAFETY: as above; closing the listing's own, already closed descriptor fails
            // harmlessly with EBADF.
            unsafe {
                libc::close(fd);
            }
        }
    }
}

/// Serves one session: `Start`, then any number of requests until the channel closes.
pub(crate) fn serve(channel: &mut dyn WorkerChannel, process_mode: bool) {
    let Some(ToWorker::Start {
        contexts,
        meta,
        limits,
        os_limits,
        allow_reduced_protection,
        functions,
    }) = channel.receive()
    else {
        let _ = channel.send(FromWorker::StartFailed {
            message: "expected a start message".to_owned(),
        });
        return;
    };
    let confine = (os_limits && process_mode).then_some(ConfineSettings {
        allow_reduced_protection,
    });
    let (mut interpreter, confinement) =
        match start(&contexts, meta, &limits, confine, process_mode, functions) {
            Ok(started) => started,
            Err(message) => {
                let _ = channel.send(FromWorker::StartFailed { message });
                return;
            }
        };
    let (protection, reduced_protection) =
        confinement.map_or((None, None), |(applied, reduced)| (Some(applied), reduced));
    if !channel.send(FromWorker::Ready {
        protection,
        reduced_protection,
    }) {
        return;
    }
    while let Some(request) = channel.receive() {
        let reply = match request {
            ToWorker::Execute { code } => {
                let mut bridge = ChannelBridge {
                    channel: &mut *channel,
                };
                FromWorker::Done {
                    report: interpreter.execute(&code, &mut bridge),
                }
            }
            ToWorker::Variable { name, repr } => match interpreter.variable(&name, repr) {
                Some(Ok(text)) if text.len() > limits.max_answer_bytes => FromWorker::TooLarge {
                    message: too_large(&format!("the value of `{name}`"), text.len(), &limits),
                },
                value => FromWorker::Value { value },
            },
            ToWorker::Variables => FromWorker::Variables {
                variables: interpreter.variables(),
            },
            ToWorker::Start { .. }
            | ToWorker::HostReply { .. }
            | ToWorker::FunctionReply { .. } => FromWorker::StartFailed {
                message: "unexpected message".to_owned(),
            },
        };
        if !channel.send(reply) {
            return;
        }
    }
}

/// The message for a value over [`Limits::max_answer_bytes`], for the model and the log.
pub(crate) fn too_large(what: &str, size: usize, limits: &Limits) -> String {
    format!(
        "{what} is {}; the limit is {} — keep it in a variable and answer with a summary or a \
         part of it",
        crate::limits::format_size(size),
        crate::limits::format_size(limits.max_answer_bytes),
    )
}

/// Worker-process only: OS limits and confinement are applied.
struct ConfineSettings {
    allow_reduced_protection: bool,
}

/// What a confined worker reports: the protections in force, and what is missing (allowed).
type ConfinementReport = (String, Option<String>);

/// Loads the contexts, then (in a worker process) limits and confines the process, then builds
/// the interpreter. The order matters: after confinement no file can be opened. A worker process
/// maps text contexts for the native helpers ([`crate::context_text`]).
fn start(
    contexts: &[ContextFile],
    meta: Option<serde_json::Value>,
    limits: &Limits,
    confine: Option<ConfineSettings>,
    process_mode: bool,
    functions: Vec<FunctionSpec>,
) -> Result<(MontyInterpreter, Option<ConfinementReport>), String> {
    let mut loaded = Vec::with_capacity(contexts.len());
    // Bytes the interpreter will copy after the address-space cap is set: JSON values become
    // Monty objects, and a text the helpers could not map is copied for them.
    let mut copied_bytes = 0_u64;
    for context in contexts {
        loaded.push(match context.format {
            ContextFormat::Text => {
                let text = crate::context_text::load(&context.path, process_mode)?;
                if text.map.is_none() {
                    copied_bytes += text.text.len() as u64;
                }
                ContextData::Text(text)
            }
            ContextFormat::Json => {
                let bytes = std::fs::read(&context.path).map_err(|error| {
                    format!("cannot read context {}: {error}", context.path.display())
                })?;
                copied_bytes += bytes.len() as u64;
                ContextData::Json(serde_json::from_slice(&bytes).map_err(|error| {
                    format!(
                        "context {} is not valid JSON: {error}",
                        context.path.display()
                    )
                })?)
            }
        });
    }
    let mut report = None;
    if let Some(settings) = confine {
        // Room for what is mapped now (the interpreter's strings and the helpers' file maps are
        // already in the address space), the copies made after this point, and the model's own
        // data (`memory_bytes`).
        crate::os_limits::apply(
            limits
                .memory_bytes
                .saturating_add(copied_bytes.saturating_mul(2)),
        )?;
        let confinement = crate::confine::confine();
        let reduced = confinement.check(settings.allow_reduced_protection)?;
        report = Some((confinement.applied(), reduced));
    }
    let interpreter = MontyInterpreter::new(loaded, meta, limits.clone(), functions)?;
    Ok((interpreter, report))
}

/// Host calls from the interpreter, sent over the channel and answered synchronously.
struct ChannelBridge<'a> {
    channel: &'a mut dyn WorkerChannel,
}

impl HostBridge for ChannelBridge<'_> {
    fn call(
        &mut self,
        kind: SubCallKind,
        prompts: Vec<String>,
        model: Option<String>,
    ) -> Vec<Result<String, String>> {
        let count = prompts.len();
        let lost = || vec![Err("the host is gone".to_owned()); count];
        if !self.channel.send(FromWorker::HostCall {
            kind,
            prompts,
            model,
        }) {
            return lost();
        }
        match self.channel.receive() {
            Some(ToWorker::HostReply { results }) => results,
            _ => lost(),
        }
    }

    fn function(
        &mut self,
        name: String,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<serde_json::Value, FunctionError> {
        let lost = || FunctionError::new(RaisedKind::RuntimeError, "the host is gone");
        if !self
            .channel
            .send(FromWorker::FunctionCall { name, arguments })
        {
            return Err(lost());
        }
        match self.channel.receive() {
            Some(ToWorker::FunctionReply { result }) => result,
            _ => Err(lost()),
        }
    }
}

/// JSON lines over the worker process's stdin/stdout.
struct PipeChannel<R, W> {
    reader: R,
    writer: W,
    line: String,
}

impl<R: BufRead, W: Write> WorkerChannel for PipeChannel<R, W> {
    fn receive(&mut self) -> Option<ToWorker> {
        self.line.clear();
        match self.reader.read_line(&mut self.line) {
            Ok(0) | Err(_) => None,
            Ok(_) => serde_json::from_str(&self.line).ok(),
        }
    }

    fn send(&mut self, message: FromWorker) -> bool {
        serde_json::to_writer(&mut self.writer, &message).is_ok()
            && self.writer.write_all(b"\n").is_ok()
            && self.writer.flush().is_ok()
    }
}

/// In-process mode: typed messages over channels to the session's task.
pub(crate) struct ThreadChannel {
    pub inbox: std::sync::mpsc::Receiver<ToWorker>,
    pub outbox: tokio::sync::mpsc::UnboundedSender<FromWorker>,
}

impl WorkerChannel for ThreadChannel {
    fn receive(&mut self) -> Option<ToWorker> {
        self.inbox.recv().ok()
    }

    fn send(&mut self, message: FromWorker) -> bool {
        self.outbox.send(message).is_ok()
    }
}
