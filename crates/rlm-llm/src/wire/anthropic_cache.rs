//! Prompt-caching breakpoints on Anthropic requests.
//!
//! The Messages API caches a prompt prefix only where a content block carries
//! `"cache_control": {"type": "ephemeral"}`, at most [`MAX_BREAKPOINTS`] per request, in the
//! order tools → system → messages. An RLM run resends a growing conversation every turn, so
//! the breakpoints move with it:
//! - the system prompt (or, without one, the last tool definition): the prefix every call of a
//!   run shares;
//! - the newest message: this call writes the conversation so far, and the next call (the same
//!   messages plus the reply and the next feedback) reads it;
//! - the message that ended the previous call (the user turn before the newest assistant
//!   reply): the exact prefix the previous call wrote, so it is read even when a round added
//!   more blocks than the API looks back over (about 20, e.g. many tool results at once).
//!
//! Single-shot calls (fewer than [`MULTI_TURN_MESSAGES`] messages) mark no message: a cache
//! write costs 1.25× input and would never be read. Where a breakpoint sits does not change the
//! cached content, so moving them along the conversation keeps earlier prefixes valid.

use serde_json::{Map, Value, json};

/// The most `cache_control` blocks the API accepts in one request.
pub(crate) const MAX_BREAKPOINTS: usize = 4;

/// From this many messages on, the conversation is marked for caching as well.
const MULTI_TURN_MESSAGES: usize = 3;

/// Adds the breakpoints to a finished request body; returns how many were placed.
pub(crate) fn mark(body: &mut Map<String, Value>) -> usize {
    let mut placed = 0;
    if let Some(Value::Array(system)) = body.get_mut("system") {
        placed += usize::from(mark_last(system));
    } else if let Some(Value::Array(tools)) = body.get_mut("tools") {
        placed += usize::from(mark_last(tools));
    }
    let Some(Value::Array(messages)) = body.get_mut("messages") else {
        return placed;
    };
    for index in message_breakpoints(messages) {
        if placed >= MAX_BREAKPOINTS {
            break;
        }
        if let Some(message) = messages.get_mut(index) {
            placed += usize::from(mark_message(message));
        }
    }
    placed
}

/// Indices of the messages to mark, most important first: the newest message, then the end of
/// the previous call's conversation.
fn message_breakpoints(messages: &[Value]) -> Vec<usize> {
    let count = messages.len();
    if count < MULTI_TURN_MESSAGES {
        return Vec::new();
    }
    let newest = count - 1;
    let mut indices = vec![newest];
    let last_reply = messages
        .iter()
        .rposition(|message| message.get("role").and_then(Value::as_str) == Some("assistant"));
    // The previous call sent everything before its reply; it marked its newest message only
    // if it was multi-turn itself.
    if let Some(previous_end) = last_reply.and_then(|at| at.checked_sub(1))
        && previous_end + 1 >= MULTI_TURN_MESSAGES
        && previous_end != newest
    {
        indices.push(previous_end);
    }
    indices
}

/// Marks the last block of a message, turning plain string content into one text block.
fn mark_message(message: &mut Value) -> bool {
    let Some(content) = message.get_mut("content") else {
        return false;
    };
    if let Value::String(text) = content {
        let text = std::mem::take(text);
        *content = json!([{"type": "text", "text": text}]);
    }
    match content {
        Value::Array(blocks) => mark_last(blocks),
        _ => false,
    }
}

fn mark_last(blocks: &mut [Value]) -> bool {
    match blocks.last_mut() {
        Some(Value::Object(block)) => {
            block.insert("cache_control".into(), json!({"type": "ephemeral"}));
            true
        }
        _ => false,
    }
}

