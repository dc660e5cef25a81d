//! Record chunking: whole lines (NDJSON, logs) or whole CSV/TSV records, never split.

use std::collections::VecDeque;
use std::ops::Range;

use super::pack::{self, Unit};
use crate::delimited::{RowEvent, RowSplitter};

/// The text `split` reads: a table (CSV/TSV, by extension) has a delimiter; `header_first` false
/// means the text continues a table whose header came earlier; `complete` false means more text
/// may follow, so a quoted field open at the end is not (yet) known to be unclosed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Section {
    pub(crate) table: Option<u8>,
    pub(crate) header_first: bool,
    pub(crate) complete: bool,
}

/// Packs whole records up to `size` characters. For a table the first record is the header,
/// returned separately and left out of the chunk ranges, unless `section.header_first` is false.
pub(crate) fn split(
    text: &str,
    section: Section,
    size: usize,
) -> (Vec<Range<usize>>, Option<Range<usize>>) {
    let mut out = Vec::new();
    match section.table {
        Some(delimiter) => {
            let mut records = TableRecords::new(text, delimiter, section.complete);
            let header = if section.header_first {
                records.next()
            } else {
                None
            };
            let units = records.map(|range| Unit {
                range,
                hard_break: false,
            });
            pack::pack(text, units, size, None, &mut out);
            (out, header)
        }
        None => {
            let units = line_records(text);
            pack::pack(text, units, size, None, &mut out);
            (out, None)
        }
    }
}

/// The delimiter of a table named `name`: a tab for `.tsv`, the sniffed one (`,` by default) for
/// `.csv`, read from `head` (the first bytes of the text; `complete` if that is all of it); `None`
/// when the name is not a table's.
pub(crate) fn table_delimiter(name: Option<&str>, head: &str, complete: bool) -> Option<u8> {
    match name.and_then(super::extension)?.as_str() {
        "tsv" => Some(b'\t'),
        "csv" => Some(crate::sniff::detect_delimiter(head.as_bytes(), complete).unwrap_or(b',')),
        _ => None,
    }
}

/// Whether a delimiter must be sniffed from the text before a table named `name` can be split.
pub(crate) fn needs_sniffing(name: Option<&str>) -> bool {
    name.and_then(super::extension)
        .is_some_and(|extension| extension == "csv")
}

/// One unit per non-blank line; blank lines stay with the record before them.
fn line_records(text: &str) -> Vec<Unit> {
    let mut units: Vec<Unit> = Vec::new();
    for line in pack::line_ranges(text, 0..text.len()) {
        let blank = text[line.clone()].trim().is_empty();
        match units.last_mut() {
            Some(last) if blank => last.range.end = line.end,
            _ => units.push(Unit {
                range: line,
                hard_break: false,
            }),
        }
    }
    units
}

/// Table records as [`RowSplitter`] reads them, fed a piece at a time so memory stays small.
///
/// With `complete` false, a row cut by the end of the text runs to the end (more text can only
/// lengthen it), but a row whose quoted field is still open is left out: if the field never
/// closes, the row shrinks to its first line, and the chunk before it may then have room for
/// more. The caller keeps that text for later.
struct TableRecords<'a> {
    text: &'a str,
    splitter: Option<RowSplitter>,
    complete: bool,
    fed: usize,
    /// Where the next record starts.
    start: usize,
    ready: VecDeque<Range<usize>>,
}

/// Bytes fed to the splitter at a time.
const PIECE: usize = 64 * 1024;

impl<'a> TableRecords<'a> {
    fn new(text: &'a str, delimiter: u8, complete: bool) -> Self {
        Self {
            text,
            splitter: Some(RowSplitter::new(delimiter)),
            complete,
            fed: 0,
            start: 0,
            ready: VecDeque::new(),
        }
    }
}

impl Iterator for TableRecords<'_> {
    type Item = Range<usize>;

    fn next(&mut self) -> Option<Range<usize>> {
        let text = self.text;
        loop {
            if let Some(record) = self.ready.pop_front() {
                return Some(record);
            }
            if self.fed < text.len() {
                let end = (self.fed + PIECE).min(text.len());
                let splitter = self.splitter.as_mut()?;
                splitter.feed(&text.as_bytes()[self.fed..end], |event| {
                    queue(text, event, &mut self.start, &mut self.ready);
                });
                self.fed = end;
                continue;
            }
            let splitter = self.splitter.take()?;
            if self.complete {
                splitter.finish(|event| queue(text, event, &mut self.start, &mut self.ready));
            } else if self.start < text.len() && !splitter.in_quoted_field() {
                self.ready.push_back(self.start..text.len());
            }
        }
    }
}

