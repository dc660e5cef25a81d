//! A provider's limiter: how many of its requests are in flight at once.
//!
//! A configured concurrency is a plain semaphore. A server on this machine that nobody
//! configured ([`ConcurrencyMode::Auto`]) is first asked what it serves at once (llama.cpp's
//! `/props` `total_slots`, TGI's `/info`, SGLang's `/get_server_info`: `server_props.rs`); that
//! number is then the limit. A server that says nothing (vLLM, a LiteLLM proxy, Ollama) gets an
//! adaptive limit: it starts
//! at [`ADAPTIVE_START_CONCURRENCY`] and, after each window of successes (as many in a row as
//! the limit) whose time to the first token stayed within [`LATENCY_TOLERANCE`] times the
//! fastest seen, doubles (slow start, as TCP's) until the first slower answer or overload, and
//! grows by one after that, up to the provider's `max_concurrency` ([`ADAPTIVE_MAX_CONCURRENCY`]
//! by default); it shrinks by one after a window of slower ones (requests queueing in the
//! server), and halves (floor 1) on every 429 or 503.
//! The decisions depend only on the order of outcomes and their latencies, so a test drives
//! them with the fake server without timing anything.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::{AcquireError, Semaphore, SemaphorePermit};

/// Where the adaptive limit starts: the one-slot server it replaces stays unqueued.
pub const ADAPTIVE_START_CONCURRENCY: usize = 1;

/// Default ceiling of the adaptive limit.
pub const ADAPTIVE_MAX_CONCURRENCY: usize = 16;

/// The most requests in flight at once any limit allows, configured or reported: far above
/// what one provider serves usefully, far below what a semaphore can count (a larger number
/// is held to this one).
pub const CONCURRENCY_CEILING: usize = 1_024;

/// A first token this many times slower than the fastest one seen means the request queued.
pub const LATENCY_TOLERANCE: u32 = 2;

/// How a provider's concurrency is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConcurrencyMode {
    /// `max_concurrency` requests at once: configured, or a hosted API's default.
    Fixed,
    /// A server on this machine nobody configured: what it reports, else adaptive, never over
    /// `max_concurrency`.
    Auto,
}

/// Why a provider's limit is what it is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ConcurrencySource {
    /// Configured, or a hosted API's default.
    Fixed,
    /// The server's own report (llama.cpp's `total_slots`).
    Server,
    /// Adapted to the server's answers so far.
    Adaptive,
}

/// A provider's limit as it stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Concurrency {
    /// Requests allowed in flight now.
    pub limit: usize,
    pub source: ConcurrencySource,
}

#[derive(Debug)]
struct State {
    limit: usize,
    ceiling: usize,
    source: ConcurrencySource,
    /// Whether the limit follows what the server reports (`Auto`).
    auto: bool,
    /// Whether an `Auto` limiter still has to ask the server.
    unprobed: bool,
    /// Permits to keep (not return) when they come back, after a shrink found them in use.
    debt: usize,
    fastest: Option<Duration>,
    fast_streak: usize,
    slow_streak: usize,
    /// Doubling after each quick window until the first slow answer or overload.
    slow_start: bool,
}

/// A provider's process-wide limiter.
#[derive(Debug)]
pub(crate) struct Limiter {
    semaphore: Semaphore,
    state: Mutex<State>,
}

/// A slot of the limiter, returned (or kept after a shrink) when dropped.
pub(crate) struct Permit<'a> {
    permit: Option<SemaphorePermit<'a>>,
    limiter: &'a Limiter,
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let mut state = self.limiter.lock();
        if let Some(permit) = self.permit.take()
            && state.debt > 0
        {
            state.debt -= 1;
            permit.forget();
        }
    }
}

