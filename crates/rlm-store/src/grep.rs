//! Regex search over stored buffers with context lines, like ripgrep, by ripgrep's own
//! searcher (`grep-searcher` with a `grep-regex` matcher: literal prefilters, line handling)
//! streaming each buffer's text out of SQLite, so memory stays flat however large it is.

use std::ops::{ControlFlow, Range};

use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkError, SinkMatch,
};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::read::buffer_reader;
use crate::store::Store;

/// Options of [`Store::grep`].
#[derive(Debug, Clone, Default)]
pub struct GrepOptions {
    /// Only these buffers (names or ids); empty means all.
    pub buffers: Vec<String>,
    /// Only buffers whose name or path matches this glob.
    pub path_glob: Option<String>,
    /// Lines of context before each match.
    pub before: usize,
    /// Lines of context after each match.
    pub after: usize,
    /// Case-insensitive matching.
    pub ignore_case: bool,
    /// The pattern is literal text, not a regular expression.
    pub fixed_strings: bool,
    /// Matches only at word boundaries (`\b` on both sides).
    pub word: bool,
    /// Stop a buffer after this many matching lines.
    pub max_count: Option<u64>,
    /// Leave [`GrepLine::Match`]'s `matches` empty: saves a second regex pass over every
    /// matching line when nothing marks the matches.
    pub lines_only: bool,
}

/// One line of output.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum GrepLine<'a> {
    /// A line containing a match.
    Match {
        /// Buffer name.
        buffer: &'a str,
        /// 1-based line number.
        line: u64,
        /// The line without its line ending.
        text: &'a str,
        /// Byte ranges of the matches in `text`.
        matches: Vec<Range<usize>>,
    },
    /// A context line near a match.
    Context {
        /// Buffer name.
        buffer: &'a str,
        /// 1-based line number.
        line: u64,
        /// The line without its line ending.
        text: &'a str,
    },
    /// A gap between non-adjacent groups of lines (`--` in ripgrep).
    Break,
    /// The last line of a buffer that matched has been emitted.
    End {
        /// Buffer name.
        buffer: &'a str,
        /// Its matching lines.
        matched_lines: u64,
    },
}

/// Totals of a grep.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct GrepSummary {
    /// Matching lines.
    pub matched_lines: u64,
    /// Buffers with at least one match.
    pub matched_buffers: u64,
}

impl Store {
    /// Calls `emit` for every matching line (and context line) of the selected buffers, in
    /// buffer-name order. Return `Break` from `emit` to stop early.
    ///
    /// Patterns match within one line, as ripgrep's do: a pattern that needs a line break
    /// (`a\nb`) is refused, and classes such as `\s` do not match one.
    pub fn grep(
        &self,
        pattern: &str,
        options: &GrepOptions,
        emit: &mut dyn FnMut(GrepLine<'_>) -> ControlFlow<()>,
    ) -> Result<GrepSummary> {
        let matcher = matcher(pattern, options)?;
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .before_context(options.before)
            .after_context(options.after)
            .max_matches(options.max_count)
            // Stored text is UTF-8 that was checked at load: a NUL is text here.
            .binary_detection(BinaryDetection::none())
            .build();
        let with_context = options.before + options.after > 0;
        // Streamed through SQLite's small page cache rather than its memory map, which would
        // leave every page of every buffer read resident: memory stays flat as the store grows.
        let _unmapped = Unmapped::new(&self.connection)?;
        let mut summary = GrepSummary::default();
        for buffer in self.filter_buffers(&options.buffers, options.path_glob.as_deref())? {
            let mut sink = LineSink {
                buffer: &buffer.name,
                matcher: &matcher,
                lines_only: options.lines_only,
                emit: &mut *emit,
                // As ripgrep: `--` also separates buffers when context lines are shown.
                break_first: with_context && summary.matched_buffers > 0,
                matched: 0,
                stopped: false,
            };
            let reader = buffer_reader(&self.connection, buffer.id)?;
            searcher
                .search_reader(&matcher, reader, &mut sink)
                .map_err(|error| error.into_store_error(&buffer.name))?;
            let (matched, stopped) = (sink.matched, sink.stopped);
            if stopped {
                return Ok(summary);
            }
            if matched > 0 {
                summary.matched_lines += matched;
                summary.matched_buffers += 1;
                let end = GrepLine::End {
                    buffer: &buffer.name,
                    matched_lines: matched,
                };
                if emit(end).is_break() {
                    return Ok(summary);
                }
            }
        }
        Ok(summary)
    }
}

/// Turns SQLite's memory map off on a connection until dropped.
struct Unmapped<'a>(&'a rusqlite::Connection);

