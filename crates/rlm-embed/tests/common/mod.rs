//! Finding the PyPI wheels that `scripts/test` downloads.
#![allow(dead_code, clippy::panic)]

use std::path::PathBuf;

/// Environment variable naming the directory of downloaded wheels.
pub const WHEELS_VAR: &str = "RLM_TEST_WHEELS";

/// The wheel whose file name starts with `prefix`. `None` (after printing a skip line) when
/// `RLM_TEST_WHEELS` is unset; a panic when it is set but the wheel is missing, so a broken
/// download fails the suite instead of silently skipping it.
pub fn wheel(prefix: &str) -> Option<PathBuf> {
    let Some(dir) = std::env::var_os(WHEELS_VAR).filter(|v| !v.is_empty()) else {
        eprintln!("skipped: {WHEELS_VAR} is not set (scripts/test downloads the model wheels)");
        return None;
    };
    let dir = PathBuf::from(dir);
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|err| panic!("{WHEELS_VAR}={}: {err}", dir.display()));
    let found = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with(prefix) && name.ends_with(".whl"))
        });
    match found {
        Some(path) => Some(path),
        None => panic!("{WHEELS_VAR}={} has no {prefix}*.whl", dir.display()),
    }
}
