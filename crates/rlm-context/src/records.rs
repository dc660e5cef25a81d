//! Streaming record counters for line- and row-based formats. Each keeps only a few flags of
//! state between blocks, so a record may span any number of blocks.

use crate::counts::ByteCounts;
use crate::delimited::{RowEvent, RowSplitter};

/// Counts non-blank lines (NDJSON records).
#[derive(Debug, Default)]
pub(crate) struct LineRecordCounter {
    records: u64,
    line_has_content: bool,
}

impl LineRecordCounter {
    /// Counts `block` given its [`ByteCounts`]: from the line feeds alone when no line of the
    /// block can be blank, line by line otherwise.
    pub(crate) fn feed_counted(&mut self, block: &[u8], counts: &ByteCounts) {
        if counts.newlines == 0 || counts.unsure_line_starts > 0 {
            self.feed(block);
            return;
        }
        // The line in progress ends at the first line feed, with content if it had some or a
        // byte before that line feed is not whitespace.
        let first_stop = block
            .iter()
            .find(|&&byte| byte == b'\n' || !byte.is_ascii_whitespace());
        if first_stop != Some(&b'\n') {
            self.line_has_content = true;
        }
        // Every other line ending in the block starts after a line feed with a byte that is
        // not whitespace (no line start is unsure), so it has content.
        self.records += u64::from(self.line_has_content) + counts.newlines - 1;
        // As does a line after the last line feed, if it has started.
        self.line_has_content = block.last() != Some(&b'\n');
    }

    /// Counts `block` line by line.
    pub(crate) fn feed(&mut self, block: &[u8]) {
        let mut start = 0;
        for newline in memchr::memchr_iter(b'\n', block) {
            if !self.line_has_content {
                self.line_has_content = has_content(&block[start..newline]);
            }
            if self.line_has_content {
                self.records += 1;
            }
            self.line_has_content = false;
            start = newline + 1;
        }
        if !self.line_has_content {
            self.line_has_content = has_content(&block[start..]);
        }
    }

    pub(crate) fn finish(self) -> u64 {
        self.records + u64::from(self.line_has_content)
    }
}

/// Counts rows of delimiter-separated values as [`RowSplitter`] reads them (quoted newlines stay
/// in their row; a quoted field that never closes falls back to lines).
#[derive(Debug)]
pub(crate) struct DelimitedRowCounter {
    splitter: RowSplitter,
    rows: u64,
    unclosed: UnclosedQuotes,
}

/// Quoted fields that never closed, whose rows were counted as lines.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UnclosedQuotes {
    pub(crate) fields: u64,
    /// Line (1-based) where the first of them opened.
    pub(crate) first_line: u64,
}

impl DelimitedRowCounter {
    pub(crate) fn new(delimiter: u8) -> Self {
        Self {
            splitter: RowSplitter::new(delimiter),
            rows: 0,
            unclosed: UnclosedQuotes::default(),
        }
    }

    pub(crate) fn feed(&mut self, block: &[u8]) {
        let Self {
            splitter,
            rows,
            unclosed,
        } = self;
        let counted = splitter.feed_counting(block, |event| count(event, rows, unclosed));
        *rows += counted;
    }

    /// Rows (header included) and the quoted fields that never closed.
    pub(crate) fn finish(self) -> (u64, UnclosedQuotes) {
        let Self {
            splitter,
            mut rows,
            mut unclosed,
        } = self;
        splitter.finish(|event| count(event, &mut rows, &mut unclosed));
        (rows, unclosed)
    }
}

fn count(event: RowEvent, rows: &mut u64, unclosed: &mut UnclosedQuotes) {
    match event {
        RowEvent::Row { has_content, .. } => *rows += u64::from(has_content),
        RowEvent::Unclosed {
            content_lines,
            opened_line,
            ..
        } => {
            *rows += 1 + content_lines;
            if unclosed.fields == 0 {
                unclosed.first_line = opened_line;
            }
            unclosed.fields += 1;
        }
    }
}

