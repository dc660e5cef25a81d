//! Markdown of model replies and query reports: CommonMark (with tables and strikethrough),
//! parsed by pulldown-cmark and written by its HTML writer, after the events are made fit for
//! a page that must neither run nor load anything:
//!
//! - HTML in the text, blocks and inline alike, is shown as text, never passed through: an
//!   HTML block becomes a `<pre class="html">` of its source.
//! - Nothing points anywhere: a link is its text followed by its destination in parentheses, as
//!   text (an autolink is its address, once); an image is `[image: description]` and its
//!   address, as text. A `javascript:` link or a tracking image cannot act, and the page's
//!   policy is never put to the test.
//! - Code blocks are [`code_block`]s: the language as a `language-…` class, Python (and the
//!   REPL's `repl` blocks) highlighted.
//! - Headings move one level down (the page's own sections are `<h2>`), and a line break inside
//!   a paragraph stays one, as the model wrote it.
//! - A report's citations (`[chunk 12]`, `[chunks 3, 4]`) link to the chunk's row of the page
//!   ([`render_report`]).
//!
//! The only markup added to the writer's output is written here, with the text in it escaped.

use maud::{Markup, PreEscaped, Render, html};
use pulldown_cmark::{
    CodeBlockKind, CowStr, Event, HeadingLevel, LinkType, Options, Parser, Tag, TagEnd,
    TextMergeStream,
};

pub use super::highlight::code_block;

/// A model's reply as HTML.
pub fn render(text: &str) -> Markup {
    write_html(text, false)
}

/// A query's report as HTML, its citations linked to the chunks' rows.
pub fn render_report(text: &str) -> Markup {
    write_html(text, true)
}

fn write_html(text: &str, citations: bool) -> Markup {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    let events = TextMergeStream::new(made_safe(Parser::new_ext(text, options)).into_iter());
    let mut out = String::with_capacity(text.len() + text.len() / 2);
    if citations {
        pulldown_cmark::html::push_html(&mut out, events.map(link_citations));
    } else {
        pulldown_cmark::html::push_html(&mut out, events);
    }
    PreEscaped(out)
}

/// A link or image being read: where it pointed, and whether its text is that address.
struct Destination<'a> {
    url: CowStr<'a>,
    image: bool,
    autolink: bool,
}

/// The parser's events with every HTML event turned into text, links and images into text,
/// code blocks into highlighted [`code_block`]s, headings one level down and soft line breaks
/// hard. Every `Html` event in the result is markup written here.
fn made_safe<'a>(parser: Parser<'a>) -> Vec<Event<'a>> {
    let mut events = Vec::new();
    // A code block being read: its language and its text so far.
    let mut code: Option<(String, String)> = None;
    let mut destinations: Vec<Destination<'a>> = Vec::new();
    for event in parser {
        if let Some((language, body)) = &mut code {
            match event {
                Event::Text(text) => body.push_str(&text),
                Event::End(TagEnd::CodeBlock) => {
                    let block = code_block(body, language).into_string();
                    events.push(Event::Html(block.into()));
                    code = None;
                }
                // A code block holds only text.
                _ => {}
            }
            continue;
        }
        match event {
            Event::Start(Tag::CodeBlock(kind)) => {
                let language = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split_whitespace().next().unwrap_or("").to_owned()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                code = Some((language, String::new()));
            }
            Event::Html(html) | Event::InlineHtml(html) => events.push(Event::Text(html)),
            Event::Start(Tag::HtmlBlock) => events.push(Event::Html("<pre class=\"html\">".into())),
            Event::End(TagEnd::HtmlBlock) => events.push(Event::Html("</pre>\n".into())),
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                ..
            }) => destinations.push(Destination {
                url: dest_url,
                image: false,
                autolink: matches!(link_type, LinkType::Autolink | LinkType::Email),
            }),
            Event::Start(Tag::Image { dest_url, .. }) => {
                events.push(Event::Text("[image: ".into()));
                destinations.push(Destination {
                    url: dest_url,
                    image: true,
                    autolink: false,
                });
            }
            Event::End(TagEnd::Link | TagEnd::Image) => {
                if let Some(destination) = destinations.pop() {
                    let close = if destination.image { "]" } else { "" };
                    if !destination.autolink {
                        let shown = format!("{close} ({})", destination.url);
                        events.push(Event::Text(shown.into()));
                    }
                }
            }
            Event::Start(Tag::Heading { level, .. }) => events.push(Event::Start(Tag::Heading {
                level: lower(level),
                id: None,
                classes: Vec::new(),
                attrs: Vec::new(),
            })),
            Event::End(TagEnd::Heading(level)) => {
                events.push(Event::End(TagEnd::Heading(lower(level))));
            }
            Event::SoftBreak => events.push(Event::HardBreak),
            other => events.push(other),
        }
    }
    events
}

/// A heading's level on the page: one below the text's, at most `<h5>`.
fn lower(level: HeadingLevel) -> HeadingLevel {
    match level {
        HeadingLevel::H1 => HeadingLevel::H2,
        HeadingLevel::H2 => HeadingLevel::H3,
        HeadingLevel::H3 => HeadingLevel::H4,
        _ => HeadingLevel::H5,
    }
}

