//! The signals that ask a command to stop: Ctrl-C (SIGINT) and SIGTERM (`timeout`, a CI
//! runner cancelling a job, `docker stop`, `kill`). Both stop a command the same way — its
//! future is dropped, so the run or query logs `interrupted` — and the exit code says which
//! arrived, as shells report a death by that signal (130, 143).

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

/// Resolves when SIGINT or SIGTERM arrives. Where SIGTERM cannot be watched, only Ctrl-C is.
///
/// Cancel safety: dropping it stops watching; a signal that arrived before it was first
/// polled is not seen.
pub async fn stop_requested() -> StopSignal {
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
