//! Writing a log: one line per record, each written and flushed as soon as it is known, so a
//! crash loses nothing already done.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::VERSION;
use crate::error::Error;
use crate::schema::RecordType;

/// An open trajectory file, appended to one record at a time. Shareable between tasks.
#[derive(Debug)]
pub struct TrajectoryWriter {
    path: PathBuf,
    file: Mutex<File>,
}

impl TrajectoryWriter {
    /// Creates (or appends to) `<dir>/<stem>.jsonl`, creating `dir` if needed.
    pub fn create(dir: &Path, stem: &str) -> Result<Self, Error> {
        let path = dir.join(format!("{stem}.jsonl"));
        let io_error = |source| Error::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(io_error)?;
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io_error)?;
        Ok(Self {
            path,
            file: Mutex::new(file),
        })
    }

    /// Where the log is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record as one line: `type`, `timestamp` and `version` first, then the
    /// record's own fields. Every configured API key, and any part of one of 8 characters or
    /// more, is masked ([`rlm_types::secrets::mask`]): a log quotes prompts, replies, program
    /// output and errors, any of which may hold one.
    pub fn write<R: RecordType>(&self, record: &R) -> Result<(), Error> {
        let line = encode(record, &timestamp_now())?;
        let line = rlm_types::secrets::mask(&line);
        // A poisoned lock only means another writer panicked between lines; the file is intact.
        let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        file.write_all(line.as_bytes())
            .and_then(|()| file.flush())
            .map_err(|source| Error::Io {
                path: self.path.clone(),
                source,
            })
    }
}

/// One record as a line (with its newline).
pub(crate) fn encode<R: RecordType>(record: &R, timestamp: &str) -> Result<String, Error> {
    let serialize_error = |source| Error::Serialize {
        kind: R::TYPE,
        source,
    };
    // Written by hand so that `type` leads the line whatever the field order of the record.
    let head = format!(
        "{{\"type\":{},\"timestamp\":{},\"version\":{VERSION}",
        serde_json::to_string(R::TYPE).map_err(serialize_error)?,
        serde_json::to_string(timestamp).map_err(serialize_error)?,
    );
    let body = serde_json::to_string(record).map_err(serialize_error)?;
    let mut line = match body.strip_prefix('{') {
        Some("}") | None => format!("{head}}}"),
        Some(fields) => format!("{head},{fields}"),
    };
    line.push('\n');
    Ok(line)
}

/// A file stem for a new root run: `rlm_<UTC date>_<time>_<run id>`.
pub fn root_stem(run_id: &str) -> String {
    root_stem_named("rlm", run_id)
}

/// [`root_stem`] with another first word than `rlm` (the reference's `RLMLogger(file_name=)`).
pub fn root_stem_named(name: &str, run_id: &str) -> String {
    let stamp = timestamp_now().replace(':', "-").replace('T', "_");
    let stamp = stamp.trim_end_matches('Z');
    let stamp = stamp.split('.').next().unwrap_or(stamp);
    format!("{name}_{stamp}_{run_id}")
}

/// Whether `id` has the shape of a run id rlm (or the reference implementation) writes: 1 to
/// 64 ASCII letters, digits, `-` or `_`. Only such an id may become part of a file name; a log
/// is input, and its `run_id` could be `x/../../PWNED`.
pub fn is_run_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
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
    use super::*;

    #[test]
    fn formats_known_dates() {
        assert_eq!(format_utc(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_utc(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(format_utc(1_795_000_000, 0), "2026-11-18T11:06:40.000Z");
    }

    #[test]
    fn run_ids_differ_and_stems_are_file_safe() {
        assert_ne!(new_run_id(), new_run_id());
        assert!(is_run_id(&new_run_id()));
        for bad in [
            "",
            "x/../../PWNED",
            "..",
            "a.b",
            "a b",
            &"x".repeat(65),
            "é",
        ] {
            assert!(!is_run_id(bad), "{bad:?}");
        }
        let stem = root_stem("abcd1234");
        assert!(stem.starts_with("rlm_") && stem.ends_with("_abcd1234"));
        assert!(!stem.contains(':'));
    }
}
