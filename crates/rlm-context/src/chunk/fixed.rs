//! Fixed-size character windows with overlap.

use std::ops::Range;

/// Windows of `size` characters starting every `size - overlap` characters (`overlap < size`).
pub(crate) fn split(text: &str, size: usize, overlap: usize) -> Vec<Range<usize>> {
    let stride = size - overlap;
    let mut ranges = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let end = advance(text, start, size);
        ranges.push(start..end);
        if end == text.len() {
            break;
        }
        start = advance(text, start, stride);
    }
    ranges
}

/// Byte offset `count` characters after `from` (or the end of the text).
fn advance(text: &str, from: usize, count: usize) -> usize {
    text[from..]
        .char_indices()
        .nth(count)
        .map_or(text.len(), |(offset, _)| from + offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_overlap_by_the_requested_amount() {
        let text = "abcdefghij";
        let pieces: Vec<&str> = split(text, 4, 1).into_iter().map(|r| &text[r]).collect();
        assert_eq!(pieces, ["abcd", "defg", "ghij"]);
    }

    #[test]
    fn never_splits_a_multibyte_character() {
        let text = "é日本語🎉x";
        let pieces: Vec<&str> = split(text, 2, 0).into_iter().map(|r| &text[r]).collect();
        assert_eq!(pieces, ["é日", "本語", "🎉x"]);
    }

    #[test]
    fn short_text_is_one_chunk_and_empty_is_none() {
        assert_eq!(split("abc", 10, 3), vec![0..3]);
        assert!(split("", 10, 3).is_empty());
    }
}