fn queue(text: &str, event: RowEvent, start: &mut usize, ready: &mut VecDeque<Range<usize>>) {
    match event {
        RowEvent::Row { end, .. } => {
            ready.push_back(*start..end as usize);
            *start = end as usize;
        }
        RowEvent::Unclosed {
            row_end, lines_end, ..
        } => {
            let (row_end, lines_end) = (row_end as usize, lines_end as usize);
            ready.push_back(*start..row_end);
            ready.extend(pack::line_ranges(text, row_end..lines_end));
            *start = lines_end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces<'a>(text: &'a str, ranges: &[Range<usize>]) -> Vec<&'a str> {
        ranges.iter().map(|r| &text[r.clone()]).collect()
    }

    fn table(delimiter: u8) -> Section {
        Section {
            table: Some(delimiter),
            header_first: true,
            complete: true,
        }
    }

    #[test]
    fn csv_quoted_newlines_stay_in_their_record() {
        let text = "id,note\n1,\"two\nlines\"\n2,\"say \"\"hi\"\"\"\n3,plain\n";
        let records: Vec<Range<usize>> = TableRecords::new(text, b',', true).collect();
        assert_eq!(
            pieces(text, &records),
            [
                "id,note\n",
                "1,\"two\nlines\"\n",
                "2,\"say \"\"hi\"\"\"\n",
                "3,plain\n"
            ]
        );
    }

    #[test]
    fn csv_header_is_separate_and_records_are_packed() {
        let text = "id,name\n1,alpha\n2,beta\n3,gamma\n";
        let (chunks, header) = split(text, table(b','), 16);
        assert_eq!(header.map(|h| &text[h]), Some("id,name\n"));
        assert_eq!(pieces(text, &chunks), ["1,alpha\n2,beta\n", "3,gamma\n"]);
    }

    #[test]
    fn a_stray_quote_does_not_swallow_the_records_after_it() {
        let text = "item,size\nmonitor,27\" wide\ncable,2 m\nmouse,small\n";
        let (chunks, header) = split(text, table(b','), 12);
        assert_eq!(header.map(|h| &text[h]), Some("item,size\n"));
        assert_eq!(
            pieces(text, &chunks),
            ["monitor,27\" wide\n", "cable,2 m\n", "mouse,small\n"]
        );
        // A TSV without quoting whose field starts with a quote that never closes: lines.
        let text = "name\tnote\na\t\"quoted start\nb\tplain\nc\tplain\n";
        let (chunks, _) = split(text, table(b'\t'), 12);
        assert_eq!(
            pieces(text, &chunks),
            ["a\t\"quoted start\n", "b\tplain\n", "c\tplain\n"]
        );
        // Unless the text may continue: the field may still close, so its row is undecided and
        // left out; a row merely cut by the end runs to the end.
        let open = Section {
            complete: false,
            ..table(b'\t')
        };
        let (chunks, _) = split(text, open, 12);
        assert_eq!(pieces(text, &chunks), [""; 0]);
        let text = "name\tnote\nb\tpla";
        let (chunks, _) = split(text, open, 12);
        assert_eq!(pieces(text, &chunks), ["b\tpla"]);
    }

    #[test]
    fn oversized_records_are_never_split() {
        let text = "{\"a\":1}\n{\"long\":\"xxxxxxxxxxxxxxxx\"}\n{\"b\":2}\n";
        let lines = Section {
            table: None,
            ..table(b',')
        };
        let (chunks, header) = split(text, lines, 10);
        assert_eq!(header, None);
        assert_eq!(
            pieces(text, &chunks),
            [
                "{\"a\":1}\n",
                "{\"long\":\"xxxxxxxxxxxxxxxx\"}\n",
                "{\"b\":2}\n"
            ]
        );
    }

    #[test]
    fn blank_lines_join_the_previous_record() {
        let text = "a\n\nb\n";
        let units: Vec<&str> = line_records(text)
            .into_iter()
            .map(|u| &text[u.range])
            .collect();
        assert_eq!(units, ["a\n\n", "b\n"]);
    }
}
