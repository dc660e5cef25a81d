//! Tool calling in the fake server: decoding tool turns of both wire formats into neutral
//! [`Message`]s (refusing what the real APIs refuse), and encoding scripted tool-call replies
//! whole or streamed, shaped as the real APIs send them.

use serde_json::{Value, json};

use super::FakeBehavior;
use super::encode::{anthropic_usage, event, openai_usage, pieces};
use crate::Wire;
use rlm_types::ToolCall;
use rlm_types::{Message, Role, Usage};

/// Pieces a streamed call's arguments are split into.
const ARGUMENT_PIECES: usize = 3;

/// Decodes the `messages` array. System messages (OpenAI) replace `system`.
pub(crate) fn decode_messages(
    wire: Wire,
    raw_messages: &[Value],
    system: &mut Option<String>,
) -> Result<Vec<Message>, String> {
    let mut messages = Vec::new();
    for raw in raw_messages {
        let role = raw.get("role").and_then(Value::as_str).unwrap_or("");
        let content = raw.get("content");
        match (wire, role) {
            (Wire::OpenAi, "system") => *system = Some(text_of(content)?),
            (Wire::OpenAi, "user") => messages.push(Message::user(text_of(content)?)),
            (Wire::OpenAi, "assistant") => {
                let text = match content {
                    // `content` may be null beside `tool_calls`.
                    Some(Value::Null) if raw.get("tool_calls").is_some() => String::new(),
                    other => text_of(other)?,
                };
                let calls = openai_calls(raw.get("tool_calls"))?;
                messages.push(Message::assistant_tool_calls(text, calls));
            }
            (Wire::OpenAi, "tool") => {
                let id = raw
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .ok_or("a `tool` message has no `tool_call_id`")?;
                messages.push(Message::tool_result(
                    id,
                    rlm_types::ToolOutput::ok(text_of(content)?),
                ));
            }
            (Wire::Anthropic, "user") => anthropic_user(content, &mut messages)?,
            (Wire::Anthropic, "assistant") => {
                let (text, calls) = anthropic_assistant(content)?;
                messages.push(Message::assistant_tool_calls(text, calls));
            }
            (_, other) => return Err(format!("unsupported role `{other}`")),
        }
    }
    check_pairing(&messages)?;
    Ok(messages)
}

/// Plain text content: a string, or text parts/blocks joined.
fn text_of(content: Option<&Value>) -> Result<String, String> {
    match content {
        Some(Value::String(text)) => Ok(text.clone()),
        Some(Value::Array(blocks)) => Ok(blocks
            .iter()
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect()),
        _ => Err("message without `content`".to_owned()),
    }
}

fn openai_calls(raw: Option<&Value>) -> Result<Vec<ToolCall>, String> {
    let Some(raw) = raw else {
        return Ok(Vec::new());
    };
    let calls = raw.as_array().ok_or("`tool_calls` is not an array")?;
    calls
        .iter()
        .map(|call| {
            let text = |pointer: &str| {
                call.pointer(pointer)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .ok_or_else(|| format!("a tool call has no string `{}`", &pointer[1..]))
            };
            Ok(ToolCall::new(
                text("/id")?,
                text("/function/name")?,
                text("/function/arguments")?,
            ))
        })
        .collect()
}

/// A user message: `tool_result` blocks become [`Role::Tool`] messages, text a user message.
fn anthropic_user(content: Option<&Value>, messages: &mut Vec<Message>) -> Result<(), String> {
    let Some(Value::Array(blocks)) = content else {
        messages.push(Message::user(text_of(content)?));
        return Ok(());
    };
    let mut text = String::new();
    let mut has_text = false;
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("tool_result") => {
                if has_text {
                    return Err("`tool_result` blocks must come before any text".to_owned());
                }
                let id = block
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .ok_or("a `tool_result` block has no `tool_use_id`")?;
                let content = match block.get("content") {
                    None => String::new(),
                    some => text_of(some)?,
                };
                let output = if block.get("is_error").and_then(Value::as_bool) == Some(true) {
                    rlm_types::ToolOutput::error(content)
                } else {
                    rlm_types::ToolOutput::ok(content)
                };
                messages.push(Message::tool_result(id, output));
            }
            _ => {
                has_text = true;
                text.push_str(block.get("text").and_then(Value::as_str).unwrap_or(""));
            }
        }
    }
    if has_text {
        messages.push(Message::user(text));
    }
    Ok(())
}

fn anthropic_assistant(content: Option<&Value>) -> Result<(String, Vec<ToolCall>), String> {
    let Some(Value::Array(blocks)) = content else {
        return Ok((text_of(content)?, Vec::new()));
    };
    let mut text = String::new();
    let mut calls = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("tool_use") => {
                let field = |name: &str| {
                    block
                        .get(name)
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .ok_or_else(|| format!("a `tool_use` block has no `{name}`"))
                };
                let input = block.get("input").filter(|input| input.is_object());
                let input = input.ok_or("a `tool_use` block's `input` must be an object")?;
                calls.push(ToolCall::new(
                    field("id")?,
                    field("name")?,
                    input.to_string(),
                ));
            }
            _ => text.push_str(block.get("text").and_then(Value::as_str).unwrap_or("")),
        }
    }
    Ok((text, calls))
}

