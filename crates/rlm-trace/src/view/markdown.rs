//! A small, safe Markdown subset for model replies, and light code highlighting.
//!
//! Every piece of text goes through [`escape`]: no HTML from the input survives, and links are
//! shown as text (a report must not point anywhere). What is rendered: fenced code blocks
//! (highlighted), ATX headings, bullet and numbered lists, block quotes, paragraphs, and inline
//! `code`, **bold** and *italic*.

use std::fmt::Write as _;

/// Escapes text for HTML content and double- or single-quoted attribute values. Control
/// characters (but newline, tab and carriage return) and bidi controls are shown as `\u{202e}`.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    escape_into(&mut out, text);
    out
}

/// [`escape`], appending to `out`.
pub fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' | '\r' => out.push(c),
            // Shown, not obeyed: an escape sequence or a bidi override (U+202E) in a log must
            // not hide or reorder the text around it.
            c if c.is_control() || rlm_context::fence::is_bidi_control(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            _ => out.push(c),
        }
    }
}

/// Renders a Markdown text as HTML.
pub fn render(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    let mut paragraph: Vec<&str> = Vec::new();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            flush_paragraph(&mut out, &mut paragraph);
            let language = info.split_whitespace().next().unwrap_or("");
            let mut code = String::new();
            for inner in lines.by_ref() {
                if inner.trim_start().starts_with("```") {
                    break;
                }
                code.push_str(inner);
                code.push('\n');
            }
            out.push_str(&code_block(&code, language));
        } else if trimmed.is_empty() {
            flush_paragraph(&mut out, &mut paragraph);
        } else if let Some((level, title)) = heading(trimmed) {
            flush_paragraph(&mut out, &mut paragraph);
            let _ = write!(out, "<h{level}>{}</h{level}>", inline(title));
        } else if list_item(trimmed).is_some() {
            flush_paragraph(&mut out, &mut paragraph);
            let ordered = list_item(trimmed).is_some_and(|(ordered, _)| ordered);
            out.push_str(if ordered { "<ol>" } else { "<ul>" });
            let mut current = Some(trimmed);
            while let Some(item) = current {
                let Some((_, body)) = list_item(item) else {
                    break;
                };
                let _ = write!(out, "<li>{}</li>", inline(body));
                current = lines
                    .next_if(|next| {
                        list_item(next.trim_start()).is_some_and(|(kind, _)| kind == ordered)
                    })
                    .map(str::trim_start);
            }
            out.push_str(if ordered { "</ol>" } else { "</ul>" });
        } else if let Some(quote) = trimmed.strip_prefix('>') {
            flush_paragraph(&mut out, &mut paragraph);
            let _ = write!(out, "<blockquote>{}</blockquote>", inline(quote.trim()));
        } else {
            paragraph.push(line);
        }
    }
    flush_paragraph(&mut out, &mut paragraph);
    out
}

fn flush_paragraph(out: &mut String, paragraph: &mut Vec<&str>) {
    if paragraph.is_empty() {
        return;
    }
    out.push_str("<p>");
    for (index, line) in paragraph.iter().enumerate() {
        if index > 0 {
            out.push_str("<br>");
        }
        out.push_str(&inline(line));
    }
    out.push_str("</p>");
    paragraph.clear();
}

fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.bytes().take_while(|&b| b == b'#').count();
    let rest = &line[level..];
    ((1..=6).contains(&level) && rest.starts_with(' ')).then(|| (level.min(4) + 1, rest.trim()))
}

/// `(ordered, body)` for a list item line.
fn list_item(line: &str) -> Option<(bool, &str)> {
    for bullet in ["- ", "* ", "+ "] {
        if let Some(body) = line.strip_prefix(bullet) {
            return Some((false, body));
        }
    }
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    if (1..=9).contains(&digits) {
        let rest = &line[digits..];
        if let Some(body) = rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")) {
            return Some((true, body));
        }
    }
    None
}

/// Inline markup: `code`, **bold**, *italic*; everything else escaped as is.
fn inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let Some(at) = rest.find(['`', '*']) else {
            escape_into(&mut out, rest);
            break;
        };
        escape_into(&mut out, &rest[..at]);
        rest = &rest[at..];
        let (marker, tag) = if rest.starts_with('`') {
            ("`", "code")
        } else if rest.starts_with("**") {
            ("**", "strong")
        } else {
            ("*", "em")
        };
        let body_start = marker.len();
        match rest[body_start..].find(marker) {
            Some(end) if end > 0 => {
                let body = &rest[body_start..body_start + end];
                if tag == "code" {
                    let _ = write!(out, "<code>{}</code>", escape(body));
                } else {
                    let _ = write!(out, "<{tag}>{}</{tag}>", inline(body));
                }
                rest = &rest[body_start + end + marker.len()..];
            }
            _ => {
                escape_into(&mut out, marker);
                rest = &rest[marker.len()..];
            }
        }
    }
    out
}

/// A code block: `<pre><code>` with highlighting for Python-like languages.
pub fn code_block(code: &str, language: &str) -> String {
    let body = match language {
        "" | "repl" | "python" | "py" => highlight_python(code),
        _ => escape(code),
    };
    format!("<pre class=\"code\"><code>{body}</code></pre>")
}

