//! Rows and fields of delimiter-separated values (CSV, TSV), read as RFC 4180 and Python's `csv`
//! read them.
//!
//! A double quote opens a quoted field only at the start of a field; anywhere else it is an
//! ordinary character (`monitor,27" wide`). Inside a quoted field a newline does not end the row
//! and `""` stands for one quote.
//!
//! Many files use no quoting at all (TSV especially), yet may hold a quote at the start of a field
//! that never closes; read as quoting, it would swallow the rest of the file into one row. So a
//! quoted field still open at the first line end [`QUOTED_FIELD_LIMIT`] bytes after its opening
//! quote, or at the end of the input, is not taken as quoted: its row ends at the first line end
//! after the quote, and reading starts afresh there. Every consumer — the record counter of
//! `inspect`, the `records` chunker (whole or streamed), the sniffer — reads rows through
//! [`RowSplitter`], so they agree on every input.

mod bulk;

use bulk::ChunkWalk;

use crate::bitmask::{CHUNK, CsvMasks, Kernel, fold_csv_chunks};

/// How far (bytes) a quoted field may run before it counts as never closing. Python's `csv`
/// refuses fields over 131,072 characters by default (`csv.field_size_limit()`).
pub(crate) const QUOTED_FIELD_LIMIT: u64 = 128 * 1024;

/// A row boundary found by [`RowSplitter`]; offsets count from the first byte fed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RowEvent {
    /// A row ends at `end` (after its `\n`, or at the end of the input).
    Row { end: u64, has_content: bool },
    /// A quoted field opened on line `opened_line` (1-based) never closed. Its row ends at
    /// `row_end` (after the first `\n` following the quote, or at the end of the input); each line
    /// from there to `lines_end` is a row of its own, `content_lines` of them not blank.
    Unclosed {
        row_end: u64,
        lines_end: u64,
        content_lines: u64,
        opened_line: u64,
    },
}

/// A quoted field that has not closed (yet).
#[derive(Debug, Clone, Copy)]
struct OpenField {
    /// Offset of the opening quote.
    opened: u64,
    opened_line: u64,
    /// After the first `\n` inside the field: where its row ends if the field never closes.
    first_line_end: Option<u64>,
    /// Non-blank lines after `first_line_end`, and whether the line in progress has content:
    /// the rows the field leaves behind if it never closes.
    content_lines: u64,
    line_has_content: bool,
}

/// Splits a stream of bytes into rows. Fed in blocks of any size, it finds the same rows; its
/// state between blocks is a few fields.
#[derive(Debug)]
pub(crate) struct RowSplitter {
    delimiter: u8,
    /// Offset of the next byte fed.
    offset: u64,
    /// `\n` bytes fed so far.
    newlines: u64,
    last_byte: Option<u8>,
    row_start: u64,
    row_has_content: bool,
    open: Option<OpenField>,
    /// The field whose closing quote is at this offset: a quote right after it is an escaped
    /// quote (`""`) and reopens it.
    closed: Option<(u64, OpenField)>,
    /// What computes the chunk masks.
    kernel: Kernel,
}

impl RowSplitter {
    pub(crate) fn new(delimiter: u8) -> Self {
        Self {
            delimiter,
            offset: 0,
            newlines: 0,
            last_byte: None,
            row_start: 0,
            row_has_content: false,
            open: None,
            closed: None,
            kernel: Kernel::best(),
        }
    }

    /// Reads the next block, reporting each row that ends inside it.
    pub(crate) fn feed(&mut self, block: &[u8], on_row: impl FnMut(RowEvent)) {
        self.feed_with::<false>(block, on_row);
    }

    /// As [`Self::feed`], for a caller that only counts the rows with content: the rows of whole
    /// chunks without quotes, read outside a quoted field, are counted here instead of reported
    /// one by one. Returns that count.
    pub(crate) fn feed_counting(&mut self, block: &[u8], on_row: impl FnMut(RowEvent)) -> u64 {
        self.feed_with::<true>(block, on_row)
    }