/// As both APIs insist: the calls of an assistant turn are all answered, by results that
/// follow it directly, and every result answers a call of that turn.
fn check_pairing(messages: &[Message]) -> Result<(), String> {
    let mut open: Vec<&str> = Vec::new();
    for message in messages {
        if message.role == Role::Tool {
            let id = message.tool_call_id.as_deref().unwrap_or_default();
            let Some(position) = open.iter().position(|open_id| *open_id == id) else {
                return Err(format!(
                    "tool result for `{id}` does not answer a call of the assistant turn before it"
                ));
            };
            open.remove(position);
            continue;
        }
        if !open.is_empty() {
            return Err(format!(
                "tool calls without results before the next turn: {}",
                open.join(", ")
            ));
        }
        open = message
            .tool_calls
            .iter()
            .map(|call| call.id.as_str())
            .collect();
    }
    if open.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the conversation ends with unanswered tool calls: {}",
            open.join(", ")
        ))
    }
}

/// Anthropic's checks on `tools` and `tool_choice`, with its messages: each tool has a `name`
/// and an `input_schema` of type `object`, and a `tool_choice` of type `tool` names one of
/// them.
pub(crate) fn check_anthropic_tools(body: &Value) -> Result<(), String> {
    let tools = body.get("tools").and_then(Value::as_array);
    for (index, tool) in tools.into_iter().flatten().enumerate() {
        if tool.get("name").and_then(Value::as_str).is_none() {
            return Err(format!("tools.{index}.custom.name: Field required"));
        }
        let Some(schema) = tool.get("input_schema") else {
            return Err(format!("tools.{index}.custom.input_schema: Field required"));
        };
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(format!(
                "tools.{index}.custom.input_schema.type: Input should be 'object'"
            ));
        }
    }
    if let Some(name) = forced_tool(Wire::Anthropic, body) {
        let offered = tools
            .into_iter()
            .flatten()
            .any(|tool| tool.get("name").and_then(Value::as_str) == Some(name));
        if !offered {
            return Err(format!("Tool '{name}' not found in provided tools"));
        }
    }
    Ok(())
}

/// The tool an Anthropic request forces (`tool_choice: {"type": "tool", "name": ...}`): the
/// model answers only by calling it, with no text before the call.
pub(crate) fn forced_tool(wire: Wire, body: &Value) -> Option<&str> {
    let choice = body.get("tool_choice")?;
    if wire != Wire::Anthropic || choice.get("type").and_then(Value::as_str) != Some("tool") {
        return None;
    }
    choice.get("name").and_then(Value::as_str)
}

/// A model made to call a tool answers with the call: a scripted text is its input.
pub(crate) fn forced_call(wire: Wire, body: &Value, behavior: FakeBehavior) -> FakeBehavior {
    match (behavior, forced_tool(wire, body)) {
        (FakeBehavior::Text(text), Some(name)) => FakeBehavior::ToolCalls {
            text: String::new(),
            calls: vec![ToolCall::new("", name, text)],
        },
        (behavior, _) => behavior,
    }
}

/// Scripted calls with their ids filled in: an empty id becomes `call_fake_N` (OpenAI) or
/// `toolu_fake_N` (Anthropic).
pub(crate) fn with_ids(wire: Wire, calls: Vec<ToolCall>) -> Vec<ToolCall> {
    let prefix = match wire {
        Wire::OpenAi => "call_fake_",
        Wire::Anthropic => "toolu_fake_",
    };
    calls
        .into_iter()
        .enumerate()
        .map(|(index, mut call)| {
            if call.id.is_empty() {
                call.id = format!("{prefix}{index}");
            }
            call
        })
        .collect()
}

/// A whole reply with tool calls.
pub(crate) fn full_body(
    wire: Wire,
    model: &str,
    text: &str,
    calls: &[ToolCall],
    finish: &str,
    usage: &Usage,
) -> Value {
    match wire {
        Wire::OpenAi => {
            let content = if text.is_empty() {
                Value::Null
            } else {
                json!(text)
            };
            let calls: Vec<Value> = calls.iter().map(openai_call).collect();
            json!({
                "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
                "choices": [{"index": 0, "finish_reason": finish,
                    "message": {"role": "assistant", "content": content, "tool_calls": calls}}],
                "usage": openai_usage(usage),
            })
        }
        Wire::Anthropic => {
            let text_block = (!text.is_empty()).then(|| json!({"type": "text", "text": text}));
            let content: Vec<Value> = text_block
                .into_iter()
                .chain(calls.iter().map(|call| {
                    json!({"type": "tool_use", "id": call.id, "name": call.name,
                        "input": anthropic_input(call)})
                }))
                .collect();
            json!({
                "id": "msg_fake", "type": "message", "role": "assistant", "model": model,
                "content": content, "stop_reason": finish, "stop_sequence": null,
                "usage": anthropic_usage(usage),
            })
        }
    }
}

