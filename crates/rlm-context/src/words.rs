//! The code-aware word splitter shared by BM25 indexing and context assembly.
//!
//! Prose tokenizers split `parse_args` into `parse` + `args` and leave `getLogger` whole, so an
//! exact identifier query loses precision and `logger` never finds `getLogger`. Here every
//! identifier is emitted **whole, lowercased**, and then — when it has more than one part — as
//! its lowercased **parts**:
//!
//! | input        | terms                        |
//! |--------------|------------------------------|
//! | `getLogger`  | `getlogger get logger`       |
//! | `parse_args` | `parse_args parse args`      |
//! | `HTTPServer` | `httpserver http server`     |
//! | `v2Api`      | `v2api v 2 api`              |
//! | `Logger`     | `logger`                     |
//!
//! Rules, all Unicode-aware:
//! - An identifier is a maximal run of alphanumeric characters and `_`.
//! - Parts split at `_`, at a lower→upper change (`getLogger`), before the last capital of an
//!   upper-case run followed by a lower-case letter (`HTTPServer`), and between letters and digits
//!   (`v2Api`). Identifiers that start with a digit (`0x1f`, `2024`, `1e10`) are numbers and are
//!   emitted whole only, and so are hex strings of 8 or more characters mixing digits and letters
//!   (`a3f9c0d2e1b4`: hashes and request ids, whose letter/digit parts would be noise).
//! - CJK ideographs, kana and hangul syllables are written without spaces, so each such character
//!   is its own term (unigrams) instead of gluing a whole sentence into one identifier.
//! - Identifiers longer than [`MAX_IDENTIFIER_BYTES`] (hashes, base64 blobs) emit nothing: they
//!   would bloat an index with terms nobody types.
//!
//! Terms borrow from the input when it is already lower-case and allocate only when lower-casing
//! changes the text.
//!
//! ```
//! let terms: Vec<String> = rlm_context::words::index_terms("let log = getLogger(parse_args);")
//!     .map(|term| term.into_owned())
//!     .collect();
//! assert_eq!(
//!     terms,
//!     ["let", "log", "getlogger", "get", "logger", "parse_args", "parse", "args"]
//! );
//! ```

use std::borrow::Cow;
use std::ops::Range;

/// Identifiers longer than this many bytes are skipped entirely (hashes, base64, minified code).
pub const MAX_IDENTIFIER_BYTES: usize = 100;

/// Hex strings at least this long (with digits and letters) are not split into parts.
pub const HEX_WHOLE_ONLY_BYTES: usize = 8;

/// One emitted term: lower-cased text and the byte range of the source it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term<'a> {
    /// The lower-cased term.
    pub text: Cow<'a, str>,
    /// Byte range in the input text.
    pub range: Range<usize>,
    /// Whether this is a part of a longer identifier (`logger` in `getLogger`), as opposed to a
    /// whole identifier.
    pub is_part: bool,
}

/// Every index term of `text` in order, as lower-cased strings. See the module docs for the rules.
pub fn index_terms(text: &str) -> impl Iterator<Item = Cow<'_, str>> {
    terms(text).map(|term| term.text)
}

/// Every index term of `text` in order, with byte ranges.
pub fn terms(text: &str) -> Terms<'_> {
    Terms {
        text,
        cursor: 0,
        current: None,
    }
}

/// Iterator returned by [`terms`].
#[derive(Debug, Clone)]
pub struct Terms<'a> {
    text: &'a str,
    /// Where scanning for the next identifier resumes.
    cursor: usize,
    current: Option<Identifier>,
}

#[derive(Debug, Clone)]
struct Identifier {
    range: Range<usize>,
    /// Next byte (absolute) to look for a part at; `None` before the whole term was emitted.
    part_cursor: Option<usize>,
    /// Whether parts are emitted after the whole (more than one part, or underscores around it).
    has_parts: bool,
}

impl Terms<'_> {
    /// Drops what is left of the current identifier (its parts) and resumes at byte `offset`
    /// (a character boundary), or where scanning already was if that is later. For a caller
    /// that read the text from there on itself (a tokenizer that took a run of base64 whole).
    pub fn skip_to(&mut self, offset: usize) {
        self.current = None;
        let offset = offset.min(self.text.len());
        if self.text.is_char_boundary(offset) {
            self.cursor = self.cursor.max(offset);
        }
    }
}

impl<'a> Iterator for Terms<'a> {
    type Item = Term<'a>;

