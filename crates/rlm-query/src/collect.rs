//! Collecting: keep what passes the threshold, merge identical findings, order by relevance
//! then by place in the corpus.

use std::collections::HashMap;

use serde::Serialize;

use crate::extract::ChunkExtraction;
use crate::options::{Relevance, Threshold};
use crate::select::SelectedChunk;

/// A chunk's findings as the synthesis gets them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ChunkFindings {
    /// The chunk.
    pub chunk_id: i64,
    /// `buffer:first-last`.
    pub source: String,
    /// Its relevance.
    pub relevance: Relevance,
    /// Findings not already reported by a chunk ranked before it.
    pub findings: Vec<String>,
    /// Chunks ranked after it whose finding was identical to one of these (merged here).
    pub also_in: Vec<i64>,
    /// The extractor's summary.
    pub summary: Option<String>,
    /// Leads to follow.
    pub follow_up: Vec<String>,
    #[serde(skip)]
    position: (i64, i64),
}

/// Findings of the chunks that pass `threshold`, most relevant first, then in corpus order.
/// A finding that several chunks report word for word (after trimming) is kept once, at the
/// first chunk in that order, with the others listed in `also_in`; a chunk left with no
/// finding, summary or lead is dropped. The extractions are consumed: their texts move into
/// the result instead of being copied.
pub fn collect(
    extractions: Vec<(SelectedChunk, ChunkExtraction)>,
    threshold: Threshold,
) -> Vec<ChunkFindings> {
    let mut kept: Vec<(SelectedChunk, ChunkExtraction)> = extractions
        .into_iter()
        .filter(|(_, extraction)| threshold.admits(extraction.relevance))
        .collect();
    kept.sort_by(|(a_chunk, a), (b_chunk, b)| {
        b.relevance
            .cmp(&a.relevance)
            .then(a_chunk.position.cmp(&b_chunk.position))
            .then(a_chunk.id.cmp(&b_chunk.id))
    });
    // First pass, on borrowed text: where each finding goes (kept, or merged into the first
    // chunk that reported it), one flag per finding in order.
    let mut first_seen: HashMap<&str, usize> = HashMap::new();
    let mut also_in: Vec<Vec<i64>> = vec![Vec::new(); kept.len()];
    let mut keep: Vec<bool> = Vec::new();
    for (index, (chunk, extraction)) in kept.iter().enumerate() {
        for finding in &extraction.findings {
            let finding = finding.trim();
            let keep_it = !finding.is_empty()
                && match first_seen.get(finding) {
                    Some(&owner) => {
                        // A chunk repeating its own finding is not "also in" itself.
                        if owner != index && !also_in[owner].contains(&chunk.id) {
                            also_in[owner].push(chunk.id);
                        }
                        false
                    }
                    None => {
                        first_seen.insert(finding, index);
                        true
                    }
                };
            keep.push(keep_it);
        }
    }
    drop(first_seen);
    // Second pass: the texts move into the result.
    let mut keep = keep.into_iter();
    kept.into_iter()
        .zip(also_in)
        .map(|((chunk, extraction), also_in)| {
            let mut findings = extraction.findings;
            findings.retain(|_| keep.next().unwrap_or(false));
            for finding in &mut findings {
                *finding = trimmed(std::mem::take(finding));
            }
            ChunkFindings {
                chunk_id: chunk.id,
                source: chunk.source(),
                relevance: extraction.relevance,
                findings,
                also_in,
                summary: extraction.summary,
                follow_up: extraction.follow_up,
                position: chunk.position,
            }
        })
        .filter(|chunk| {
            !(chunk.findings.is_empty() && chunk.summary.is_none() && chunk.follow_up.is_empty())
        })
        .collect()
}

/// `text` without surrounding whitespace, reusing its buffer when there is none to remove.
fn trimmed(text: String) -> String {
    if text.trim().len() == text.len() {
        text
    } else {
        text.trim().to_owned()
    }
}

/// How many findings in all.
pub fn finding_count(collected: &[ChunkFindings]) -> usize {
    collected.iter().map(|chunk| chunk.findings.len()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(
        id: i64,
        position: (i64, i64),
        relevance: Relevance,
        findings: &[&str],
    ) -> (SelectedChunk, ChunkExtraction) {
        (
            SelectedChunk {
                id,
                buffer: "b".into(),
                start_line: 1,
                end_line: 2,
                bytes: 1,
                position,
            },
            ChunkExtraction {
                chunk_id: id,
                relevance,
                findings: findings.iter().map(|f| (*f).to_owned()).collect(),
                summary: Some("s".into()),
                follow_up: Vec::new(),
            },
        )
    }

    #[test]
    fn sorted_by_relevance_then_position_with_duplicates_merged() {
        let items = [
            item(1, (1, 5), Relevance::Medium, &["same", "one"]),
            item(2, (1, 9), Relevance::High, &["two"]),
            item(3, (1, 1), Relevance::High, &["three", " same "]),
            item(4, (1, 0), Relevance::None, &["ignored"]),
            item(5, (0, 7), Relevance::Low, &["five"]),
        ];
        let collected = collect(items.to_vec(), Threshold::Low);
        let order: Vec<i64> = collected.iter().map(|c| c.chunk_id).collect();
        assert_eq!(order, [3, 2, 1, 5]);
        assert_eq!(collected[0].findings, ["three", "same"]);
        assert_eq!(collected[0].also_in, [1]);
        assert_eq!(collected[2].findings, ["one"]);
        assert_eq!(finding_count(&collected), 5);

        let high = collect(items.to_vec(), Threshold::High);
        assert_eq!(high.iter().map(|c| c.chunk_id).collect::<Vec<_>>(), [3, 2]);
    }

    #[test]
    fn a_finding_repeated_within_one_chunk_is_kept_once_and_not_cross_referenced() {
        let items = [
            item(1, (0, 1), Relevance::High, &["x", " x", "y"]),
            item(2, (0, 2), Relevance::High, &["x"]),
        ];
        let collected = collect(items.to_vec(), Threshold::Low);
        assert_eq!(collected[0].findings, ["x", "y"]);
        assert_eq!(collected[0].also_in, [2]);
        assert!(collected[1].findings.is_empty());
    }
}
