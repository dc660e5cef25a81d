//! Exact reply delays for the fake server.
//!
//! tokio's timer rounds a deadline up to its next millisecond tick and fires it when the
//! runtime next turns, about 1.2 ms late on a 2-core machine even when idle, and later when
//! the runtime is busy with other replies. A provider told to answer in 50 ms would then take
//! 51–53, and a benchmark would charge the difference to the client. So the server keeps its
//! delays on a thread of its own that sleeps until the earliest one (with the operating
//! system's precise timers) and wakes each waiting reply at its instant.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Instant;

use tokio::sync::oneshot;

/// The server's delays. Dropping it stops its thread.
#[derive(Default)]
pub(crate) struct Clock {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    timers: Mutex<Timers>,
    changed: Condvar,
}

#[derive(Default)]
struct Timers {
    /// Earliest first.
    queue: BinaryHeap<Reverse<Timer>>,
    /// Ties between equal instants are woken in the order they were set.
    next: u64,
    /// The thread was started (it is started with the first delay).
    running: bool,
    closed: bool,
}

struct Timer {
    at: Instant,
    order: u64,
    wake: oneshot::Sender<()>,
}

impl PartialEq for Timer {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.order) == (other.at, other.order)
    }
}

impl Eq for Timer {}

impl PartialOrd for Timer {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Timer {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.order).cmp(&(other.at, other.order))
    }
}

impl Clock {
    /// Waits until `at`. Cancel safe: a dropped wait is forgotten when its instant comes.
    pub(crate) async fn sleep_until(&self, at: Instant) {
        let (wake, woken) = oneshot::channel();
        if !self.set(at, wake) {
            // No thread to be had: tokio's timer, late by its tick, still ends the wait.
            tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
            return;
        }
        // The sender is dropped only with the clock, which outlives the server's handlers.
        let _ = woken.await;
    }

    /// Queues a timer, starting the thread with the first; false when no thread could start.
    fn set(&self, at: Instant, wake: oneshot::Sender<()>) -> bool {
        let mut timers = self.lock();
        let order = timers.next;
        timers.next += 1;
        let earliest = timers
            .queue
            .peek()
            .is_none_or(|Reverse(first)| at < first.at);
        timers.queue.push(Reverse(Timer { at, order, wake }));
        if !timers.running {
            let shared = Arc::clone(&self.shared);
            let started = std::thread::Builder::new()
                .name("fake-clock".to_owned())
                .spawn(move || keep_time(&shared));
            if started.is_err() {
                timers.queue.clear();
                return false;
            }
            timers.running = true;
        }
        if earliest {
            self.shared.changed.notify_one();
        }
        true
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Timers> {
        self.shared
            .timers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Clock {
    fn drop(&mut self) {
        self.lock().closed = true;
        self.shared.changed.notify_one();
    }
}

/// The clock's thread: wakes every timer whose instant has come, then sleeps until the next.
fn keep_time(shared: &Shared) {
    let mut timers = shared.timers.lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        if timers.closed {
            return;
        }
        let now = Instant::now();
        while timers
            .queue
            .peek()
            .is_some_and(|Reverse(first)| first.at <= now)
        {
            if let Some(Reverse(due)) = timers.queue.pop() {
                // The wait may have been dropped (the client hung up): nothing to wake.
                let _ = due.wake.send(());
            }
        }
        let next = timers.queue.peek().map(|Reverse(first)| first.at - now);
        timers = match next {
            Some(wait) => {
                shared
                    .changed
                    .wait_timeout(timers, wait)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
            }
            None => shared
                .changed
                .wait(timers)
                .unwrap_or_else(PoisonError::into_inner),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn delays_end_at_their_instant_in_order_whatever_order_they_were_set_in() {
        let clock = Arc::new(Clock::default());
        let start = Instant::now();
        let mut waits = tokio::task::JoinSet::new();
        for millis in [30u64, 10, 20, 10, 5] {
            let clock = Arc::clone(&clock);
            let at = start + Duration::from_millis(millis);
            waits.spawn(async move {
                clock.sleep_until(at).await;
                (millis, Instant::now())
            });
        }
        let mut woken = Vec::new();
        while let Some(joined) = waits.join_next().await {
            woken.push(joined.unwrap());
        }
        woken.sort_by_key(|(_, at)| *at);
        let order: Vec<u64> = woken.iter().map(|(millis, _)| *millis).collect();
        assert_eq!(order, [5, 10, 10, 20, 30]);
        for (millis, at) in woken {
            assert!(
                at >= start + Duration::from_millis(millis),
                "a {millis} ms delay ended early"
            );
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_nearer_delay_set_after_a_far_one_wakes_the_clock() {
        let clock = Arc::new(Clock::default());
        let far = {
            let clock = Arc::clone(&clock);
            tokio::spawn(async move {
                clock
                    .sleep_until(Instant::now() + Duration::from_secs(3600))
                    .await;
            })
        };
        // Let the far delay be set and the clock's thread sleep on it.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let near = clock.sleep_until(Instant::now() + Duration::from_millis(10));
        tokio::time::timeout(Duration::from_secs(10), near)
            .await
            .expect("the nearer delay ended while the far one was pending");
        far.abort();
    }

    #[tokio::test]
    async fn a_past_instant_ends_at_once_and_a_dropped_wait_harms_nothing() {
        let clock = Clock::default();
        let far = clock.sleep_until(Instant::now() + Duration::from_secs(3600));
        let cancelled = tokio::time::timeout(Duration::from_millis(5), far).await;
        assert!(cancelled.is_err());
        tokio::time::timeout(Duration::from_secs(5), clock.sleep_until(Instant::now()))
            .await
            .expect("a delay already due ends");
    }
}
