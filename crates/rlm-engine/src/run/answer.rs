//! Resolving a turn's answer: `FINAL(...)`/`FINAL_VAR(...)` inside the code, then an answer tag
//! outside the code, then a ready `answer` variable.

use serde_json::Value;

use super::blocks::BlockRun;
use crate::parse::AnswerTag;
use crate::repl::ReplSession;

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
        AnswerTag::Variable(name) if !is_identifier(name) => {
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
    let content = within(Some(answer_content(&value)), max_bytes, notes);
    if ready {
        return content;
    }
    *partial = content;
    None
}

pub(super) fn answer_content(value: &Value) -> String {
    match value.get("content") {
        Some(content) => value_text(content),
        None => value_text(value),
    }
}

fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}
