//! The provenance comment on the first line of an evidence file, and content ids.
//!
//! ```text
//! <!-- rlm:source {"source_uri":"file:///repo/flow.sh","path":"flow.sh","cid":"sha256:…","span":"lines:3-9","tags":["bug"]} -->
//! ```
//! Everything after that line is the selected content, byte for byte.

use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::selector::Span;

const OPEN: &str = "<!-- rlm:source ";
const CLOSE: &str = " -->";

/// Where a part's content came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// `file://` URI of the absolute source path.
    pub source_uri: String,
    /// The path as it was given when added (shown in headings).
    pub path: String,
    /// `sha256:<hex>` of the content.
    pub cid: String,
    /// Which part of the source.
    pub span: Span,
    /// Tags from the selector.
    #[serde(default)]
    pub tags: Vec<String>,
}

impl Provenance {
    /// The first line of an evidence file, newline included.
    pub fn header_line(&self) -> String {
        // Serialising a struct of strings cannot fail; the fallback keeps the file readable.
        let json = serde_json::to_string(self).unwrap_or_default();
        // `-->` may only appear inside JSON strings, where `\u003e` means the same.
        format!("{OPEN}{}{CLOSE}\n", json.replace("-->", "--\\u003e"))
    }

    /// Splits a part file into its provenance (if the first line is one) and its content.
    pub fn split(file_text: &str) -> (Option<Self>, &str) {
        let Some(rest) = file_text.strip_prefix(OPEN) else {
            return (None, file_text);
        };
        let (line, body) = rest.split_once('\n').unwrap_or((rest, ""));
        let Some(json) = line.strip_suffix(CLOSE) else {
            return (None, file_text);
        };
        match serde_json::from_str(json) {
            Ok(provenance) => (Some(provenance), body),
            Err(_) => (None, file_text),
        }
    }

    /// The comment shown under an evidence heading in `prompt.mdctx`.
    pub fn summary_comment(&self) -> String {
        let tags = if self.tags.is_empty() {
            "-".to_owned()
        } else {
            self.tags.join(",")
        };
        let uri = self.source_uri.replace("-->", "--%3E");
        format!(
            "<!-- source_uri={uri} cid={} span={} tags={tags} -->\n",
            self.cid, self.span
        )
    }
}

/// `sha256:<hex>` of some bytes.
pub fn content_id(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// A `file://` URI for an absolute path, percent-encoding bytes outside the unreserved set.
pub fn file_uri(path: &Path) -> String {
    let text = path.to_string_lossy();
    let mut uri = String::with_capacity(text.len() + 8);
    uri.push_str("file://");
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            uri.push(char::from(byte));
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

/// The path of a `file://` URI made by [`file_uri`].
pub fn uri_path(uri: &str) -> Option<std::path::PathBuf> {
    let encoded = uri.strip_prefix("file://")?;
    let mut bytes = Vec::with_capacity(encoded.len());
    let mut input = encoded.bytes();
    while let Some(byte) = input.next() {
        if byte == b'%' {
            let high = input.next()?;
            let low = input.next()?;
            let hex = [high, low];
            let text = std::str::from_utf8(&hex).ok()?;
            bytes.push(u8::from_str_radix(text, 16).ok()?);
        } else {
            bytes.push(byte);
        }
    }
    Some(std::path::PathBuf::from(String::from_utf8(bytes).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_body_is_untouched() {
        let provenance = Provenance {
            source_uri: file_uri(Path::new("/tmp/a b/x-->y.sh")),
            path: "x-->y.sh".into(),
            cid: content_id(b"body\n"),
            span: Span::Lines(2, 3),
            tags: vec!["bug".into()],
        };
        let file = format!(
            "{}body\n<!-- rlm:source not me -->\n",
            provenance.header_line()
        );
        assert_eq!(
            file.matches("-->").count(),
            2,
            "header hides the path's arrow"
        );
        let (parsed, body) = Provenance::split(&file);
        assert_eq!(parsed.as_ref(), Some(&provenance));
        assert_eq!(body, "body\n<!-- rlm:source not me -->\n");
        assert_eq!(
            uri_path(&provenance.source_uri).unwrap(),
            Path::new("/tmp/a b/x-->y.sh")
        );
    }

    #[test]
    fn files_without_a_header_are_all_body() {
        let (parsed, body) = Provenance::split("# notes\ntext\n");
        assert!(parsed.is_none());
        assert_eq!(body, "# notes\ntext\n");
    }
}
