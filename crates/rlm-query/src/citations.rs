//! A report's citations checked against what the query actually read.
//!
//! The report writer cites chunks as `[chunk N]` (also `[chunk N, M]`, `[chunks N and M]`). A
//! citation is only as good as the text behind it: a model can cite an id it never saw (an id
//! from a document, a guess, a hostile chunk's suggestion). Every id cited must be one an
//! extractor analysed or one the report's tools returned; the others are marked in the report
//! (`[chunk 999 (not read)]`), listed in `citations_unknown`, and named in a closing note.
//!
//! A citation is found in the report as a reader sees it, not as its bytes spell it: the text
//! is folded first (Unicode compatibility forms to their plain ones under NFKC, so fullwidth
//! `［ｃｈｕｎｋ ９８８］` is `[chunk 988]`; every kind of space, a no-break space included, to a
//! space; invisible characters dropped). An id that is no number rlm can hold — digits of
//! another script, or past 2^63 — cannot be one it read, and counts as unknown. A citation that
//! needs marking is written back in its folded form.

use std::collections::{BTreeSet, HashSet};
use std::ops::Range;

use rlm_context::fence::is_invisible;
use unicode_normalization::UnicodeNormalization as _;

/// What marks a citation whose chunk was never read.
pub const UNREAD_MARK: &str = " (not read)";

/// The report with every citation of an unread chunk marked, and those chunk ids (sorted,
/// once each). `read` holds the ids the query analysed or fetched. Ids that are no `i64` are
/// marked too and named in the note ([`check_all`]), not listed here.
pub fn check(report: &str, read: &HashSet<i64>) -> (String, Vec<i64>) {
    let (checked, unknown) = check_all(report, read);
    let ids = unknown.iter().filter_map(Unknown::id).collect();
    (checked, ids)
}

/// A cited id that was not read: a number, or text no number rlm can hold.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Unknown {
    Id(i64),
    Unparseable(String),
}

impl Unknown {
    fn id(&self) -> Option<i64> {
        match self {
            Self::Id(id) => Some(*id),
            Self::Unparseable(_) => None,
        }
    }
}

impl std::fmt::Display for Unknown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Id(id) => write!(f, "{id}"),
            Self::Unparseable(text) => f.write_str(text),
        }
    }
}

/// [`check`], with every unknown citation: ids, and the ones that are no `i64`.
pub fn check_all(report: &str, read: &HashSet<i64>) -> (String, Vec<Unknown>) {
    let folded = Folded::of(report);
    let mut unknown = BTreeSet::new();
    let mut out = String::with_capacity(report.len());
    let mut copied = 0;
    let mut from = 0;
    while let Some(open) = folded.find_citation(from) {
        let Some(close) = folded.chars[open..].iter().position(|&c| c == ']') else {
            break;
        };
        let close = open + close;
        let inside: String = folded.chars[open + 1..close].iter().collect();
        let unread = unread_words(&inside, read);
        from = close + 1;
        if unread.is_empty() {
            continue;
        }
        let span = folded.span(open, close);
        out.push_str(&report[copied..span.start]);
        out.push('[');
        out.push_str(&mark(&inside, &unread));
        out.push(']');
        copied = span.end;
        unknown.extend(unread.into_iter().map(|(_, unknown)| unknown));
    }
    out.push_str(&report[copied..]);
    (out, unknown.into_iter().collect())
}

