//! Native helpers for big strings, answered in Rust instead of interpreted Python.
//!
//! Monty indexes `str` by code point over UTF-8, so every slice or `find(sub, start)` on a
//! non-ASCII 50 MB string walks the whole string (the research measured 350 `find` calls at 17 s).
//! These helpers keep a per-text index (line starts, a char→byte checkpoint table) built once, so
//! repeated positional access costs O(result) instead of O(text).
//!
//! A context's helper text is usually a read-only map of its file ([`TextBytes::Mapped`]), not a
//! second copy beside the interpreter's string. A mapped file can change under the map (another
//! process rewrites it in place), so the helpers treat their text as bytes: every position is
//! bounds-checked, chars are counted by their leading bytes, and what they return is decoded
//! lossily. A rewritten file gives answers that differ from `context`, never an invalid `str`.
//!
//! What model code sees — names, signatures, what each returns — is [`HELPERS`], the one
//! reference; `monty_glue/helper_calls.rs` converts the Python arguments and calls the methods
//! of [`IndexedText`] below.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::OnceLock;

use regex::bytes::Regex;

/// One native helper model code can call, as [`HELPERS`] describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Helper {
    /// The Python name.
    pub name: &'static str,
    /// The parameters in positional order; a call with more positional arguments or another
    /// keyword is refused, as Python would refuse it.
    pub parameters: &'static [&'static str],
    /// The Python signature with its defaults, e.g. `line_count(text=None)`.
    pub signature: &'static str,
    /// What a call returns.
    pub returns: &'static str,
}

/// The native helpers bound in every Monty session: the reference for what model code can call
/// besides `llm_query` & co. (the crate docs, the engine's prompt text and `ARCHITECTURE.md`
/// point here; the sessions' argument checks read the parameters from this table).
///
/// They are answered in Rust, fast on big strings (see the module docs of `helpers.rs` for why).
/// Conventions shared by all of them:
/// - `text` defaults to `context` (= `context_0`); a context number (`1` for `context_1`) or
///   any `str` may be passed instead.
/// - Positions are Python char indexes, as `context[i:j]` uses; line numbers start at 0 and a
///   line range's end is exclusive.
/// - Patterns use Rust [`regex`](https://docs.rs/regex) syntax: no look-around, no
///   backreferences. A bad pattern raises `ValueError`.
/// - A negative count or position raises `ValueError`; a context file that shrank or was
///   rewritten on disk since the session started raises `OSError` (`context` keeps the text
///   as it was loaded).
pub const HELPERS: &[Helper] = &[
    Helper {
        name: "find_all",
        parameters: &["pattern", "text", "max_matches"],
        signature: "find_all(pattern, text=None, max_matches=10000)",
        returns: "a list of `(start, end, match)` tuples, at most `max_matches`",
    },
    Helper {
        name: "grep",
        parameters: &["pattern", "context_lines", "text", "max_matches"],
        signature: "grep(pattern, context_lines=0, text=None, max_matches=500)",
        returns: "a str of the matching lines as `\"12: line\"` rows, with `context_lines` lines \
                  around each (`\"11- line\"`) and `--` between separate groups; at most \
                  `max_matches` matching lines. Lines are numbered from 0, as `line_range` and \
                  `splitlines()` index them (`line_range(12, 13)` is row 12)",
    },
    Helper {
        name: "line_range",
        parameters: &["start", "end", "text"],
        signature: "line_range(start, end=None, text=None)",
        returns: "a list of the lines `start..end`, numbered from 0 as `grep` numbers them (to \
                  the last line when `end` is None), without their line breaks",
    },
    Helper {
        name: "line_count",
        parameters: &["text"],
        signature: "line_count(text=None)",
        returns: "the number of lines, as `len(text.splitlines())` counts `\\n` line ends",
    },
    Helper {
        name: "chunk_text",
        parameters: &["size", "overlap", "text"],
        signature: "chunk_text(size, overlap=0, text=None)",
        returns: "a list of str chunks of `size` chars, each starting `size - overlap` chars \
                  after the previous one (`ValueError` unless `0 <= overlap < size`)",
    },
    Helper {
        name: "slice_text",
        parameters: &["start", "end", "text"],
        signature: "slice_text(start, end, text=None)",
        returns: "the str `text[start:end]` (positions past the end are clamped)",
    },
];

