//! The contexts a run works over, and how they are described to the root model.
//!
//! The root model never sees a context's text; it sees this description (format hint, sizes,
//! per-part lengths) and explores the text in the REPL.

use std::path::PathBuf;
use std::sync::Arc;

use rlm_context::{AnalyzeOptions, ContextMetadata, analyze_bytes, render_hint};
use serde_json::json;

/// One context: a name for people, the text for the REPL, and what is known about its shape.
#[derive(Debug, Clone)]
pub struct ContextPart {
    /// Where it came from (file name, `stdin`, ...), if known.
    pub name: Option<String>,
    /// The text. Shared, never copied per iteration.
    pub text: Arc<str>,
    /// Format metadata (`rlm inspect`'s analysis), rendered as the model's hint.
    pub metadata: Option<ContextMetadata>,
    /// Free-form extra description, shown after the metadata.
    pub hint: Option<String>,
    /// The file `text` was read from, if any: a sandbox worker can read it there instead of
    /// receiving a copy.
    pub path: Option<PathBuf>,
}

impl ContextPart {
    /// A context from text, with no name or hint.
    pub fn new(text: impl Into<Arc<str>>) -> Self {
        Self {
            name: None,
            text: text.into(),
            metadata: None,
            hint: None,
            path: None,
        }
    }

    /// A context from text, analysed with `rlm-context` (format, records, fields, sample) in
    /// one bounded pass. `name` (a file name) also serves as a format hint.
    pub fn analyzed(text: impl Into<Arc<str>>, name: Option<&str>) -> Self {
        let text: Arc<str> = text.into();
        let metadata = analyze_bytes(text.as_bytes(), name, &AnalyzeOptions::default());
        Self {
            name: name.map(str::to_owned),
            text,
            metadata: Some(metadata),
            hint: None,
            path: None,
        }
    }

    /// Sets the name shown to the model.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Records the file the text came from (it must hold exactly `text`).
    #[must_use]
    pub fn with_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// Sets the metadata hint shown to the model.
    #[must_use]
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

/// Sizes measured once per part, in the units Python code sees (`len(context)` counts chars).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartSize {
    /// Unicode scalar values, as `len()` in Python.
    pub chars: usize,
    /// Lines (a final line without a newline counts).
    pub lines: usize,
    /// Whether the text is pure ASCII (slicing is cheap then).
    pub ascii: bool,
}

impl PartSize {
    /// Measures `text` in one pass.
    pub fn measure(text: &str) -> Self {
        let bytes = text.as_bytes();
        let newlines = bytes.iter().filter(|&&b| b == b'\n').count();
        let trailing = usize::from(!bytes.is_empty() && !bytes.ends_with(b"\n"));
        // Continuation bytes (10xxxxxx) are the only ones that do not start a char.
        let continuation = bytes.iter().filter(|&&b| (b & 0xC0) == 0x80).count();
        Self {
            chars: bytes.len() - continuation,
            lines: newlines + trailing,
            ascii: bytes.is_ascii(),
        }
    }
}

/// The variable name a part has in the REPL.
pub fn variable_name(index: usize) -> String {
    format!("context_{index}")
}

