//! What both pages share: the document around a page, the filter controls, facts, badges, a
//! text in a `<pre>` (folded when long), labels, and the last pass over a finished page.
//!
//! Pages are written with maud's `html!`, which escapes every value spliced into it: text from
//! a log can only ever be text. Markup goes in unescaped (`PreEscaped`) in two places only: the
//! page's own style and script (constants, here) and Markdown rendered by
//! [`super::markdown`], which shows the HTML it is given as text.

use std::fmt::Write as _;

use maud::{DOCTYPE, Markup, PreEscaped, html};
use rlm_types::thousands;

use super::format::{chars, size_label};

const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");

/// Texts longer than this (in chars) or than [`FOLD_LINES`] are folded.
pub(super) const FOLD_CHARS: usize = 2_000;
const FOLD_LINES: usize = 30;

/// The whole document: a policy that lets nothing load (no source at all but the page's own
/// inline style and its one script, by `nonce`), the title and style, `body`, the script.
pub(super) fn document(title: &str, nonce: &str, body: &Markup) -> String {
    let policy = format!(
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-{nonce}'; \
         img-src data:; form-action 'none'; base-uri 'none'"
    );
    let mut page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta http-equiv="Content-Security-Policy" content=(policy);
                title { (title) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                (body)
                script nonce=(nonce) { (PreEscaped(SCRIPT)) }
            }
        }
    }
    .into_string();
    page.push('\n');
    page
}

/// The search box and expand/collapse buttons; the script filters the `.turn` sections of
/// `#turns`, which it calls `items` (`turns`, `calls`).
pub(super) fn controls(items: &str) -> Markup {
    html! {
        nav id="controls" {
            input id="search" type="search"
                placeholder={ "Filter " (items) " (text anywhere in one)" }
                aria-label={ "Filter " (items) };
            span id="match-count" {}
            button type="button" id="expand-all" { "Expand all" }
            button type="button" id="collapse-all" { "Collapse all" }
        }
    }
}

/// Names and values as a `<dl class="facts">`.
pub(super) fn facts(facts: &[(&str, String)]) -> Markup {
    html! {
        dl class="facts" {
            @for (name, value) in facts {
                dt { (name) }
                dd { (value) }
            }
        }
    }
}

/// A short label: `badge` plus `class` (`bad`, `warn`, `ok`, `child` or none).
pub(super) fn badge(class: &str, text: &str) -> Markup {
    html! { span class={ "badge " (class) } { (text) } }
}

/// A text in a `<pre>`, folded with its size when long.
pub(super) fn text_block(label: &str, text: &str, open: bool) -> Markup {
    let long = text.chars().count() > FOLD_CHARS || text.lines().count() > FOLD_LINES;
    let kind = label
        .split('(')
        .next()
        .unwrap_or("")
        .trim()
        .replace(' ', "-");
    let class = format!("text {kind}");
    html! {
        @if long {
            details class=(class) open[open] {
                summary { (label) " — " (size_label(text)) }
                pre { (text) }
            }
        } @else {
            div class=(class) {
                span class="label" { (label) }
                pre { (text) }
            }
        }
    }
}

/// A logged preview with the full length it was cut from.
pub(super) fn preview_block(label: &str, preview: &str, full_chars: u64) -> Markup {
    let shown = preview.chars().count() as u64;
    let label = if full_chars > shown {
        format!(
            "{label} (first {} of {})",
            thousands(shown),
            chars(full_chars)
        )
    } else {
        label.to_owned()
    };
    text_block(&label, preview, false)
}

/// What the page says about a cut last line it left out.
pub(super) fn cut_note(cut_line: Option<usize>) -> String {
    cut_line.map_or_else(String::new, |line| {
        format!(" Line {line}, the last, is cut short (still being written) and is not shown.")
    })
}

pub(super) fn plural(n: usize, word: &str) -> String {
    let shown = thousands(n as u64);
    match (n, word) {
        (1, _) => format!("1 {word}"),
        (_, "retry") => format!("{shown} retries"),
        (_, "batch") => format!("{shown} batches"),
        _ => format!("{shown} {word}s"),
    }
}

pub(super) fn preview(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() > max || text.lines().nth(1).is_some() {
        let cut: String = line.chars().take(max).collect();
        format!("{cut}…")
    } else {
        line.to_owned()
    }
}