fn openai_call(call: &ToolCall) -> Value {
    json!({"id": call.id, "type": "function",
        "function": {"name": call.name, "arguments": call.arguments}})
}

/// The real API always sends an object. Arguments scripted as something that is not one go
/// as a JSON string, so a test can still see the client refuse them.
fn anthropic_input(call: &ToolCall) -> Value {
    serde_json::from_str::<Value>(&call.arguments)
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!(call.arguments))
}

/// The SSE events of a streamed reply with tool calls.
pub(crate) fn stream_events(
    wire: Wire,
    model: &str,
    text: &str,
    calls: &[ToolCall],
    finish: &str,
    usage: &Usage,
) -> Vec<String> {
    match wire {
        Wire::OpenAi => openai_stream(model, text, calls, finish, usage),
        Wire::Anthropic => anthropic_stream(model, text, calls, finish, usage),
    }
}

fn openai_stream(
    model: &str,
    text: &str,
    calls: &[ToolCall],
    finish: &str,
    usage: &Usage,
) -> Vec<String> {
    let chunk = |delta: Value, finish: Value| {
        event(
            None,
            &json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": null}),
        Value::Null,
    )];
    for piece in pieces(text, ARGUMENT_PIECES) {
        events.push(chunk(json!({"content": piece}), Value::Null));
    }
    for (index, call) in calls.iter().enumerate() {
        events.push(chunk(
            json!({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                "function": {"name": call.name, "arguments": ""}}]}),
            Value::Null,
        ));
        for piece in pieces(&call.arguments, ARGUMENT_PIECES) {
            events.push(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                Value::Null,
            ));
        }
    }
    events.push(chunk(json!({}), json!(finish)));
    events.push(event(
        None,
        &json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": model,
            "choices": [], "usage": openai_usage(usage)}),
    ));
    events.push("data: [DONE]\n\n".to_owned());
    events
}

fn anthropic_stream(
    model: &str,
    text: &str,
    calls: &[ToolCall],
    finish: &str,
    usage: &Usage,
) -> Vec<String> {
    let mut start_usage = anthropic_usage(usage);
    start_usage["output_tokens"] = json!(1);
    let mut events = vec![event(
        Some("message_start"),
        &json!({"type": "message_start", "message": {"id": "msg_fake", "type": "message",
            "role": "assistant", "model": model, "content": [], "stop_reason": null,
            "usage": start_usage}}),
    )];
    let mut index = 0;
    let block_stop = |index: usize| {
        event(
            Some("content_block_stop"),
            &json!({"type": "content_block_stop", "index": index}),
        )
    };
    if !text.is_empty() {
        events.push(event(
            Some("content_block_start"),
            &json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "text", "text": ""}}),
        ));
        for piece in pieces(text, ARGUMENT_PIECES) {
            events.push(event(
                Some("content_block_delta"),
                &json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "text_delta", "text": piece}}),
            ));
        }
        events.push(block_stop(index));
        index += 1;
    }
    for call in calls {
        events.push(event(
            Some("content_block_start"),
            &json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": call.id, "name": call.name,
                    "input": {}}}),
        ));
        // The real stream opens each tool block with an empty piece.
        for piece in std::iter::once("").chain(pieces(&call.arguments, ARGUMENT_PIECES)) {
            events.push(event(
                Some("content_block_delta"),
                &json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece}}),
            ));
        }
        events.push(block_stop(index));
        index += 1;
    }
    events.push(event(
        Some("message_delta"),
        &json!({"type": "message_delta", "delta": {"stop_reason": finish, "stop_sequence": null},
            "usage": {"output_tokens": usage.output_tokens}}),
    ));
    events.push(event(
        Some("message_stop"),
        &json!({"type": "message_stop"}),
    ));
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_must_answer_the_calls_of_the_turn_before() {
        let call = |id: &str| ToolCall::new(id, "search", "{}");
        let ok = |id: &str| Message::tool_result(id, rlm_types::ToolOutput::ok("r"));
        let turn = Message::assistant_tool_calls("", vec![call("a"), call("b")]);
        let user = Message::user("q");
        assert!(check_pairing(&[user.clone(), turn.clone(), ok("b"), ok("a")]).is_ok());
        let missing = check_pairing(&[user.clone(), turn.clone(), ok("a"), user.clone()]);
        assert!(missing.unwrap_err().contains(": b"));
        let stray = check_pairing(&[user.clone(), turn.clone(), ok("a"), ok("b"), ok("c")]);
        assert!(stray.unwrap_err().contains("`c`"));
        assert!(check_pairing(&[user, turn]).is_err());
    }
}
