//! Greedy packing of contiguous units into chunks, and the fallbacks for oversized units.

use std::ops::Range;

/// A piece of text the packer keeps whole when it fits. Units are contiguous and cover the text.
#[derive(Debug, Clone)]
pub(crate) struct Unit {
    pub(crate) range: Range<usize>,
    /// A heading: close the current chunk first if it already holds a quarter of the size.
    pub(crate) hard_break: bool,
}

/// How to split a unit larger than the chunk size.
pub(crate) type Fallback = fn(&str, Range<usize>, usize, &mut Vec<Range<usize>>);

/// Packs `units` into chunks of at most `size` characters; oversized units go to `fallback`
/// (or become a chunk of their own when there is none).
pub(crate) fn pack(
    text: &str,
    units: impl IntoIterator<Item = Unit>,
    size: usize,
    fallback: Option<Fallback>,
    out: &mut Vec<Range<usize>>,
) {
    let mut current: Option<Range<usize>> = None;
    let mut current_chars = 0;
    for unit in units {
        let chars = text[unit.range.clone()].chars().count();
        if let Some(range) = &current {
            let heading_break = unit.hard_break && current_chars * 4 >= size;
            if heading_break || current_chars + chars > size {
                out.push(range.clone());
                current = None;
                current_chars = 0;
            }
        }
        if chars > size {
            match fallback {
                Some(split) => split(text, unit.range, size, out),
                None => out.push(unit.range),
            }
            continue;
        }
        current = Some(match current {
            Some(range) => range.start..unit.range.end,
            None => unit.range,
        });
        current_chars += chars;
    }
    out.extend(current);
}

/// Splits at whitespace near the size limit, or at any character boundary when a window holds
/// no whitespace in its second half (long tokens, CJK text).
pub(crate) fn split_words(
    text: &str,
    range: Range<usize>,
    size: usize,
    out: &mut Vec<Range<usize>>,
) {
    let mut start = range.start;
    while start < range.end {
        let window = &text[start..range.end];
        let Some((limit, _)) = window.char_indices().nth(size) else {
            out.push(start..range.end);
            return;
        };
        let head = &window[..limit];
        let cut = head
            .char_indices()
            .rev()
            .take_while(|&(offset, _)| offset * 2 >= limit)
            .find(|&(_, c)| c.is_whitespace())
            .map_or(limit, |(offset, c)| offset + c.len_utf8());
        out.push(start..start + cut);
        start += cut;
    }
}

/// Splits at line ends, packing lines; an oversized line falls back to [`split_words`].
pub(crate) fn split_lines(
    text: &str,
    range: Range<usize>,
    size: usize,
    out: &mut Vec<Range<usize>>,
) {
    let units = line_ranges(text, range).map(|range| Unit {
        range,
        hard_break: false,
    });
    pack(text, units, size, Some(split_words), out);
}

/// Lines of `range`, each including its `\n`.
pub(crate) fn line_ranges(
    text: &str,
    range: Range<usize>,
) -> impl Iterator<Item = Range<usize>> + '_ {
    let end = range.end;
    let mut starts = super::lines::line_starts(text, range.start, end).peekable();
    let mut start = range.start;
    std::iter::from_fn(move || {
        if start >= end {
            return None;
        }
        let line_end = starts.next().unwrap_or(end);
        let line = start..line_end;
        start = line_end;
        Some(line)
    })
}

/// Extends each chunk after the first backwards by up to `overlap` characters, snapped forward
/// to a line start inside that window when there is one.
pub(crate) fn with_overlap(
    text: &str,
    mut ranges: Vec<Range<usize>>,
    overlap: usize,
) -> Vec<Range<usize>> {
    if overlap == 0 {
        return ranges;
    }
    for range in ranges.iter_mut().skip(1) {
        let before = &text[..range.start];
        let back = before
            .char_indices()
            .rev()
            .take(overlap)
            .last()
            .map_or(range.start, |(offset, _)| offset);
        let window = &text[back..range.start];
        let start = match window.find('\n') {
            Some(newline) if back + newline + 1 < range.start => back + newline + 1,
            _ => back,
        };
        range.start = start;
    }
    ranges
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(text: &str, ranges: Vec<Range<usize>>) -> Vec<&str> {
        ranges.into_iter().map(|r| &text[r]).collect()
    }

    #[test]
    fn split_words_prefers_whitespace() {
        let text = "alpha beta gamma delta";
        let mut out = Vec::new();
        split_words(text, 0..text.len(), 12, &mut out);
        assert_eq!(pieces(text, out), ["alpha beta ", "gamma delta"]);
    }

    #[test]
    fn split_words_cuts_unbroken_text_on_char_boundaries() {
        let text = "日本語日本語日本";
        let mut out = Vec::new();
        split_words(text, 0..text.len(), 3, &mut out);
        assert_eq!(pieces(text, out), ["日本語", "日本語", "日本"]);
    }

    #[test]
    fn overlap_snaps_to_a_line_start() {
        let text = "one\ntwo\nthree\nfour\n";
        let ranges = vec![0..8, 8..text.len()];
        let out = with_overlap(text, ranges, 6);
        assert_eq!(pieces(text, out), ["one\ntwo\n", "two\nthree\nfour\n"]);
    }
}