/// The helper called `name`, if there is one.
pub(crate) fn helper(name: &str) -> Option<&'static Helper> {
    HELPERS.iter().find(|helper| helper.name == name)
}

/// How often (in chars) the char→byte table keeps a checkpoint.
const CHECKPOINT_CHARS: usize = 1024;

/// Where a helper text's bytes live.
#[derive(Debug)]
pub(crate) enum TextBytes {
    /// The helpers' own copy: a `text=` argument, or a context that could not be mapped.
    Owned(String),
    /// A read-only map of a context file whose bytes equalled the interpreter's string when it
    /// was read: file pages, touched only when a helper runs and reclaimable by the kernel,
    /// checked before and after each helper call (a file shortened or rewritten since is
    /// refused).
    Mapped(crate::context_text::MappedFile),
}

impl TextBytes {
    fn as_bytes(&self) -> &[u8] {
        match self {
            Self::Owned(text) => text.as_bytes(),
            Self::Mapped(file) => file.bytes(),
        }
    }
}

/// A text plus lazily built indexes for fast positional access.
#[derive(Debug)]
pub(crate) struct IndexedText {
    bytes: TextBytes,
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

/// Whether `byte` begins a char: it does not continue a UTF-8 sequence.
fn starts_char(byte: u8) -> bool {
    (byte as i8) >= -0x40
}

/// Chars in `bytes` counted without decoding: every byte that does not continue a sequence.
fn count_chars(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&byte| starts_char(byte)).count()
}

