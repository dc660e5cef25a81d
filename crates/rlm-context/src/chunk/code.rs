//! Code chunking by an indentation heuristic (not a parser).
//!
//! A top-level item starts at a non-blank line in column 0 that is not a closer (`}`, `)`, `]`,
//! `end`, `else`, ...) when the previous line is blank, indented, or a column-0 closer. Lines
//! directly above in column 0 (doc comments, attributes, decorators) therefore stay with the item
//! below them, and runs of column-0 statements (imports) stay together.

use std::ops::Range;

use super::pack::{self, Unit};

/// Top-level items packed up to `size` characters; oversized items split at blank lines, then
/// at line ends.
pub(crate) fn split(text: &str, size: usize) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    pack::pack(text, items(text), size, Some(split_blocks), &mut out);
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum LineKind {
    Blank,
    Indented,
    Closer,
    TopLevel,
}

fn classify(line: &str) -> LineKind {
    let content = line.trim_end();
    if content.is_empty() {
        return LineKind::Blank;
    }
    if content.starts_with([' ', '\t']) {
        return LineKind::Indented;
    }
    const CLOSER_WORDS: &[&str] = &[
        "end", "else", "elif", "elsif", "except", "finally", "catch", "fi", "done", "esac",
    ];
    let first_word: &str = content
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .next()
        .unwrap_or("");
    if content.starts_with(['}', ')', ']']) || CLOSER_WORDS.contains(&first_word) {
        LineKind::Closer
    } else {
        LineKind::TopLevel
    }
}

pub(super) fn items(text: &str) -> Vec<Unit> {
    let mut units = Vec::new();
    let mut start = 0;
    let mut previous = LineKind::Blank;
    for line in pack::line_ranges(text, 0..text.len()) {
        let kind = classify(&text[line.clone()]);
        let starts_item = kind == LineKind::TopLevel && previous != LineKind::TopLevel;
        if starts_item && line.start > start {
            units.push(Unit {
                range: start..line.start,
                hard_break: false,
            });
            start = line.start;
        }
        previous = kind;
    }
    if start < text.len() {
        units.push(Unit {
            range: start..text.len(),
            hard_break: false,
        });
    }
    units
}

/// Blank-line separated blocks of an oversized item, packed; oversized blocks split by line.
fn split_blocks(text: &str, range: Range<usize>, size: usize, out: &mut Vec<Range<usize>>) {
    let mut units = Vec::new();
    let mut start = range.start;
    let mut previous_blank = false;
    for line in pack::line_ranges(text, range.clone()) {
        let blank = text[line.clone()].trim().is_empty();
        if previous_blank && !blank && line.start > start {
            units.push(Unit {
                range: start..line.start,
                hard_break: false,
            });
            start = line.start;
        }
        previous_blank = blank;
    }
    if start < range.end {
        units.push(Unit {
            range: start..range.end,
            hard_break: false,
        });
    }
    pack::pack(text, units, size, Some(pack::split_lines), out);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item_texts(text: &str) -> Vec<&str> {
        items(text).into_iter().map(|u| &text[u.range]).collect()
    }

    #[test]
    fn rust_items_keep_their_attributes_and_docs() {
        let text = "use a;\nuse b;\n\n/// Doc.\n#[derive(Debug)]\npub struct X {\n    a: u8,\n}\nimpl X {\n    fn f() {}\n\n    fn g() {}\n}\n";
        assert_eq!(
            item_texts(text),
            [
                "use a;\nuse b;\n\n",
                "/// Doc.\n#[derive(Debug)]\npub struct X {\n    a: u8,\n}\n",
                "impl X {\n    fn f() {}\n\n    fn g() {}\n}\n",
            ]
        );
    }

    #[test]
    fn python_items_follow_dedent_and_keep_decorators() {
        let text =
            "import os\n\n@cache\ndef f():\n    return 1\nclass C:\n    pass\nelse_value = 1\n";
        assert_eq!(
            item_texts(text),
            [
                "import os\n\n",
                "@cache\ndef f():\n    return 1\n",
                "class C:\n    pass\n",
                "else_value = 1\n",
            ]
        );
    }

    #[test]
    fn small_items_are_packed_and_big_ones_split_at_blank_lines() {
        let text = "fn a() {}\n\nfn b() {\n    one();\n\n    two();\n}\n";
        let chunks: Vec<&str> = split(text, 22).into_iter().map(|r| &text[r]).collect();
        assert_eq!(
            chunks,
            [
                "fn a() {}\n\n",
                "fn b() {\n    one();\n\n",
                "    two();\n}\n"
            ]
        );
    }
}
