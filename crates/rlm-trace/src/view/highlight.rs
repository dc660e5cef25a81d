//! Code blocks, with light highlighting for Python (what the REPL runs).

use maud::{Markup, Render, html};

/// A code block: `<pre class="code"><code>`, with the language as a `language-…` class when it
/// has one; Python, the REPL's `repl` blocks and blocks without a language are highlighted.
pub fn code_block(code: &str, language: &str) -> Markup {
    let class = (!language.is_empty()).then(|| format!("language-{language}"));
    html! {
        pre class="code" {
            code class=[class] {
                @if matches!(language, "" | "repl" | "python" | "py") {
                    (Python(code))
                } @else {
                    (code)
                }
            }
        }
    }
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

/// Python highlighted by a small scanner: comments, strings, numbers, keywords and the REPL's
/// host functions get a class; every token is escaped as it is written.
struct Python<'a>(&'a str);

impl Render for Python<'_> {
    fn render_to(&self, out: &mut String) {
        let code = self.0;
        let bytes = code.as_bytes();
        let mut at = 0;
        while at < code.len() {
            let c = bytes[at];
            let end = token_end(code, at);
            let token = &code[at..end];
            let class = match c {
                b'#' => Some("c"),
                b'"' | b'\'' => Some("s"),
                b'0'..=b'9' => Some("n"),
                _ if KEYWORDS.contains(&token) => Some("k"),
                _ if HOST_FUNCTIONS.contains(&token) => Some("f"),
                _ => None,
            };
            // `str`'s rendering is escaped.
            match class {
                Some(class) => {
                    out.push_str("<span class=\"");
                    out.push_str(class);
                    out.push_str("\">");
                    token.render_to(out);
                    out.push_str("</span>");
                }
                None => token.render_to(out),
            }
            at = end;
        }
    }
}

/// The end (exclusive) of the token starting at `at`: a comment to the end of its line, a
/// string literal, a number, a word, or one character of anything else.
fn token_end(code: &str, at: usize) -> usize {
    let c = code.as_bytes()[at];
    if c == b'#' {
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
    }
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

    fn highlight(code: &str) -> String {
        Python(code).render().into_string()
    }

    #[test]
    fn python_tokens_get_classes() {
        assert_eq!(
            highlight("x = llm_query(\"a\\\"b\")  # done\nif n > 10: pass\n"),
            "x = <span class=\"f\">llm_query</span>(<span class=\"s\">&quot;a\\&quot;b&quot;</span>)  \
             <span class=\"c\"># done</span>\n<span class=\"k\">if</span> n &gt; \
             <span class=\"n\">10</span>: <span class=\"k\">pass</span>\n"
        );
        // A triple-quoted string spans lines; an unclosed one ends at its line; non-ASCII is kept.
        let html = highlight("s = '''a\nb''' + 'open\né = 1");
        assert!(
            html.contains("<span class=\"s\">'''a\nb'''</span>"),
            "{html}"
        );
        assert!(html.contains("<span class=\"s\">'open</span>\né"), "{html}");
    }

    #[test]
    fn a_code_block_names_its_language_and_escapes_it() {
        assert_eq!(
            code_block("print('</script>')\n", "repl").into_string(),
            "<pre class=\"code\"><code class=\"language-repl\"><span class=\"f\">print</span>(\
             <span class=\"s\">'&lt;/script&gt;'</span>)\n</code></pre>"
        );
        assert_eq!(
            code_block("<b>", "x\"onclick=\"y").into_string(),
            "<pre class=\"code\"><code class=\"language-x&quot;onclick=&quot;y\">&lt;b&gt;\
             </code></pre>"
        );
        assert_eq!(
            code_block("a < b", "").into_string(),
            "<pre class=\"code\"><code>a &lt; b</code></pre>"
        );
    }
}
