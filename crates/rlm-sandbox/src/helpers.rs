//! Native helpers for big strings, answered in Rust instead of interpreted Python.
//!
//! Monty indexes `str` by code point over UTF-8, so every slice or `find(sub, start)` on a
//! non-ASCII 50 MB string walks the whole string (the research measured 350 `find` calls at 17 s).
//! These helpers keep a per-text index (line starts, a char→byte checkpoint table) built once, so
//! repeated positional access costs O(result) instead of O(text).

use std::fmt::Write as _;
use std::sync::OnceLock;

use regex::Regex;

/// How often (in chars) the char→byte table keeps a checkpoint.
const CHECKPOINT_CHARS: usize = 1024;

/// A text plus lazily built indexes for fast positional access.
#[derive(Debug)]
pub(crate) struct IndexedText {
    text: String,
    ascii: bool,
    /// Byte offset of the start of every line.
    line_starts: OnceLock<Vec<usize>>,
    /// Byte offset of char `i * CHECKPOINT_CHARS`.
    checkpoints: OnceLock<Vec<usize>>,
}

/// One regex match with char positions (Python-compatible indexes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Match {
    pub start: usize,
    pub end: usize,
    pub text: String,
}

/// Chars in `bytes` counted without decoding: every byte that does not continue a sequence.
fn count_chars(text: &str) -> usize {
    text.as_bytes()
        .iter()
        .filter(|&&byte| (byte as i8) >= -0x40)
        .count()
}

impl IndexedText {
    pub(crate) fn new(text: String) -> Self {
        let ascii = text.is_ascii();
        Self {
            text,
            ascii,
            line_starts: OnceLock::new(),
            checkpoints: OnceLock::new(),
        }
    }

    #[cfg(test)]
    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    fn line_starts(&self) -> &[usize] {
        self.line_starts.get_or_init(|| {
            let mut starts = vec![0];
            starts.extend(memchr::memchr_iter(b'\n', self.text.as_bytes()).map(|at| at + 1));
            // A trailing newline does not open an extra empty line (like `str.splitlines`).
            if starts.len() > 1 && starts.last() == Some(&self.text.len()) {
                starts.pop();
            }
            if self.text.is_empty() {
                starts.clear();
            }
            starts
        })
    }

    fn checkpoints(&self) -> &[usize] {
        self.checkpoints.get_or_init(|| {
            let mut table = Vec::with_capacity(self.text.len() / CHECKPOINT_CHARS + 1);
            for (chars, (byte, _)) in self.text.char_indices().enumerate() {
                if chars % CHECKPOINT_CHARS == 0 {
                    table.push(byte);
                }
            }
            table
        })
    }

    /// Number of lines (as `str.splitlines()` would count for `\n` line ends).
    pub(crate) fn line_count(&self) -> usize {
        self.line_starts().len()
    }

    /// Byte offset of char `position`, clamped to the end of the text.
    fn char_to_byte(&self, position: usize) -> usize {
        if self.ascii {
            return position.min(self.text.len());
        }
        let table = self.checkpoints();
        let Some(&base) = table.get(position / CHECKPOINT_CHARS) else {
            return self.text.len();
        };
        let skip = position % CHECKPOINT_CHARS;
        self.text[base..]
            .char_indices()
            .nth(skip)
            .map_or(self.text.len(), |(offset, _)| base + offset)
    }

    /// `text[start:end]` by char positions (negative positions are not supported; clamped).
    pub(crate) fn slice(&self, start: usize, end: usize) -> &str {
        let start_byte = self.char_to_byte(start);
        let end_byte = self.char_to_byte(end.max(start));
        &self.text[start_byte..end_byte]
    }

    /// Lines `start..end` (0-based, end exclusive), without their line breaks.
    pub(crate) fn lines(&self, start: usize, end: usize) -> Vec<&str> {
        let starts = self.line_starts();
        let end = end.min(starts.len());
        (start.min(end)..end)
            .map(|index| self.line(index))
            .collect()
    }

    fn line(&self, index: usize) -> &str {
        let starts = self.line_starts();
        let begin = starts[index];
        let finish = starts.get(index + 1).map_or(self.text.len(), |&next| next);
        let line = &self.text[begin..finish];
        let line = line.strip_suffix('\n').unwrap_or(line);
        line.strip_suffix('\r').unwrap_or(line)
    }

    /// Regex matches with char positions, at most `limit` of them.
    pub(crate) fn find_all(&self, pattern: &Regex, limit: usize) -> Vec<Match> {
        let mut matches = Vec::new();
        let (mut byte_cursor, mut char_cursor) = (0, 0);
        for found in pattern.find_iter(&self.text).take(limit) {
            let start = if self.ascii {
                found.start()
            } else {
                char_cursor += count_chars(&self.text[byte_cursor..found.start()]);
                byte_cursor = found.start();
                char_cursor
            };
            let length = if self.ascii {
                found.len()
            } else {
                count_chars(found.as_str())
            };
            matches.push(Match {
                start,
                end: start + length,
                text: found.as_str().to_owned(),
            });
        }
        matches
    }

