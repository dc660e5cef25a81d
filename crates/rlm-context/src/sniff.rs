//! Deciding the format from the file name and the first block of content.
//!
//! The extension is the first signal and content the second: content that clearly is another
//! structured format (a `.json` holding NDJSON, a `.txt` holding CSV) wins, with a note.

use crate::delimited::{RowEvent, RowSplitter, split_fields};
use crate::format::{Format, NameHint, hint_from_name, language_from_shebang};
use crate::scan::lossy;

/// The verdict on a prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub format: Format,
    pub language: Option<&'static str>,
    pub delimiter: Option<u8>,
    pub notes: Vec<String>,
}

impl Verdict {
    fn of(format: Format) -> Self {
        Self {
            format,
            language: None,
            delimiter: None,
            notes: Vec::new(),
        }
    }
}

/// How many leading lines are looked at for line-based sniffing.
const SNIFF_LINES: usize = 20;

/// Classifies `prefix` (BOM already removed). `complete` says the prefix is the whole input.
pub(crate) fn sniff(prefix: &[u8], complete: bool, name: Option<&str>) -> Verdict {
    if prefix.iter().all(u8::is_ascii_whitespace) {
        return Verdict::of(if prefix.is_empty() {
            Format::Empty
        } else {
            Format::PlainText
        });
    }
    if looks_binary(prefix) {
        return Verdict::of(Format::Binary);
    }
    let hint = name.map_or(NameHint::None, hint_from_name);
    let content = sniff_content(prefix, complete);
    match hint {
        NameHint::Code(language) => Verdict {
            language: Some(language),
            ..Verdict::of(Format::Code)
        },
        NameHint::None => content,
        NameHint::Format(named) => reconcile(named, content, prefix, complete),
    }
}

fn reconcile(named: Format, content: Verdict, prefix: &[u8], complete: bool) -> Verdict {
    let same_family = named == content.format
        || (matches!(named, Format::Json | Format::JsonArray)
            && matches!(content.format, Format::Json | Format::JsonArray))
        || (named == Format::Ndjson && content.format == Format::Json && single_line(prefix))
        || (named == Format::Html && content.format == Format::Xml)
        || ndjson_with_bad_lines(named, &content, prefix);
    if same_family {
        let format = if named == Format::Ndjson {
            Format::Ndjson
        } else {
            content.format
        };
        let format = if named == Format::Html {
            Format::Html
        } else {
            format
        };
        let notes = match format {
            // The bad lines are counted and reported by the pass.
            Format::Ndjson => Vec::new(),
            _ => content.notes,
        };
        return Verdict {
            format,
            notes,
            ..content
        };
    }
    if named == Format::Ndjson && content.format == Format::PlainText {
        let note = "the name suggests NDJSON but most lines are not JSON".to_owned();
        return Verdict {
            notes: vec![note],
            ..Verdict::of(Format::PlainText)
        };
    }
    let strong = matches!(
        content.format,
        Format::Ndjson | Format::Json | Format::JsonArray | Format::Csv | Format::Tsv | Format::Xml
    ) || (content.format == Format::Html && named != Format::Markdown);
    if strong {
        let note = format!(
            "the name suggests {} but the content is {}",
            named.description(),
            content.format.description()
        );
        let mut notes = vec![note];
        notes.extend(content.notes);
        return Verdict { notes, ..content };
    }
    // The content is not clearly anything else: trust the name, but say when it does not fit.
    let mut verdict = Verdict::of(named);
    match named {
        Format::Csv => verdict.delimiter = Some(detect_delimiter(prefix, complete).unwrap_or(b',')),
        Format::Tsv => verdict.delimiter = Some(b'\t'),
        Format::Json | Format::JsonArray | Format::Ndjson => {
            verdict.notes.push(format!(
                "the name suggests {} but the content does not parse as JSON",
                named.description()
            ));
            verdict.format = Format::PlainText;
        }
        _ => {}
    }
    verdict
}

