//! Stopping an operation: a [`StopHandle`] the front end holds (the CLI watches SIGINT and
//! SIGTERM with it, the Python package Ctrl-C, the MCP server a client's cancellation), and
//! [`Runtime::until_stopped`], the one way an operation runs async work that a stop request
//! ends. A stopped operation's future is dropped, so run and query logs close with
//! `interrupted`, and the operation returns an error of kind `Interrupted`.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::Duration;

use anyhow::Context as _;

/// Why an operation was asked to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopSignal {
    /// Ctrl-C, or a front end's own stop (the Python package, an MCP cancellation).
    Interrupt,
    /// SIGTERM.
    Terminate,
}

impl StopSignal {
    /// 128 + the signal's number.
    pub fn exit_code(self) -> u8 {
        match self {
            Self::Interrupt => 130,
            Self::Terminate => 143,
        }
    }

    /// What the error line says.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Interrupt => "interrupted",
            Self::Terminate => "terminated (SIGTERM)",
        }
    }
}

/// A request to stop, shared between a front end and the operations it runs: the command line
/// fires it on SIGINT and SIGTERM, the Python package on Ctrl-C, the MCP server when a client
/// cancels. Async work waits on it in [`Runtime::until_stopped`]; loops check
/// [`StopHandle::is_stopped`].
#[derive(Debug, Default)]
pub struct StopHandle {
    requested: AtomicBool,
    /// The [`StopSignal`] asked for, as `StopSignal as u8`.
    signal: AtomicU8,
    notify: tokio::sync::Notify,
}

impl StopHandle {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Asks the operation to stop, as Ctrl-C would.
    pub fn stop(&self) {
        self.stop_with(StopSignal::Interrupt);
    }

    /// Asks the operation to stop for `signal`.
    pub fn stop_with(&self, signal: StopSignal) {
        self.signal.store(signal as u8, Ordering::SeqCst);
        self.requested.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    /// Whether a stop was asked for.
    pub fn is_stopped(&self) -> bool {
        self.requested.load(Ordering::SeqCst)
    }

    fn asked(&self) -> StopSignal {
        if self.signal.load(Ordering::SeqCst) == StopSignal::Terminate as u8 {
            StopSignal::Terminate
        } else {
            StopSignal::Interrupt
        }
    }

    /// Resolves when a stop is asked for.
    ///
    /// Cancel safety: dropping it stops waiting; a stop asked for before or after is kept.
    pub async fn stopped(&self) -> StopSignal {
        loop {
            let notified = self.notify.notified();
            if self.is_stopped() {
                return self.asked();
            }
            notified.await;
        }
    }
}

/// How long an operation asked to stop by a signal has to end by itself before
/// [`watch_process_signals`] ends the process.
pub const SIGNAL_GRACE: Duration = Duration::from_secs(5);

/// Watches SIGINT and SIGTERM for the rest of the process's life, on a thread of its own (a
/// command-line program's choice; a program embedding rlm keeps its signals). The first fires
/// `stop`; a second signal, or an operation still running [`SIGNAL_GRACE`] later, ends the
/// process with the first signal's exit code, after `before_exit` (say what was kept).
pub fn watch_process_signals(stop: Arc<StopHandle>, before_exit: fn()) {
    let started = std::thread::Builder::new()
        .name("rlm-signals".to_owned())
        .spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            runtime.block_on(async {
                let first = next_signal().await;
                stop.stop_with(first);
                let _ = tokio::time::timeout(SIGNAL_GRACE, next_signal()).await;
                before_exit();
                std::process::exit(i32::from(first.exit_code()));
            });
        });
    if let Err(err) = started {
        tracing::warn!("cannot watch for Ctrl-C: {err}");
    }
}

/// The next SIGINT or SIGTERM; never, where they cannot be watched.
async fn next_signal() -> StopSignal {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let (Ok(mut interrupt), Ok(mut terminate)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            return tokio::select! {
                _ = interrupt.recv() => StopSignal::Interrupt,
                _ = terminate.recv() => StopSignal::Terminate,
            };
        }
    }
    std::future::pending().await
}

/// The async runtime of one operation. Built where an operation needs one (never on a
/// runtime's own thread: front ends call operations from plain threads), and shut down when
/// dropped, with two seconds for what is in flight.
#[derive(Debug)]
pub struct Runtime {
    inner: Option<tokio::runtime::Runtime>,
}

impl Runtime {
    pub fn new() -> anyhow::Result<Self> {
        let inner = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        Ok(Self { inner: Some(inner) })
    }

    /// Runs `future` to its end, which no stop request can cut short (a quick probe).
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        match &self.inner {
            Some(runtime) => runtime.block_on(future),
            // Taken only in `drop`.
            None => unreachable_runtime(),
        }
    }

    /// Runs `future` until it ends or `stop` asks; a stopped future is dropped (its logs close
    /// with `interrupted`) and the stop is an error of kind `Interrupted`.
    pub fn until_stopped<F: Future>(
        &self,
        stop: &StopHandle,
        future: F,
    ) -> anyhow::Result<F::Output> {
        let outcome = self.block_on(async {
            tokio::select! {
                output = future => Ok(output),
                signal = stop.stopped() => Err(signal),
            }
        });
        outcome.map_err(|signal| crate::error::AppError::stopped(signal).into())
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        // In-flight model calls and sandbox workers go with the runtime; a store read on a
        // blocking thread gets two seconds.
        if let Some(runtime) = self.inner.take() {
            runtime.shutdown_timeout(Duration::from_secs(2));
        }
    }
}

#[expect(
    clippy::panic,
    reason = "the runtime is taken out only when it is dropped"
)]
fn unreachable_runtime() -> ! {
    panic!("the runtime was used after it was shut down")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_ends_the_work_and_says_which_signal() {
        let runtime = Runtime::new().unwrap();
        let stop = StopHandle::new();
        stop.stop_with(StopSignal::Terminate);
        let err = runtime
            .until_stopped(&stop, std::future::pending::<()>())
            .unwrap_err();
        let shown = crate::error::Shown::of(&err);
        assert_eq!(
            shown.kind,
            crate::error::Kind::Interrupted(StopSignal::Terminate)
        );
        assert_eq!(shown.message, "terminated (SIGTERM)");
    }

    #[test]
    fn work_that_ends_first_gives_its_output() {
        let runtime = Runtime::new().unwrap();
        let stop = StopHandle::new();
        assert_eq!(runtime.until_stopped(&stop, async { 7 }).unwrap(), 7);
        assert!(!stop.is_stopped());
    }
}
