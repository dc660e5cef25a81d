//! Streaming record counters for line- and row-based formats. Each keeps only a few flags of
//! state between blocks, so a record may span any number of blocks.

use crate::delimited::{RowEvent, RowSplitter};

/// Counts non-blank lines (NDJSON records).
#[derive(Debug, Default)]
pub(crate) struct LineRecordCounter {
    records: u64,
    line_has_content: bool,
}

impl LineRecordCounter {
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