    fn next(&mut self) -> Option<Term<'a>> {
        loop {
            if let Some(identifier) = &mut self.current {
                match identifier.part_cursor {
                    None => {
                        let range = identifier.range.clone();
                        identifier.part_cursor = Some(range.start);
                        let whole = &self.text[range.clone()];
                        identifier.has_parts = !starts_with_digit(whole)
                            && !is_hex_id(whole)
                            && next_part(whole, 0).is_some_and(|first| first != (0..whole.len()));
                        return Some(Term {
                            text: lowercase(whole),
                            range,
                            is_part: false,
                        });
                    }
                    Some(cursor) if identifier.has_parts => {
                        let base = identifier.range.start;
                        let whole = &self.text[identifier.range.clone()];
                        if let Some(part) = next_part(whole, cursor - base) {
                            let range = base + part.start..base + part.end;
                            identifier.part_cursor = Some(range.end);
                            return Some(Term {
                                text: lowercase(&self.text[range.clone()]),
                                range,
                                is_part: true,
                            });
                        }
                        self.current = None;
                    }
                    Some(_) => self.current = None,
                }
            } else {
                let range = next_identifier(self.text, &mut self.cursor)?;
                self.current = Some(Identifier {
                    range,
                    part_cursor: None,
                    has_parts: false,
                });
            }
        }
    }
}

/// Characters written without word spaces; each becomes its own term.
fn is_unspaced_script(c: char) -> bool {
    matches!(c,
        '\u{3040}'..='\u{30FF}'   // hiragana, katakana
        | '\u{3400}'..='\u{4DBF}' // CJK extension A
        | '\u{4E00}'..='\u{9FFF}' // CJK unified ideographs
        | '\u{AC00}'..='\u{D7AF}' // hangul syllables
        | '\u{F900}'..='\u{FAFF}' // CJK compatibility ideographs
        | '\u{20000}'..='\u{2FA1F}' // CJK extensions B.., compatibility supplement
    )
}

fn is_identifier_char(c: char) -> bool {
    (c.is_alphanumeric() || c == '_') && !is_unspaced_script(c)
}

/// Finds the next identifier (or unspaced-script character) at or after `cursor`, skipping
/// over-long identifiers and bare underscore runs, and advances `cursor` past it.
///
/// ASCII bytes are classified directly; only non-ASCII characters are decoded.
fn next_identifier(text: &str, cursor: &mut usize) -> Option<Range<usize>> {
    let bytes = text.as_bytes();
    while *cursor < text.len() {
        let mut start = *cursor;
        let first = loop {
            let byte = *bytes.get(start)?;
            if byte.is_ascii() {
                if is_ascii_identifier_byte(byte) {
                    break None;
                }
                start += 1;
            } else {
                let c = text[start..].chars().next()?;
                if is_identifier_char(c) || is_unspaced_script(c) {
                    break Some(c);
                }
                start += c.len_utf8();
            }
        };
        if let Some(c) = first
            && is_unspaced_script(c)
        {
            *cursor = start + c.len_utf8();
            return Some(start..*cursor);
        }
        let mut end = start;
        while let Some(&byte) = bytes.get(end) {
            if byte.is_ascii() {
                if !is_ascii_identifier_byte(byte) {
                    break;
                }
                end += 1;
            } else {
                match text[end..].chars().next() {
                    Some(c) if is_identifier_char(c) => end += c.len_utf8(),
                    _ => break,
                }
            }
        }
        *cursor = end;
        let identifier = &bytes[start..end];
        if end - start <= MAX_IDENTIFIER_BYTES && identifier.iter().any(|&b| b != b'_') {
            return Some(start..end);
        }
    }
    None
}

fn is_ascii_identifier_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// Hex strings of [`HEX_WHOLE_ONLY_BYTES`] or more with both digits and letters (hashes,
/// request ids, UUID groups): their letter/digit "parts" are noise, so they are emitted whole only.
pub fn is_hex_id(identifier: &str) -> bool {
    identifier.len() >= HEX_WHOLE_ONLY_BYTES
        && identifier.bytes().all(|b| b.is_ascii_hexdigit())
        && identifier.bytes().any(|b| b.is_ascii_digit())
        && identifier.bytes().any(|b| b.is_ascii_alphabetic())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Upper,
    Lower,
    Digit,
    /// Letters without case (e.g. Arabic, Thai): never split inside a run of them.
    Uncased,
}

fn class(c: char) -> Class {
    if c.is_ascii() {
        return match c {
            'A'..='Z' => Class::Upper,
            'a'..='z' => Class::Lower,
            '0'..='9' => Class::Digit,
            _ => Class::Uncased,
        };
    }
    if c.is_uppercase() {
        Class::Upper
    } else if c.is_lowercase() {
        Class::Lower
    } else if c.is_numeric() {
        Class::Digit
    } else {
        Class::Uncased
    }
}

