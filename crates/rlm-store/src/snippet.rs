//! The line of a hit that shows why it matched: the line covering the most query weight
//! (rarer terms weigh more, an exact identifier most), with the matched terms marked.

use std::ops::Range;

use rlm_context::words;

/// Longest snippet, in characters (without the `…` marks of a cut).
pub(crate) const SNIPPET_CHARS: usize = 160;

/// Characters kept before the first match when a long line is cut.
const LEAD_CHARS: usize = 40;

/// How much more a whole identifier of the query counts when the line has it whole.
const EXACT_FACTOR: f64 = 2.0;

/// The terms of a query with their weights.
#[derive(Debug, Clone)]
pub(crate) struct QueryTerms {
    terms: Vec<QueryTerm>,
}

#[derive(Debug, Clone)]
struct QueryTerm {
    text: String,
    /// Inverse document frequency (or 1 when unknown).
    weight: f64,
    /// A whole identifier of the query, not one of its parts.
    whole: bool,
}

impl QueryTerms {
    /// Every term of `query` (whole identifiers and their parts), weighted by `weight`.
    pub fn new(query: &str, weight: impl Fn(&str) -> f64) -> Self {
        let mut terms: Vec<QueryTerm> = Vec::new();
        for term in words::terms(query) {
            match terms.iter_mut().find(|seen| seen.text == term.text) {
                Some(seen) => seen.whole |= !term.is_part,
                None => terms.push(QueryTerm {
                    weight: weight(&term.text),
                    text: term.text.into_owned(),
                    whole: !term.is_part,
                }),
            }
        }
        Self { terms }
    }

    /// The words whose weights are needed.
    pub fn texts(query: &str) -> Vec<String> {
        let mut texts: Vec<String> = Vec::new();
        for term in words::index_terms(query) {
            if !texts.iter().any(|seen| *seen == term) {
                texts.push(term.into_owned());
            }
        }
        texts
    }

    /// Weighted coverage of `line`, and the byte ranges of its matched terms (merged, sorted).
    fn score(&self, line: &str) -> (f64, Vec<Range<usize>>) {
        let mut best = vec![0.0f64; self.terms.len()];
        let mut ranges: Vec<Range<usize>> = Vec::new();
        for token in words::terms(line) {
            let Some(index) = self.terms.iter().position(|term| term.text == token.text) else {
                continue;
            };
            let factor = if self.terms[index].whole && !token.is_part {
                EXACT_FACTOR
            } else {
                1.0
            };
            best[index] = best[index].max(factor);
            ranges.push(token.range);
        }
        let score = best
            .iter()
            .zip(&self.terms)
            .map(|(factor, term)| factor * term.weight)
            .sum();
        (score, merge(ranges))
    }
}

fn merge(mut ranges: Vec<Range<usize>>) -> Vec<Range<usize>> {
    ranges.sort_by_key(|range| (range.start, std::cmp::Reverse(range.end)));
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
    for range in ranges {
        match merged.last_mut() {
            Some(last) if range.start <= last.end => last.end = last.end.max(range.end),
            _ => merged.push(range),
        }
    }
    merged
}

/// The best line of `text` for `terms`, trimmed and cut to [`SNIPPET_CHARS`] around its first
/// match, with the byte ranges of the matched terms in the returned snippet. Without any
/// match (a semantic hit), the first non-blank line and no ranges.
pub(crate) fn snippet(text: &str, terms: &QueryTerms) -> (String, Vec<Range<usize>>) {
    let mut best: Option<(f64, &str, Vec<Range<usize>>)> = None;
    for line in text.lines() {
        let line = line.trim();
        let (score, ranges) = terms.score(line);
        if score > 0.0 && best.as_ref().is_none_or(|(top, _, _)| score > *top) {
            best = Some((score, line, ranges));
        }
    }
    let (line, ranges) = match best {
        Some((_, line, ranges)) => (line, ranges),
        None => (
            text.lines()
                .map(str::trim)
                .find(|line| !line.is_empty())
                .unwrap_or_default(),
            Vec::new(),
        ),
    };
    cut(line, ranges)
}

/// Cuts `line` to [`SNIPPET_CHARS`] characters starting a little before the first range.
fn cut(line: &str, ranges: Vec<Range<usize>>) -> (String, Vec<Range<usize>>) {
    if line.chars().nth(SNIPPET_CHARS).is_none() {
        return (line.to_owned(), ranges);
    }
    let first = ranges.first().map_or(0, |range| range.start);
    let before = line[..first].chars().count();
    let start_char = before.saturating_sub(LEAD_CHARS);
    let byte_at = |chars: usize| {
        line.char_indices()
            .nth(chars)
            .map_or(line.len(), |(index, _)| index)
    };
    let start = byte_at(start_char);
    let end = byte_at(start_char + SNIPPET_CHARS);
    let lead = if start > 0 { "…" } else { "" };
    let tail = if end < line.len() { "…" } else { "" };
    let shift = |at: usize| at - start + lead.len();
    let ranges = ranges
        .into_iter()
        .filter(|range| range.start < end && range.end > start)
        .map(|range| shift(range.start.max(start))..shift(range.end.min(end)))
        .collect();
    (format!("{lead}{}{tail}", &line[start..end]), ranges)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marked(text: &str, query: &str, weight: impl Fn(&str) -> f64) -> String {
        let (snippet, ranges) = snippet(text, &QueryTerms::new(query, weight));
        let mut out = String::new();
        let mut at = 0;
        for range in ranges {
            out.push_str(&snippet[at..range.start]);
            out.push_str(&format!("[{}]", &snippet[range.clone()]));
            at = range.end;
        }
        out.push_str(&snippet[at..]);
        out
    }

    #[test]
    fn the_line_with_the_identifier_beats_an_earlier_line_with_a_common_part() {
        let log = "INFO cache warmed in 3 ms\n\
                   DEBUG user 7 loaded\n\
                   def getUserProfileCache(user_id):\n\
                   INFO cache miss\n";
        let common = |term: &str| if term == "cache" { 0.2 } else { 3.0 };
        assert_eq!(
            marked(log, "getUserProfileCache", common),
            "def [getUserProfileCache]([user]_id):"
        );
    }

    #[test]
    fn rarer_terms_weigh_more_and_whole_words_beat_parts() {
        let text = "profile of the cache\nprofile zebra\ngetProfileCache()\n";
        let weights = |term: &str| if term == "zebra" { 5.0 } else { 1.0 };
        assert_eq!(marked(text, "profile zebra", weights), "[profile] [zebra]");
        assert_eq!(
            marked(text, "profile cache", |_| 1.0),
            "[profile] of the [cache]"
        );
        assert_eq!(
            marked("nothing here\n\n  first real line  \n", "absent", |_| 1.0),
            "nothing here"
        );
    }

    #[test]
    fn a_long_line_is_cut_around_its_match_and_ranges_follow() {
        let line = format!("{} needle {}", "x".repeat(300), "y".repeat(300));
        let (snippet, ranges) = snippet(&line, &QueryTerms::new("needle", |_| 1.0));
        assert!(
            snippet.starts_with('…') && snippet.ends_with('…'),
            "{snippet}"
        );
        assert_eq!(snippet.chars().count(), SNIPPET_CHARS + 2);
        assert_eq!(ranges.len(), 1);
        assert_eq!(&snippet[ranges[0].clone()], "needle");
    }
}