/// A file named NDJSON whose content fails to parse as one JSON document, yet has lines that
/// parse on their own: NDJSON with bad lines, even when too short for the majority rule of
/// [`ndjson_lines`] (two good lines of three).
fn ndjson_with_bad_lines(named: Format, content: &Verdict, prefix: &[u8]) -> bool {
    let parse_failed = !content.notes.is_empty();
    named == Format::Ndjson
        && matches!(content.format, Format::Json | Format::JsonArray)
        && parse_failed
        && lossy(prefix).lines().any(|line| json_line(line.trim()))
}

fn single_line(prefix: &[u8]) -> bool {
    let text = prefix.trim_ascii();
    !text.contains(&b'\n')
}

/// What the content alone says.
fn sniff_content(prefix: &[u8], complete: bool) -> Verdict {
    let text = lossy(prefix);
    let trimmed = text.trim_start();
    if (trimmed.starts_with('{') || trimmed.starts_with('['))
        && let Some(verdict) = sniff_json(trimmed, complete)
    {
        return verdict;
    }
    if ndjson_lines(trimmed, complete) {
        return Verdict::of(Format::Ndjson);
    }
    if trimmed.starts_with('<')
        && let Some(format) = sniff_markup(trimmed)
    {
        return Verdict::of(format);
    }
    if let Some(table) = detect_table(prefix, complete) {
        let format = if table.delimiter == b'\t' {
            Format::Tsv
        } else {
            Format::Csv
        };
        return Verdict {
            delimiter: Some(table.delimiter),
            notes: table.ragged.into_iter().collect(),
            ..Verdict::of(format)
        };
    }
    if let Some(language) = trimmed.lines().next().and_then(language_from_shebang) {
        return Verdict {
            language: Some(language),
            ..Verdict::of(Format::Code)
        };
    }
    if looks_like_markdown(&text) {
        return Verdict::of(Format::Markdown);
    }
    Verdict::of(Format::PlainText)
}

fn sniff_json(text: &str, complete: bool) -> Option<Verdict> {
    if complete {
        return Some(match serde_json::from_str::<serde::de::IgnoredAny>(text) {
            Ok(_) => Verdict::of(json_document_format(text)),
            Err(_) if ndjson_lines(text, complete) => Verdict::of(Format::Ndjson),
            Err(err) => Verdict {
                notes: vec![format!("does not parse as JSON: {err}")],
                ..Verdict::of(json_document_format(text))
            },
        });
    }
    if ndjson_lines(text, complete) {
        return Some(Verdict::of(Format::Ndjson));
    }
    // Too big to parse here; the streaming scan checks the brackets.
    Some(Verdict::of(json_document_format(text)))
}

fn json_document_format(text: &str) -> Format {
    if text.starts_with('[') {
        Format::JsonArray
    } else {
        Format::Json
    }
}

/// Whether most of the first lines are JSON objects or arrays, one per line (malformed lines in
/// the minority do not change the verdict). A partial last line of an incomplete prefix is
/// ignored.
fn ndjson_lines(text: &str, complete: bool) -> bool {
    let mut lines = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .take(SNIFF_LINES)
        .peekable();
    let mut parsed = 0;
    let mut total = 0;
    while let Some(line) = lines.next() {
        if lines.peek().is_none() && !complete && total > 0 {
            break;
        }
        total += 1;
        if json_line(line.trim()) {
            parsed += 1;
        }
    }
    (parsed >= 2 && parsed * 2 > total) || (parsed == 1 && total == 1)
}

/// A JSON object or array on one line.
fn json_line(line: &str) -> bool {
    (line.starts_with('{') || line.starts_with('['))
        && serde_json::from_str::<serde::de::IgnoredAny>(line).is_ok()
}