/// The byte ranges of the parts of one identifier, by the rules [`terms`] splits it with
/// (whatever its first character or letters: callers judging an identifier's shape want them
/// even where `terms` emits the whole only).
pub fn part_ranges(identifier: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut from = 0;
    std::iter::from_fn(move || {
        let part = next_part(identifier, from)?;
        from = part.end;
        Some(part)
    })
}

/// The next part of `identifier` at or after byte `from`, as a range relative to `identifier`.
fn next_part(identifier: &str, from: usize) -> Option<Range<usize>> {
    let rest = identifier.get(from..)?;
    let skipped = rest.len() - rest.trim_start_matches('_').len();
    let start = from + skipped;
    if start >= identifier.len() {
        return None;
    }
    let mut chars = identifier[start..].char_indices().peekable();
    let (_, first) = chars.next()?;
    let mut previous = class(first);
    while let Some((offset, c)) = chars.next() {
        if c == '_' {
            return Some(start..start + offset);
        }
        let current = class(c);
        let boundary = match (previous, current) {
            (Class::Lower | Class::Uncased, Class::Upper) => true,
            (Class::Upper, Class::Upper) => chars
                .peek()
                .is_some_and(|&(_, next)| class(next) == Class::Lower),
            (Class::Digit, Class::Digit) => false,
            (Class::Digit, _) | (_, Class::Digit) => true,
            _ => false,
        };
        if boundary {
            return Some(start..start + offset);
        }
        previous = current;
    }
    Some(start..identifier.len())
}

fn starts_with_digit(identifier: &str) -> bool {
    identifier.chars().next().is_some_and(char::is_numeric)
}