const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

const HOST_FUNCTIONS: &[&str] = &[
    "llm_query",
    "llm_query_batched",
    "rlm_query",
    "FINAL",
    "FINAL_VAR",
    "print",
];

/// Python highlighting by a small scanner: comments, strings, numbers, keywords and the REPL's
/// host functions get a class; the rest is escaped text.
pub fn highlight_python(code: &str) -> String {
    let mut out = String::with_capacity(code.len() * 5 / 4);
    let bytes = code.as_bytes();
    let mut at = 0;
    while at < code.len() {
        let c = bytes[at];
        let end = if c == b'#' {
            code[at..].find('\n').map_or(code.len(), |n| at + n)
        } else if c == b'"' || c == b'\'' {
            string_end(code, at)
        } else if c.is_ascii_digit() {
            at + code[at..]
                .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '.' || ch == '_'))
                .unwrap_or(code.len() - at)
        } else if c.is_ascii_alphabetic() || c == b'_' {
            at + code[at..]
                .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                .unwrap_or(code.len() - at)
        } else {
            // One character (a whole UTF-8 sequence) of plain text.
            at + code[at..].chars().next().map_or(1, char::len_utf8)
        };
        let token = &code[at..end];
        let class = match c {
            b'#' => Some("c"),
            b'"' | b'\'' => Some("s"),
            b'0'..=b'9' => Some("n"),
            _ if KEYWORDS.contains(&token) => Some("k"),
            _ if HOST_FUNCTIONS.contains(&token) => Some("f"),
            _ => None,
        };
        match class {
            Some(class) => {
                let _ = write!(out, "<span class=\"{class}\">{}</span>", escape(token));
            }
            None => escape_into(&mut out, token),
        }
        at = end;
    }
    out
}

/// The end (exclusive) of the string literal starting at `start`: single or triple quoted,
/// with backslash escapes; an unclosed string runs to the end of its line (or of the code, for
/// a triple-quoted one).
fn string_end(code: &str, start: usize) -> usize {
    let quote = &code[start..=start];
    let triple = quote.repeat(3);
    let bytes = code.as_bytes();
    if code[start..].starts_with(&triple) {
        let from = start + 3;
        return code[from..]
            .find(triple.as_str())
            .map_or(code.len(), |n| from + n + 3);
    }
    let mut at = start + 1;
    while at < code.len() {
        match bytes[at] {
            b'\\' => at += 2,
            b'\n' => return at,
            b if b == bytes[start] => return at + 1,
            _ => at += 1,
        }
    }
    code.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_markup_from_the_input_survives() {
        let nasty = "<script>alert(1)</script> **<img src=x onerror=alert(2)>** `</code><b>` \"'&";
        let html = render(&format!(
            "{nasty}\n\n```repl\nprint('</script>')  # <b>\n```\n"
        ));
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("<b>"), "{html}");
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert!(html.contains("&quot;&#39;&amp;"), "{html}");
        assert!(html.contains("&lt;/script&gt;"), "{html}");
    }

    #[test]
    fn bidi_and_control_characters_are_shown_not_obeyed() {
        assert_eq!(
            escape("invoice\u{202E}fdp.exe\u{1b}[2J\u{2066}x\ty\n"),
            "invoice\\u{202e}fdp.exe\\u{1b}[2J\\u{2066}x\ty\n"
        );
        // Joiners inside words (emoji, Persian) are kept.
        assert_eq!(escape("a\u{200D}b\u{200C}c"), "a\u{200D}b\u{200C}c");
    }

    #[test]
    fn renders_the_common_subset() {
        let html = render(
            "# Title\nSome **bold** and *it* and `x < 1`.\nnext line\n\n- a\n- b\n1. one\n> quoted",
        );
        assert_eq!(
            html,
            "<h2>Title</h2><p>Some <strong>bold</strong> and <em>it</em> and \
             <code>x &lt; 1</code>.<br>next line</p><ul><li>a</li><li>b</li></ul>\
             <ol><li>one</li></ol><blockquote>quoted</blockquote>"
        );
        // Unmatched markers stay as text.
        assert_eq!(render("2 * 3 and `open"), "<p>2 * 3 and `open</p>");
    }

    #[test]
    fn python_tokens_get_classes() {
        let html = highlight_python("x = llm_query(\"a\\\"b\")  # done\nif n > 10: pass\n");
        assert_eq!(
            html,
            "x = <span class=\"f\">llm_query</span>(<span class=\"s\">&quot;a\\&quot;b&quot;</span>)  \
             <span class=\"c\"># done</span>\n<span class=\"k\">if</span> n &gt; \
             <span class=\"n\">10</span>: <span class=\"k\">pass</span>\n"
        );
        // A triple-quoted string spans lines; an unclosed one ends at its line; non-ASCII is kept.
        let html = highlight_python("s = '''a\nb''' + 'open\né = 1");
        assert!(html.contains("<span class=\"s\">&#39;&#39;&#39;a\nb&#39;&#39;&#39;</span>"));
        assert!(
            html.contains("<span class=\"s\">&#39;open</span>\né"),
            "{html}"
        );
    }
}
