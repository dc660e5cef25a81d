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

/// What [`RowSplitter`] carries from chunk to chunk of a block, kept in registers while it
/// counts quote-free chunks in bulk: a copy of its row state, written back before anything else
/// reads the rows.
#[derive(Debug, Clone, Copy)]
struct ChunkWalk {
    /// Where the chunk starts in the block.
    chunk_start: usize,
    /// The bytes after the last quote or newline so far hold content not yet noted.
    content_pending: bool,
    /// Rows with content counted in bulk.
    counted: u64,
    row_has_content: bool,
    row_start: u64,
    newlines: u64,
}

impl ChunkWalk {
    /// Counts the rows with content that end in a chunk without quotes read outside a quoted
    /// field, in a block that starts at offset `base`.
    #[inline]
    fn count_plain_rows(&mut self, masks: &CsvMasks, base: u64) {
        self.row_has_content |= self.content_pending;
        self.content_pending = false;
        let newlines = masks.newline;
        let content = !masks.whitespace;
        if newlines == 0 {
            self.row_has_content |= content != 0;
            return;
        }
        // A row's part in the chunk starts at the chunk's start or after a newline. Adding its
        // start bit to the other whitespace carries to the first byte that is not: content, or
        // the newline that ends a blank row. Those landings come in the order of the rows.
        let spaces = masks.whitespace & !newlines;
        let landings = spaces.wrapping_add(newlines << 1 | 1) & !spaces;
        let mut blank = landings & newlines;
        // The first row may have had content before the chunk.
        let first = landings & landings.wrapping_neg();
        blank &= !(first & 0u64.wrapping_sub(u64::from(self.row_has_content)));
        let last_newline = 63 - newlines.leading_zeros();
        let after_last = (!0u64).checked_shl(last_newline + 1).unwrap_or(0);
        self.row_has_content = content & after_last != 0;
        self.row_start = base + self.chunk_start as u64 + u64::from(last_newline) + 1;
        self.newlines += u64::from(newlines.count_ones());
        self.counted += u64::from(newlines.count_ones() - blank.count_ones());
    }
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
        // bytes between two of them hold anything but whitespace is one mask test.
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
            start,
            #[inline(always)]
            |mut walk, masks| {
                if COUNTING && masks.quote == 0 && self.open.is_none() {
                    walk.count_plain_rows(masks, base);
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
mod tests {
    use super::*;

    /// Rows as text, in blocks of `size`: `(row, has_content)`; rows of an unclosed field are
    /// marked with `!`.
    fn rows(input: &str, delimiter: u8, size: usize) -> Vec<String> {
        let bytes = input.as_bytes();
        let mut out = Vec::new();
        let mut start = 0usize;
        let mut on_row = |event: RowEvent| match event {
            RowEvent::Row { end, .. } => {
                out.push(input[start..end as usize].to_owned());
                start = end as usize;
            }
            RowEvent::Unclosed {
                row_end, lines_end, ..
            } => {
                out.push(format!("!{}", &input[start..row_end as usize]));
                for line in input[row_end as usize..lines_end as usize].split_inclusive('\n') {
                    out.push(format!("!{line}"));
                }
                start = lines_end as usize;
            }
        };
        let mut splitter = RowSplitter::new(delimiter);
        for block in bytes.chunks(size) {
            splitter.feed(block, &mut on_row);
        }
        splitter.finish(&mut on_row);
        out
    }

    fn all_block_sizes(input: &str, delimiter: u8) -> Vec<String> {
        let whole = rows(input, delimiter, input.len().max(1));
        for size in [1, 2, 3, 5, 7, 64] {
            assert_eq!(rows(input, delimiter, size), whole, "block size {size}");
        }
        whole
    }

    #[test]
    fn a_quote_opens_a_field_only_at_its_start() {
        let input = "item,size\nmonitor,27\" wide\ncable,\"2 m, coiled\nblack\"\nmouse,small\n";
        assert_eq!(
            all_block_sizes(input, b','),
            [
                "item,size\n",
                "monitor,27\" wide\n",
                "cable,\"2 m, coiled\nblack\"\n",
                "mouse,small\n"
            ]
        );
        // The delimiter decides what a field start is.
        assert_eq!(
            all_block_sizes("a;\"x\ny\";b\nc,\"d\n", b';'),
            ["a;\"x\ny\";b\n", "c,\"d\n"]
        );
    }

    #[test]
    fn escaped_quotes_keep_the_field_open_across_any_blocking() {
        let input = "id,text\n1,\"say \"\"hi\"\"\nthere\"\n2,\"\"\"\"\n3,\"a\"b,\"c\n\"\r\n4,x";
        assert_eq!(
            all_block_sizes(input, b','),
            [
                "id,text\n",
                "1,\"say \"\"hi\"\"\nthere\"\n",
                "2,\"\"\"\"\n",
                "3,\"a\"b,\"c\n\"\r\n",
                "4,x"
            ]
        );
    }

    #[test]
    fn a_field_that_never_closes_falls_back_to_lines() {
        let input = "a\tb\n1\t\"oops\tx\n2\ty\n\n3\t\"\"z\n";
        assert_eq!(
            all_block_sizes(input, b'\t'),
            ["a\tb\n", "!1\t\"oops\tx\n", "!2\ty\n", "!\n", "!3\t\"\"z\n"]
        );
        let mut unclosed = Vec::new();
        let mut splitter = RowSplitter::new(b'\t');
        splitter.feed(input.as_bytes(), |event| unclosed.push(event));
        splitter.finish(|event| unclosed.push(event));
        assert_eq!(
            unclosed.last(),
            Some(&RowEvent::Unclosed {
                row_end: 14,
                lines_end: input.len() as u64,
                content_lines: 2,
                opened_line: 2
            })
        );
    }

    #[test]
    fn a_field_open_past_the_limit_ends_at_its_first_line() {
        // A stray quote at a field start, closed by another stray quote far below: without the
        // limit the two would join every line between them into one row.
        let filler = "row\tplain text\n".repeat(10_000);
        let input = format!("h1\th2\nx\t\"stray\n{filler}y\tquote\" here\nlast\trow\n");
        let rows = all_block_sizes_fast(&input);
        assert_eq!(rows.len(), 2 + 10_000 + 2);
        assert_eq!(rows[1], "!x\t\"stray\n");
        assert!(rows.iter().all(|row| row.matches('\n').count() == 1));
        // Lines up to the first line end 128 KiB past the quote are rows of the unclosed field;
        // reading starts afresh after it, so the closing quote far below is an ordinary one.
        let fallen_back = rows.iter().filter(|row| row.starts_with('!')).count();
        // The quote is at byte 8; filler line `i` (15 bytes) ends with the `\n` at 29 + 15 i.
        let last_fallen_back = (8 + QUOTED_FIELD_LIMIT as usize - 29).div_ceil(15);
        assert_eq!(fallen_back, 1 + last_fallen_back + 1);
        assert_eq!(rows[rows.len() - 2..], ["y\tquote\" here\n", "last\trow\n"]);
    }

    fn all_block_sizes_fast(input: &str) -> Vec<String> {
        let whole = rows(input, b'\t', input.len());
        for size in [4096, 65_536, 100_003] {
            assert_eq!(rows(input, b'\t', size), whole, "block size {size}");
        }
        whole
    }

    #[test]
    fn fields_are_unquoted_like_pythons_csv() {
        assert_eq!(
            split_fields(b"a,\"b,c\",\"say \"\"hi\"\"\",27\" wide,\"x\"y,", b','),
            ["a", "b,c", "say \"hi\"", "27\" wide", "xy", ""]
        );
        assert_eq!(split_fields(b"one\ttwo", b'\t'), ["one", "two"]);
    }

    /// Every event, in blocks of `size`.
    fn events(input: &[u8], delimiter: u8, size: usize, kernel: Kernel) -> Vec<RowEvent> {
        let mut out = Vec::new();
        let mut splitter = RowSplitter::new(delimiter);
        splitter.kernel = kernel;
        for block in input.chunks(size.max(1)) {
            splitter.feed(block, |event| out.push(event));
        }
        splitter.finish(|event| out.push(event));
        out
    }

    /// Blocks under 64 bytes are read byte by byte (between quotes and newlines); longer ones
    /// by 64-byte bitmasks, whichever kernel computes them. All must report the same rows.
    fn assert_chunks_match_bytes(input: &[u8], delimiter: u8) {
        let reference = events(input, delimiter, 63, Kernel::Portable);
        assert_eq!(events(input, delimiter, 1, Kernel::Portable), reference);
        for kernel in Kernel::available() {
            for size in [64, 65, 130, 4096, input.len()] {
                assert_eq!(
                    events(input, delimiter, size, kernel),
                    reference,
                    "{kernel:?}, block {size}, input {:?}",
                    String::from_utf8_lossy(input)
                );
            }
        }
    }

    #[test]
    fn bitmask_chunks_match_the_byte_reader_on_tricky_tables() {
        let rows: [&[u8]; 8] = [
            b"1,\"say \"\"hi\"\" there\",x\n",
            b"2,\"multi\nline, with comma\",y\r\n",
            b"3,27\" wide,\"\"\"\"\n",
            b"\n",
            b"   \t \r\n",
            b"4,\"  \n  \n\",z\n",
            b"5,\xff\xfe invalid,\"\xc3\n\"\n",
            b"6,a\"b,\"c\"d\"\n",
        ];
        for row in rows {
            // Shift the row across every position of a chunk.
            let input: Vec<u8> = (0..70)
                .flat_map(|i| [&b"v".repeat(i)[..], row].concat())
                .collect();
            assert_chunks_match_bytes(&input, b',');
        }
        let mixed: Vec<u8> = (0..40)
            .flat_map(|i| rows[i % rows.len()].to_vec())
            .collect();
        assert_chunks_match_bytes(&mixed, b',');
        assert_chunks_match_bytes(&mixed, b'\t');
        assert_chunks_match_bytes(b"", b',');
        let unclosed = format!("h\n{}\"unclosed\n1\n", "x,".repeat(50));
        assert_chunks_match_bytes(unclosed.as_bytes(), b',');
    }

    /// Rows with content (a row of an unclosed field counts), from the reported events.
    fn content_rows(events: &[RowEvent]) -> u64 {
        events
            .iter()
            .map(|event| match *event {
                RowEvent::Row { has_content, .. } => u64::from(has_content),
                RowEvent::Unclosed { content_lines, .. } => 1 + content_lines,
            })
            .sum()
    }

    /// Counting whole quote-free chunks in bulk gives the rows the events report, whatever the
    /// blocking and kernel.
    fn assert_counting_matches_events(input: &[u8], delimiter: u8) {
        let reference = content_rows(&events(input, delimiter, 63, Kernel::Portable));
        for kernel in Kernel::available() {
            for size in [1, 64, 65, 130, 4096, input.len()] {
                let mut splitter = RowSplitter::new(delimiter);
                splitter.kernel = kernel;
                let mut reported = Vec::new();
                let mut counted = 0;
                for block in input.chunks(size.max(1)) {
                    counted += splitter.feed_counting(block, |event| reported.push(event));
                }
                splitter.finish(|event| reported.push(event));
                assert_eq!(
                    counted + content_rows(&reported),
                    reference,
                    "{kernel:?}, block {size}, input {:?}",
                    String::from_utf8_lossy(input)
                );
            }
        }
    }

    #[test]
    fn counting_plain_chunks_matches_the_reported_rows() {
        // Blank and whitespace-only rows at every position of a chunk, rows spanning chunks,
        // CRLF, a chunk with no newline, quoted fields before and after plain chunks.
        let rows: [&[u8]; 7] = [
            b"1,plain,row\n",
            b"\n",
            b"  \t \r\n",
            b"2,crlf\r\n",
            b"3,\"quoted\nfield\",x\n",
            &[b'w'; 70],
            b"\n\n \n",
        ];
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..200 {
            let mut input = Vec::new();
            while input.len() < 600 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                input.extend_from_slice(rows[(state % rows.len() as u64) as usize]);
                input.extend(std::iter::repeat_n(b' ', (state >> 8) as usize % 5));
            }
            assert_counting_matches_events(&input, b',');
        }
        assert_counting_matches_events(&b"\n".repeat(200), b',');
        assert_counting_matches_events(&b" ".repeat(200), b',');
        assert_counting_matches_events(&[&b"x".repeat(64)[..], &b"\n".repeat(64)].concat(), b',');
        let unclosed = format!("h\n{}\"unclosed\n1\n{}", "x,".repeat(50), "y\n".repeat(40));
        assert_counting_matches_events(unclosed.as_bytes(), b',');
    }

    #[test]
    fn bitmask_chunks_match_the_byte_reader_on_random_tables() {
        let alphabet = b"\"\"\",,,\n\n\r \tab1\xc3\xa9";
        let mut state = 0xD1B5_4A32_D192_ED03u64;
        for _ in 0..300 {
            let length = (state % 700) as usize;
            let input: Vec<u8> = (0..length)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    alphabet[(state % alphabet.len() as u64) as usize]
                })
                .collect();
            assert_chunks_match_bytes(&input, b',');
        }
    }
}