fn lowercase(text: &str) -> Cow<'_, str> {
    if text.is_ascii() {
        if text.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(text.to_ascii_lowercase())
        } else {
            Cow::Borrowed(text)
        }
    } else if text.chars().any(char::is_uppercase) {
        Cow::Owned(text.to_lowercase())
    } else {
        Cow::Borrowed(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(text: &str) -> Vec<String> {
        index_terms(text).map(Cow::into_owned).collect()
    }

    #[test]
    fn camel_case_is_whole_and_parts() {
        assert_eq!(collect("getLogger"), ["getlogger", "get", "logger"]);
        assert_eq!(
            collect("XMLHttpRequest"),
            ["xmlhttprequest", "xml", "http", "request"]
        );
        assert_eq!(collect("HTTPServer"), ["httpserver", "http", "server"]);
    }

    #[test]
    fn snake_case_keeps_underscored_whole() {
        assert_eq!(collect("parse_args"), ["parse_args", "parse", "args"]);
        assert_eq!(collect("MAX_SIZE"), ["max_size", "max", "size"]);
        assert_eq!(collect("__init__"), ["__init__", "init"]);
    }

    #[test]
    fn single_part_words_are_emitted_once() {
        assert_eq!(collect("Logger logger"), ["logger", "logger"]);
        assert_eq!(collect("a"), ["a"]);
    }

    #[test]
    fn digits_split_letters_but_numbers_stay_whole() {
        assert_eq!(collect("v2Api"), ["v2api", "v", "2", "api"]);
        assert_eq!(collect("0x1F 2024 3.14"), ["0x1f", "2024", "3", "14"]);
    }

    #[test]
    fn hex_ids_are_whole_only() {
        assert_eq!(
            collect("id=a3f9c0d2e1b4 sha deadBEEF01"),
            ["id", "a3f9c0d2e1b4", "sha", "deadbeef01"]
        );
        // Shorter, letters only, or digits only: the usual rules.
        assert_eq!(
            collect("a3f9c0d"),
            ["a3f9c0d", "a", "3", "f", "9", "c", "0", "d"]
        );
        assert_eq!(collect("deadbeef"), ["deadbeef"]);
        assert_eq!(
            collect("550e8400-e29b-41d4"),
            ["550e8400", "e29b", "e", "29", "b", "41d4"]
        );
    }

    #[test]
    fn skip_to_drops_the_parts_and_resumes_later() {
        let mut terms = terms("getLogger aB3x/yZ9q tail");
        assert_eq!(terms.next().map(|term| term.text), Some("getlogger".into()));
        terms.skip_to(0);
        let whole = terms.next().expect("the next identifier");
        assert_eq!((whole.text.as_ref(), whole.is_part), ("ab3x", false));
        terms.skip_to(19);
        let rest: Vec<String> = terms.map(|term| term.text.into_owned()).collect();
        assert_eq!(rest, ["tail"]);
    }

    #[test]
    fn part_ranges_split_any_identifier() {
        let parts = |identifier: &'static str| -> Vec<&'static str> {
            part_ranges(identifier)
                .map(|range| &identifier[range])
                .collect()
        };
        assert_eq!(parts("getLogger_x"), ["get", "Logger", "x"]);
        assert_eq!(parts("3xYz9"), ["3", "x", "Yz", "9"]);
        assert_eq!(parts("__"), Vec::<&str>::new());
    }

    #[test]
    fn mixed_ascii_and_unicode_boundaries() {
        assert_eq!(collect("a—b"), ["a", "b"]);
        assert_eq!(
            collect("café_au_lait!"),
            ["café_au_lait", "café", "au", "lait"]
        );
        assert_eq!(collect("x東y"), ["x", "東", "y"]);
        assert_eq!(collect("¡hola¿"), ["hola"]);
    }

    /// The char-by-char definition of an identifier, which the byte-level scanner must match.
    fn reference_identifiers(text: &str) -> Vec<Range<usize>> {
        let mut found = Vec::new();
        let mut chars = text.char_indices().peekable();
        while let Some((start, c)) = chars.next() {
            if is_unspaced_script(c) {
                found.push(start..start + c.len_utf8());
            } else if is_identifier_char(c) {
                let mut end = start + c.len_utf8();
                while let Some(&(at, next)) = chars.peek() {
                    if !is_identifier_char(next) {
                        break;
                    }
                    end = at + next.len_utf8();
                    chars.next();
                }
                let identifier = &text[start..end];
                if end - start <= MAX_IDENTIFIER_BYTES && identifier.chars().any(|c| c != '_') {
                    found.push(start..end);
                }
            }
        }
        found
    }

    #[test]
    fn byte_scanner_matches_the_char_definition() {
        const ALPHABET: &[&str] = &[
            "a", "Z", "7", "_", " ", ".", "-", "é", "Ü", "東", "—", "ß", "\n", "ا", "😀", "x",
        ];
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..2000 {
            let mut text = String::new();
            for _ in 0..(state % 40) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                text.push_str(ALPHABET[(state % ALPHABET.len() as u64) as usize]);
            }
            let mut cursor = 0;
            let mut fast = Vec::new();
            while let Some(range) = next_identifier(&text, &mut cursor) {
                fast.push(range);
            }
            assert_eq!(fast, reference_identifiers(&text), "{text:?}");
        }
    }

    #[test]
    fn punctuation_and_underscore_runs_emit_nothing() {
        assert_eq!(collect("  ... ___ --> () "), Vec::<String>::new());
        assert_eq!(collect(""), Vec::<String>::new());
    }

    #[test]
    fn unicode_letters_are_words_and_cjk_is_unigrams() {
        assert_eq!(
            collect("Größe überMaß"),
            ["größe", "übermaß", "über", "maß"]
        );
        assert_eq!(collect("ÉCOLE"), ["école"]);
        assert_eq!(collect("東京tower"), ["東", "京", "tower"]);
        assert_eq!(collect("مرحبا بالعالم"), ["مرحبا", "بالعالم"]);
    }

    #[test]
    fn ranges_point_at_the_source() {
        let text = "x = fooBar_baz";
        let terms: Vec<Term<'_>> = terms(text).collect();
        let sources: Vec<&str> = terms.iter().map(|t| &text[t.range.clone()]).collect();
        assert_eq!(sources, ["x", "fooBar_baz", "foo", "Bar", "baz"]);
        let parts: Vec<bool> = terms.iter().map(|t| t.is_part).collect();
        assert_eq!(parts, [false, false, true, true, true]);
    }

    #[test]
    fn lowercase_input_is_borrowed() {
        let mut all = terms("plain words here");
        assert!(all.all(|t| matches!(t.text, Cow::Borrowed(_))));
        let mut upper = terms("Upper");
        assert!(matches!(upper.next().map(|t| t.text), Some(Cow::Owned(_))));
    }

    #[test]
    fn over_long_identifiers_are_skipped() {
        let blob = "A".repeat(MAX_IDENTIFIER_BYTES + 1);
        assert_eq!(collect(&format!("keep {blob} this")), ["keep", "this"]);
        let fits = "b".repeat(MAX_IDENTIFIER_BYTES);
        assert_eq!(collect(&fits), vec![fits]);
    }
}
