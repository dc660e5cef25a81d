//! Regex search over stored buffers with context lines, like ripgrep.

use std::ops::{ControlFlow, Range};

use regex::RegexBuilder;
use serde::Serialize;

use crate::error::{Error, Result};
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
    pub fn grep(
        &self,
        pattern: &str,
        options: &GrepOptions,
        emit: &mut dyn FnMut(GrepLine<'_>) -> ControlFlow<()>,
    ) -> Result<GrepSummary> {
        let mut pattern = if options.fixed_strings {
            regex::escape(pattern)
        } else {
            pattern.to_owned()
        };
        if options.word {
            pattern = format!(r"\b(?:{pattern})\b");
        }
        let regex = RegexBuilder::new(&pattern)
            .case_insensitive(options.ignore_case)
            .multi_line(true)
            .build()
            .map_err(Error::Regex)?;
        let mut summary = GrepSummary::default();
        let mut printed_any = false;
        for buffer in self.filter_buffers(&options.buffers, options.path_glob.as_deref())? {
            let text = self.text(&buffer)?;
            let mut lines = LinePrinter {
                text: &text,
                buffer: &buffer.name,
                regex: &regex,
                before: options.before,
                after: options.after,
                previous_line: 0,
                previous_end: 0,
                counted_position: 0,
                counted_line: 1,
            };
            let mut search_from = 0;
            let mut matched = 0;
            while search_from < text.len() && options.max_count.is_none_or(|max| matched < max) {
                let Some(found) = regex.find_at(&text, search_from) else {
                    break;
                };
                if found.start() >= text.len() && found.is_empty() {
                    break;
                }
                let line_start =
                    memchr::memrchr(b'\n', &text.as_bytes()[..found.start()]).map_or(0, |p| p + 1);
                let line_end = memchr::memchr(b'\n', &text.as_bytes()[found.start()..])
                    .map_or(text.len(), |p| found.start() + p + 1);
                if (printed_any
                    && matched == 0
                    && options.before + options.after > 0
                    && emit(GrepLine::Break).is_break())
                    || lines.print_match(line_start, line_end, emit).is_break()
                {
                    return Ok(summary);
                }
                matched += 1;
                printed_any = true;
                search_from = line_end;
            }
            if matched > 0 {
                let end = GrepLine::End {
                    buffer: &buffer.name,
                    matched_lines: matched,
                };
                if lines.print_after(usize::MAX, emit).is_break() || emit(end).is_break() {
                    return Ok(summary);
                }
                summary.matched_lines += matched;
                summary.matched_buffers += 1;
            }
        }
        Ok(summary)
    }
}

struct LinePrinter<'a> {
    text: &'a str,
    buffer: &'a str,
    regex: &'a regex::Regex,
    before: usize,
    after: usize,
    /// Last printed line number (0 before the first).
    previous_line: u64,
    /// Byte just past the last printed line.
    previous_end: usize,
    counted_position: usize,
    counted_line: u64,
}

impl LinePrinter<'_> {
    fn line_number(&mut self, position: usize) -> u64 {
        let bytes = &self.text.as_bytes()[self.counted_position..position];
        self.counted_line += memchr::memchr_iter(b'\n', bytes).count() as u64;
        self.counted_position = position;
        self.counted_line
    }

    fn print_match(
        &mut self,
        start: usize,
        end: usize,
        emit: &mut dyn FnMut(GrepLine<'_>) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let number = self.line_number(start);
        let after = if self.previous_line == 0 {
            0
        } else {
            (number - self.previous_line - 1).min(self.after as u64)
        };
        self.print_after(after as usize, emit)?;
        let before_first = number
            .saturating_sub(self.before as u64)
            .max(self.previous_line + 1);
        // As ripgrep: `--` separates groups only when context lines are shown.
        if self.previous_line > 0
            && before_first > self.previous_line + 1
            && self.before + self.after > 0
        {
            emit(GrepLine::Break)?;
        }
        let mut before = Vec::new();
        let mut cursor = start;
        for _ in before_first..number {
            let line_start =
                memchr::memrchr(b'\n', &self.text.as_bytes()[..cursor.saturating_sub(1)])
                    .map_or(0, |p| p + 1);
            before.push(line_start..cursor);
            cursor = line_start;
        }
        for (offset, range) in before.into_iter().rev().enumerate() {
            emit(GrepLine::Context {
                buffer: self.buffer,
                line: before_first + offset as u64,
                text: trim_line(&self.text[range]),
            })?;
        }
        let text = trim_line(&self.text[start..end]);
        emit(GrepLine::Match {
            buffer: self.buffer,
            line: number,
            text,
            matches: self
                .regex
                .find_iter(text)
                .filter(|found| !found.is_empty())
                .map(|found| found.range())
                .collect(),
        })?;
        self.previous_line = number;
        self.previous_end = end;
        ControlFlow::Continue(())
    }

    /// Prints up to `limit` (and at most `after`) lines after the last printed line.
    fn print_after(
        &mut self,
        limit: usize,
        emit: &mut dyn FnMut(GrepLine<'_>) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        for _ in 0..limit.min(self.after) {
            if self.previous_end >= self.text.len() {
                break;
            }
            let end = memchr::memchr(b'\n', &self.text.as_bytes()[self.previous_end..])
                .map_or(self.text.len(), |p| self.previous_end + p + 1);
            self.previous_line += 1;
            emit(GrepLine::Context {
                buffer: self.buffer,
                line: self.previous_line,
                text: trim_line(&self.text[self.previous_end..end]),
            })?;
            self.previous_end = end;
        }
        ControlFlow::Continue(())
    }
}

fn trim_line(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
}