impl Limiter {
    pub fn new(mode: ConcurrencyMode, max_concurrency: usize) -> Self {
        let ceiling = max_concurrency.clamp(1, CONCURRENCY_CEILING);
        let (limit, source) = match mode {
            ConcurrencyMode::Fixed => (ceiling, ConcurrencySource::Fixed),
            ConcurrencyMode::Auto => (
                ADAPTIVE_START_CONCURRENCY.min(ceiling),
                ConcurrencySource::Adaptive,
            ),
        };
        Self {
            semaphore: Semaphore::new(limit),
            state: Mutex::new(State {
                limit,
                ceiling,
                source,
                auto: mode == ConcurrencyMode::Auto,
                unprobed: mode == ConcurrencyMode::Auto,
                debt: 0,
                fastest: None,
                fast_streak: 0,
                slow_streak: 0,
                slow_start: true,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for a slot. Cancel safety: dropping the future gives up the place in the queue.
    pub async fn acquire(&self) -> Result<Permit<'_>, AcquireError> {
        let permit = self.semaphore.acquire().await?;
        Ok(Permit {
            permit: Some(permit),
            limiter: self,
        })
    }

    pub fn current(&self) -> Concurrency {
        let state = self.lock();
        Concurrency {
            limit: state.limit,
            source: state.source,
        }
    }

    /// Whether the server should be asked for its slots first (once).
    pub fn wants_probe(&self) -> bool {
        let mut state = self.lock();
        std::mem::replace(&mut state.unprobed, false)
    }

    /// The server reported `slots` requests at once: for an `Auto` limiter, that is the limit
    /// from now on, whatever `max_concurrency` says (the user did not set one); a fixed limit
    /// stays as configured.
    pub fn server_reported(&self, slots: usize) {
        let slots = slots.clamp(1, crate::server_props::MAX_REPORTED_SLOTS);
        let mut state = self.lock();
        state.unprobed = false;
        if !state.auto {
            return;
        }
        state.source = ConcurrencySource::Server;
        state.ceiling = slots;
        self.set_limit(&mut state, slots);
    }

    /// An attempt was answered; `first_token` is how long until its answer started.
    pub fn succeeded(&self, first_token: Duration) {
        let mut state = self.lock();
        if state.source != ConcurrencySource::Adaptive {
            return;
        }
        let fastest = *state.fastest.get_or_insert(first_token);
        if first_token < fastest {
            state.fastest = Some(first_token);
        }
        if first_token <= fastest.saturating_mul(LATENCY_TOLERANCE) {
            state.slow_streak = 0;
            state.fast_streak += 1;
            if state.fast_streak >= state.limit && state.limit < state.ceiling {
                let next = if state.slow_start {
                    state.limit * 2
                } else {
                    state.limit + 1
                }
                .min(state.ceiling);
                self.set_limit(&mut state, next);
            }
        } else {
            state.slow_start = false;
            state.fast_streak = 0;
            state.slow_streak += 1;
            if state.slow_streak >= state.limit && state.limit > 1 {
                let next = state.limit - 1;
                self.set_limit(&mut state, next);
            }
        }
    }

    /// An attempt was refused with `status`: 429 and 503 say the server is overloaded.
    pub fn refused(&self, status: u16) {
        if matches!(status, 429 | 503) {
            self.overloaded();
        }
    }

    /// The server said it is overloaded: halve the limit.
    pub fn overloaded(&self) {
        let mut state = self.lock();
        if state.source != ConcurrencySource::Adaptive {
            return;
        }
        state.slow_start = false;
        let next = (state.limit / 2).max(1);
        self.set_limit(&mut state, next);
    }

    /// Moves the limit, taking free permits away at once and the others as they come back.
    fn set_limit(&self, state: &mut State, limit: usize) {
        if limit != state.limit {
            tracing::debug!(from = state.limit, to = limit, source = ?state.source, "concurrency limit");
        }
        if limit > state.limit {
            let mut grow = limit - state.limit;
            let repaid = grow.min(state.debt);
            state.debt -= repaid;
            grow -= repaid;
            self.semaphore.add_permits(grow);
        } else if limit < state.limit {
            let shrink = state.limit - limit;
            let taken = self.semaphore.forget_permits(shrink);
            state.debt += shrink - taken;
        }
        state.limit = limit;
        state.fast_streak = 0;
        state.slow_streak = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FAST: Duration = Duration::from_millis(10);
    const SLOW: Duration = Duration::from_millis(50);

    #[test]
    fn a_fixed_limit_never_moves() {
        let limiter = Limiter::new(ConcurrencyMode::Fixed, 5);
        assert!(!limiter.wants_probe());
        limiter.overloaded();
        for _ in 0..20 {
            limiter.succeeded(FAST);
        }
        let current = limiter.current();
        assert_eq!(
            (current.limit, current.source),
            (5, ConcurrencySource::Fixed)
        );
        assert_eq!(limiter.semaphore.available_permits(), 5);
    }

    #[test]
    fn adaptive_doubles_per_window_of_fast_answers_up_to_the_ceiling() {
        let limiter = Limiter::new(ConcurrencyMode::Auto, 12);
        assert_eq!(limiter.current().limit, 1);
        limiter.succeeded(FAST);
        assert_eq!(limiter.current().limit, 2);
        limiter.succeeded(FAST);
        assert_eq!(
            limiter.current().limit,
            2,
            "a window is as long as the limit"
        );
        limiter.succeeded(FAST);
        assert_eq!(limiter.current().limit, 4);
        for _ in 0..4 {
            limiter.succeeded(FAST);
        }
        assert_eq!(limiter.current().limit, 8);
        for _ in 0..20 {
            limiter.succeeded(FAST);
        }
        assert_eq!(limiter.current().limit, 12, "never over the ceiling");
        assert_eq!(limiter.semaphore.available_permits(), 12);
    }

    #[test]
    fn after_the_first_slow_answer_growth_is_by_one() {
        let limiter = Limiter::new(ConcurrencyMode::Auto, 16);
        limiter.succeeded(FAST);
        limiter.succeeded(FAST);
        limiter.succeeded(FAST);
        assert_eq!(limiter.current().limit, 4);
        limiter.succeeded(SLOW);
        assert_eq!(
            limiter.current().limit,
            4,
            "one slow answer is not a window"
        );
        for _ in 0..4 {
            limiter.succeeded(FAST);
        }
        assert_eq!(limiter.current().limit, 5, "additive from now on");
    }

    #[test]
    fn queueing_holds_then_shrinks_and_overload_halves() {
        let limiter = Limiter::new(ConcurrencyMode::Auto, 16);
        for _ in 0..(1 + 2 + 4) {
            limiter.succeeded(FAST);
        }
        assert_eq!(limiter.current().limit, 8);
        // Slower first tokens: no growth, and after a whole window one less.
        for _ in 0..7 {
            limiter.succeeded(SLOW);
        }
        assert_eq!(limiter.current().limit, 8);
        limiter.succeeded(SLOW);
        assert_eq!(limiter.current().limit, 7);
        limiter.overloaded();
        assert_eq!(limiter.current().limit, 3);
        limiter.overloaded();
        limiter.overloaded();
        limiter.overloaded();
        assert_eq!(limiter.current().limit, 1);
        assert_eq!(limiter.semaphore.available_permits(), 1);
    }

    #[tokio::test]
    async fn a_shrink_takes_back_permits_in_use_as_they_return() {
        let limiter = Limiter::new(ConcurrencyMode::Auto, 16);
        limiter.server_reported(4);
        assert_eq!(limiter.current().source, ConcurrencySource::Server);
        let held: Vec<_> = futures::future::join_all((0..4).map(|_| limiter.acquire())).await;
        let mut state = limiter.lock();
        limiter.set_limit(&mut state, 1);
        drop(state);
        drop(held);
        assert_eq!(limiter.semaphore.available_permits(), 1);
        // Overload reports do not move a limit the server gave.
        limiter.overloaded();
        assert_eq!(limiter.current().limit, 1);
    }
}
