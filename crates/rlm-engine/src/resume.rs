//! Continuing earlier runs (a session): their variables restored into the new REPL before the
//! first turn, their conversations bound as `history_0 … history_n`, and a note in the first
//! user message saying what is there (the `session.md` prompt).

use rlm_llm::Message;
use rlm_trace::{VariableInfo, VariablesSnapshot};
use serde_json::Value;

use crate::error::Error;
use crate::literal;
use crate::prompt::{Prompts, render};
use crate::repl::{ReplError, ReplSession};

/// What a run continues from.
#[derive(Debug, Clone, Default)]
pub struct Resume {
    /// The variables the last run left ([`RunResult::variables`](crate::RunResult::variables)):
    /// those with a literal are restored, the others are named in the note as not restored.
    pub variables: Vec<VariableInfo>,
    /// The earlier questions' conversations, oldest first (`history_0`, …), each as
    /// [`RunResult::conversation`](crate::RunResult::conversation) gave it.
    pub histories: Vec<Vec<Message>>,
}

impl Resume {
    /// Nothing to continue from.
    pub fn is_empty(&self) -> bool {
        self.variables.is_empty() && self.histories.is_empty()
    }
}

/// Names every run binds itself: never snapshotted, never restored.
pub(crate) fn is_reserved(name: &str) -> bool {
    let numbered = |prefix: &str| {
        name.strip_prefix(prefix)
            .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
    };
    matches!(name, "context" | "contextMeta" | "answer" | "history")
        || numbered("context_")
        || numbered("history_")
}

/// Restores `resume` into `session` and returns the note for the first user message.
pub(crate) async fn restore(
    session: &mut dyn ReplSession,
    resume: &Resume,
    prompts: &Prompts,
) -> Result<String, Error> {
    let mut restored = Vec::new();
    let mut not_restored = Vec::new();
    for variable in &resume.variables {
        if is_reserved(&variable.name) {
            continue;
        }
        let literal = variable
            .literal
            .as_deref()
            .filter(|literal| is_identifier(&variable.name) && literal::check(literal).is_ok());
        let Some(literal) = literal else {
            let why = variable
                .not_restorable
                .clone()
                .unwrap_or_else(|| "not plain data".to_owned());
            not_restored.push(format!(
                "`{}` ({}: {why})",
                variable.name, variable.type_name
            ));
            continue;
        };
        let outcome = session
            .execute(&format!("{} = {literal}", variable.name))
            .await
            .map_err(Error::Repl)?;
        match outcome.error {
            None => restored.push(format!("`{}` ({})", variable.name, variable.type_name)),
            Some(error) => not_restored.push(format!(
                "`{}` ({}: it could not be bound again: {error})",
                variable.name, variable.type_name
            )),
        }
    }
    for (index, history) in resume.histories.iter().enumerate() {
        let messages: Vec<Value> = history
            .iter()
            .map(|message| {
                serde_json::json!({
                    "role": message.role,
                    "content": message.content,
                })
            })
            .collect();
        let code = format!(
            "history_{index} = {}",
            literal::python_literal(&Value::Array(messages))
        );
        let outcome = session.execute(&code).await.map_err(Error::Repl)?;
        if let Some(error) = outcome.error {
            return Err(Error::Repl(ReplError::new(format!(
                "could not bind `history_{index}`: {error}"
            ))));
        }
    }
    if !resume.histories.is_empty() {
        // `history` is the first conversation, as the reference binds it.
        let outcome = session
            .execute("history = history_0")
            .await
            .map_err(Error::Repl)?;
        if let Some(error) = outcome.error {
            return Err(Error::Repl(ReplError::new(format!(
                "could not bind `history`: {error}"
            ))));
        }
    }
    Ok(note(
        prompts,
        &restored,
        &not_restored,
        resume.histories.len(),
    ))
}