    /// Lines matching `pattern`, each as `index: line`, with `context` lines around them
    /// (`index- line`) and, when `context > 0`, `--` between separate groups; at most `limit`
    /// matching lines.
    pub(crate) fn grep(&self, pattern: &Regex, context: usize, limit: usize) -> String {
        let starts = self.line_starts();
        let mut hits: Vec<usize> = Vec::new();
        for found in pattern.find_iter(&self.text) {
            let line = starts
                .partition_point(|&begin| begin <= found.start())
                .saturating_sub(1);
            if hits.last() != Some(&line) {
                if hits.len() == limit {
                    break;
                }
                hits.push(line);
            }
        }
        let mut output = String::new();
        let mut printed_until: Option<usize> = None; // exclusive end of the last printed line
        for (position, &hit) in hits.iter().enumerate() {
            let first = hit.saturating_sub(context).max(printed_until.unwrap_or(0));
            let last = (hit + context + 1).min(starts.len());
            if context > 0 && printed_until.is_some_and(|until| first > until) {
                output.push_str("--\n");
            }
            for index in first..last {
                // A later hit inside this window is printed as a hit when its turn comes.
                if index > hit && hits.get(position + 1).is_some_and(|&next| index >= next) {
                    break;
                }
                let marker = if index == hit { ':' } else { '-' };
                let _ = writeln!(output, "{index}{marker} {}", self.line(index));
                printed_until = Some(index + 1);
            }
        }
        output
    }

    /// Consecutive pieces of `size` chars, each starting `size - overlap` chars after the last.
    pub(crate) fn chunks(&self, size: usize, overlap: usize) -> Vec<&str> {
        let step = size.saturating_sub(overlap).max(1);
        let mut pieces = Vec::new();
        let mut start_byte = 0;
        loop {
            let end_byte = self.advance(start_byte, size);
            pieces.push(&self.text[start_byte..end_byte]);
            if end_byte >= self.text.len() {
                break;
            }
            start_byte = self.advance(start_byte, step);
        }
        pieces
    }

    /// Byte offset `chars` chars after `from`.
    fn advance(&self, from: usize, chars: usize) -> usize {
        if self.ascii {
            return (from + chars).min(self.text.len());
        }
        self.text[from..]
            .char_indices()
            .nth(chars)
            .map_or(self.text.len(), |(offset, _)| from + offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> IndexedText {
        IndexedText::new("héllo wörld\nsecond line\r\nthird ERROR here\nfourth\n".to_owned())
    }

    #[test]
    fn slices_by_char_position_like_python() {
        let text = sample();
        assert_eq!(text.slice(1, 5), "éllo");
        assert_eq!(text.slice(6, 11), "wörld");
        assert_eq!(
            text.slice(40, 1000),
            &text.as_str()[text.char_to_byte(40)..]
        );
        assert_eq!(text.slice(5, 2), "");
    }

    #[test]
    fn checkpoints_agree_with_char_indices_on_long_text() {
        let body: String = (0..5000)
            .map(|i| if i % 7 == 0 { 'ß' } else { 'a' })
            .collect();
        let text = IndexedText::new(body.clone());
        let expected: String = body.chars().skip(3000).take(1500).collect();
        assert_eq!(text.slice(3000, 4500), expected);
    }

    #[test]
    fn lines_strip_breaks_and_ignore_the_trailing_newline() {
        let text = sample();
        assert_eq!(text.line_count(), 4);
        assert_eq!(text.lines(1, 3), vec!["second line", "third ERROR here"]);
        assert_eq!(text.lines(3, 99), vec!["fourth"]);
        assert!(text.lines(7, 9).is_empty());
    }

    #[test]
    fn find_all_reports_char_positions() {
        let text = sample();
        let pattern = Regex::new("w.rld|ERROR").unwrap_or_else(|_| unreachable!());
        let found = text.find_all(&pattern, 10);
        assert_eq!(found.len(), 2);
        assert_eq!(
            (found[0].start, found[0].end, found[0].text.as_str()),
            (6, 11, "wörld")
        );
        let chars: Vec<char> = text.as_str().chars().collect();
        let error_at: String = chars[found[1].start..found[1].end].iter().collect();
        assert_eq!(error_at, "ERROR");
        assert_eq!(text.find_all(&pattern, 1).len(), 1);
    }

    #[test]
    fn grep_shows_context_and_separators() {
        let body = (0..10)
            .map(|i| format!("line {i}"))
            .collect::<Vec<_>>()
            .join("\n");
        let text = IndexedText::new(body);
        let pattern = Regex::new("line [28]").unwrap_or_else(|_| unreachable!());
        assert_eq!(
            text.grep(&pattern, 1, 10),
            "1- line 1\n2: line 2\n3- line 3\n--\n7- line 7\n8: line 8\n9- line 9\n"
        );
        assert_eq!(text.grep(&pattern, 0, 1), "2: line 2\n");
    }

    #[test]
    fn chunks_overlap_and_cover_the_text() {
        let text = IndexedText::new("abcdéfghij".to_owned());
        assert_eq!(text.chunks(4, 1), vec!["abcd", "défg", "ghij"]);
        assert_eq!(text.chunks(20, 0), vec!["abcdéfghij"]);
    }
}
