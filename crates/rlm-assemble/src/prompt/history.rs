//! The chat history: reading it (JSON Lines of `{role, content}` or an OpenAI `messages`
//! array), rendering it, and deciding what stays verbatim and what gets summarized.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// One message of a conversation, as read from a history file or given by an agent.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ChatMessage {
    /// `system`, `user`, `assistant`, `tool`, ...
    pub role: String,
    /// The text.
    pub content: String,
}

impl ChatMessage {
    /// A message with `role` and `content`.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role: role.into(),
            content: content.into(),
        }
    }
}

/// The heading of the history section.
pub(crate) const HISTORY_HEADING: &str = "## Conversation so far\n";

/// Reads a history: a JSON array of messages, an object with a `messages` array (an OpenAI chat
/// request), or JSON Lines with one message per line (blank lines ignored). `source` names the
/// input in errors, which give the line number of a bad JSON Lines record.
pub fn parse_history(text: &str, source: &str) -> Result<Vec<ChatMessage>> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        let values: Vec<serde_json::Value> = serde_json::from_str(text).map_err(|error| {
            Error::Invalid(format!("{source}: not a JSON array of messages: {error}"))
        })?;
        return values
            .iter()
            .enumerate()
            .map(|(index, value)| message_from(value, &format!("{source}: message {}", index + 1)))
            .collect();
    }
    // A single object holding `messages` (possibly pretty-printed over many lines).
    if trimmed.starts_with('{')
        && let Ok(serde_json::Value::Object(object)) = serde_json::from_str(text)
        && let Some(serde_json::Value::Array(values)) = object.get("messages")
    {
        return values
            .iter()
            .enumerate()
            .map(|(index, value)| message_from(value, &format!("{source}: message {}", index + 1)))
            .collect();
    }
    let mut messages = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("{source}: line {}", index + 1);
        let value: serde_json::Value = serde_json::from_str(line)
            .map_err(|error| Error::Invalid(format!("{at}: not valid JSON ({error})")))?;
        messages.push(message_from(&value, &at)?);
    }
    Ok(messages)
}