/// Counts ATX headings (`# Title`) outside fenced code blocks.
#[derive(Debug, Default)]
pub(crate) struct HeadingCounter {
    headings: u64,
    in_fence: Option<u8>,
    /// The first bytes of the line in progress (enough to classify it).
    line_start: Vec<u8>,
    line_start_complete: bool,
}

const LINE_PREFIX: usize = 8;

impl HeadingCounter {
    pub(crate) fn feed(&mut self, block: &[u8]) {
        let mut start = 0;
        for newline in memchr::memchr_iter(b'\n', block) {
            self.take_line_start(&block[start..newline]);
            self.end_line();
            start = newline + 1;
        }
        self.take_line_start(&block[start..]);
    }

    fn take_line_start(&mut self, bytes: &[u8]) {
        if self.line_start_complete {
            return;
        }
        let room = LINE_PREFIX - self.line_start.len();
        self.line_start
            .extend_from_slice(&bytes[..room.min(bytes.len())]);
        self.line_start_complete = self.line_start.len() == LINE_PREFIX;
    }

    fn end_line(&mut self) {
        let line = trim_indent(&self.line_start);
        if let Some(fence) = fence_marker(line) {
            match self.in_fence {
                Some(open) if open == fence => self.in_fence = None,
                Some(_) => {}
                None => self.in_fence = Some(fence),
            }
        } else if self.in_fence.is_none() && heading_level(line).is_some() {
            self.headings += 1;
        }
        self.line_start.clear();
        self.line_start_complete = false;
    }

    pub(crate) fn finish(mut self) -> u64 {
        if !self.line_start.is_empty() {
            self.end_line();
        }
        self.headings
    }
}

/// Up to three spaces of indentation are allowed before a heading or fence.
fn trim_indent(line: &[u8]) -> &[u8] {
    let indent = line
        .iter()
        .take(3)
        .take_while(|&&byte| byte == b' ')
        .count();
    &line[indent..]
}

/// The fence character if the line opens or closes a fenced code block.
pub(crate) fn fence_marker(line: &[u8]) -> Option<u8> {
    let line = trim_indent(line);
    match line {
        [b'`', b'`', b'`', ..] => Some(b'`'),
        [b'~', b'~', b'~', ..] => Some(b'~'),
        _ => None,
    }
}

/// The level (1–6) of an ATX heading line.
pub(crate) fn heading_level(line: &[u8]) -> Option<usize> {
    let line = trim_indent(line);
    let hashes = line.iter().take_while(|&&byte| byte == b'#').count();
    if !(1..=6).contains(&hashes) {
        return None;
    }
    match line.get(hashes) {
        None | Some(b' ' | b'\t' | b'\r' | b'\n') => Some(hashes),
        Some(_) => None,
    }
}