    fn feed_with<const COUNTING: bool>(
        &mut self,
        block: &[u8],
        mut on_row: impl FnMut(RowEvent),
    ) -> u64 {
        let base = self.offset;
        // Whole 64-byte chunks go by bitmasks, visiting only quotes and newlines; whether the
        // bytes between two of them hold anything but whitespace is one mask test. A caller
        // that only counts has most chunks counted from their masks alone (`bulk.rs`).
        let start = ChunkWalk {
            chunk_start: 0,
            content_pending: false,
            counted: 0,
            row_has_content: self.row_has_content,
            row_start: self.row_start,
            newlines: self.newlines,
        };
        // The step is inlined by force (an attribute a closure takes only as an argument):
        // compiled on its own it lacks the SIMD loop's CPU features (`popcnt`, `bmi1`), which
        // made the CSV pass twice as slow when an unrelated change moved it out of line.
        let (chunks, walk) = fold_csv_chunks(
            self.kernel,
            block,
            self.delimiter,
            start,
            #[inline(always)]
            |mut walk, masks| {
                if COUNTING && masks.quote == 0 && self.open.is_none() {
                    walk.count_plain_rows(masks, base);
                } else if COUNTING && self.count_quoted_rows(&mut walk, masks, block, base) {
                } else {
                    self.row_has_content = walk.row_has_content;
                    self.row_start = walk.row_start;
                    self.newlines = walk.newlines;
                    walk.content_pending =
                        self.chunk_events(block, base, &walk, masks, &mut on_row);
                    walk.row_has_content = self.row_has_content;
                    walk.row_start = self.row_start;
                    walk.newlines = self.newlines;
                }
                walk.chunk_start += CHUNK;
                walk
            },
        );
        self.row_has_content = walk.row_has_content;
        self.row_start = walk.row_start;
        self.newlines = walk.newlines;
        let mut content_pending = walk.content_pending;
        let tail = chunks * CHUNK;
        let mut start = tail;
        for position in memchr::memchr2_iter(b'"', b'\n', &block[tail..]) {
            let position = tail + position;
            self.absorb_content(content_pending || has_content(&block[start..position]));
            content_pending = false;
            start = position + 1;
            self.event(block, position, base, &mut on_row);
        }
        self.absorb_content(content_pending || has_content(&block[start..]));
        self.offset += block.len() as u64;
        if let Some(&last) = block.last() {
            self.last_byte = Some(last);
        }
        walk.counted
    }

    /// Reads the quotes and newlines of `walk`'s chunk one by one; returns whether the chunk
    /// ends with content not yet noted.
    #[inline]
    fn chunk_events(
        &mut self,
        block: &[u8],
        base: u64,
        walk: &ChunkWalk,
        masks: &CsvMasks,
        on_row: &mut impl FnMut(RowEvent),
    ) -> bool {
        let content = !masks.whitespace & !masks.quote;
        let mut content_pending = walk.content_pending;
        let mut events = masks.quote | masks.newline;
        let mut from = 0;
        while events != 0 {
            let at = events.trailing_zeros();
            let position = walk.chunk_start + at as usize;
            let before = content & !(!0u64 << at) & (!0u64 << from);
            self.absorb_content(content_pending || before != 0);
            content_pending = false;
            self.event(block, position, base, on_row);
            from = at + 1;
            events &= events - 1;
        }
        if from < 64 {
            content_pending |= content & (!0u64 << from) != 0;
        }
        content_pending
    }

    /// A quote or newline at `position` of a block that starts at offset `base`.
    #[inline]
    fn event(
        &mut self,
        block: &[u8],
        position: usize,
        base: u64,
        on_row: &mut impl FnMut(RowEvent),
    ) {
        let at = base + position as u64;
        if block[position] == b'"' {
            let previous = match position {
                0 => self.last_byte,
                _ => Some(block[position - 1]),
            };
            self.quote(at, previous);
        } else {
            self.newline(at, on_row);
        }
    }

