//! Python literals of plain data: checking that a `repr()` is one (so it can be restored by
//! running `name = <literal>`), and writing JSON values as one (`history_*`).
//!
//! Plain data is `str`, `int`, `float`, `bool`, `None`, and `list`, `tuple` and `dict` of
//! plain data. The checker accepts exactly the literals `repr()` writes for those values; a
//! value holding anything else (`<function f>`, `{1, 2}`, `inf`, `b'x'`) is not restorable.

use serde_json::Value;

/// Items of a `repr()` when it is a literal of plain data: chars of a string, entries of a
/// container, `None` for a scalar. `Err` when it is not such a literal.
pub(crate) fn check(text: &str) -> Result<Option<u64>, ()> {
    let mut parser = Parser {
        bytes: text.as_bytes(),
        at: 0,
        depth: 0,
    };
    let length = parser.value()?;
    parser.spaces();
    if parser.at == parser.bytes.len() {
        Ok(length)
    } else {
        Err(())
    }
}

/// Nesting the checker follows; deeper values are not restored (Python's own parser has a
/// limit too).
const MAX_DEPTH: u32 = 100;

struct Parser<'a> {
    bytes: &'a [u8],
    at: usize,
    depth: u32,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn spaces(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\n' | b'\t')) {
            self.at += 1;
        }
    }

    fn value(&mut self) -> Result<Option<u64>, ()> {
        self.spaces();
        match self.peek().ok_or(())? {
            quote @ (b'\'' | b'"') => self.string(quote).map(Some),
            b'[' => self.items(b']', false),
            b'(' => self.items(b')', false),
            b'{' => self.items(b'}', true),
            b'-' | b'+' | b'0'..=b'9' | b'.' => self.number().map(|()| None),
            _ => {
                for word in ["True", "False", "None"] {
                    if self.bytes[self.at..].starts_with(word.as_bytes()) {
                        self.at += word.len();
                        return Ok(None);
                    }
                }
                Err(())
            }
        }
    }

    fn string(&mut self, quote: u8) -> Result<u64, ()> {
        self.at += 1;
        let mut chars = 0;
        loop {
            let byte = self.peek().ok_or(())?;
            self.at += 1;
            match byte {
                b'\n' | b'\r' => return Err(()),
                b'\\' => {
                    // One escaped char (`\n`, `\\`, `\'`, `\xNN`, `\uNNNN`, `\UNNNNNNNN`): its
                    // digits are ordinary chars for this count, so count them off.
                    let escaped = self.peek().ok_or(())?;
                    self.at += 1;
                    let digits = match escaped {
                        b'x' => 2,
                        b'u' => 4,
                        b'U' => 8,
                        _ => 0,
                    };
                    for _ in 0..digits {
                        if !self.peek().ok_or(())?.is_ascii_hexdigit() {
                            return Err(());
                        }
                        self.at += 1;
                    }
                    chars += 1;
                }
                byte if byte == quote => return Ok(chars),
                // A UTF-8 sequence counts once, at its first byte.
                byte if (byte & 0xC0) != 0x80 => chars += 1,
                _ => {}
            }
        }
    }

    fn number(&mut self) -> Result<(), ()> {
        if matches!(self.peek(), Some(b'-' | b'+')) {
            self.at += 1;
        }
        let start = self.at;
        let mut digits = 0;
        while let Some(byte) = self.peek() {
            match byte {
                b'0'..=b'9' => digits += 1,
                b'.' | b'_' => {}
                b'e' | b'E' => {
                    if matches!(self.bytes.get(self.at + 1), Some(b'-' | b'+')) {
                        self.at += 1;
                    }
                }
                _ => break,
            }
            self.at += 1;
        }
        if digits == 0 || self.at == start {
            return Err(());
        }
        Ok(())
    }

    fn items(&mut self, close: u8, pairs: bool) -> Result<Option<u64>, ()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(());
        }
        self.at += 1;
        let mut count = 0;
        loop {
            self.spaces();
            if self.peek() == Some(close) {
                self.at += 1;
                break;
            }
            self.value()?;
            self.spaces();
            if pairs {
                if self.peek() != Some(b':') {
                    return Err(());
                }
                self.at += 1;
                self.value()?;
                self.spaces();
            }
            count += 1;
            match self.peek().ok_or(())? {
                b',' => self.at += 1,
                byte if byte == close => {}
                _ => return Err(()),
            }
        }
        self.depth -= 1;
        Ok(Some(count))
    }
}

/// `value` as a Python literal that evaluates to the same data (JSON objects become dicts,
/// arrays lists, `null` `None`); strings escape every control character.
pub(crate) fn python_literal(value: &Value) -> String {
    let mut out = String::new();
    write_literal(value, &mut out);
    out
}

fn write_literal(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(number) => out.push_str(&number.to_string()),
        Value::String(text) => write_string(text, out),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                write_literal(item, out);
            }
            out.push(']');
        }
        Value::Object(entries) => {
            out.push('{');
            for (index, (key, item)) in entries.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                write_string(key, out);
                out.push_str(": ");
                write_literal(item, out);
            }
            out.push('}');
        }
    }
}

fn write_string(text: &str, out: &mut String) {
    out.push('\'');
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            // Line and paragraph separators end a line for some parsers; keep them escaped.
            '\u{2028}' | '\u{2029}' | '\u{85}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('\'');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_data_literals_are_accepted_with_their_length() {
        assert_eq!(check("41"), Ok(None));
        assert_eq!(check("-1.5e-07"), Ok(None));
        assert_eq!(check("None"), Ok(None));
        assert_eq!(check("'a\\'b\\n\\x00é'"), Ok(Some(6)));
        assert_eq!(check("\"it's\""), Ok(Some(4)));
        assert_eq!(check("[1, 'two', (3,), {'k': [None, True]}]"), Ok(Some(4)));
        assert_eq!(check("()"), Ok(Some(0)));
        assert_eq!(check("{(1, 2): 'x'}"), Ok(Some(1)));
    }

    #[test]
    fn other_values_are_refused() {
        for text in [
            "<function f at 0x1>",
            "{1, 2}",
            "inf",
            "[1, nan]",
            "b'x'",
            "[<object object at 0x1>]",
            "1 + 1",
            "'unclosed",
            "x",
            "[1] [2]",
            "",
            "(1j)",
        ] {
            assert_eq!(check(text), Err(()), "{text}");
        }
        let deep = format!("{}{}", "[".repeat(101), "]".repeat(101));
        assert_eq!(check(&deep), Err(()));
    }

    #[test]
    fn json_values_become_literals_that_check() {
        let value = serde_json::json!([
            {"content": "it's \"a\"\n\r\t\u{0}\u{2028}\\ é"},
            {"b": false, "f": 2.5, "n": 1, "z": null}
        ]);
        let literal = python_literal(&value);
        assert_eq!(
            literal,
            "[{'content': 'it\\'s \"a\"\\n\\r\\t\\x00\\u2028\\\\ é'}, \
             {'b': False, 'f': 2.5, 'n': 1, 'z': None}]"
        );
        assert_eq!(check(&literal), Ok(Some(2)));
    }
}
