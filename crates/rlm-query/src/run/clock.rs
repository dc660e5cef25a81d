//! The query's clock: how long the plan, the extraction and the report may take.
//!
//! With `--timeout T` the whole query ends by `T`: the plan call gets at most a fifth of it
//! (then the default plan is used), batches are sent until four fifths, and the report is
//! written from what was found by `T` (when it cannot be, the findings are returned as they
//! are). Without one, the plan call gets [`DEFAULT_SECONDS_PER_ROUND`], and the extraction a
//! default sized from the batches, the slots the sub-call model's server serves at once now,
//! and, once the first batch is back, how long that batch took.

use std::time::{Duration, Instant};

use super::QueryRun;
use crate::events::QueryEvent;
use crate::options::DEFAULT_SECONDS_PER_ROUND;
use crate::pipeline::{QueryResult, TimeLimit};

/// The part of `--timeout` the plan call may use.
const PLAN_SHARE: u32 = 5;
/// The part of `--timeout` kept for the report after the last batch is sent.
const REPORT_SHARE: u32 = 5;
/// How many times the first batch's time a round of batches is given, at least.
const ROUND_MARGIN: f64 = 2.0;

/// `started + after` as a tokio instant.
pub(super) fn at(started: Instant, after: Duration) -> tokio::time::Instant {
    tokio::time::Instant::from_std(started + after)
}

/// Of `timeout`, the time by which batches are sent: all of it but the report's share.
pub(super) fn extraction_share(timeout: Duration) -> Duration {
    timeout - timeout / REPORT_SHARE
}

impl QueryRun {
    /// When the plan call must have answered: a fifth of `--timeout`, else a default round.
    pub(super) fn plan_deadline(&self) -> tokio::time::Instant {
        let bound = match self.options.timeout {
            Some(timeout) => timeout / PLAN_SHARE,
            None => Duration::from_secs(DEFAULT_SECONDS_PER_ROUND),
        };
        at(self.started, bound)
    }

    /// How many batches may be out at once now: the query's fan-out, at most what the
    /// sub-call model's provider serves at once right now (a server's reported slots, or
    /// an adaptive limit where it stands). A batch waiting in rlm's own limiter would be "in
    /// flight" without being sent, and could fail at the deadline without a call.
    pub(super) fn sending_limit(&self) -> usize {
        let current = self
            .client
            .resolve(&self.options.subcall_model)
            .ok()
            .and_then(|model| self.client.concurrency(&model.provider))
            .map_or(self.at_once, |concurrency| concurrency.limit);
        self.at_once.min(current).max(1)
    }

    /// How many batches are answered at once: those sent at once, at most the slots the
    /// server reported (a fixed limit above them only fills the server's queue).
    fn served_at_once(&self) -> usize {
        let sent = self.sending_limit();
        self.server_slots
            .map_or(sent, |slots| sent.min(slots.max(1)))
    }

    /// Sets the extraction's deadline when the caller gave none: [`DEFAULT_SECONDS_PER_ROUND`]
    /// for each round of `batches` answered [`Self::served_at_once`] at a time, from now. Says
    /// which bound applies before any batch is sent.
    pub(super) fn bound_extraction(&mut self, batches: usize) -> TimeLimit {
        let limit = match self.options.timeout {
            Some(timeout) => TimeLimit {
                seconds: timeout.as_secs_f64(),
                default: false,
            },
            None => {
                let rounds = batches.div_ceil(self.served_at_once()).max(1) as u64;
                let bound = self.started.elapsed()
                    + Duration::from_secs(DEFAULT_SECONDS_PER_ROUND.saturating_mul(rounds));
                self.deadline = Some(at(self.started, bound));
                TimeLimit {
                    seconds: bound.as_secs_f64(),
                    default: true,
                }
            }
        };
        self.emit(&QueryEvent::TimeLimit {
            seconds: limit.seconds,
            default: limit.default,
            batches,
        });
        limit
    }

    /// Once the first batch is back in `seconds`: a default time limit too short for the rest
    /// at that pace (a slow local server) is lengthened to [`ROUND_MARGIN`] times it per round
    /// left, and the progress says so. A limit the caller set stays.
    pub(super) fn pace_from_first_batch(
        &mut self,
        seconds: f64,
        batches: usize,
        result: &mut QueryResult,
    ) {
        if self.options.timeout.is_some() {
            return;
        }
        let Some(deadline) = self.deadline else {
            return;
        };
        let rounds_left = batches.saturating_sub(1).div_ceil(self.served_at_once());
        let Some(needed) = paced(tokio::time::Instant::now(), seconds, rounds_left, deadline)
        else {
            return;
        };
        self.deadline = Some(needed);
        let limit = TimeLimit {
            seconds: needed.into_std().duration_since(self.started).as_secs_f64(),
            default: true,
        };
        self.emit(&QueryEvent::TimeLimit {
            seconds: limit.seconds,
            default: true,
            batches,
        });
        result.time_limit = Some(limit);
    }
}

/// The deadline `rounds_left` rounds at [`ROUND_MARGIN`] times `seconds` each need from
/// `now`, when that is later than `deadline`.
fn paced(
    now: tokio::time::Instant,
    seconds: f64,
    rounds_left: usize,
    deadline: tokio::time::Instant,
) -> Option<tokio::time::Instant> {
    let needed = now + Duration::from_secs_f64(seconds * ROUND_MARGIN * rounds_left as f64);
    (needed > deadline).then_some(needed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_first_batch_lengthens_the_default_limit_and_a_quick_one_leaves_it() {
        let now = tokio::time::Instant::now();
        let default = now + Duration::from_secs(6 * DEFAULT_SECONDS_PER_ROUND);
        // Six rounds left at 4.5 minutes a batch: 54 minutes, not 18.
        let slow = paced(now, 270.0, 6, default).unwrap();
        assert_eq!(slow - now, Duration::from_secs(6 * 540));
        assert_eq!(paced(now, 20.0, 6, default), None);
        assert_eq!(paced(now, 270.0, 0, default), None);
    }

    #[test]
    fn the_plan_and_the_report_have_their_share_of_the_timeout() {
        assert_eq!(
            extraction_share(Duration::from_secs(300)),
            Duration::from_secs(240)
        );
    }
}