    /// Ends the input: reports the last row, and a quoted field left open as [`RowEvent::Unclosed`].
    pub(crate) fn finish(self, mut on_row: impl FnMut(RowEvent)) {
        let end = self.offset;
        if let Some(field) = self.open {
            let (row_end, content_lines) = match field.first_line_end {
                Some(first) => (
                    first,
                    field.content_lines + u64::from(field.line_has_content),
                ),
                None => (end, 0),
            };
            on_row(RowEvent::Unclosed {
                row_end,
                lines_end: end,
                content_lines,
                opened_line: field.opened_line,
            });
        } else if self.row_start < end {
            on_row(RowEvent::Row {
                end,
                has_content: self.row_has_content,
            });
        }
    }

    /// Whether the input so far ends inside a quoted field (whose row is not decided yet).
    pub(crate) fn in_quoted_field(&self) -> bool {
        self.open.is_some()
    }

    /// Notes whether the bytes between two quotes or newlines held anything but whitespace.
    #[inline]
    fn absorb_content(&mut self, content: bool) {
        match &mut self.open {
            Some(field) => field.line_has_content |= content,
            None => self.row_has_content |= content,
        }
    }

    fn quote(&mut self, at: u64, previous: Option<u8>) {
        if let Some(mut field) = self.open.take() {
            field.line_has_content = true;
            self.closed = Some((at, field));
            return;
        }
        self.row_has_content = true;
        if let Some((_, mut field)) = self.closed.take_if(|(closed_at, _)| *closed_at + 1 == at) {
            field.line_has_content = true;
            self.open = Some(field);
        } else if previous.is_none_or(|byte| byte == b'\n' || byte == self.delimiter) {
            self.open = Some(OpenField {
                opened: at,
                opened_line: self.newlines + 1,
                first_line_end: None,
                content_lines: 0,
                line_has_content: true,
            });
        }
    }

    fn newline(&mut self, at: u64, on_row: &mut impl FnMut(RowEvent)) {
        self.newlines += 1;
        let end = at + 1;
        let Some(field) = &mut self.open else {
            on_row(RowEvent::Row {
                end,
                has_content: self.row_has_content,
            });
            self.row_start = end;
            self.row_has_content = false;
            return;
        };
        match field.first_line_end {
            None => field.first_line_end = Some(end),
            Some(_) => field.content_lines += u64::from(field.line_has_content),
        }
        field.line_has_content = false;
        if at >= field.opened + QUOTED_FIELD_LIMIT {
            let field = *field;
            self.open = None;
            on_row(RowEvent::Unclosed {
                row_end: field.first_line_end.unwrap_or(end),
                lines_end: end,
                content_lines: field.content_lines,
                opened_line: field.opened_line,
            });
            self.row_start = end;
            self.row_has_content = false;
        }
    }
}

/// The fields of one row, unquoted (`""` becomes `"`); the row may hold quoted newlines.
pub(crate) fn split_fields(row: &[u8], delimiter: u8) -> Vec<String> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        FieldStart,
        Unquoted,
        Quoted,
        QuoteInQuoted,
    }
    let text = String::from_utf8_lossy(row);
    let delimiter = char::from(delimiter);
    let mut fields = Vec::new();
    let mut current = String::new();
    let mut state = State::FieldStart;
    for c in text.chars() {
        state = match (state, c) {
            (State::Quoted, '"') => State::QuoteInQuoted,
            (State::Quoted, c) => {
                current.push(c);
                State::Quoted
            }
            (State::FieldStart, '"') => State::Quoted,
            (State::QuoteInQuoted, '"') => {
                current.push('"');
                State::Quoted
            }
            (_, c) if c == delimiter => {
                fields.push(std::mem::take(&mut current));
                State::FieldStart
            }
            (_, c) => {
                current.push(c);
                State::Unquoted
            }
        };
    }
    fields.push(current);
    fields
}

fn has_content(bytes: &[u8]) -> bool {
    bytes.iter().any(|byte| !byte.is_ascii_whitespace())
}

#[cfg(test)]
mod tests;