impl<'a> Unmapped<'a> {
    fn new(connection: &'a rusqlite::Connection) -> Result<Self> {
        connection.pragma_update(None, "mmap_size", 0)?;
        Ok(Self(connection))
    }
}

impl Drop for Unmapped<'_> {
    fn drop(&mut self) {
        // Reads are only slower without the map; nothing to report if this fails.
        let _ = self
            .0
            .pragma_update(None, "mmap_size", crate::store::MMAP_BYTES);
    }
}

/// The pattern as the options shape it, matching within lines.
fn matcher(pattern: &str, options: &GrepOptions) -> Result<RegexMatcher> {
    let mut pattern = if options.fixed_strings {
        regex::escape(pattern)
    } else {
        pattern.to_owned()
    };
    if options.word {
        pattern = format!(r"\b(?:{pattern})\b");
    }
    RegexMatcherBuilder::new()
        .case_insensitive(options.ignore_case)
        // Matches stay within a line.
        .line_terminator(Some(b'\n'))
        .build(&pattern)
        .map_err(Error::Regex)
}

/// Turns the searcher's lines into [`GrepLine`]s for one buffer.
struct LineSink<'a> {
    buffer: &'a str,
    matcher: &'a RegexMatcher,
    lines_only: bool,
    emit: &'a mut dyn FnMut(GrepLine<'_>) -> ControlFlow<()>,
    /// Emit a `--` before this buffer's first line.
    break_first: bool,
    matched: u64,
    /// `emit` asked to stop.
    stopped: bool,
}

impl LineSink<'_> {
    /// Emits `line`, after the `--` owed before this buffer's first line; false to stop.
    fn send(&mut self, line: GrepLine<'_>) -> bool {
        if std::mem::take(&mut self.break_first) && (self.emit)(GrepLine::Break).is_break() {
            self.stopped = true;
            return false;
        }
        self.stopped = (self.emit)(line).is_break();
        !self.stopped
    }
}

impl Sink for LineSink<'_> {
    type Error = SearchError;

    fn matched(
        &mut self,
        _searcher: &Searcher,
        found: &SinkMatch<'_>,
    ) -> std::result::Result<bool, SearchError> {
        let text = line_text(found.bytes());
        let mut matches = Vec::new();
        if !self.lines_only {
            self.matcher
                .find_iter(text.as_bytes(), |range| {
                    if !range.is_empty() {
                        matches.push(range.start()..range.end());
                    }
                    true
                })
                .map_err(|error| SearchError::Message(error.to_string()))?;
        }
        self.matched += 1;
        Ok(self.send(GrepLine::Match {
            buffer: self.buffer,
            line: found.line_number().unwrap_or_default(),
            text,
            matches,
        }))
    }

    fn context(
        &mut self,
        _searcher: &Searcher,
        context: &SinkContext<'_>,
    ) -> std::result::Result<bool, SearchError> {
        Ok(self.send(GrepLine::Context {
            buffer: self.buffer,
            line: context.line_number().unwrap_or_default(),
            text: line_text(context.bytes()),
        }))
    }

    fn context_break(&mut self, _searcher: &Searcher) -> std::result::Result<bool, SearchError> {
        Ok(self.send(GrepLine::Break))
    }
}

/// A line without its line ending. Stored text is UTF-8 and lines are cut at `\n`, so the
/// fallback (an empty line) is never taken.
fn line_text(bytes: &[u8]) -> &str {
    let line = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    std::str::from_utf8(line).unwrap_or_default()
}

/// Why the searcher stopped with an error.
#[derive(Debug)]
enum SearchError {
    Io(std::io::Error),
    Message(String),
}

impl SinkError for SearchError {
    fn error_message<T: std::fmt::Display>(message: T) -> Self {
        Self::Message(message.to_string())
    }

    fn error_io(error: std::io::Error) -> Self {
        Self::Io(error)
    }
}

impl SearchError {
    fn into_store_error(self, buffer: &str) -> Error {
        match self {
            Self::Io(source) => Error::Io {
                action: "cannot read the stored text of",
                path: buffer.into(),
                source,
            },
            Self::Message(message) => Error::Io {
                action: "cannot search the stored text of",
                path: buffer.into(),
                source: std::io::Error::other(message),
            },
        }
    }
}
