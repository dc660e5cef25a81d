//! The signals that ask a command to stop: Ctrl-C (SIGINT) and SIGTERM (`timeout`, a CI
//! runner cancelling a job, `docker stop`, `kill`). Both stop a command the same way — its
//! future is dropped, so the run or query logs `interrupted` — and the exit code says which
//! arrived, as shells report a death by that signal (130, 143).

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A stop request from the program that embeds rlm (the Python package on Ctrl-C): inside a
/// command run through [`crate::embedded`], it replaces the process's signals, which belong to
/// the embedding program.
#[derive(Debug, Default)]
pub struct StopHandle {
    requested: AtomicBool,
    notify: tokio::sync::Notify,
}

impl StopHandle {
    /// Asks the command to stop, as Ctrl-C would.
    pub fn stop(&self) {
        self.requested.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    async fn stopped(&self) {
        loop {
            let notified = self.notify.notified();
            if self.requested.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }
}

thread_local! {
    static EMBEDDED: RefCell<Option<Arc<StopHandle>>> = const { RefCell::new(None) };
}

/// Runs `f` on this thread with `handle`, not the process's signals, able to stop the command
/// it runs.
pub fn with_stop_handle<R>(handle: Arc<StopHandle>, f: impl FnOnce() -> R) -> R {
    EMBEDDED.set(Some(handle));
    let result = f();
    EMBEDDED.set(None);
    result
}

/// A request to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopSignal {
    /// Ctrl-C.
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

/// Resolves when SIGINT or SIGTERM arrives (or, in a command an embedding program runs, when
/// its [`StopHandle`] asks). Where SIGTERM cannot be watched, only Ctrl-C is.
///
/// Cancel safety: dropping it stops watching; a signal that arrived before it was first
/// polled is not seen.
pub async fn stop_requested() -> StopSignal {
    if let Some(handle) = EMBEDDED.with_borrow(Clone::clone) {
        handle.stopped().await;
        return StopSignal::Interrupt;
    }
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut terminate) = signal(SignalKind::terminate()) {
            return tokio::select! {
                _ = tokio::signal::ctrl_c() => StopSignal::Interrupt,
                _ = terminate.recv() => StopSignal::Terminate,
            };
        }
    }
    // Without a Ctrl-C handler either, nothing can be watched: never resolve.
    match tokio::signal::ctrl_c().await {
        Ok(()) => StopSignal::Interrupt,
        Err(_) => std::future::pending().await,
    }
}
