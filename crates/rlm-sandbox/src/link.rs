//! The session's connection to its interpreter: a worker process or an in-process thread.

use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::error::{Error, Result};
use crate::protocol::{FromWorker, ToWorker};
use crate::sandbox::WorkerCommand;
use crate::worker::{ThreadChannel, serve};

/// Bytes of worker stderr kept for diagnostics (allocation-failure messages and the like).
const STDERR_TAIL_BYTES: usize = 4096;

#[derive(Debug)]
pub(crate) enum Link {
    Process {
        child: Box<Child>,
        stdin: ChildStdin,
        stdout: Lines<BufReader<ChildStdout>>,
        stderr_tail: Arc<Mutex<String>>,
    },
    Thread {
        inbox: std::sync::mpsc::Sender<ToWorker>,
        outbox: UnboundedReceiver<FromWorker>,
    },
}

impl Link {
    pub(crate) fn spawn_process(command: &WorkerCommand) -> Result<Self> {
        let mut child = tokio::process::Command::new(&command.program)
            .args(&command.args)
            // Model code cannot read the environment anyway; an empty one leaks nothing either.
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| Error::Spawn {
                command: command.program.display().to_string(),
                source,
            })?;
        let (Some(stdin), Some(stdout), Some(mut stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(Error::WorkerLost(
                "the worker's pipes were not set up".to_owned(),
            ));
        };
        let stderr_tail = Arc::new(Mutex::new(String::new()));
        let tail = Arc::clone(&stderr_tail);
        tokio::spawn(async move {
            let mut buffer = [0_u8; 1024];
            while let Ok(read) = stderr.read(&mut buffer).await {
                if read == 0 {
                    break;
                }
                if let Ok(mut tail) = tail.lock() {
                    tail.push_str(&String::from_utf8_lossy(&buffer[..read]));
                    if tail.len() > STDERR_TAIL_BYTES {
                        let mut cut = tail.len() - STDERR_TAIL_BYTES;
                        while !tail.is_char_boundary(cut) {
                            cut += 1;
                        }
                        tail.drain(..cut);
                    }
                }
            }
        });
        Ok(Self::Process {
            child: Box::new(child),
            stdin,
            stdout: BufReader::new(stdout).lines(),
            stderr_tail,
        })
    }

    pub(crate) fn spawn_thread() -> Result<Self> {
        let (inbox, inbox_receiver) = std::sync::mpsc::channel();
        let (outbox_sender, outbox) = tokio::sync::mpsc::unbounded_channel();
        std::thread::Builder::new()
            .name("rlm-sandbox".to_owned())
            // Parsing deeply nested expressions recurses in Rust; give it room.
            .stack_size(64 << 20)
            .spawn(move || {
                serve(
                    &mut ThreadChannel {
                        inbox: inbox_receiver,
                        outbox: outbox_sender,
                    },
                    false,
                )
            })
            .map_err(Error::Io)?;
        Ok(Self::Thread { inbox, outbox })
    }

    pub(crate) fn can_kill(&self) -> bool {
        matches!(self, Self::Process { .. })
    }

    /// Cancel safety: a message is either fully written or the link is treated as broken.
    pub(crate) async fn send(&mut self, message: ToWorker) -> Result<()> {
        match self {
            Self::Process { stdin, .. } => {
                let mut line =
                    serde_json::to_vec(&message).map_err(|error| Error::Io(error.into()))?;
                line.push(b'\n');
                stdin.write_all(&line).await.map_err(Error::Io)?;
                stdin.flush().await.map_err(Error::Io)
            }
            Self::Thread { inbox, .. } => inbox
                .send(message)
                .map_err(|_| Error::WorkerLost("the interpreter thread has stopped".to_owned())),
        }
    }

    /// The next message; `None` when the worker has gone.
    pub(crate) async fn receive(&mut self) -> Option<FromWorker> {
        match self {
            Self::Process { stdout, .. } => {
                let line = stdout.next_line().await.ok()??;
                serde_json::from_str(&line).ok()
            }
            Self::Thread { outbox, .. } => outbox.recv().await,
        }
    }

    /// Kills the worker process (no-op for a thread, which cannot be killed).
    pub(crate) async fn kill(&mut self) {
        if let Self::Process { child, .. } = self {
            let _ = child.kill().await;
        }
    }