/// The sentence the report closes with when it cited chunks it never read.
pub fn note<T: std::fmt::Display>(unknown: &[T]) -> String {
    let ids: Vec<String> = unknown.iter().map(ToString::to_string).collect();
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

/// The report as a reader sees it, character by character, each with the byte range of the
/// report it came from.
struct Folded {
    chars: Vec<char>,
    spans: Vec<Range<usize>>,
}

impl Folded {
    fn of(text: &str) -> Self {
        let mut folded = Self {
            chars: Vec::with_capacity(text.len()),
            spans: Vec::with_capacity(text.len()),
        };
        let mut one = [0_u8; 4];
        for (at, c) in text.char_indices() {
            let span = at..at + c.len_utf8();
            if c.is_ascii() {
                folded.chars.push(c);
                folded.spans.push(span);
                continue;
            }
            if is_invisible(c) {
                continue;
            }
            for f in c.encode_utf8(&mut one).nfkc() {
                folded.chars.push(if f.is_whitespace() { ' ' } else { f });
                folded.spans.push(span.clone());
            }
        }
        folded
    }

    /// The report bytes the folded characters `first..=last` came from.
    fn span(&self, first: usize, last: usize) -> Range<usize> {
        self.spans[first].start..self.spans[last].end
    }

    /// The index of the next `[chunk` or `[chunks` (any case) followed by a space, from
    /// `from` on.
    fn find_citation(&self, from: usize) -> Option<usize> {
        (from..self.chars.len()).find(|&at| {
            let rest = &self.chars[at..];
            if rest.first() != Some(&'[') || rest.len() < 7 {
                return false;
            }
            let word: String = rest[1..6].iter().collect();
            if !word.eq_ignore_ascii_case("chunk") {
                return false;
            }
            let after = if rest[6].eq_ignore_ascii_case(&'s') {
                &rest[7..]
            } else {
                &rest[6..]
            };
            after.first() == Some(&' ')
        })
    }
}

/// The words of a citation's inside that name chunks not read, by their position among the
/// inside's words: ids not in `read`, and words with digits that are no `i64`. A word already
/// marked (followed by `(not read)`) counts, and stays marked once.
fn unread_words(inside: &str, read: &HashSet<i64>) -> Vec<(usize, Unknown)> {
    words(inside)
        .enumerate()
        .filter_map(|(index, word)| {
            if !word.chars().any(char::is_numeric) {
                return None;
            }
            match word.parse::<i64>() {
                Ok(id) if read.contains(&id) => None,
                Ok(id) => Some((index, Unknown::Id(id))),
                Err(_) => Some((index, Unknown::Unparseable(word.to_owned()))),
            }
        })
        .collect()
}

/// The words of a citation's inside: runs of letters, digits and `-`.
fn words(inside: &str) -> impl Iterator<Item = &str> {
    inside
        .split(|c: char| !(c.is_alphanumeric() || c == '-'))
        .filter(|word| !word.is_empty())
}

/// The citation's inside with each of the `unread` words marked, unless marked already.
fn mark(inside: &str, unread: &[(usize, Unknown)]) -> String {
    let mut out = String::with_capacity(inside.len() + 16);
    let mut index = 0;
    let mut rest = inside;
    while let Some(start) = rest.find(|c: char| c.is_alphanumeric() || c == '-') {
        let word_end = rest[start..]
            .find(|c: char| !(c.is_alphanumeric() || c == '-'))
            .map_or(rest.len(), |end| start + end);
        out.push_str(&rest[..word_end]);
        let after = &rest[word_end..];
        if unread.iter().any(|(at, _)| *at == index) && !after.starts_with(UNREAD_MARK) {
            out.push_str(UNREAD_MARK);
        }
        index += 1;
        rest = after;
    }
    out.push_str(rest);
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

    /// `[chunk 988]` with a no-break space, fullwidth digits or brackets, invisible characters,
    /// digits of another script, an id past i64: each is a citation a reader sees, and none of
    /// them was read.
    #[test]
    fn citations_are_found_as_a_reader_sees_them() {
        let past = "99999999999999999999";
        let report = format!(
            "A [chunk\u{a0}988]. B [chunk ９８８]. C ［Ｃｈｕｎｋ\u{2003}７］. D [chunk\u{200b} 5]. \
             E [chunk \u{663}\u{660}]. F [chunk {past}]. G [chunks 1,\u{a0}2]. H [chunk\u{a0}1]."
        );
        let (checked, unknown) = check_all(&report, &read(&[1, 2]));
        assert_eq!(
            checked,
            format!(
                "A [chunk 988 (not read)]. B [chunk 988 (not read)]. C [Chunk 7 (not read)]. \
                 D [chunk 5 (not read)]. E [chunk \u{663}\u{660} (not read)]. \
                 F [chunk {past} (not read)]. G [chunks 1,\u{a0}2]. H [chunk\u{a0}1]."
            )
        );
        assert_eq!(
            unknown,
            [
                Unknown::Id(5),
                Unknown::Id(7),
                Unknown::Id(988),
                Unknown::Unparseable(past.to_owned()),
                Unknown::Unparseable("\u{663}\u{660}".to_owned()),
            ]
        );
        assert_eq!(check(&report, &read(&[1, 2])).1, [5, 7, 988]);
        // Checked again, nothing more is marked.
        assert_eq!(check_all(&checked, &read(&[1, 2])).0, checked);
        // An id marked in the middle of a citation stays marked once.
        let twice = check("[chunks 999, 2]", &read(&[2])).0;
        assert_eq!(twice, "[chunks 999 (not read), 2]");
        assert_eq!(check(&twice, &read(&[2])).0, twice);
    }

    #[test]
    fn brackets_that_are_not_citations_are_left_alone() {
        let report = "[link](x) [chunky 9] [chunk] [x] [chunk-9] a[0]";
        let (checked, unknown) = check(report, &read(&[]));
        assert_eq!(checked, report);
        assert!(unknown.is_empty());
    }
}