fn sniff_markup(text: &str) -> Option<Format> {
    let head: String = text
        .chars()
        .take(1024)
        .collect::<String>()
        .to_ascii_lowercase();
    if head.starts_with("<!doctype html") || head.contains("<html") {
        return Some(Format::Html);
    }
    if head.starts_with("<?xml") {
        return Some(Format::Xml);
    }
    let mut chars = head.chars().skip(1);
    let first = chars.next()?;
    (first.is_alphabetic() || first == '!' || first == '_').then_some(Format::Xml)
}

/// A delimiter whose count (outside quotes) is the same and non-zero on the first rows, or on
/// most of them (see [`detect_table`]).
pub(crate) fn detect_delimiter(prefix: &[u8], complete: bool) -> Option<u8> {
    detect_table(prefix, complete).map(|table| table.delimiter)
}

/// A table found by [`detect_table`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Table {
    pub delimiter: u8,
    /// Set when rows have different numbers of fields: what to tell the reader.
    pub ragged: Option<String>,
}

/// Rows a ragged table needs before it is believed.
const RAGGED_MIN_ROWS: usize = 5;

/// Finds the delimiter of a table on the first rows. Every row must have the header's number of
/// fields, or the table is *ragged* — real exports drop trailing empty fields or leave a
/// delimiter unquoted in a text field — and then it needs [`RAGGED_MIN_ROWS`] rows, a header of
/// non-empty names, the delimiter on every row, and most rows (60 %) agreeing with the header.
/// Prose and code rarely pass: some lines lack commas or semicolons.
pub(crate) fn detect_table(prefix: &[u8], complete: bool) -> Option<Table> {
    for delimiter in [b'\t', b',', b';', b'|'] {
        let rows = first_rows(prefix, complete, SNIFF_LINES, delimiter);
        let enough = if rows.len() <= 2 {
            rows.len() == 2
        } else {
            true
        };
        if !enough {
            continue;
        }
        let header = split_fields(rows[0], delimiter);
        let columns = header.len();
        if columns < 2 {
            continue;
        }
        let counts: Vec<usize> = rows
            .iter()
            .map(|row| split_fields(row, delimiter).len())
            .collect();
        if counts.iter().all(|&count| count == columns) {
            // Prose has commas too: a comma table needs 3+ rows or short rows.
            let long_rows = rows.iter().any(|row| row.len() > 400);
            if delimiter == b',' && rows.len() < 3 && long_rows {
                continue;
            }
            return Some(Table {
                delimiter,
                ragged: None,
            });
        }
        let agreeing = counts.iter().filter(|&&count| count == columns).count();
        let ragged = rows.len() >= RAGGED_MIN_ROWS
            && header.iter().all(|name| !name.trim().is_empty())
            && counts.iter().all(|&count| count >= 2)
            && agreeing * 5 >= rows.len() * 3;
        if ragged {
            let note = format!(
                "rows have different numbers of fields: {} of the first {} rows differ from the header's {columns}",
                rows.len() - agreeing,
                rows.len()
            );
            return Some(Table {
                delimiter,
                ragged: Some(note),
            });
        }
    }
    None
}

/// The first complete rows as [`RowSplitter`] reads them (quoted newlines stay inside a row),
/// without line terminators; blank rows are skipped.
pub(crate) fn first_rows(prefix: &[u8], complete: bool, limit: usize, delimiter: u8) -> Vec<&[u8]> {
    let mut rows = Vec::new();
    let mut start = 0;
    let mut splitter = RowSplitter::new(delimiter);
    // Small pieces: a sniff needs a few rows, not the whole prefix.
    for piece in prefix.chunks(4096) {
        splitter.feed(piece, |event| {
            collect_rows(prefix, event, &mut start, &mut rows)
        });
        if rows.len() >= limit {
            rows.truncate(limit);
            return rows;
        }
    }
    if complete {
        splitter.finish(|event| collect_rows(prefix, event, &mut start, &mut rows));
    }
    rows.truncate(limit);
    rows
}

