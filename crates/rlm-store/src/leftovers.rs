//! Temporary files a killed writer leaves in a store directory, and their removal.
//!
//! Every temporary file is made by the holder of the write lock, so whoever holds the lock
//! knows all of them are stale. They are ours by name: spool files of piped input
//! (`.reader-PID-N.spool`), a database being created (`.store-new-PID.sqlite`), an index being
//! rebuilt or swapped out by `reindex` (`.bm25-reindex-PID`, `.bm25-old-PID`), a quantised
//! vector file being written (`.vectors-new-PID`), and in `bm25/`
//! the segment files tantivy wrote for a commit that never happened (files named after a
//! segment id that the last commit does not list; a load killed half-way leaves up to the
//! size of its input there).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::index::Bm25Index;
use crate::store::INDEX;

/// Name prefix of a database being created.
pub(crate) const NEW_DATABASE_PREFIX: &str = ".store-new-";
/// Name prefix of an index being built by `reindex`.
pub(crate) const REINDEX_PREFIX: &str = ".bm25-reindex-";
/// Name prefix of the index `reindex` replaced, until it is removed.
pub(crate) const OLD_INDEX_PREFIX: &str = ".bm25-old-";

/// A temporary file or directory left behind, with its size.
#[derive(Debug, Clone)]
pub(crate) struct Leftover {
    pub(crate) path: PathBuf,
    pub(crate) bytes: u64,
}

/// The temporary files in `dir`. Without an open `index`, the segment files in `bm25/` are
/// judged by `live_segments` when given, and not at all otherwise.
pub(crate) fn find(dir: &Path, index: Option<&Bm25Index>) -> Vec<Leftover> {
    let live = index.and_then(|index| index.live_segments().ok());
    find_with(dir, live.as_ref())
}

/// [`find`] with the live segment ids given (from a read-only look at the index).
pub(crate) fn find_with(dir: &Path, live_segments: Option<&HashSet<String>>) -> Vec<Leftover> {
    let mut found = Vec::new();
    for (path, name) in entries(dir) {
        let ours = (name.starts_with(".reader-") && name.ends_with(".spool"))
            || name.starts_with(NEW_DATABASE_PREFIX)
            || name.starts_with(REINDEX_PREFIX)
            || name.starts_with(OLD_INDEX_PREFIX)
            || name.starts_with(crate::vector_file::NEW_VECTOR_FILE_PREFIX);
        if ours {
            found.push(Leftover {
                bytes: size(&path),
                path,
            });
        }
    }
    if let Some(live) = live_segments {
        for (path, name) in entries(&dir.join(INDEX)) {
            let segment = name.split('.').next().unwrap_or_default();
            let is_segment_file =
                segment.len() == 32 && segment.bytes().all(|byte| byte.is_ascii_hexdigit());
            if is_segment_file && !live.contains(segment) {
                found.push(Leftover {
                    bytes: size(&path),
                    path,
                });
            }
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    found
}

/// Removes leftovers (the caller holds the write lock). Failures are left for `rlm doctor` to
/// report: a file that cannot be removed now does no harm.
pub(crate) fn remove(leftovers: &[Leftover]) {
    for leftover in leftovers {
        let removed = if leftover.path.is_dir() {
            std::fs::remove_dir_all(&leftover.path)
        } else {
            std::fs::remove_file(&leftover.path)
        };
        match removed {
            Ok(()) => {
                tracing::debug!(path = %leftover.path.display(), "removed a stale temporary file")
            }
            Err(error) => {
                tracing::debug!(path = %leftover.path.display(), %error, "cannot remove a stale temporary file")
            }
        }
    }
}

fn entries(dir: &Path) -> Vec<(PathBuf, String)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|entry| {
            (
                entry.path(),
                entry.file_name().to_string_lossy().into_owned(),
            )
        })
        .collect()
}

fn size(path: &Path) -> u64 {
    let Ok(metadata) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if !metadata.is_dir() {
        return metadata.len();
    }
    entries(path).iter().map(|(path, _)| size(path)).sum()
}