    /// Why the worker is gone: a plain phrase for the model and the technical detail (exit
    /// status, the end of its stderr) for logs and host errors.
    pub(crate) async fn death(&mut self) -> WorkerDeath {
        match self {
            Self::Process {
                child, stderr_tail, ..
            } => {
                let status =
                    tokio::time::timeout(std::time::Duration::from_secs(2), child.wait()).await;
                let tail = stderr_tail
                    .lock()
                    .map(|tail| tail.trim().to_owned())
                    .unwrap_or_default();
                match status {
                    Ok(Ok(status)) => WorkerDeath::classify(status.code(), status.signal(), &tail),
                    _ => {
                        let _ = child.kill().await;
                        WorkerDeath {
                            plain: "stopped answering".to_owned(),
                            detail: format!("no exit status within 2 s; stderr: {tail}"),
                        }
                    }
                }
            }
            Self::Thread { .. } => WorkerDeath {
                plain: "hit an internal interpreter error".to_owned(),
                detail: "the interpreter thread stopped (a panic inside the interpreter)"
                    .to_owned(),
            },
        }
    }
}

/// How a worker died, told twice: in plain words for the model (never Rust panic or allocator
/// text, which only confuses it) and in detail for logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WorkerDeath {
    /// Completes "The sandbox worker ...", e.g. `ran out of memory`.
    pub plain: String,
    /// Exit status and the end of the worker's stderr.
    pub detail: String,
}

impl WorkerDeath {
    fn classify(code: Option<i32>, signal: Option<i32>, stderr_tail: &str) -> Self {
        let status = match (code, signal) {
            (_, Some(signal)) => format!("signal {signal}"),
            (Some(code), None) => format!("exit status {code}"),
            (None, None) => "no exit status".to_owned(),
        };
        let plain = if stderr_tail.contains("has overflowed its stack") {
            "ran out of stack space (the code nests too deeply)".to_owned()
        } else if stderr_tail.contains("memory allocation of")
            || stderr_tail.contains("out of memory")
        {
            "ran out of memory".to_owned()
        } else if stderr_tail.contains("panicked") {
            "hit an internal interpreter error".to_owned()
        } else {
            match (code, signal) {
                (_, Some(libc::SIGKILL)) => "was killed".to_owned(),
                (_, Some(libc::SIGABRT)) => "aborted, most likely at the memory limit".to_owned(),
                (_, Some(libc::SIGSYS)) => "made a system call the sandbox forbids".to_owned(),
                // The only file the worker maps is a text context (for the helpers): a fault on
                // it means the file was shortened on disk while a helper read it.
                (_, Some(libc::SIGBUS)) => {
                    "crashed reading a context file that was shortened on disk".to_owned()
                }
                (_, Some(signal)) => format!("crashed (signal {signal})"),
                (Some(code), None) => format!("exited unexpectedly (status {code})"),
                (None, None) => "stopped".to_owned(),
            }
        };
        let detail = if stderr_tail.is_empty() {
            status
        } else {
            format!("{status}: {stderr_tail}")
        };
        Self { plain, detail }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deaths_are_told_plainly_and_keep_the_detail() {
        let panic = "thread 'main' panicked at src/vm.rs:12:5:\nindex out of bounds\n\
                     note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace";
        let death = WorkerDeath::classify(Some(101), None, panic);
        assert_eq!(death.plain, "hit an internal interpreter error");
        assert!(death.detail.contains("index out of bounds"), "{death:?}");
        let death = WorkerDeath::classify(
            None,
            Some(libc::SIGABRT),
            "memory allocation of 16000041 bytes failed",
        );
        assert_eq!(death.plain, "ran out of memory");
        let death = WorkerDeath::classify(
            None,
            Some(libc::SIGABRT),
            "thread 'main' has overflowed its stack\nfatal runtime error: stack overflow",
        );
        assert!(death.plain.contains("stack"), "{death:?}");
        assert_eq!(
            WorkerDeath::classify(None, Some(libc::SIGKILL), "").plain,
            "was killed"
        );
        assert!(
            WorkerDeath::classify(None, Some(libc::SIGBUS), "")
                .plain
                .contains("context file"),
        );
    }
}