/// One `{role, content}` object; content may be a string, null, or OpenAI content parts (their
/// `text` fields are joined).
fn message_from(value: &serde_json::Value, at: &str) -> Result<ChatMessage> {
    let invalid = |what: &str| Error::Invalid(format!("{at}: {what}"));
    let object = value
        .as_object()
        .ok_or_else(|| invalid("expected an object with `role` and `content`"))?;
    let role = object
        .get("role")
        .and_then(serde_json::Value::as_str)
        .filter(|role| !role.trim().is_empty())
        .ok_or_else(|| invalid("missing `role` (a string such as \"user\")"))?;
    let content = match object.get("content") {
        Some(serde_json::Value::String(text)) => text.clone(),
        Some(serde_json::Value::Null) => String::new(),
        Some(serde_json::Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(serde_json::Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Some(_) => {
            return Err(invalid(
                "`content` must be a string or a list of text parts",
            ));
        }
        None => return Err(invalid("missing `content`")),
    };
    Ok(ChatMessage::new(role, content))
}

/// One message as it appears in the prompt: its role as a heading, its content fenced, so a
/// message cannot forge the prompt's own headings (`# System`, `## Current stage`).
pub(crate) fn render_message(message: &ChatMessage) -> String {
    fenced(
        &format!("### {}", rlm_context::one_line(&message.role)),
        message.content.trim_end(),
    )
}

/// The summary block that replaces the older messages (a model's words: fenced too).
pub(crate) fn render_summary(summary: &str, messages: usize) -> String {
    fenced(
        &format!("### Summary of the {messages} earlier messages"),
        summary.trim_end(),
    )
}

/// `heading`, then `body` in a fence longer than any backtick run inside it.
fn fenced(heading: &str, body: &str) -> String {
    let fence = rlm_context::fence::backtick_fence(body);
    format!("{heading}\n{fence}\n{body}\n{fence}\n")
}

/// What happens to the history, decided from token counts alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HistorySplit {
    /// Everything verbatim (below the trigger).
    Verbatim,
    /// Messages before `tail_start` are summarized into at most `summary_budget` tokens (what
    /// is left beside the tail's whole share, whatever the tail takes now).
    Summarize {
        tail_start: usize,
        summary_budget: u64,
    },
}

/// Tokens reserved for the summary block's heading.
const SUMMARY_HEADING_TOKENS: u64 = 16;

/// Decides the split. `message_tokens` are the rendered messages' counts, `budget` the section's
/// budget (heading included).
pub(crate) fn split(
    message_tokens: &[u64],
    heading_tokens: u64,
    budget: u64,
    threshold_percentage: u32,
    recent_share_percentage: u32,
) -> HistorySplit {
    let total: u64 = heading_tokens + message_tokens.iter().sum::<u64>();
    let trigger = budget.saturating_mul(u64::from(threshold_percentage)) / 100;
    if message_tokens.is_empty() || (total <= trigger && total <= budget) {
        return HistorySplit::Verbatim;
    }
    let tail_budget = budget.saturating_mul(u64::from(recent_share_percentage)) / 100;
    let mut tail_tokens = 0;
    let mut tail_start = message_tokens.len();
    while tail_start > 1 {
        let tokens = message_tokens[tail_start - 1];
        if tail_tokens + tokens > tail_budget {
            break;
        }
        tail_tokens += tokens;
        tail_start -= 1;
    }
    // The room left beside a tail that fills its whole share, not beside this tail: the
    // budget stays the same from turn to turn while the tail's tokens change with every
    // message, so a cached summary still fits, its key is still found, and a summary made on
    // an earlier turn can be carried on from.
    let summary_budget = budget
        .saturating_sub(heading_tokens + tail_budget + SUMMARY_HEADING_TOKENS)
        .max(1);
    HistorySplit::Summarize {
        tail_start,
        summary_budget,
    }
}

/// The start of the longest run of most recent messages that fits in `budget` (after the
/// heading): the fallback when no summary can be had.
pub(crate) fn recent_that_fit(message_tokens: &[u64], heading_tokens: u64, budget: u64) -> usize {
    let mut used = heading_tokens;
    let mut start = message_tokens.len();
    while start > 0 && used + message_tokens[start - 1] <= budget {
        used += message_tokens[start - 1];
        start -= 1;
    }
    start
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_json_lines_arrays_and_request_bodies() {
        let lines = "{\"role\":\"user\",\"content\":\"hi\"}\n\n{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"yo\"}]}\n";
        let messages = parse_history(lines, "chat.jsonl").unwrap();
        assert_eq!(messages[1], ChatMessage::new("assistant", "yo"));
        let array = "[{\"role\":\"user\",\"content\":\"hi\"}]";
        assert_eq!(parse_history(array, "a").unwrap().len(), 1);
        let body =
            "{\n \"model\": \"x\",\n \"messages\": [{\"role\":\"system\",\"content\":null}]\n}";
        assert_eq!(
            parse_history(body, "b").unwrap(),
            vec![ChatMessage::new("system", "")]
        );
    }

    #[test]
    fn bad_json_lines_name_the_line() {
        let text = "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"user\"\n";
        let error = parse_history(text, "chat.jsonl").unwrap_err().to_string();
        assert!(
            error.starts_with("chat.jsonl: line 2: not valid JSON"),
            "{error}"
        );
        let error = parse_history("{\"content\":\"a\"}\n", "c")
            .unwrap_err()
            .to_string();
        assert!(error.contains("line 1: missing `role`"), "{error}");
    }

    #[test]
    fn split_triggers_above_the_threshold_and_keeps_a_tail() {
        // 10 messages of 100 tokens, budget 1,000: 80% trigger is 800.
        let tokens = [100; 10];
        assert_eq!(split(&tokens[..7], 5, 1000, 80, 50), HistorySplit::Verbatim);
        match split(&tokens, 5, 1000, 80, 50) {
            HistorySplit::Summarize {
                tail_start,
                summary_budget,
            } => {
                assert_eq!(tail_start, 5, "five messages fill the 50% share");
                assert_eq!(summary_budget, 1000 - 5 - 500 - SUMMARY_HEADING_TOKENS);
            }
            other => panic!("{other:?}"),
        }
        // A tail that takes less than its share leaves the summary's budget as it was.
        let mut uneven = tokens.to_vec();
        uneven[9] = 60;
        match split(&uneven, 5, 1000, 80, 50) {
            HistorySplit::Summarize {
                tail_start,
                summary_budget,
            } => {
                assert_eq!(tail_start, 5, "460 tokens of tail");
                assert_eq!(summary_budget, 1000 - 5 - 500 - SUMMARY_HEADING_TOKENS);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(recent_that_fit(&tokens, 5, 1000), 1);
    }
}