/// Renders the context description placed in the first user message.
pub fn describe(parts: &[ContextPart], sizes: &[PartSize]) -> String {
    let mut out = String::new();
    if parts.is_empty() {
        out.push_str("No context was given: `context` is an empty string.\n");
        return out;
    }
    let total: usize = sizes.iter().map(|s| s.chars).sum();
    if parts.len() == 1 {
        out.push_str(&format!(
            "The REPL variable `context` (also `context_0`) is a str of {} chars.\n",
            group_digits(total)
        ));
    } else {
        out.push_str(&format!(
            "There are {} contexts, {} chars in total: `context_0` … `context_{}` (str each); \
             `context` is `context_0`.\n",
            parts.len(),
            group_digits(total),
            parts.len() - 1
        ));
    }
    for (index, (part, size)) in parts.iter().zip(sizes).enumerate() {
        out.push('\n');
        if let Some(metadata) = &part.metadata {
            out.push_str(render_hint(metadata, &variable_name(index)).trim_end());
            out.push('\n');
            if !size.ascii {
                out.push_str("  Contains non-ASCII text: index-based slicing is slow.\n");
            }
        } else {
            let name = part.name.as_deref().unwrap_or("inline text");
            let ascii = if size.ascii {
                ""
            } else {
                ", contains non-ASCII text"
            };
            out.push_str(&format!(
                "[{}] {name}: {} chars, {} lines{ascii}\n",
                variable_name(index),
                group_digits(size.chars),
                group_digits(size.lines),
            ));
        }
        if let Some(hint) = part.hint.as_deref().filter(|h| !h.trim().is_empty()) {
            for line in hint.trim_end().lines() {
                out.push_str("    ");
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// The `contextMeta` REPL variable: one object per part.
pub fn meta_value(parts: &[ContextPart], sizes: &[PartSize]) -> serde_json::Value {
    let items: Vec<serde_json::Value> = parts
        .iter()
        .zip(sizes)
        .enumerate()
        .map(|(index, (part, size))| {
            json!({
                "variable": variable_name(index),
                "name": part.name,
                "chars": size.chars,
                "lines": size.lines,
                "ascii": size.ascii,
                "hint": part.hint,
                "metadata": part.metadata,
            })
        })
        .collect();
    json!({ "count": parts.len(), "parts": items })
}

/// `1234567` → `1,234,567` (the same grouping as the `rlm inspect` hint).
pub fn group_digits(value: usize) -> String {
    rlm_context::thousands(value as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_chars_lines_and_ascii() {
        assert_eq!(
            PartSize::measure("ab\ncé"),
            PartSize {
                chars: 5,
                lines: 2,
                ascii: false
            }
        );
        assert_eq!(
            PartSize::measure("x\n"),
            PartSize {
                chars: 2,
                lines: 1,
                ascii: true
            }
        );
        assert_eq!(PartSize::measure("").lines, 0);
    }

    #[test]
    fn analyzed_parts_describe_their_format() {
        let part = ContextPart::analyzed(
            "{\"user\":\"a\",\"msg\":\"x\"}\n{\"user\":\"b\",\"msg\":\"y\"}\n",
            Some("log.ndjson"),
        );
        let sizes = [PartSize::measure(&part.text)];
        let parts = [part];
        let text = describe(&parts, &sizes);
        assert!(text.contains("[Context available in context_0]"), "{text}");
        assert!(text.contains("Records: 2"), "{text}");
        assert!(text.contains("user"), "{text}");
        assert_eq!(
            meta_value(&parts, &sizes)["parts"][0]["metadata"]["records"],
            2
        );
    }

    #[test]
    fn groups_digits() {
        assert_eq!(group_digits(0), "0");
        assert_eq!(group_digits(999), "999");
        assert_eq!(group_digits(1000), "1,000");
        assert_eq!(group_digits(52_428_800), "52,428,800");
    }

    #[test]
    fn describes_multiple_parts_with_lengths_and_hints() {
        let parts = vec![
            ContextPart::new("a\nb\n")
                .with_name("a.txt")
                .with_hint("Format: plain text"),
            ContextPart::new("日本"),
        ];
        let sizes: Vec<_> = parts.iter().map(|p| PartSize::measure(&p.text)).collect();
        let text = describe(&parts, &sizes);
        assert!(
            text.contains("There are 2 contexts, 6 chars in total"),
            "{text}"
        );
        assert!(text.contains("[context_0] a.txt: 4 chars, 2 lines\n    Format: plain text"));
        assert!(text.contains("[context_1] inline text: 2 chars, 1 lines, contains non-ASCII"));
        let meta = meta_value(&parts, &sizes);
        assert!(meta["parts"][0]["metadata"].is_null());
        assert_eq!(meta["parts"][1]["chars"], 2);
        assert_eq!(meta["parts"][0]["name"], "a.txt");
    }
}
