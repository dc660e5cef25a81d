//! Large values in a log: written once, cut to a preview, with their full size and hash.
//!
//! A 300 MB answer used to be logged three times over (the block's result, the turn's answer,
//! the run's result), and a long reply again in every later turn's transcript. A value over
//! [`LARGE_VALUE_BYTES`] is now written as its first [`LARGE_VALUE_BYTES`] followed by a marker
//! line with its full size in bytes and its SHA-256; when the same value comes again in the same
//! file, only the marker is written, saying so. The fields stay JSON strings, so tools that
//! read older logs still read these; [`LargeValue::parse`] recognises the marker.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::{Mutex, PoisonError};

use sha2::{Digest as _, Sha256};

/// Values longer than this (in bytes) are cut to a preview of this many bytes.
pub const LARGE_VALUE_BYTES: usize = 64 * 1024;

const CUT_MARKER: &str = "[rlm-trace: value cut in this log; ";
const REPEAT_MARKER: &str = "[rlm-trace: value written earlier in this log; ";

/// Remembers which large values a log has written, so each is written (as a preview) once.
#[derive(Debug, Default)]
pub struct LargeValues {
    written: Mutex<HashSet<[u8; 32]>>,
}

impl LargeValues {
    /// A fresh memory, for a new log file.
    pub fn new() -> Self {
        Self::default()
    }

    /// `text` as the log stores it: unchanged up to [`LARGE_VALUE_BYTES`]; longer, its preview
    /// and the marker the first time, the marker alone afterwards.
    pub fn compact(&self, text: &str) -> String {
        if text.len() <= LARGE_VALUE_BYTES {
            return text.to_owned();
        }
        let digest: [u8; 32] = Sha256::digest(text.as_bytes()).into();
        let first = self
            .written
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(digest);
        let hash = hex(&digest);
        let bytes = text.len();
        if first {
            let mut cut = LARGE_VALUE_BYTES;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            format!(
                "{}\n{CUT_MARKER}{bytes} bytes in full, sha256 {hash}]",
                &text[..cut]
            )
        } else {
            format!("{REPEAT_MARKER}{bytes} bytes, sha256 {hash}]")
        }
    }
}

/// What the marker of a cut or repeated value says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LargeValue {
    /// The preview written before the marker (empty for a repeat).
    pub preview: String,
    /// The value's full size in bytes.
    pub bytes: u64,
    /// The SHA-256 of the whole value, lower-case hex.
    pub sha256: String,
    /// Whether this is a repeat of a value written (as a preview) earlier in the same file.
    pub repeat: bool,
}

impl LargeValue {
    /// The marker in a logged string, if the value was cut or is a repeat; `None` for a value
    /// logged whole.
    pub fn parse(logged: &str) -> Option<Self> {
        let (preview, rest, repeat) = if let Some(rest) = logged.strip_prefix(REPEAT_MARKER) {
            ("", rest, true)
        } else {
            let (preview, marker) = logged.rsplit_once('\n')?;
            (preview, marker.strip_prefix(CUT_MARKER)?, false)
        };
        let rest = rest.strip_suffix(']')?;
        let (size, hash) = rest.split_once(" bytes")?;
        let sha256 = hash.rsplit_once("sha256 ")?.1;
        if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        Some(Self {
            preview: preview.to_owned(),
            bytes: size.parse().ok()?,
            sha256: sha256.to_owned(),
            repeat,
        })
    }
}

fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_are_kept_whole() {
        let values = LargeValues::new();
        assert_eq!(values.compact("short"), "short");
        assert_eq!(LargeValue::parse("short"), None);
        assert_eq!(LargeValue::parse("a\n[rlm-trace: something else]"), None);
    }

    #[test]
    fn a_large_value_is_cut_once_then_only_referenced() {
        let values = LargeValues::new();
        // Multi-byte chars straddle the cut: the preview must stop on a char boundary.
        let text = "é".repeat(LARGE_VALUE_BYTES);
        let first = values.compact(&text);
        assert!(first.len() < LARGE_VALUE_BYTES + 200, "{}", first.len());
        let parsed = LargeValue::parse(&first).unwrap();
        assert!(!parsed.repeat);
        assert_eq!(parsed.bytes, text.len() as u64);
        assert_eq!(parsed.sha256, hex(&Sha256::digest(text.as_bytes())));
        assert!(text.starts_with(&parsed.preview));
        assert!(parsed.preview.len() > LARGE_VALUE_BYTES - 2);

        let again = values.compact(&text);
        assert!(again.len() < 200, "{again}");
        let repeat = LargeValue::parse(&again).unwrap();
        assert!(repeat.repeat && repeat.preview.is_empty());
        assert_eq!(repeat.sha256, parsed.sha256);

        // Another file remembers nothing.
        assert_eq!(LargeValues::new().compact(&text), first);
    }
}