fn note(
    prompts: &Prompts,
    restored: &[String],
    not_restored: &[String],
    histories: usize,
) -> String {
    let restored = if restored.is_empty() {
        String::new()
    } else {
        format!("- Variables restored: {}.\n", restored.join(", "))
    };
    let not_restored = if not_restored.is_empty() {
        String::new()
    } else {
        format!(
            "- Not restored (only plain data — str, int, float, bool, None, and lists, tuples \
             and dicts of them — carries over; recompute these if you need them): {}.\n",
            not_restored.join(", ")
        )
    };
    let histories = match histories {
        0 => String::new(),
        1 => "- `history_0` (also `history`): the conversation of the earlier question, a \
              list of {\"role\", \"content\"} dicts.\n"
            .to_owned(),
        n => format!(
            "- `history_0` … `history_{}`: the conversations of the {n} earlier questions, \
             oldest first, each a list of {{\"role\", \"content\"}} dicts (`history` is \
             `history_0`).\n",
            n - 1
        ),
    };
    render(
        &prompts.session,
        &[
            ("restored", restored.as_str()),
            ("not_restored", not_restored.as_str()),
            ("histories", histories.as_str()),
        ],
    )
}

/// The REPL's variables at the end of a run: each model-created variable with its type, size
/// and a preview, and its literal when it is plain data.
pub(crate) async fn snapshot(session: &mut dyn ReplSession, run_id: &str) -> VariablesSnapshot {
    let mut variables = Vec::new();
    // A session that cannot list its variables (a worker that died) leaves nothing to keep.
    let listed = session.variables().await.unwrap_or_default();
    for (name, type_name) in listed {
        if is_reserved(&name) {
            continue;
        }
        let mut info = VariableInfo {
            name,
            type_name,
            ..VariableInfo::default()
        };
        let plain = matches!(
            info.type_name.as_str(),
            "str" | "int" | "float" | "bool" | "NoneType" | "list" | "dict" | "tuple"
        );
        match session.variable_repr(&info.name).await {
            Ok(Some(repr)) => {
                info.repr_bytes = Some(repr.len() as u64);
                info.preview = rlm_trace::preview(&repr);
                match literal::check(&repr) {
                    Ok(length) if plain => {
                        info.length = length;
                        info.literal = Some(repr);
                    }
                    _ if plain => {
                        info.not_restorable =
                            Some("it holds values that are not plain data".into());
                    }
                    _ => {
                        info.not_restorable =
                            Some(format!("a {} is not plain data", info.type_name));
                    }
                }
            }
            Ok(None) => continue,
            Err(err) => {
                info.not_restorable = Some(if err.too_large {
                    format!("too large to keep ({err})")
                } else {
                    format!("it could not be read ({err})")
                });
            }
        }
        variables.push(info);
    }
    variables.sort_by(|a, b| a.name.cmp(&b.name));
    VariablesSnapshot {
        run_id: run_id.to_owned(),
        variables,
    }
}

/// Restored names stay ASCII: a snapshot is read back into a fresh session, and its names are
/// written into the first prompt.
fn is_identifier(name: &str) -> bool {
    name.is_ascii() && rlm_sandbox::is_identifier(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_names_are_the_ones_every_run_binds() {
        for name in [
            "context",
            "context_0",
            "context_12",
            "contextMeta",
            "answer",
            "history",
            "history_3",
        ] {
            assert!(is_reserved(name), "{name}");
        }
        for name in ["contexts", "context_", "history_x", "x", "answers"] {
            assert!(!is_reserved(name), "{name}");
        }
    }

    #[test]
    fn the_note_names_what_was_restored_and_what_was_not() {
        let prompts = Prompts::default();
        let text = note(
            &prompts,
            &["`x` (int)".into()],
            &["`f` (function: a function is not plain data)".into()],
            2,
        );
        assert!(text.contains("Variables restored: `x` (int)."), "{text}");
        assert!(text.contains("Not restored"), "{text}");
        assert!(text.contains("`f` (function"), "{text}");
        assert!(text.contains("`history_0` … `history_1`"), "{text}");
        let only_history = note(&prompts, &[], &[], 1);
        assert!(
            !only_history.contains("Variables restored"),
            "{only_history}"
        );
        assert!(
            only_history.contains("`history_0` (also `history`): the conversation"),
            "{only_history}"
        );
    }
}