/// Lossy text of helper bytes: borrowed when they are valid UTF-8 (always, unless a mapped file
/// was rewritten under the map).
fn decode(bytes: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

impl IndexedText {
    /// A helper text over its own copy.
    pub(crate) fn new(text: String) -> Self {
        let ascii = text.is_ascii();
        Self::with_bytes(TextBytes::Owned(text), ascii)
    }

    /// A helper text over `bytes`; `ascii` says whether they are all ASCII (for a map, known
    /// from the interpreter's copy, so the file is not read for it).
    pub(crate) fn with_bytes(bytes: TextBytes, ascii: bool) -> Self {
        Self {
            bytes,
            ascii,
            line_starts: OnceLock::new(),
            checkpoints: OnceLock::new(),
        }
    }

    #[cfg(test)]
    pub(crate) fn as_str(&self) -> &str {
        std::str::from_utf8(self.text()).unwrap_or_default()
    }

    #[cfg(test)]
    pub(crate) fn is_mapped(&self) -> bool {
        matches!(self.bytes, TextBytes::Mapped { .. })
    }

    /// Whether the helpers can read this text as the interpreter's: a mapped file must not
    /// have shrunk, since reading a page past its new end would end the worker with SIGBUS, nor
    /// been rewritten ([`crate::context_text::MappedFile::check`]). Checked before each helper
    /// call, and after it, so that an answer read while the file changed is not given; a file
    /// shortened during the call itself still ends the worker, which the session reports.
    pub(crate) fn check_readable(&self) -> Result<(), String> {
        match &self.bytes {
            TextBytes::Owned(_) => Ok(()),
            TextBytes::Mapped(file) => file.check(),
        }
    }

    fn text(&self) -> &[u8] {
        self.bytes.as_bytes()
    }

    fn line_starts(&self) -> &[usize] {
        self.line_starts.get_or_init(|| {
            let text = self.text();
            let mut starts = vec![0];
            starts.extend(memchr::memchr_iter(b'\n', text).map(|at| at + 1));
            // A trailing newline does not open an extra empty line (like `str.splitlines`).
            if starts.len() > 1 && starts.last() == Some(&text.len()) {
                starts.pop();
            }
            if text.is_empty() {
                starts.clear();
            }
            starts
        })
    }

    fn checkpoints(&self) -> &[usize] {
        self.checkpoints.get_or_init(|| {
            let text = self.text();
            let mut table = Vec::with_capacity(text.len() / CHECKPOINT_CHARS + 1);
            let char_starts = text
                .iter()
                .enumerate()
                .filter(|&(_, &byte)| starts_char(byte));
            for (chars, (byte, _)) in char_starts.enumerate() {
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
            return position.min(self.text().len());
        }
        let table = self.checkpoints();
        let Some(&base) = table.get(position / CHECKPOINT_CHARS) else {
            return self.text().len();
        };
        self.advance(base, position % CHECKPOINT_CHARS)
    }

    /// `text[start:end]` by char positions (negative positions are not supported; clamped).
    pub(crate) fn slice(&self, start: usize, end: usize) -> Cow<'_, str> {
        let start_byte = self.char_to_byte(start);
        let end_byte = self.char_to_byte(end.max(start));
        decode(&self.text()[start_byte..end_byte])
    }

    /// Lines `start..end` (0-based, end exclusive), without their line breaks.
    pub(crate) fn lines(&self, start: usize, end: usize) -> Vec<Cow<'_, str>> {
        let starts = self.line_starts();
        let end = end.min(starts.len());
        (start.min(end)..end)
            .map(|index| decode(self.line(index)))
            .collect()
    }

    fn line(&self, index: usize) -> &[u8] {
        let text = self.text();
        let starts = self.line_starts();
        let begin = starts[index];
        let finish = starts.get(index + 1).map_or(text.len(), |&next| next);
        let line = &text[begin..finish];
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        line.strip_suffix(b"\r").unwrap_or(line)
    }

    /// Regex matches with char positions, at most `limit` of them.
    pub(crate) fn find_all(&self, pattern: &Regex, limit: usize) -> Vec<Match> {
        let text = self.text();
        let mut matches = Vec::new();
        let (mut byte_cursor, mut char_cursor) = (0, 0);
        for found in pattern.find_iter(text).take(limit) {
            let start = if self.ascii {
                found.start()
            } else {
                char_cursor += count_chars(&text[byte_cursor..found.start()]);
                byte_cursor = found.start();
                char_cursor
            };
            let length = if self.ascii {
                found.len()
            } else {
                count_chars(found.as_bytes())
            };
            matches.push(Match {
                start,
                end: start + length,
                text: decode(found.as_bytes()).into_owned(),
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
        for found in pattern.find_iter(self.text()) {
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
                let _ = writeln!(output, "{index}{marker} {}", decode(self.line(index)));
                printed_until = Some(index + 1);
            }
        }
        output
    }

    /// Consecutive pieces of `size` chars, each starting `size - overlap` chars after the last.
    pub(crate) fn chunks(&self, size: usize, overlap: usize) -> Vec<Cow<'_, str>> {
        let text = self.text();
        let step = size.saturating_sub(overlap).max(1);
        let mut pieces = Vec::new();
        let mut start_byte = 0;
        loop {
            let end_byte = self.advance(start_byte, size);
            pieces.push(decode(&text[start_byte..end_byte]));
            if end_byte >= text.len() {
                break;
            }
            start_byte = self.advance(start_byte, step);
        }
        pieces
    }

    /// Byte offset `chars` chars after `from` (the start of the `chars`-th char after the one at
    /// `from`), clamped to the end of the text.
    fn advance(&self, from: usize, chars: usize) -> usize {
        let text = self.text();
        if self.ascii {
            return from.saturating_add(chars).min(text.len());
        }
        if chars == 0 {
            return from.min(text.len());
        }
        text.get(from + 1..)
            .unwrap_or_default()
            .iter()
            .enumerate()
            .filter(|&(_, &byte)| starts_char(byte))
            .nth(chars - 1)
            .map_or(text.len(), |(offset, _)| from + 1 + offset)
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

    /// `grep` and `line_range` number lines the same way, and their descriptions say so.
    #[test]
    fn grep_and_line_range_say_they_count_from_zero() {
        for name in ["grep", "line_range"] {
            let helper = HELPERS.iter().find(|helper| helper.name == name).unwrap();
            assert!(helper.returns.contains("numbered from 0"), "{name}");
        }
    }

    #[test]
    fn chunks_overlap_and_cover_the_text() {
        let text = IndexedText::new("abcdéfghij".to_owned());
        assert_eq!(text.chunks(4, 1), vec!["abcd", "défg", "ghij"]);
        assert_eq!(text.chunks(20, 0), vec!["abcdéfghij"]);
    }
}
