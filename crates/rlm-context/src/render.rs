//! The hint block a model (or a person) reads before touching the context.

use std::fmt::Write as _;

use rlm_types::thousands;

use crate::format::Format;
use crate::metadata::ContextMetadata;

/// Field names shown in the hint before "… (+N more)".
const SHOWN_FIELDS: usize = 40;
/// Outline headings shown in the hint.
const SHOWN_HEADINGS: usize = 12;

/// Renders the metadata as the block a model sees, naming the REPL variable that holds it.
///
/// Unnamed inline text degrades to a single line (format, size, lines).
pub fn render_hint(metadata: &ContextMetadata, variable: &str) -> String {
    let Some(source) = &metadata.source else {
        return format!(
            "[Context available in {variable}: {}, {}, {}]",
            one_line(&metadata.format_description),
            plural(metadata.chars, "char"),
            plural(metadata.lines, "line"),
        );
    };
    let mut out = format!("[Context available in {variable}]\n");
    // Every value is one line whatever it holds: a file name, a field name or a heading with
    // a newline must not add lines (a fake `Question:`) to the prompt.
    let mut line = |label: &str, value: &str| {
        let _ = writeln!(out, "  {label}: {}", one_line(value));
    };
    line("Source", source);
    let mut format = metadata.format_description.clone();
    if let Some(delimiter) = &metadata.delimiter {
        let shown = if delimiter == "\t" {
            "tab".to_owned()
        } else {
            format!("'{delimiter}'")
        };
        let _ = write!(format, ", delimiter {shown}");
    }
    line("Format", &format);
    if metadata.format == Format::Binary {
        line("Size", &plural(metadata.bytes, "byte"));
    } else {
        let mut size = plural(metadata.chars, "char");
        if metadata.bytes != metadata.chars {
            let _ = write!(size, " ({})", plural(metadata.bytes, "byte"));
        }
        let _ = write!(size, ", {}", plural(metadata.lines, "line"));
        line("Size", &size);
    }
    if let Some(records) = metadata.records {
        let records = if metadata.format.is_delimited() {
            format!("{} (header excluded)", thousands(records))
        } else {
            thousands(records)
        };
        line("Records", &records);
    }
    if !metadata.fields.is_empty() {
        let label = if metadata.format.is_delimited() {
            "Columns"
        } else {
            "Fields"
        };
        line(label, &list_fields(metadata));
    }
    if let Some(count) = metadata.headings {
        let mut headings = thousands(count);
        if !metadata.outline.is_empty() {
            let shown: Vec<String> = metadata
                .outline
                .iter()
                .take(SHOWN_HEADINGS)
                .map(|h| format!("{} {}", "#".repeat(usize::from(h.level)), h.text))
                .collect();
            let _ = write!(headings, " — {}", shown.join(" | "));
        }
        line("Headings", &headings);
    }
    if let Some(root) = &metadata.root_element {
        line("Root element", &format!("<{root}>"));
    }
    let encoding = encoding_summary(metadata);
    if !encoding.is_empty() {
        line("Encoding", &encoding);
    }
    for note in &metadata.notes {
        line("Note", note);
    }
    if let Some(sample) = &metadata.sample {
        let ellipsis = if metadata.sample_truncated { "..." } else { "" };
        line("Sample", &format!("{sample}{ellipsis}"));
    }
    out
}

fn list_fields(metadata: &ContextMetadata) -> String {
    let shown = metadata
        .fields
        .iter()
        .take(SHOWN_FIELDS)
        .map(String::as_str)
        .collect::<Vec<_>>();
    let mut text = shown.join(", ");
    let hidden = (metadata.fields.len() - shown.len()) as u64 + metadata.fields_omitted;
    if hidden > 0 {
        let _ = write!(text, ", … (+{} more)", thousands(hidden));
    }
    text
}

fn encoding_summary(metadata: &ContextMetadata) -> String {
    let encoding = &metadata.encoding;
    let mut parts = Vec::new();
    if encoding.bom {
        parts.push("UTF-8 with BOM".to_owned());
    }
    if encoding.crlf_lines > 0 {
        parts.push("CRLF line endings".to_owned());
    }
    if !encoding.valid_utf8 && metadata.format != Format::Binary {
        parts.push(format!(
            "{} invalid UTF-8 sequence(s)",
            thousands(encoding.invalid_sequences)
        ));
    }
    parts.join(", ")
}

/// Control characters made visible (`\n`, `\u{1b}`) so a value stays on one line, and invisible
/// ones (zero-width, bidi controls: [`crate::fence::is_invisible`]) shown as `\u{202e}` so a
/// value hides nothing. Use it for every name, path or field taken from input before it goes
/// into a prompt.
pub fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() || crate::fence::is_invisible(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

fn plural(value: u64, unit: &str) -> String {
    let s = if value == 1 { "" } else { "s" };
    format!("{} {unit}{s}", thousands(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_stay_on_one_line() {
        assert_eq!(one_line("a\nb\tc\u{7}"), "a\\nb\\tc\\u{7}");
    }
}
