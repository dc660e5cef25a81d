//! The trajectory log: JSON Lines, one `metadata` line, then one `iteration` line per turn, then
//! a `result` line. Each line is written and flushed as soon as it is known, so a crash loses
//! nothing already done.
//!
//! Field names follow the reference RLM implementation's log (`type`, `iteration`, `prompt`,
//! `response`, `code_blocks[].code`, `code_blocks[].result.{stdout,stderr,execution_time,
//! rlm_calls}`, `final_answer`, `iteration_time`) so tools written for it can read ours. Child
//! runs started by `rlm_query` write their own file next to the parent's, named after their run
//! id (`<parent id>.<n>`), and the parent's sub-call record names that id. API keys never reach
//! this module: it only sees prompts, replies and usage.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::error::Error;

/// An open trajectory file.
#[derive(Debug)]
pub struct TrajectoryLog {
    path: PathBuf,
    file: Mutex<File>,
}

impl TrajectoryLog {
    /// Creates `<dir>/<stem>.jsonl` (and `dir` if needed).
    pub fn create(dir: &Path, stem: &str) -> Result<Self, Error> {
        let path = dir.join(format!("{stem}.jsonl"));
        let wrap = |source| Error::Trajectory {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(wrap)?;
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(wrap)?;
        Ok(Self {
            path,
            file: Mutex::new(file),
        })
    }

    /// Where the log is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record of type `kind` (the `type` and `timestamp` fields come first).
    pub fn write(&self, kind: &str, record: &impl Serialize) -> Result<(), Error> {
        let wrap = |source| Error::Trajectory {
            path: self.path.clone(),
            source,
        };
        // Written by hand so `type` and `timestamp` lead the line whatever the map order.
        let head = format!(
            "{{\"type\":{},\"timestamp\":\"{}\"",
            serde_json::to_string(kind).map_err(|e| wrap(e.into()))?,
            timestamp_now()
        );
        let body = serde_json::to_string(record).map_err(|e| wrap(e.into()))?;
        let mut text = match body.strip_prefix('{') {
            Some("}") | None => format!("{head}}}"),
            Some(fields) => format!("{head},{fields}"),
        };
        text.push('\n');
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        file.write_all(text.as_bytes()).map_err(wrap)?;
        file.flush().map_err(wrap)
    }
}

/// A file stem for a new root run: `rlm_<UTC date>_<time>_<run id>`.
pub fn root_stem(run_id: &str) -> String {
    let stamp = timestamp_now().replace(':', "-").replace('T', "_");
    let stamp = stamp.trim_end_matches('Z');
    let stamp = stamp.split('.').next().unwrap_or(stamp);
    format!("rlm_{stamp}_{run_id}")
}

/// A short random run id (8 hex digits).
pub fn new_run_id() -> String {
    use std::hash::{BuildHasher as _, Hasher as _};
    // RandomState is seeded per process and per instance: enough to tell runs apart.
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.write_u32(std::process::id());
    format!("{:08x}", hasher.finish() as u32)
}

/// The current UTC time as RFC 3339 with milliseconds.
pub fn timestamp_now() -> String {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    format_utc(since.as_secs(), since.subsec_millis())
}

fn format_utc(seconds: u64, millis: u32) -> String {
    let days = seconds / 86_400;
    let rest = seconds % 86_400;
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn formats_known_dates() {
        assert_eq!(format_utc(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_utc(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(format_utc(1_795_000_000, 0), "2026-11-18T11:06:40.000Z");
    }

    #[test]
    fn lines_are_complete_json_with_type_first() {
        let dir = tempfile::tempdir().unwrap();
        let log = TrajectoryLog::create(&dir.path().join("nested"), "run").unwrap();
        log.write("metadata", &json!({"root_model": "m"})).unwrap();
        log.write("iteration", &json!({"iteration": 1})).unwrap();
        let text = std::fs::read_to_string(log.path()).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["type"], "metadata");
        assert_eq!(lines[0]["root_model"], "m");
        assert_eq!(lines[1]["iteration"], 1);
        assert!(text.starts_with("{\"type\":\"metadata\""), "{text}");
    }

    #[test]
    fn run_ids_differ_and_stems_are_file_safe() {
        assert_ne!(new_run_id(), new_run_id());
        let stem = root_stem("abcd1234");
        assert!(stem.starts_with("rlm_") && stem.ends_with("_abcd1234"));
        assert!(!stem.contains(':'));
    }
}