fn collect_rows<'a>(
    prefix: &'a [u8],
    event: RowEvent,
    start: &mut usize,
    rows: &mut Vec<&'a [u8]>,
) {
    match event {
        RowEvent::Row { end, .. } => {
            push_row(rows, &prefix[*start..end as usize]);
            *start = end as usize;
        }
        RowEvent::Unclosed {
            row_end, lines_end, ..
        } => {
            push_row(rows, &prefix[*start..row_end as usize]);
            for line in
                prefix[row_end as usize..lines_end as usize].split_inclusive(|&b| b == b'\n')
            {
                push_row(rows, line);
            }
            *start = lines_end as usize;
        }
    }
}

fn push_row<'a>(rows: &mut Vec<&'a [u8]>, row: &'a [u8]) {
    let row = row.strip_suffix(b"\n").unwrap_or(row);
    let row = row.strip_suffix(b"\r").unwrap_or(row);
    if !row.trim_ascii().is_empty() {
        rows.push(row);
    }
}

fn looks_like_markdown(text: &str) -> bool {
    let mut headings = 0;
    let mut other_signals = 0;
    for line in text.lines().take(200) {
        let trimmed = line.trim_start();
        if crate::records::heading_level(trimmed.as_bytes()).is_some() {
            headings += 1;
        } else if trimmed.starts_with("```")
            || trimmed.starts_with("- ")
            || trimmed.starts_with("* ")
            || (trimmed.contains("](") && trimmed.contains('['))
        {
            other_signals += 1;
        }
    }
    headings >= 2 || (headings >= 1 && other_signals >= 1)
}

