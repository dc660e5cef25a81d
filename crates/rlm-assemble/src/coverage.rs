//! What of a source file the ctx already holds: whether two spans share text, and what is left
//! of a file once some spans of it are parts — what a glob adds, so no line goes into the prompt
//! twice.

use std::ops::Range;

use crate::selector::{Span, SpanSpec, line_starts};

/// The bytes of `text` that `span` covers, clamped to the text.
fn byte_range(text: &str, starts: &[usize], span: Span) -> Range<usize> {
    let start_of = |line: usize| starts.get(line).copied().unwrap_or(text.len());
    let range = match span {
        Span::All => 0..text.len(),
        Span::Lines(first, last) => start_of(first.saturating_sub(1))..start_of(last),
        Span::Bytes(start, end) => start..end,
    };
    range.start.min(text.len())..range.end.min(text.len())
}

/// Whether spans `a` and `b` of `text` share any text.
pub(crate) fn overlaps(text: &str, a: Span, b: Span) -> bool {
    let starts = line_starts(text);
    let (a, b) = (byte_range(text, &starts, a), byte_range(text, &starts, b));
    a.start.max(b.start) < a.end.min(b.end)
}

/// The parts of `text` that `held` does not cover, in order: whole lines where a gap is whole
/// lines, bytes otherwise. Gaps of only whitespace are left out.
pub(crate) fn uncovered(text: &str, held: &[Span]) -> Vec<SpanSpec> {
    let starts = line_starts(text);
    let mut ranges: Vec<Range<usize>> = held
        .iter()
        .map(|&span| byte_range(text, &starts, span))
        .filter(|range| !range.is_empty())
        .collect();
    ranges.sort_by_key(|range| range.start);
    let mut gaps = Vec::new();
    let mut position = 0;
    for range in ranges
        .into_iter()
        .chain(std::iter::once(text.len()..text.len()))
    {
        if range.start > position {
            gaps.push(position..range.start);
        }
        position = position.max(range.end);
    }
    gaps.into_iter()
        .map(|gap| without_blank_lines(text, gap))
        .filter(|gap| !gap.is_empty())
        .map(|gap| as_spec(text, &starts, gap))
        .collect()
}

/// `gap` without the blank lines at its edges (a gap of only whitespace becomes empty).
fn without_blank_lines(text: &str, mut gap: Range<usize>) -> Range<usize> {
    if text[gap.clone()].trim().is_empty() {
        return gap.start..gap.start;
    }
    while let Some(newline) = text[gap.clone()].find('\n') {
        if !text[gap.start..gap.start + newline].trim().is_empty() {
            break;
        }
        gap.start += newline + 1;
    }
    // Blank lines at the end: the last line holds only whitespace.
    loop {
        let body = &text[gap.clone()];
        let before_last = body.strip_suffix('\n').unwrap_or(body);
        let last_start = before_last.rfind('\n').map_or(0, |at| at + 1);
        if last_start == 0 || !body[last_start..].trim().is_empty() {
            break;
        }
        gap.end = gap.start + last_start;
    }
    gap
}

/// A gap as a selector span: lines when it starts and ends at line boundaries, else bytes
/// widened to character boundaries.
fn as_spec(text: &str, starts: &[usize], gap: Range<usize>) -> SpanSpec {
    let at_line_start = |at: usize| at == 0 || text.as_bytes()[at - 1] == b'\n';
    if at_line_start(gap.start) && (gap.end == text.len() || at_line_start(gap.end)) {
        let first = starts.partition_point(|&start| start <= gap.start);
        let last = starts.partition_point(|&start| start < gap.end);
        return SpanSpec::Lines {
            start: first,
            end: Some(last),
        };
    }
    SpanSpec::Bytes {
        start: text.floor_char_boundary(gap.start),
        end: Some(text.ceil_char_boundary(gap.end)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "one\ntwo\nthree\n\nfive\nsix\n";

    fn lines(start: usize, end: usize) -> SpanSpec {
        SpanSpec::Lines {
            start,
            end: Some(end),
        }
    }

    #[test]
    fn the_rest_of_a_file_is_its_uncovered_lines() {
        assert_eq!(uncovered(TEXT, &[]), [lines(1, 6)]);
        assert_eq!(uncovered(TEXT, &[Span::Lines(1, 2)]), [lines(3, 6)]);
        // The blank line between two held ranges is not worth a part.
        assert_eq!(
            uncovered(TEXT, &[Span::Lines(1, 3), Span::Lines(5, 6)]),
            [] as [SpanSpec; 0]
        );
        assert_eq!(
            uncovered(TEXT, &[Span::Lines(2, 2), Span::Lines(5, 5)]),
            [lines(1, 1), lines(3, 3), lines(6, 6)]
        );
        assert_eq!(uncovered(TEXT, &[Span::Lines(1, 3)]), [lines(5, 6)]);
        assert_eq!(uncovered(TEXT, &[Span::Lines(5, 6)]), [lines(1, 3)]);
        assert_eq!(uncovered(TEXT, &[Span::All]), [] as [SpanSpec; 0]);
        // A byte span that ends mid-line leaves a byte gap; spans past the end are clamped.
        assert_eq!(
            uncovered(TEXT, &[Span::Bytes(0, 6), Span::Lines(3, 99)]),
            [SpanSpec::Bytes {
                start: 6,
                end: Some(8)
            }]
        );
    }

    #[test]
    fn spans_overlap_when_they_share_text() {
        assert!(overlaps(TEXT, Span::All, Span::Lines(6, 6)));
        assert!(overlaps(TEXT, Span::Lines(1, 3), Span::Lines(3, 4)));
        assert!(!overlaps(TEXT, Span::Lines(1, 2), Span::Lines(3, 4)));
        assert!(overlaps(TEXT, Span::Bytes(0, 5), Span::Lines(2, 2)));
        assert!(!overlaps(TEXT, Span::Bytes(0, 4), Span::Lines(2, 2)));
    }
}
