//! Record chunking: whole lines (NDJSON, logs) or whole CSV/TSV records, never split.

use std::ops::Range;

use super::pack::{self, Unit};

/// Packs whole records up to `size` characters. For CSV/TSV (by extension) the first record is
/// the header, returned separately and left out of the chunk ranges, unless `header_first` is
/// false (the text continues a table).
pub(crate) fn split(
    text: &str,
    name: Option<&str>,
    size: usize,
    header_first: bool,
) -> (Vec<Range<usize>>, Option<Range<usize>>) {
    let is_table = name
        .and_then(super::extension)
        .is_some_and(|extension| extension == "csv" || extension == "tsv");
    let mut out = Vec::new();
    if is_table {
        let mut records = csv_records(text);
        let header = if header_first { records.next() } else { None };
        let units = records.map(|range| Unit {
            range,
            hard_break: false,
        });
        pack::pack(text, units, size, None, &mut out);
        (out, header)
    } else {
        let units = line_records(text);
        pack::pack(text, units, size, None, &mut out);
        (out, None)
    }
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

/// CSV records: a newline inside double quotes does not end a record (`""` escapes a quote,
/// which toggles the state twice and so needs no special case).
fn csv_records(text: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    let bytes = text.as_bytes();
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= bytes.len() {
            return None;
        }
        let mut in_quotes = false;
        let mut end = bytes.len();
        for position in memchr::memchr2_iter(b'"', b'\n', &bytes[start..]) {
            let at = start + position;
            if bytes[at] == b'"' {
                in_quotes = !in_quotes;
            } else if !in_quotes {
                end = at + 1;
                break;
            }
        }
        let record = start..end;
        start = end;
        Some(record)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces<'a>(text: &'a str, ranges: &[Range<usize>]) -> Vec<&'a str> {
        ranges.iter().map(|r| &text[r.clone()]).collect()
    }

    #[test]
    fn csv_quoted_newlines_stay_in_their_record() {
        let text = "id,note\n1,\"two\nlines\"\n2,\"say \"\"hi\"\"\"\n3,plain\n";
        let records: Vec<Range<usize>> = csv_records(text).collect();
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
        let (chunks, header) = split(text, Some("data.csv"), 16, true);
        assert_eq!(header.map(|h| &text[h]), Some("id,name\n"));
        assert_eq!(pieces(text, &chunks), ["1,alpha\n2,beta\n", "3,gamma\n"]);
    }

    #[test]
    fn oversized_records_are_never_split() {
        let text = "{\"a\":1}\n{\"long\":\"xxxxxxxxxxxxxxxx\"}\n{\"b\":2}\n";
        let (chunks, header) = split(text, Some("x.ndjson"), 10, true);
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