/// NUL bytes, a UTF-16 byte-order mark, or mostly control characters or invalid UTF-8 in the
/// first 8 KB mean this is not text.
pub fn looks_binary(prefix: &[u8]) -> bool {
    let head = &prefix[..prefix.len().min(8192)];
    if head.starts_with(&[0xFF, 0xFE]) || head.starts_with(&[0xFE, 0xFF]) {
        return true;
    }
    if memchr::memchr(0, head).is_some() {
        return true;
    }
    let control = head
        .iter()
        .filter(|&&byte| byte < 0x20 && !matches!(byte, b'\t' | b'\n' | b'\r' | 0x0C | 0x1B))
        .count();
    let invalid = String::from_utf8_lossy(head).matches('\u{FFFD}').count();
    control * 10 > head.len() || invalid * 4 > head.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn format_of(content: &str, name: Option<&str>) -> Verdict {
        sniff(content.as_bytes(), true, name)
    }

    #[test]
    fn content_decides_without_a_name() {
        let table = [
            ("{\"a\":1}\n{\"a\":2}\n", Format::Ndjson),
            ("{\"a\": {\"b\": [1, 2]}}", Format::Json),
            ("[{\"a\":1},{\"a\":2}]", Format::JsonArray),
            ("a,b,c\n1,2,3\n4,5,6\n", Format::Csv),
            ("a\tb\n1\t2\n", Format::Tsv),
            ("<?xml version=\"1.0\"?>\n<feed></feed>", Format::Xml),
            ("<!DOCTYPE html><html><body></body></html>", Format::Html),
            ("# Title\n\nSome text.\n\n## Part\n", Format::Markdown),
            ("#!/usr/bin/env python3\nprint('hi')\n", Format::Code),
            (
                "just some words, and a comma.\nanother line\n",
                Format::PlainText,
            ),
            ("", Format::Empty),
            ("   \n", Format::PlainText),
        ];
        for (content, expected) in table {
            assert_eq!(format_of(content, None).format, expected, "{content:?}");
        }
    }

    #[test]
    fn ndjson_with_a_bad_line_in_three_is_still_ndjson() {
        let content = "{\"a\":1}\n{\"b\":2}\n{\"c\": oops}\n";
        for name in [None, Some("events.ndjson"), Some("events.jsonl")] {
            let verdict = format_of(content, name);
            assert_eq!(verdict.format, Format::Ndjson, "{name:?}");
            assert!(verdict.notes.is_empty(), "{:?}", verdict.notes);
        }
        // Named NDJSON, half of two lines bad: the name decides.
        assert_eq!(
            format_of("{\"a\":1}\n{bad\n", Some("x.ndjson")).format,
            Format::Ndjson
        );
        // A JSON document that does not parse is still reported as JSON, not NDJSON.
        let broken = format_of("{\n  \"a\": 1,\n  \"b\": [1, 2\n}\n", Some("x.json"));
        assert_eq!(broken.format, Format::Json);
    }

    #[test]
    fn ragged_tables_are_tables_with_a_note_and_prose_or_code_is_not() {
        // Trailing empty fields dropped, and one unquoted comma in a text field.
        let ragged = "id,name,city,note\n1,ann,oslo,x\n2,bob,rome\n3,cy,paris,big, old\n4,di,bonn,y\n5,ed,lima,z\n";
        for name in [None, Some("people.txt")] {
            let verdict = format_of(ragged, name);
            assert_eq!(
                (verdict.format, verdict.delimiter),
                (Format::Csv, Some(b',')),
                "{name:?}"
            );
            assert!(
                verdict
                    .notes
                    .last()
                    .unwrap()
                    .contains("2 of the first 6 rows differ from the header's 4"),
                "{:?}",
                verdict.notes
            );
        }
        let prose = "Call me Ishmael. Some years ago, never mind how long, I went to sea.\nIt is a way I have of driving off the spleen, and regulating the circulation.\nWhenever I find myself growing grim about the mouth, I account it high time.\nThis is my substitute for pistol and ball.\nWith a philosophical flourish Cato throws himself upon his sword.\nThere is nothing surprising in this.\n";
        let code = "let a = 1;\nlet b = 2;\nif (a) {\n  run(a, b);\n}\nlet c = 3;\n";
        for text in [prose, code] {
            assert_eq!(format_of(text, Some("notes.txt")).format, Format::PlainText);
        }
    }

    #[test]
    fn content_that_contradicts_the_extension_wins_with_a_note() {
        let verdict = format_of("{\"a\":1}\n{\"a\":2}\n", Some("data.json"));
        assert_eq!(verdict.format, Format::Ndjson);
        assert!(verdict.notes[0].contains("JSON (object)"));
        let verdict = format_of("name,age\nann,3\nbob,4\n", Some("people.txt"));
        assert_eq!(verdict.format, Format::Csv);
        assert!(!verdict.notes.is_empty());
        let verdict = format_of("[1,2,3]", Some("list.json"));
        assert_eq!((verdict.format, verdict.notes), (Format::JsonArray, vec![]));
    }

    #[test]
    fn extension_is_trusted_when_content_is_weak() {
        assert_eq!(
            format_of("plain words\n", Some("notes.md")).format,
            Format::Markdown
        );
        assert_eq!(
            format_of("single column\nvalue\n", Some("x.csv")).format,
            Format::Csv
        );
        assert_eq!(
            format_of("{\"a\":1}", Some("one.ndjson")).format,
            Format::Ndjson
        );
        let code = format_of("a,b\n1,2\n", Some("gen.py"));
        assert_eq!((code.format, code.language), (Format::Code, Some("Python")));
    }

    #[test]
    fn binary_is_detected_from_nul_bytes_and_utf16() {
        assert_eq!(
            sniff(b"PK\x03\x04\x00\x00binary", true, None).format,
            Format::Binary
        );
        assert_eq!(
            sniff(b"\xff\xfeh\x00i\x00", true, Some("a.txt")).format,
            Format::Binary
        );
    }

    #[test]
    fn rows_keep_quoted_newlines_together() {
        let rows = first_rows(b"a,b\r\n1,\"x\ny\"\n2,z", true, 10, b',');
        assert_eq!(rows, [&b"a,b"[..], &b"1,\"x\ny\""[..], &b"2,z"[..]]);
        assert_eq!(
            detect_delimiter(b"a,b\r\n1,\"x,\ny\"\n2,z\n", true),
            Some(b',')
        );
    }
}
