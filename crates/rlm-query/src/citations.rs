//! A report's citations checked against what the query actually read.
//!
//! The report writer cites chunks as `[chunk N]` (also `[chunk N, M]`, `[chunks N and M]`). A
//! citation is only as good as the text behind it: a model can cite an id it never saw (an id
//! from a document, a guess, a hostile chunk's suggestion). Every id cited must be one an
//! extractor analysed or one the report's tools returned; the others are marked in the report
//! (`[chunk 999 (not read)]`), listed in `citations_unknown`, and named in a closing note.

use std::collections::{BTreeSet, HashSet};

/// What marks a citation whose chunk was never read.
pub const UNREAD_MARK: &str = " (not read)";

/// The report with every citation of an unread chunk marked, and those chunk ids (sorted,
/// once each). `read` holds the ids the query analysed or fetched.
pub fn check(report: &str, read: &HashSet<i64>) -> (String, Vec<i64>) {
    let mut unknown = BTreeSet::new();
    let mut out = String::with_capacity(report.len());
    let mut rest = report;
    while let Some(at) = find_citation(rest) {
        let citation = &rest[at..];
        let Some(end) = citation.find(']') else {
            break;
        };
        out.push_str(&rest[..at]);
        let inside = &citation[1..end];
        let ids = cited_ids(inside);
        let unread: Vec<i64> = ids
            .iter()
            .copied()
            .filter(|id| !read.contains(id))
            .collect();
        out.push('[');
        if unread.is_empty() || inside.ends_with(UNREAD_MARK) {
            out.push_str(inside);
        } else {
            out.push_str(&mark(inside, &unread));
            unknown.extend(unread);
        }
        out.push(']');
        rest = &citation[end + 1..];
    }
    out.push_str(rest);
    (out, unknown.into_iter().collect())
}

/// The sentence the report closes with when it cited chunks it never read.
pub fn note(unknown: &[i64]) -> String {
    let ids: Vec<String> = unknown.iter().map(i64::to_string).collect();
    let (what, verb) = if unknown.len() == 1 {
        ("chunk", "was")
    } else {
        ("chunks", "were")
    };
    format!(
        "Note: the report cites {what} {} that {verb} neither analysed nor read while it was \
         written; {} marked \"(not read)\" and not backed by this query.",
        ids.join(", "),
        if unknown.len() == 1 {
            "that citation is"
        } else {
            "those citations are"
        }
    )
}

/// The byte offset of the next `[chunk` (any case) that opens a citation.
fn find_citation(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(offset) = text[from..].find('[') {
        let at = from + offset;
        let head = &bytes[at + 1..];
        if head.len() >= 5 && head[..5].eq_ignore_ascii_case(b"chunk") {
            let after = &head[5..];
            let after = after.strip_prefix(b"s").unwrap_or(after);
            if after.first().is_some_and(u8::is_ascii_whitespace) {
                return Some(at);
            }
        }
        from = at + 1;
    }
    None
}

/// The ids in a citation's inside (`chunk 3, 17 and 40`).
fn cited_ids(inside: &str) -> Vec<i64> {
    inside
        .split(|c: char| !c.is_ascii_digit() && c != '-')
        .filter_map(|word| word.parse().ok())
        .collect()
}

/// The citation's inside with each unread id marked.
fn mark(inside: &str, unread: &[i64]) -> String {
    let mut out = String::with_capacity(inside.len() + 16);
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        out.push_str(word);
        if word.parse().is_ok_and(|id: i64| unread.contains(&id)) {
            out.push_str(UNREAD_MARK);
        }
        word.clear();
    };
    for c in inside.chars() {
        if c.is_ascii_digit() || (c == '-' && word.is_empty()) {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(ids: &[i64]) -> HashSet<i64> {
        ids.iter().copied().collect()
    }

    #[test]
    fn citations_of_read_chunks_are_kept() {
        let report = "Refresh fails [chunk 1]; see also [chunks 2, 3] and [Chunk 4].";
        let (checked, unknown) = check(report, &read(&[1, 2, 3, 4]));
        assert_eq!(checked, report);
        assert!(unknown.is_empty());
    }

    #[test]
    fn citations_of_unread_chunks_are_marked_and_listed() {
        let report = "A [chunk 1]. B [chunk 999]. C [chunks 2, 123456 and 999]. [chunk 7";
        let (checked, unknown) = check(report, &read(&[1, 2]));
        assert_eq!(
            checked,
            "A [chunk 1]. B [chunk 999 (not read)]. C [chunks 2, 123456 (not read) and 999 \
             (not read)]. [chunk 7"
        );
        assert_eq!(unknown, [999, 123_456]);
        assert_eq!(
            note(&unknown),
            "Note: the report cites chunks 999, 123456 that were neither analysed nor read \
             while it was written; those citations are marked \"(not read)\" and not backed by \
             this query."
        );
        // Checking twice changes nothing more.
        assert_eq!(check(&checked, &read(&[1, 2])).0, checked);
    }

    #[test]
    fn brackets_that_are_not_citations_are_left_alone() {
        let report = "[link](x) [chunky 9] [chunk] [x] [chunk-9] a[0]";
        let (checked, unknown) = check(report, &read(&[]));
        assert_eq!(checked, report);
        assert!(unknown.is_empty());
    }
}
