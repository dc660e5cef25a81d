//! Collecting: keep what passes the threshold, merge identical findings, order by relevance
//! then by place in the corpus.

use std::collections::HashMap;

use serde::Serialize;

use crate::extract::ChunkExtraction;
use crate::options::{Relevance, Threshold};
use crate::select::SelectedChunk;

/// A chunk's findings as the synthesis gets them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
/// finding, summary or lead is dropped.
pub fn collect(
    extractions: &[(SelectedChunk, ChunkExtraction)],
    threshold: Threshold,
) -> Vec<ChunkFindings> {
    let mut kept: Vec<&(SelectedChunk, ChunkExtraction)> = extractions
        .iter()
        .filter(|(_, extraction)| threshold.admits(extraction.relevance))
        .collect();
    kept.sort_by(|(a_chunk, a), (b_chunk, b)| {
        b.relevance
            .cmp(&a.relevance)
            .then(a_chunk.position.cmp(&b_chunk.position))
            .then(a_chunk.id.cmp(&b_chunk.id))
    });
    let mut first_seen: HashMap<String, usize> = HashMap::new();
    let mut collected: Vec<ChunkFindings> = Vec::with_capacity(kept.len());
    for (chunk, extraction) in kept {
        let mut findings = Vec::new();
        for finding in &extraction.findings {
            let finding = finding.trim();
            if finding.is_empty() {
                continue;
            }
            match first_seen.get(finding) {
                Some(&owner) => {
                    let also = &mut collected[owner].also_in;
                    if !also.contains(&chunk.id) {
                        also.push(chunk.id);
                    }
                }
                None => {
                    first_seen.insert(finding.to_owned(), collected.len());
                    findings.push(finding.to_owned());
                }
            }
        }
        collected.push(ChunkFindings {
            chunk_id: chunk.id,
            source: chunk.source(),
            relevance: extraction.relevance,
            findings,
            also_in: Vec::new(),
            summary: extraction.summary.clone(),
            follow_up: extraction.follow_up.clone(),
            position: chunk.position,
        });
    }
    collected.retain(|chunk| {
        !(chunk.findings.is_empty() && chunk.summary.is_none() && chunk.follow_up.is_empty())
    });
    collected
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
        let collected = collect(&items, Threshold::Low);
        let order: Vec<i64> = collected.iter().map(|c| c.chunk_id).collect();
        assert_eq!(order, [3, 2, 1, 5]);
        assert_eq!(collected[0].findings, ["three", "same"]);
        assert_eq!(collected[0].also_in, [1]);
        assert_eq!(collected[2].findings, ["one"]);
        assert_eq!(finding_count(&collected), 5);

        let high = collect(&items, Threshold::High);
        assert_eq!(high.iter().map(|c| c.chunk_id).collect::<Vec<_>>(), [3, 2]);
    }
}
