//! Reading a root-model reply: code blocks to run and the answer tag, if any.
//!
//! Rules (the prompt teaches the same ones):
//! - Code runs only from fenced blocks tagged `repl`, `python`, `python3` or `py`, or from an
//!   untagged fence whose first line is such a tag alone (a model that wrote the tag on its own
//!   line: that line is dropped). Other fences (`text`, `json`, untagged, ...) are prose and
//!   their content is skipped whole, so an answer tag inside them does not count, except an
//!   untagged fence that holds nothing but one answer tag line (a model that fenced its answer).
//! - Answer tags count only outside fences and at the start of a line (after indentation):
//!   `FINAL(...)` with balanced parentheses, possibly spanning lines, or `FINAL_VAR(name)`.
//! - Everything after the first answer tag is ignored: the model has decided.
//! - A tag whose argument is a placeholder from instructions (`FINAL(...)`, `FINAL(your
//!   answer)`, `FINAL_VAR(variable_name)`) is an echo of a prompt, not an answer.
//! - A block left open at the end of the reply (the stop sequence cut its closing fence) still
//!   runs.

/// An answer tag found outside code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnswerTag {
    /// `FINAL(text)`: the answer itself.
    Text(String),
    /// `FINAL_VAR(name)`: the answer is the value of a REPL variable.
    Variable(String),
}

/// What a reply asks the engine to do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedReply {
    /// Code blocks to run, in order (empty blocks are dropped).
    pub code_blocks: Vec<String>,
    /// The answer tag, if the reply has one.
    pub answer: Option<AnswerTag>,
    /// Whether the last fence was never closed.
    pub unterminated: bool,
    /// Whether `FINAL(` was opened but its parenthesis never closed (the reply was cut inside
    /// the answer, or the model never finished it).
    pub answer_unclosed: bool,
}

const CODE_TAGS: [&str; 4] = ["repl", "python", "python3", "py"];

/// Parses a reply. Never fails: anything unrecognised is prose.
pub fn parse_reply(reply: &str) -> ParsedReply {
    let text = reply.replace("\r\n", "\n");
    let mut parsed = ParsedReply::default();
    let mut position = 0;
    while position < text.len() {
        let line_end = text[position..]
            .find('\n')
            .map_or(text.len(), |offset| position + offset);
        let line = &text[position..line_end];
        let next = (line_end + 1).min(text.len());
        if let Some(fence) = Fence::open(line) {
            let (body, after, closed) = fence.body(&text, next);
            parsed.unterminated = !closed;
            position = after;
            if fence.is_code() {
                if !body.trim().is_empty() {
                    parsed.code_blocks.push(body);
                }
            } else if fence.tag.is_empty() {
                if let Some(code) = code_tagged_inside(&body) {
                    parsed.code_blocks.push(code);
                } else if let Some(answer) = lone_answer(&body) {
                    parsed.answer = Some(answer);
                    break;
                }
            }
            continue;
        }
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if let Some(rest) = trimmed.strip_prefix("FINAL_VAR(") {
            if let Some(close) = rest.find(')') {
                let name = rest[..close].trim().trim_matches(['"', '\'', '`']).trim();
                if !is_placeholder(name) {
                    parsed.answer = Some(AnswerTag::Variable(name.to_owned()));
                    break;
                }
            }
        } else if trimmed.starts_with("FINAL(") {
            let open = position + indent + "FINAL".len();
            let (answer, closed) = balanced_argument(&text, open);
            if !is_placeholder(&answer) {
                parsed.answer = Some(AnswerTag::Text(answer));
                parsed.answer_unclosed = !closed;
                break;
            }
        }
        position = next;
    }
    parsed
}

/// The code of an untagged fence whose first non-blank line is a code tag alone
/// (`` ```\nrepl\nprint(1)\n``` ``), without that line; `None` for any other fence or an
/// empty block.
fn code_tagged_inside(body: &str) -> Option<String> {
    let start = body.len() - body.trim_start().len();
    let rest = &body[start..];
    let (first, code) = rest.split_once('\n').unwrap_or((rest, ""));
    let is_tag = CODE_TAGS
        .iter()
        .any(|known| first.trim().eq_ignore_ascii_case(known));
    (is_tag && !code.trim().is_empty()).then(|| code.to_owned())
}

/// The answer tag an untagged fence holds as its one line (`` ```\nFINAL(42)\n``` ``).
fn lone_answer(body: &str) -> Option<AnswerTag> {
    let line = body.trim();
    if line.is_empty() || line.contains('\n') {
        return None;
    }
    let inner = parse_reply(line);
    if inner.answer_unclosed {
        return None;
    }
    inner.answer
}

/// Arguments that only ever appear in instructions (ours, older versions of ours, the usual
/// wording of RLM prompts): a model repeating them has not answered.
fn is_placeholder(argument: &str) -> bool {
    matches!(
        argument.trim(),
        "..." | "…" | "your answer" | "the answer, written out" | "answer text" | "variable_name"
    )
}

/// The text between the `(` at `open` and its matching `)`, or to the end when it never closes;
/// and whether it closed.
fn balanced_argument(text: &str, open: usize) -> (String, bool) {
    let mut depth = 0usize;
    for (offset, ch) in text[open..].char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return (text[open + 1..open + offset].trim().to_owned(), true);
                }
            }
            _ => {}
        }
    }
    (text[open + 1..].trim().to_owned(), false)
}

/// An opening code fence line.
#[derive(Debug, Clone, Copy)]
struct Fence<'a> {
    marker: char,
    length: usize,
    indent: usize,
    tag: &'a str,
}

impl<'a> Fence<'a> {
    fn open(line: &'a str) -> Option<Self> {
        let trimmed = line.trim_start_matches(' ');
        let indent = line.len() - trimmed.len();
        if indent > 3 {
            return None;
        }
        let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
        let length = trimmed.chars().take_while(|c| *c == marker).count();
        if length < 3 {
            return None;
        }
        let info = trimmed[length..].trim();
        if marker == '`' && info.contains('`') {
            // An inline code span such as ```x``` on one line, not a fence.
            return None;
        }
        let tag = info.split_whitespace().next().unwrap_or("");
        Some(Self {
            marker,
            length,
            indent,
            tag,
        })
    }

    fn is_code(&self) -> bool {
        CODE_TAGS
            .iter()
            .any(|known| self.tag.eq_ignore_ascii_case(known))
    }

    fn closes(&self, line: &str) -> bool {
        let trimmed = line.trim_start_matches(' ');
        if line.len() - trimmed.len() > 3 {
            return false;
        }
        let run = trimmed.chars().take_while(|c| *c == self.marker).count();
        run >= self.length && trimmed[run..].trim().is_empty()
    }

    /// Reads the body from `start`: (body with the fence's indentation removed, position after
    /// the closing fence line, whether a closing fence was found).
    fn body(&self, text: &str, start: usize) -> (String, usize, bool) {
        let mut body = String::new();
        let mut position = start;
        while position < text.len() {
            let line_end = text[position..]
                .find('\n')
                .map_or(text.len(), |offset| position + offset);
            let line = &text[position..line_end];
            let next = (line_end + 1).min(text.len());
            if self.closes(line) {
                return (body, next, true);
            }
            let strip = line
                .chars()
                .take(self.indent)
                .take_while(|c| *c == ' ')
                .count();
            body.push_str(&line[strip..]);
            body.push('\n');
            position = next;
        }
        (body, text.len(), false)
    }
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
