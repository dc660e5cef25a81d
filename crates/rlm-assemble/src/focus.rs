//! `focus`: rank evidence by BM25 relevance to a query and switch the irrelevant parts off;
//! `focus off` switches back on what focus switched off. Critical evidence (ranks 100–199, which
//! must fit the budget) is never switched off.
//!
//! A ctx directory holds hundreds to a few thousand parts, so the index is built in memory on
//! each call (about the cost of reading the parts) rather than kept on disk. Terms come from
//! the project's code-aware splitter ([`rlm_context::words`]), so `logger` finds `getLogger`.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::ctx::{Ctx, fill_report};
use crate::ctxdir::write_atomic;
use crate::edit::set_state;
use crate::error::{Error, Result};
use crate::part::{Rank, Slot, State};
use crate::report::Report;

/// BM25 term-frequency saturation.
const K1: f64 = 1.2;
/// BM25 length normalisation.
const B: f64 = 0.75;
/// Where focus remembers what it switched off.
const FOCUS_FILE: &str = ".focus.json";

/// Options for [`Ctx::focus`].
#[derive(Debug, Clone, Copy)]
pub struct FocusOptions {
    /// Keep at most this many evidence parts on, besides the critical ones (ranks below 200).
    pub top: Option<usize>,
    /// Keep parts scoring at least this fraction of the best score (0–1).
    pub min_ratio: f64,
}

impl Default for FocusOptions {
    fn default() -> Self {
        Self {
            top: None,
            min_ratio: 0.25,
        }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct FocusState {
    query: String,
    switched_off: Vec<String>,
}

/// An in-memory BM25 index over a few documents.
#[derive(Debug, Default)]
pub struct Bm25 {
    lengths: Vec<usize>,
    postings: HashMap<String, Vec<(usize, u32)>>,
}

impl Bm25 {
    /// Indexes `documents` (their position is their id).
    pub fn new<'a>(documents: impl IntoIterator<Item = &'a str>) -> Self {
        let mut index = Self::default();
        for (id, text) in documents.into_iter().enumerate() {
            let mut frequencies: HashMap<String, u32> = HashMap::new();
            let mut length = 0;
            for term in rlm_context::words::index_terms(text) {
                *frequencies.entry(term.into_owned()).or_default() += 1;
                length += 1;
            }
            index.lengths.push(length);
            for (term, frequency) in frequencies {
                index
                    .postings
                    .entry(term)
                    .or_default()
                    .push((id, frequency));
            }
        }
        index
    }

    /// A score per document for `query` (0 where no query term occurs).
    pub fn scores(&self, query: &str) -> Vec<f64> {
        let documents = self.lengths.len();
        let mut scores = vec![0.0; documents];
        if documents == 0 {
            return scores;
        }
        let average = self.lengths.iter().sum::<usize>() as f64 / documents as f64;
        let mut terms: Vec<String> = rlm_context::words::index_terms(query)
            .map(|t| t.into_owned())
            .collect();
        terms.sort_unstable();
        terms.dedup();
        for term in terms {
            let Some(postings) = self.postings.get(&term) else {
                continue;
            };
            let n = postings.len() as f64;
            let idf = ((documents as f64 - n + 0.5) / (n + 0.5) + 1.0).ln();
            for &(id, frequency) in postings {
                let tf = f64::from(frequency);
                let norm = 1.0 - B + B * self.lengths[id] as f64 / average.max(1.0);
                scores[id] += idf * tf * (K1 + 1.0) / (tf + K1 * norm);
            }
        }
        scores
    }
}

impl Ctx {
    /// Scores evidence parts against `query`, keeps the relevant ones on and switches the rest
    /// off. Links stay on. A previous focus is undone first, so focusing twice does not narrow
    /// twice.
    pub fn focus(&self, query: &str, options: FocusOptions) -> Result<Report> {
        let undone = self.undo_focus()?;
        let before = self.snapshot()?;
        let evidence: Vec<usize> = (0..before.counted.parts.len())
            .filter(|&i| before.counted.parts[i].file.name.slot == Slot::Evidence)
            .collect();
        let documents: Vec<String> = evidence
            .iter()
            .map(|&i| {
                let part = &before.counted.parts[i];
                format!("{}\n{}", part.provenance.path, part.body)
            })
            .collect();
        let scores = Bm25::new(documents.iter().map(String::as_str)).scores(query);
        let best = scores.iter().copied().fold(0.0, f64::max);
        if best <= 0.0 {
            return Err(Error::Invalid(format!(
                "no evidence part mentions any word of `{query}`; nothing switched"
            )));
        }
        let mut ranked: Vec<(usize, f64)> = evidence.iter().copied().zip(scores).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut changes = Vec::new();
        let mut state = FocusState {
            query: query.to_owned(),
            switched_off: Vec::new(),
        };
        // `--top` counts the parts focus decides about: critical ones are always on.
        let mut position = 0;
        for (index, score) in &ranked {
            let part = &before.counted.parts[*index];
            let id = part.file.name.id();
            let rank = part.file.name.rank;
            if rank.get() < Rank::REQUIRED_BELOW {
                let detail = format!(
                    "score {score:.2}; rank {rank} is {}, always kept",
                    rank.band()
                );
                changes.push(("keep", id, Some(detail)));
                continue;
            }
            let keep = *score >= best * options.min_ratio
                && *score > 0.0
                && options.top.is_none_or(|top| position < top);
            position += 1;
            let detail = Some(format!("score {score:.2}"));
            match (keep, part.file.name.state) {
                (false, State::Active) => {
                    set_state(&part.file, State::Skipped)?;
                    state.switched_off.push(id.clone());
                    changes.push(("off", id, detail));
                }
                (true, _) | (_, State::Linked) => changes.push(("keep", id, detail)),
                (false, State::Skipped) => {}
            }
        }
        let mut text = serde_json::to_string_pretty(&state).unwrap_or_default();
        text.push('\n');
        write_atomic(&self.root().join(FOCUS_FILE), text.as_bytes())?;
        let after = self.snapshot()?;
        let mut notes = Vec::new();
        if !undone.is_empty() {
            let count = undone.len();
            notes.push(format!(
                "undid the previous focus first ({count} parts back on)"
            ));
        }
        Ok(fill_report("focus", changes, notes, &after.plan, None))
    }