/// `page` with every control character (but newline, tab and carriage return) and every
/// bidi control shown as its escape (`\u{202e}`), not obeyed: an escape sequence or a
/// right-to-left override in a log must not hide or reorder the text around it. One pass over
/// the finished page covers every text in it, Markdown included; the page's own markup, style
/// and script hold none of these characters.
pub(super) fn show_controls(page: String) -> String {
    let bytes = page.as_bytes();
    let mut shown: Option<String> = None;
    let mut kept = 0;
    let mut at = 0;
    while at < bytes.len() {
        if !MAY_START_SHOWN[usize::from(bytes[at])] {
            at += 1;
            continue;
        }
        // A byte the table marks starts a character (it is never a continuation byte).
        let Some(c) = page[at..].chars().next() else {
            break;
        };
        if is_shown_escaped(c) {
            let out = shown.get_or_insert_with(|| String::with_capacity(page.len() + 64));
            out.push_str(&page[kept..at]);
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            kept = at + c.len_utf8();
        }
        at += c.len_utf8();
    }
    match shown {
        None => page,
        Some(mut out) => {
            out.push_str(&page[kept..]);
            out
        }
    }
}

/// Whether `c` is shown as its escape: a control character (`Cc`) but newline, tab and
/// carriage return, or a bidi control.
fn is_shown_escaped(c: char) -> bool {
    !matches!(c, '\n' | '\t' | '\r') && (c.is_control() || rlm_context::fence::is_bidi_control(c))
}

/// The first bytes of every character [`is_shown_escaped`] is true of: the ASCII controls,
/// `0xC2` (U+0080–U+009F), `0xD8` (U+061C) and `0xE2` (U+200E–U+2069). The scan looks at the
/// character only where one of them starts, so a page costs about a table lookup a byte.
const MAY_START_SHOWN: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = !matches!(byte as u8, b'\n' | b'\t' | b'\r');
        byte += 1;
    }
    table[0x7F] = true;
    table[0xC2] = true;
    table[0xD8] = true;
    table[0xE2] = true;
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bidi_and_control_characters_are_shown_not_obeyed() {
        assert_eq!(
            show_controls("invoice\u{202E}fdp.exe\u{1b}[2J\u{2066}x\ty\n".to_owned()),
            "invoice\\u{202e}fdp.exe\\u{1b}[2J\\u{2066}x\ty\n"
        );
        // Joiners inside words (emoji, Persian) are kept; so is text with nothing to show.
        assert_eq!(
            show_controls("a\u{200D}b\u{200C}c".to_owned()),
            "a\u{200D}b\u{200C}c"
        );
        assert_eq!(show_controls("plain — text".to_owned()), "plain — text");
        assert_eq!(show_controls("\u{85}\u{7f}é".to_owned()), "\\u{85}\\u{7f}é");
    }

    /// The byte table lets through the first byte of every character that is shown escaped.
    #[test]
    fn the_scan_sees_every_character_it_must_show() {
        let mut buffer = [0; 4];
        let missed: Vec<char> = (0..=u32::from(char::MAX))
            .filter_map(char::from_u32)
            .filter(|&c| is_shown_escaped(c))
            .filter(|c| !MAY_START_SHOWN[usize::from(c.encode_utf8(&mut buffer).as_bytes()[0])])
            .collect();
        assert_eq!(missed, Vec::<char>::new());
    }

    #[test]
    fn spliced_text_is_escaped_and_labels_fold_long_texts() {
        let html = text_block("output (stdout)", "<b>\"x\"</b> & 'y'", false).into_string();
        assert_eq!(
            html,
            "<div class=\"text output\"><span class=\"label\">output (stdout)</span>\
             <pre>&lt;b&gt;&quot;x&quot;&lt;/b&gt; &amp; 'y'</pre></div>"
        );
        let long = "line\n".repeat(40);
        let html = text_block("a label", &long, true).into_string();
        assert!(
            html.starts_with("<details class=\"text a-label\" open><summary>a label — "),
            "{html}"
        );
        assert_eq!(
            badge("", "<i>").into_string(),
            "<span class=\"badge \">&lt;i&gt;</span>"
        );
    }
}
