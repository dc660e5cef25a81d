//! Resolving a turn's answer: `FINAL(...)`/`FINAL_VAR(...)` inside the code, then an answer tag
//! outside the code, then a ready `answer` variable. Every form is listed in `docs/answers.md`.

use serde_json::Value;

use super::blocks::BlockRun;
use crate::parse::AnswerTag;
use crate::repl::ReplSession;

/// What the REPL holds before the first turn, as in the reference RLM: model code fills it in
/// place (`answer["content"] = ...; answer["ready"] = True`). Bound when the session opens.
pub(super) const INITIAL_ANSWER: &str = r#"answer = {"content": "", "ready": False}"#;

/// The turn's answer, if it gave one. A `FINAL_VAR` the session cannot satisfy adds a note for
/// the model; an `answer` variable that is not ready becomes the run's best partial answer.
///
/// An answer over `max_bytes` is refused with a note (the model can answer again, shorter).
pub(super) async fn resolve(
    session: &mut dyn ReplSession,
    tag: Option<&AnswerTag>,
    run: &mut BlockRun,
    notes: &mut Vec<String>,
    partial: &mut Option<String>,
    max_bytes: usize,
) -> Option<String> {
    // Taken, not cloned: the block's log record keeps only a preview of it.
    let mut final_answer = within(run.final_answer.take(), max_bytes, notes);
    if final_answer.is_none() && !run.timed_out {
        final_answer = resolve_tag(session, tag, notes, max_bytes).await;
    }
    if final_answer.is_none() && !run.timed_out && !run.blocks.is_empty() {
        final_answer = read_answer_variable(session, partial, notes, max_bytes).await;
    }
    final_answer
}

/// `answer` if it is at most `max_bytes` long; else `None` and a note saying why.
pub(super) fn within(
    answer: Option<String>,
    max_bytes: usize,
    notes: &mut Vec<String>,
) -> Option<String> {
    let answer = answer?;
    if answer.len() <= max_bytes {
        return Some(answer);
    }
    notes.push(format!(
        "The answer was not accepted: it is {}; the limit is {}. Answer with a summary or the \
         part that matters (the user can raise the limit with --max-answer-size).",
        rlm_sandbox::format_size(answer.len()),
        rlm_sandbox::format_size(max_bytes),
    ));
    None
}

/// Turns an answer tag into the answer; a `FINAL_VAR` of a missing variable becomes a note for
/// the model instead.
pub(super) async fn resolve_tag(
    session: &mut dyn ReplSession,
    tag: Option<&AnswerTag>,
    notes: &mut Vec<String>,
    max_bytes: usize,
) -> Option<String> {
    match tag? {
        AnswerTag::Text(text) => within(Some(text.clone()), max_bytes, notes),
        AnswerTag::Variable(name) if !rlm_sandbox::is_identifier(name) => {
            notes.push(format!(
                "FINAL_VAR({name}) is not a variable name. Use FINAL_VAR(name) with the name of a \
                 REPL variable, or FINAL(answer) with the answer itself."
            ));
            None
        }
        AnswerTag::Variable(name) => match session.variable(name).await {
            Ok(Some(value)) => within(Some(value_text(&value)), max_bytes, notes),
            Ok(None) => {
                notes.push(format!(
                    "FINAL_VAR({name}) was not accepted: no variable named `{name}` exists in the \
                     REPL. Create it in a ```repl block first, or answer with FINAL(answer)."
                ));
                None
            }
            Err(err) => {
                notes.push(format!("FINAL_VAR({name}) could not be read: {err}"));
                None
            }
        },
    }
}

/// `answer = {"content": ..., "ready": True}` finishes the run; any other `answer` is kept as
/// the best partial answer.
async fn read_answer_variable(
    session: &mut dyn ReplSession,
    partial: &mut Option<String>,
    notes: &mut Vec<String>,
    max_bytes: usize,
) -> Option<String> {
    let value = match session.variable("answer").await {
        Ok(value) => value?,
        Err(err) => {
            // Nothing to say when there is no `answer`; a refused one (too large) is news.
            if err.too_large {
                notes.push(format!("`answer` could not be read: {err}"));
            }
            return None;
        }
    };
    let ready = value.get("ready").and_then(Value::as_bool) == Some(true);
    if ready {
        return within(Some(answer_content(&value)), max_bytes, notes);
    }
    if let Some(content) = partial_content(&value) {
        *partial = within(Some(content), max_bytes, notes);
    }
    None
}

/// The text of an `answer` variable: its `content` when it is the dictionary form, else the
/// value itself, as Python's `str()` would write it.
pub(super) fn answer_content(value: &Value) -> String {
    match value.get("content") {
        Some(content) => value_text(content),
        None => value_text(value),
    }
}

/// The best partial answer an `answer` variable holds; the untouched initial value (empty
/// content) is none.
pub(super) fn partial_content(value: &Value) -> Option<String> {
    Some(answer_content(value)).filter(|content| !content.is_empty())
}

/// A value as `str()` writes it: a string as itself, anything else as its Python literal
/// (`[1, 'a']`, `{'k': True}`, `None`), so numbers and lists become answer text.
fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => python_repr(other),
    }
}

fn python_repr(value: &Value) -> String {
    match value {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Number(number) => number.to_string(),
        Value::String(text) => {
            // Python's choice of quotes: double when the text has a single quote and no double.
            let quote = if text.contains('\'') && !text.contains('"') {
                '"'
            } else {
                '\''
            };
            let mut shown = String::with_capacity(text.len() + 2);
            shown.push(quote);
            for c in text.chars() {
                match c {
                    '\\' => shown.push_str("\\\\"),
                    '\n' => shown.push_str("\\n"),
                    c if c == quote => {
                        shown.push('\\');
                        shown.push(c);
                    }
                    c => shown.push(c),
                }
            }
            shown.push(quote);
            shown
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(python_repr).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(entries) => {
            let entries: Vec<String> = entries
                .iter()
                .map(|(key, item)| {
                    format!(
                        "{}: {}",
                        python_repr(&Value::String(key.clone())),
                        python_repr(item)
                    )
                })
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn content_reads_as_str_would_write_it() {
        let cases = [
            (json!({"content": "text", "ready": true}), "text"),
            (json!({"content": 42, "ready": true}), "42"),
            (json!({"content": 2.5}), "2.5"),
            (json!({"content": [1, "a'b", null]}), "[1, \"a'b\", None]"),
            (json!({"content": {"k": false}}), "{'k': False}"),
            (json!("plain string"), "plain string"),
        ];
        for (value, expected) in cases {
            assert_eq!(answer_content(&value), expected, "{value}");
        }
    }

    #[test]
    fn the_untouched_initial_answer_is_no_partial_answer() {
        assert_eq!(
            partial_content(&json!({"content": "", "ready": false})),
            None
        );
        assert_eq!(
            partial_content(&json!({"content": "half", "ready": false})).as_deref(),
            Some("half")
        );
        assert_eq!(partial_content(&json!("draft")).as_deref(), Some("draft"));
    }
}