    /// Switches back on the parts the last `focus` switched off.
    pub fn focus_off(&self) -> Result<Report> {
        let path = self.root().join(FOCUS_FILE);
        if !path.exists() {
            return Err(Error::Invalid("no focus is active".into()));
        }
        let restored = self.undo_focus()?;
        let changes = restored.into_iter().map(|id| ("on", id, None)).collect();
        self.report("focus off", changes, Vec::new())
    }

    fn read_focus(&self) -> Result<FocusState> {
        let path = self.root().join(FOCUS_FILE);
        let text = self.dir.read_text(&path)?;
        serde_json::from_str(&text).map_err(|source| Error::Json { path, source })
    }

    /// Restores the parts a previous focus switched off; returns their names.
    fn undo_focus(&self) -> Result<Vec<String>> {
        let path = self.root().join(FOCUS_FILE);
        if !path.exists() {
            return Ok(Vec::new());
        }
        let state = self.read_focus()?;
        let scan = self.dir.scan()?;
        let mut restored = Vec::new();
        for id in &state.switched_off {
            // A part renamed or removed since is simply not restored.
            if let Some(part) = scan
                .parts
                .iter()
                .find(|p| &p.name.id() == id && p.name.state == State::Skipped)
            {
                set_state(part, State::Active)?;
                restored.push(id.clone());
            }
        }
        std::fs::remove_file(&path).map_err(|e| Error::io("remove", path, e))?;
        Ok(restored)
    }
}

#[cfg(test)]
mod tests {
    use super::Bm25;

    #[test]
    fn bm25_prefers_documents_with_the_query_terms() {
        let index = Bm25::new([
            "fn parse_args(argv) { argv }",
            "let logger = getLogger(); logger.info()",
            "nothing relevant here at all",
        ]);
        let scores = index.scores("logger");
        assert!(scores[1] > 0.0);
        assert_eq!(scores[0], 0.0);
        assert_eq!(scores[2], 0.0);
        let scores = index.scores("args parsing");
        assert!(scores[0] > scores[1]);
    }

    #[test]
    fn rarer_terms_weigh_more() {
        let index = Bm25::new(["common rare", "common", "common"]);
        let scores = index.scores("common rare");
        assert!(scores[0] > scores[1]);
        assert_eq!(scores[1], scores[2]);
    }
}
