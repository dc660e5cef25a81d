//! Prose chunking: markdown headings, paragraphs, then sentences.

use std::ops::Range;

use super::pack::{self, Unit};

/// Paragraph units (a heading always starts one) packed up to `size` characters.
pub(crate) fn split(text: &str, size: usize) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    pack::pack(
        text,
        paragraphs(text),
        size,
        Some(split_sentences),
        &mut out,
    );
    out
}

/// Paragraphs: a unit starts at a non-blank line after a blank line, or at a markdown heading.
/// Blank lines inside a fenced code block (```` ``` ```` or `~~~`) do not end it.
pub(super) fn paragraphs(text: &str) -> Vec<Unit> {
    let mut units = Vec::new();
    let mut start = 0;
    let mut start_is_heading = false;
    let mut previous_blank = false;
    let mut in_fence = false;
    for line in pack::line_ranges(text, 0..text.len()) {
        let content = text[line.clone()].trim_end();
        let blank = content.trim_start().is_empty();
        let fence = is_fence(content);
        let heading = !in_fence && is_heading(content);
        let boundary = line.start > start && !in_fence && (heading || (previous_blank && !blank));
        if boundary {
            units.push(Unit {
                range: start..line.start,
                hard_break: start_is_heading,
            });
            start = line.start;
            start_is_heading = heading;
        } else if line.start == 0 {
            start_is_heading = heading;
        }
        if fence {
            in_fence = !in_fence;
        }
        previous_blank = blank && !in_fence;
    }
    if start < text.len() {
        units.push(Unit {
            range: start..text.len(),
            hard_break: start_is_heading,
        });
    }
    units
}

fn is_heading(line: &str) -> bool {
    let hashes = line.bytes().take_while(|&b| b == b'#').count();
    (1..=6).contains(&hashes) && line[hashes..].starts_with([' ', '\t'])
}

fn is_fence(line: &str) -> bool {
    let trimmed = line.trim_start();
    trimmed.starts_with("```") || trimmed.starts_with("~~~")
}

/// Splits an oversized paragraph at sentence ends (`.`, `!`, `?`, `。` followed by whitespace)
/// and line ends, packing sentences; an oversized sentence is split at whitespace.
fn split_sentences(text: &str, range: Range<usize>, size: usize, out: &mut Vec<Range<usize>>) {
    if !may_hold_sentence_ends(&text.as_bytes()[range.clone()]) {
        // No sentences (base64, hex dumps, logs without a full stop): its sentences would be
        // its lines, which a byte search finds faster than a walk over every character.
        pack::split_lines(text, range, size, out);
    } else {
        walk_sentences(text, range, size, out);
    }
}

/// [`split_sentences`] by a walk over every character.
fn walk_sentences(text: &str, range: Range<usize>, size: usize, out: &mut Vec<Range<usize>>) {
    let mut units = Vec::new();
    let mut start = range.start;
    let mut previous_end_mark = false;
    for (offset, c) in text[range.clone()].char_indices() {
        let at = range.start + offset;
        if previous_end_mark && c.is_whitespace() {
            let end = at + c.len_utf8();
            units.push(Unit {
                range: start..end,
                hard_break: false,
            });
            start = end;
        }
        previous_end_mark = matches!(c, '.' | '!' | '?' | '。' | '！' | '？') || c == '\n';
        if c == '\n' && start < at + 1 {
            units.push(Unit {
                range: start..at + 1,
                hard_break: false,
            });
            start = at + 1;
            previous_end_mark = false;
        }
    }
    if start < range.end {
        units.push(Unit {
            range: start..range.end,
            hard_break: false,
        });
    }
    pack::pack(text, units, size, Some(pack::split_words), out);
}

/// Whether `bytes` may hold a sentence end: one of `.`, `!`, `?`, or the first byte of `。`,
/// `！`, `？` (0xE3, 0xEF). Without any, every sentence [`split_sentences`] finds is a line.
fn may_hold_sentence_ends(bytes: &[u8]) -> bool {
    memchr::memchr3(b'.', b'!', b'?', bytes).is_some()
        || memchr::memchr2(0xE3, 0xEF, bytes).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(text: &str, size: usize) -> Vec<&str> {
        split(text, size).into_iter().map(|r| &text[r]).collect()
    }

    #[test]
    fn paragraphs_are_packed_and_kept_whole() {
        let text = "aaa aaa\n\nbbb\n\nccc ccc ccc\n";
        assert_eq!(pieces(text, 14), ["aaa aaa\n\nbbb\n\n", "ccc ccc ccc\n"]);
    }

    #[test]
    fn headings_start_a_chunk_once_a_quarter_is_filled() {
        let text = "# A\nintro text\n## B\nbody\n";
        assert_eq!(pieces(text, 40), ["# A\nintro text\n", "## B\nbody\n"]);
        // A heading right after a tiny chunk does not leave a heading-only chunk behind.
        let text = "# A\n## B\nbody\n";
        assert_eq!(pieces(text, 40), ["# A\n## B\nbody\n"]);
    }

    #[test]
    fn fenced_code_keeps_blank_lines() {
        let text = "```\nfn a() {}\n\nfn b() {}\n```\n\nafter\n";
        let units: Vec<&str> = paragraphs(text)
            .into_iter()
            .map(|u| &text[u.range])
            .collect();
        assert_eq!(units, ["```\nfn a() {}\n\nfn b() {}\n```\n\n", "after\n"]);
    }

    /// The sentence walk over a paragraph without sentence ends gives what the line split gives.
    #[test]
    fn text_without_sentences_is_split_at_lines_as_before() {
        let lines: String = (0..200)
            .map(|i| format!("QUJD{i}ZGVm+aGlqa2xt/bm9wcXJz{}dHV2d3h5eg==\n", i * 7))
            .collect();
        let text = format!("{lines}no newline at the end ÄÖ");
        assert!(!may_hold_sentence_ends(text.as_bytes()));
        for size in [1, 7, 40, 100, 333, 4000] {
            let mut fast = Vec::new();
            split_sentences(&text, 0..text.len(), size, &mut fast);
            let mut walked = Vec::new();
            walk_sentences(&text, 0..text.len(), size, &mut walked);
            assert_eq!(fast, walked, "size {size}");
            // With room for a line, each chunk ends at a line end (or the text's end).
            if size >= 100 {
                assert!(
                    fast.iter()
                        .all(|r| r.end == text.len() || text.as_bytes()[r.end - 1] == b'\n')
                );
            }
        }
        assert!(may_hold_sentence_ends("a. b".as_bytes()));
        assert!(may_hold_sentence_ends("文。字".as_bytes()));
    }

    #[test]
    fn oversized_paragraphs_split_at_sentences() {
        let text = "One two. Three four! Five six?";
        assert_eq!(pieces(text, 12), ["One two. ", "Three four! ", "Five six?"]);
    }
}