/// A text event with its citations (`[chunk 12]`, `[chunks 3, 4]`) written as links to the
/// chunks' rows, the rest of it escaped; an id marked `(not read)` stays text, as there is
/// nothing to point at. Other events, and texts without a citation, are left as they are.
fn link_citations(event: Event<'_>) -> Event<'_> {
    let Event::Text(text) = &event else {
        return event;
    };
    if !text.contains("[chunk") {
        return event;
    }
    let mut out = String::with_capacity(text.len() + 64);
    let mut linked = false;
    let mut rest: &str = text;
    while let Some(at) = rest.find("[chunk") {
        rest[..at].render_to(&mut out);
        let citation = &rest[at..];
        let Some(end) = citation_end(citation) else {
            out.push_str("[chunk");
            rest = &citation["[chunk".len()..];
            continue;
        };
        out.push('[');
        let mut words = citation[1..end].split_inclusive([' ', ',']).peekable();
        while let Some(word) = words.next() {
            let digits = word.trim_end_matches([' ', ',']);
            let unread = words.peek().is_some_and(|next| next.starts_with("(not"));
            match digits.parse::<i64>() {
                Ok(id) if !unread => {
                    html! { a class="chunk" href={ "#chunk-" (id) } { (id) } }.render_to(&mut out);
                    out.push_str(&word[digits.len()..]);
                    linked = true;
                }
                _ => word.render_to(&mut out),
            }
        }
        out.push(']');
        rest = &citation[end + 1..];
    }
    rest.render_to(&mut out);
    if linked {
        Event::InlineHtml(out.into())
    } else {
        event
    }
}

/// Where the citation `text` starts with ends (its `]`), if it is one: `[chunk N]` or
/// `[chunks N, M]`, the inside made of letters, digits, spaces, commas, dashes and brackets.
fn citation_end(text: &str) -> Option<usize> {
    text.find(']').filter(|end| {
        let inside = &text[1..*end];
        inside
            .strip_prefix("chunks ")
            .or_else(|| inside.strip_prefix("chunk "))
            .is_some_and(|ids| {
                ids.chars()
                    .all(|c| c.is_ascii_alphanumeric() || " ,-()".contains(c))
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(text: &str) -> String {
        render(text).into_string()
    }

    #[test]
    fn no_markup_from_the_input_survives() {
        let nasty = "<script>alert(1)</script> **<img src=x onerror=alert(2)>** `</code><b>` \"'&";
        let html = reply(&format!(
            "{nasty}\n\n<div onclick=\"x()\">block\n<b>html</b></div>\n\n\
             ```repl\nprint('</script>')  # <b>\n```\n"
        ));
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("<b>"), "{html}");
        assert!(!html.contains("<div"), "{html}");
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert!(
            html.contains("<pre class=\"html\">&lt;div onclick="),
            "{html}"
        );
        assert!(html.contains("&lt;/script&gt;"), "{html}");
        assert!(html.contains("\"'&amp;"), "{html}");
    }

    #[test]
    fn links_and_images_point_nowhere() {
        let html = reply(
            "[x](javascript:alert(1)) and [docs](https://example.invalid/a \"t\") \
             <https://example.invalid/auto> ![pixel](https://tracker.invalid/p.png)\n\n\
             [ref]\n\n[ref]: javascript:alert(2)",
        );
        assert!(!html.contains("<a"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("href"), "{html}");
        assert!(!html.contains("src="), "{html}");
        assert!(html.contains("x (javascript:alert(1))"), "{html}");
        assert!(html.contains("docs (https://example.invalid/a)"), "{html}");
        assert!(html.contains(" https://example.invalid/auto "), "{html}");
        assert!(
            html.contains("[image: pixel] (https://tracker.invalid/p.png)"),
            "{html}"
        );
        assert!(html.contains("ref (javascript:alert(2))"), "{html}");
    }

    #[test]
    fn renders_commonmark_with_the_page_s_conventions() {
        let html = reply(
            "# Title\nSome **bold** and *it* and `x < 1`.\nnext line\n\n- a\n- b\n\n1. one\n\n\
             > quoted\n\n| a | b |\n|---|---|\n| 1 | ~~2~~ |\n\n```rust\nlet x = 1;\n```",
        );
        for part in [
            "<h2>Title</h2>",
            "<p>Some <strong>bold</strong> and <em>it</em> and <code>x &lt; 1</code>.<br />\nnext line</p>",
            "<ul>\n<li>a</li>\n<li>b</li>\n</ul>",
            "<ol>\n<li>one</li>\n</ol>",
            "<blockquote>\n<p>quoted</p>\n</blockquote>",
            "<td><del>2</del></td>",
            "<pre class=\"code\"><code class=\"language-rust\">let x = 1;\n</code></pre>",
        ] {
            assert!(html.contains(part), "{part} not in {html}");
        }
        // Unmatched markers stay as text.
        assert_eq!(reply("2 * 3 and `open"), "<p>2 * 3 and `open</p>\n");
    }

    #[test]
    fn citations_link_to_chunks_and_nothing_else_does() {
        let html = render_report(
            "See [chunk 11] and [chunks 12, 13], not [chunk 9 (not read)] nor [chunky 4] \
             nor [chunk <b>]; `[chunk 5]` is code.",
        )
        .into_string();
        assert!(
            html.contains("[chunk <a class=\"chunk\" href=\"#chunk-11\">11</a>]"),
            "{html}"
        );
        assert!(
            html.contains(
                "[chunks <a class=\"chunk\" href=\"#chunk-12\">12</a>, \
                 <a class=\"chunk\" href=\"#chunk-13\">13</a>]"
            ),
            "{html}"
        );
        assert!(html.contains("[chunk 9 (not read)]"), "{html}");
        assert!(html.contains("[chunky 4]"), "{html}");
        assert!(html.contains("[chunk &lt;b&gt;]"), "{html}");
        assert!(html.contains("<code>[chunk 5]</code>"), "{html}");
        // A reply's citations are text.
        assert!(!reply("[chunk 11]").contains("<a"));
    }
}