/// How many breakpoints a body carries.
#[cfg(test)]
pub(crate) fn count(body: &Value) -> usize {
    match body {
        Value::Object(map) => {
            usize::from(map.contains_key("cache_control")) + map.values().map(count).sum::<usize>()
        }
        Value::Array(items) => items.iter().map(count).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::anthropic::request_body;
    use crate::{ChatRequest, Message, ToolCall, ToolDefinition, ToolOutput};

    /// Whether message `index` of a body ends with a breakpoint.
    fn marked(body: &Value, index: usize) -> bool {
        body["messages"][index]["content"]
            .as_array()
            .and_then(|blocks| blocks.last())
            .is_some_and(|block| block["cache_control"]["type"] == "ephemeral")
    }

    /// An RLM-style run: system prompt, first turn, then reply + feedback per turn, with a
    /// round of tool calls every third turn.
    fn conversation(turns: usize) -> ChatRequest {
        let mut request = ChatRequest::new("claude")
            .system("You write code.")
            .tool(ToolDefinition::new(
                "get",
                "Fetch.",
                json!({"type": "object"}),
            ))
            .user("the question");
        for turn in 0..turns {
            if turn % 3 == 2 {
                request.messages.push(Message::assistant_tool_calls(
                    "",
                    vec![ToolCall::new(format!("toolu_{turn}"), "get", "{}")],
                ));
                request.messages.push(Message::tool_result(
                    format!("toolu_{turn}"),
                    ToolOutput::ok("fetched"),
                ));
            } else {
                request = request
                    .assistant(format!("```repl\nprint({turn})\n```"))
                    .user(format!("Output: {turn}"));
            }
        }
        request
    }

    #[test]
    fn a_growing_conversation_never_carries_more_than_four_breakpoints() {
        for turns in 0..60 {
            let body = request_body(&conversation(turns), "claude", false, true);
            let breakpoints = count(&body);
            assert!(
                breakpoints <= MAX_BREAKPOINTS,
                "{turns} turns: {breakpoints}"
            );
            let messages = body["messages"].as_array().unwrap().len();
            // The system prompt always; the newest message and the previous call's end once
            // the conversation is multi-turn.
            assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
            let expected = match turns {
                0 => 1,
                1 => 2,
                _ => 3,
            };
            assert_eq!(breakpoints, expected, "{turns} turns");
            if turns > 0 {
                assert!(marked(&body, messages - 1), "{turns} turns: newest message");
            }
            if turns > 1 {
                assert!(
                    marked(&body, messages - 3),
                    "{turns} turns: previous call's end"
                );
            }
        }
    }

    #[test]
    fn each_call_marks_the_prefix_the_previous_call_wrote() {
        // Call N's newest message is call N+1's previous end, at the same index and with the
        // same content: call N+1 reads exactly what call N wrote.
        for turns in 1..20 {
            let before = request_body(&conversation(turns), "claude", false, true);
            let after = request_body(&conversation(turns + 1), "claude", false, true);
            let newest = before["messages"].as_array().unwrap().len() - 1;
            assert!(marked(&after, newest), "{turns}");
            assert_eq!(before["messages"][newest], after["messages"][newest]);
        }
    }

    #[test]
    fn without_a_system_prompt_the_tools_are_the_stable_prefix() {
        let mut request = conversation(4);
        request.system = None;
        let body = request_body(&request, "claude", false, true);
        assert_eq!(body["tools"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(count(&body), 3);
    }

    #[test]
    fn the_off_switch_sends_no_cache_control_at_all() {
        for turns in [0, 1, 5, 30] {
            let body = request_body(&conversation(turns), "claude", true, false);
            assert_eq!(count(&body), 0, "{turns} turns");
            assert!(!body.to_string().contains("cache_control"));
        }
    }

    #[test]
    fn marking_reports_what_it_placed_and_single_shot_calls_get_none_on_messages() {
        let mut body = request_body(&conversation(10), "claude", false, false);
        let Value::Object(map) = &mut body else {
            unreachable!("a request body is an object")
        };
        assert_eq!(mark(map), 3);
        assert_eq!(count(&body), 3);
        let single = request_body(&ChatRequest::new("x").user("q"), "claude", false, true);
        assert_eq!(count(&single), 0);
        assert_eq!(single["messages"][0]["content"], "q");
    }
}
