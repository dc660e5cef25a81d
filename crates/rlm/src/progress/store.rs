//! `rlm load`'s progress on stderr: the file being read (a terminal only), notes about what was
//! stored, the files skipped (by reason, named when few; `-v` names each), and the closing line.

use std::collections::BTreeMap;

use rlm_store::{LoadEvent, LoadReport};

use super::Printer;
use super::pace::Unit;
use crate::output::{count, human_bytes};

/// Skipped files of one reason named one by one; more are counted (`-v` names them all).
const SKIPS_NAMED: usize = 3;

/// What a load has said so far.
#[derive(Debug, Default)]
pub(super) struct LoadState {
    /// Files skipped without a note of their own, by reason.
    skipped_by_reason: BTreeMap<String, Vec<String>>,
}

/// The closing line of a load: what was loaded, left, skipped and removed, and how long it took.
fn summary(report: &LoadReport, seconds: f64) -> String {
    let totals = report.totals;
    let removed = if report.removed.is_empty() {
        String::new()
    } else {
        format!(", {} removed (files gone)", report.removed.len())
    };
    format!(
        "loaded {}, {}, {}; {} unchanged, {} skipped{removed} ({seconds:.1}s)",
        count(totals.buffers, "buffer"),
        human_bytes(totals.bytes),
        count(totals.chunks, "chunk"),
        totals.unchanged,
        report.skipped.len(),
    )
}

impl Printer {
    pub(super) fn load(&self, event: &LoadEvent<'_>) {
        match event {
            LoadEvent::Reading { index, total, name } => self.live_paced(
                &format!("loading {}/{total} {name}", index + 1),
                "files",
                *index as u64,
                *total as u64,
                Unit::Count("files"),
            ),
            LoadEvent::Streaming { name, bytes, total } => self.live_paced(
                &format!(
                    "loading {name} {} of {}",
                    human_bytes(*bytes),
                    human_bytes(*total)
                ),
                &format!("stream {name}"),
                *bytes,
                *total,
                Unit::Bytes,
            ),
            LoadEvent::Skipped(skipped) if self.verbose => {
                self.line(&format!(
                    "note: skipped {}: {}",
                    skipped.name, skipped.reason
                ));
            }
            LoadEvent::Skipped(skipped) => {
                self.state()
                    .load
                    .skipped_by_reason
                    .entry(skipped.reason.clone())
                    .or_default()
                    .push(skipped.name.clone());
            }
            LoadEvent::Loaded(buffer) if !self.quiet => {
                for note in &buffer.notes {
                    self.line(&format!("note: {}: {note}", buffer.name));
                }
            }
            LoadEvent::Removed(name) if self.verbose => {
                self.line(&format!("note: removed {name}: its file is gone"));
            }
            LoadEvent::Indexing(step) => self.indexing(step),
            _ => {}
        }
    }

    /// The BM25 index being written, for a load, a reindex or an embedding.
    pub(super) fn indexing(&self, step: &rlm_store::IndexProgress) {
        self.live_paced(
            &format!("indexing {}/{} chunks", step.chunks, step.total),
            "index",
            step.chunks,
            step.total,
            Unit::Count("chunks"),
        );
    }

    /// The skipped files, then the closing line (not with `--json`: the record has it).
    pub(super) fn loaded(&self, report: &LoadReport, seconds: f64) {
        self.clear();
        if self.quiet {
            return;
        }
        let skipped = std::mem::take(&mut self.state().load.skipped_by_reason);
        for (reason, names) in &skipped {
            if names.len() <= SKIPS_NAMED {
                for name in names {
                    self.line(&format!("note: skipped {name}: {reason}"));
                }
            } else {
                self.line(&format!(
                    "note: skipped {}: {reason} (-v lists them)",
                    count(names.len() as u64, "file")
                ));
            }
        }
        if !self.json {
            self.line(&summary(report, seconds));
        }
    }
}