fn has_content(bytes: &[u8]) -> bool {
    bytes.iter().any(|byte| !byte.is_ascii_whitespace())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn in_blocks<T>(input: &[u8], size: usize, mut feed: impl FnMut(&[u8]) -> T) {
        for block in input.chunks(size) {
            feed(block);
        }
    }

    #[test]
    fn ndjson_records_skip_blank_lines_in_any_blocking() {
        let input = b"{\"a\":1}\n\n  \n{\"a\":2}\r\n{\"a\":3}";
        for size in [1, 2, 3, 5, 100] {
            let mut counter = LineRecordCounter::default();
            in_blocks(input, size, |block| counter.feed(block));
            assert_eq!(counter.finish(), 3, "block size {size}");
        }
    }

    /// The byte walk every way of counting NDJSON records is held to: lines with a byte that
    /// is not ASCII whitespace.
    fn records_by_lines(input: &[u8]) -> u64 {
        input
            .split(|&byte| byte == b'\n')
            .filter(|line| line.iter().any(|byte| !byte.is_ascii_whitespace()))
            .count() as u64
    }

    /// Records counted from each block's counts, the blocks cut at `cuts`.
    fn records_from_counts(input: &[u8], cuts: &[usize]) -> u64 {
        let mut counter = LineRecordCounter::default();
        let mut start = 0;
        for &cut in cuts.iter().chain([&input.len()]) {
            let block = &input[start..cut.clamp(start, input.len())];
            counter.feed_counted(block, &crate::counts::count(block));
            start += block.len();
        }
        counter.finish()
    }

    #[test]
    fn ndjson_records_from_counts_are_the_lines_with_content() {
        let record = b"{\"id\":1,\"text\":\"caf\xc3\xa9\"}";
        let cases: [&[u8]; 8] = [
            b"",
            b"\n",
            b" \n\t\r\n",
            b"{}",
            b"{}\n{}\n",
            b"{}\r\n{}\r\n\r\n",
            b"  {}\n\n{}\n \n",
            b"{}\n\x0b\n\x7f\n\xc3\xa9\n",
        ];
        let long = [&record[..], b"\n"].concat().repeat(2000);
        let mut spaced = long.clone();
        spaced.extend_from_slice(b"\n   \n");
        spaced.extend_from_slice(&long);
        for input in cases.iter().copied().chain([&long[..], &spaced[..]]) {
            let expected = records_by_lines(input);
            assert_eq!(records_from_counts(input, &[]), expected);
            for step in [1, 2, 3, 7, 31, 33, 64, 1000, 9000] {
                let cuts: Vec<usize> = (step..input.len()).step_by(step).collect();
                assert_eq!(records_from_counts(input, &cuts), expected, "step {step}");
            }
        }
    }

    #[test]
    fn ndjson_records_from_counts_match_the_byte_walk_on_any_lines() {
        use proptest::prelude::*;
        let pieces: &[&[u8]] = &[
            b"{\"a\":1}",
            b"\n",
            b"\r\n",
            b" ",
            b"\t",
            b"\x0b",
            b"\x0c",
            b"\r",
            b"x",
            b"\xc3\xa9",
            b"\xff",
            b"\x7f",
        ];
        let input = proptest::collection::vec(proptest::sample::select(pieces), 0..300)
            .prop_map(|pieces| pieces.concat());
        let cuts = proptest::collection::vec(0_usize..2000, 0..8);
        proptest!(|(input in input, mut cuts in cuts)| {
            cuts.sort_unstable();
            prop_assert_eq!(records_from_counts(&input, &cuts), records_by_lines(&input));
            let mut counter = LineRecordCounter::default();
            counter.feed(&input);
            prop_assert_eq!(counter.finish(), records_by_lines(&input));
        });
    }

    fn count_rows(input: &[u8], delimiter: u8, size: usize) -> (u64, UnclosedQuotes) {
        let mut counter = DelimitedRowCounter::new(delimiter);
        in_blocks(input, size, |block| counter.feed(block));
        counter.finish()
    }

    #[test]
    fn csv_rows_respect_quoted_newlines_and_doubled_quotes() {
        let input = b"id,text\n1,\"line one\nline two\"\n2,\"say \"\"hi\"\"\nok\"\n\n3,plain\n";
        for size in [1, 4, 7, 100] {
            let (rows, unclosed) = count_rows(input, b',', size);
            assert_eq!((rows, unclosed.fields), (4, 0), "block size {size}");
        }
    }

    #[test]
    fn a_quote_inside_an_unquoted_field_is_an_ordinary_character() {
        let input = b"item,size\nmonitor,27\" wide\ncable,2 m\nmouse,small\n";
        for size in [1, 3, 100] {
            let (rows, unclosed) = count_rows(input, b',', size);
            assert_eq!((rows, unclosed.fields), (4, 0), "block size {size}");
        }
    }

    #[test]
    fn quoted_fields_that_never_close_are_counted_as_lines() {
        let (rows, unclosed) = count_rows(b"a,b\n1,\"never closed\n2,3\n\n4,5", b',', 3);
        assert_eq!(rows, 4);
        assert_eq!(
            unclosed,
            UnclosedQuotes {
                fields: 1,
                first_line: 2
            }
        );
    }

    #[test]
    fn headings_outside_fences_are_counted() {
        let input = b"# Title\ntext\n## Part\n```\n# not a heading\n```\n#hashtag\n   ### Deep\n";
        for size in [1, 3, 100] {
            let mut counter = HeadingCounter::default();
            in_blocks(input, size, |block| counter.feed(block));
            assert_eq!(counter.finish(), 3, "block size {size}");
        }
    }
}
