//! The rate and the time left of long work (`loading 310 MB of 1.2 GB · 85.0 MB/s · 11s
//! left`): measured from the first progress event of a phase, said once a second of it has
//! passed, so the first figures are not a guess from one fast step.

use std::time::{Duration, Instant};

use rlm_context::thousands;

use crate::output::human_bytes;

/// Progress is this old before a rate is said.
const SETTLED: Duration = Duration::from_secs(1);

/// What the units of a phase are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Things counted (`chunks`, `files`, `buffers`), named in the plural.
    Count(&'static str),
    Bytes,
}

/// One phase of work being timed (`embed`, the load of one file, …).
#[derive(Debug)]
pub struct Pace {
    phase: String,
    started: Instant,
    /// Units done when the phase was first seen (work resumed part way counts from there).
    from: u64,
    last_done: u64,
}

impl Pace {
    fn new(phase: &str, done: u64, now: Instant) -> Self {
        Self {
            phase: phase.to_owned(),
            started: now,
            from: done,
            last_done: done,
        }
    }

    /// The suffix for `done` of `total` in `phase` at `now` (empty until the phase has run a
    /// second and done something); a new phase, or progress that went back, starts the clock
    /// again.
    pub fn update(
        slot: &mut Option<Self>,
        phase: &str,
        done: u64,
        total: u64,
        unit: Unit,
        now: Instant,
    ) -> String {
        let pace = match slot {
            Some(pace) if pace.phase == phase && done >= pace.last_done => pace,
            _ => slot.insert(Self::new(phase, done, now)),
        };
        pace.last_done = done;
        suffix(
            done.saturating_sub(pace.from),
            now.saturating_duration_since(pace.started),
            total.saturating_sub(done),
            unit,
        )
        .unwrap_or_default()
    }
}

/// ` · 95 chunks/s · 1m 33s left` from `progress` units done in `elapsed` with `left` to go;
/// `None` before a rate means anything.
pub fn suffix(progress: u64, elapsed: Duration, left: u64, unit: Unit) -> Option<String> {
    if progress == 0 || elapsed < SETTLED {
        return None;
    }
    let rate = progress as f64 / elapsed.as_secs_f64();
    let rate_text = match unit {
        Unit::Count(noun) if rate >= 10.0 => format!("{} {noun}/s", thousands(rate as u64)),
        Unit::Count(noun) => format!("{rate:.1} {noun}/s"),
        Unit::Bytes => format!("{}/s", human_bytes(rate as u64)),
    };
    let left_time = Duration::from_secs_f64(left as f64 / rate);
    Some(format!(" · {rate_text} · {} left", duration(left_time)))
}

/// ` · about 1m 20s left` from `progress` units done in `elapsed` with `left` to go, for work
/// in few slow steps (a query's batches), where a rate per second says little.
pub fn time_left(progress: u64, elapsed: Duration, left: u64) -> Option<String> {
    if progress == 0 || left == 0 || elapsed < SETTLED {
        return None;
    }
    let left_time = elapsed.mul_f64(left as f64 / progress as f64);
    Some(format!(" · about {} left", duration(left_time)))
}

/// `1h 2m`, `9m 0s`, or `42s` under a minute.
pub fn duration(time: Duration) -> String {
    let seconds = time.as_secs();
    match seconds {
        0..60 => format!("{seconds}s"),
        60..3600 => format!("{}m {}s", seconds / 60, seconds % 60),
        _ => format!("{}h {}m", seconds / 3600, seconds % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_said_before_a_second_or_before_progress() {
        let chunks = Unit::Count("chunks");
        assert_eq!(suffix(0, Duration::from_secs(5), 10, chunks), None);
        assert_eq!(suffix(50, Duration::from_millis(900), 10, chunks), None);
    }

    #[test]
    fn rate_and_time_left_by_unit() {
        let chunks = Unit::Count("chunks");
        assert_eq!(
            suffix(200, Duration::from_secs(2), 9_300, chunks).as_deref(),
            Some(" · 100 chunks/s · 1m 33s left")
        );
        assert_eq!(
            suffix(3, Duration::from_secs(2), 3, Unit::Count("files")).as_deref(),
            Some(" · 1.5 files/s · 2s left")
        );
        assert_eq!(
            suffix(
                170_000_000,
                Duration::from_secs(2),
                935_000_000,
                Unit::Bytes
            )
            .as_deref(),
            Some(" · 85.0 MB/s · 11s left")
        );
        assert_eq!(duration(Duration::from_secs(7_384)), "2h 3m");
        assert_eq!(
            time_left(2, Duration::from_secs(40), 5).as_deref(),
            Some(" · about 1m 40s left")
        );
        assert_eq!(time_left(5, Duration::from_secs(40), 0), None);
    }

    #[test]
    fn a_phase_is_timed_from_its_first_event_and_restarts_when_it_changes() {
        let start = Instant::now();
        let chunks = Unit::Count("chunks");
        let mut slot = None;
        // Resumed at 1,000 of 2,000: the rate counts what this run did.
        assert_eq!(
            Pace::update(&mut slot, "embed", 1_000, 2_000, chunks, start),
            ""
        );
        let later = start + Duration::from_secs(2);
        assert_eq!(
            Pace::update(&mut slot, "embed", 1_200, 2_000, chunks, later),
            " · 100 chunks/s · 8s left"
        );
        // Another phase (the index after the chunks) starts its own clock.
        assert_eq!(
            Pace::update(&mut slot, "index", 10, 2_000, chunks, later),
            ""
        );
        let after = later + Duration::from_secs(1);
        assert_eq!(
            Pace::update(&mut slot, "index", 1_010, 2_000, chunks, after),
            " · 1,000 chunks/s · 0s left"
        );
    }
}
