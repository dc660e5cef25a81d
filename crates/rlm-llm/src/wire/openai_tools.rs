//! Tool calling on OpenAI chat completions: `tools` with `type: function`, `tool_choice`,
//! assistant `tool_calls` (arguments as a JSON string), `role: tool` answers, and streamed
//! `delta.tool_calls` whose pieces are joined by `index`.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::{ChatRequest, Message, Role, ToolCall, ToolChoice};

/// Prefix of a failed tool's content: the format has no error flag.
const ERROR_PREFIX: &str = "error: ";

/// Adds `tools` and `tool_choice` to a request body.
pub(crate) fn add_tools(body: &mut Map<String, Value>, request: &ChatRequest) {
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                }})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(choice) = &request.tool_choice {
        body.insert("tool_choice".into(), self::choice(choice));
    }
}

/// `tool_choice` in the wire shape.
pub(crate) fn choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
    }
}

/// One message in the wire shape.
pub(crate) fn message(message: &Message) -> Value {
    match message.role {
        Role::Tool => {
            let content = if message.is_error {
                format!("{ERROR_PREFIX}{}", message.content)
            } else {
                message.content.clone()
            };
            json!({
                "role": "tool",
                "tool_call_id": message.tool_call_id.as_deref().unwrap_or_default(),
                "content": content,
            })
        }
        Role::Assistant if !message.tool_calls.is_empty() => {
            let calls: Vec<Value> = message
                .tool_calls
                .iter()
                .map(|call| {
                    json!({"id": call.id, "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments}})
                })
                .collect();
            // `content` is null when the model wrote nothing beside its calls, as the API
            // itself returns it.
            let content = if message.content.is_empty() {
                Value::Null
            } else {
                json!(message.content)
            };
            json!({"role": "assistant", "content": content, "tool_calls": calls})
        }
        role => {
            let role = match role {
                Role::System => "system",
                Role::User => "user",
                _ => "assistant",
            };
            json!({"role": role, "content": message.content})
        }
    }
}

/// The `tool_calls` of a whole response's `choices[0].message`.
pub(crate) fn parse_calls(message: &Value) -> Result<Vec<ToolCall>, String> {
    let Some(calls) = message.get("tool_calls").filter(|calls| !calls.is_null()) else {
        return Ok(Vec::new());
    };
    let calls = calls.as_array().ok_or("`tool_calls` is not an array")?;
    calls
        .iter()
        .enumerate()
        .map(|(index, call)| {
            let name = call
                .pointer("/function/name")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("tool call {index} has no `function.name`"))?;
            Ok(ToolCall {
                id: call
                    .get("id")
                    .and_then(Value::as_str)
                    .map_or_else(|| fallback_id(index), str::to_owned),
                name: name.to_owned(),
                arguments: arguments_text(call.pointer("/function/arguments")),
            })
        })
        .collect()
}

/// Arguments are a JSON string; some compatible servers send an object instead.
fn arguments_text(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(text)) => text.clone(),
        None | Some(Value::Null) => String::new(),
        Some(other) => other.to_string(),
    }
}

/// An id for a call the server sent without one (some compatible servers do), so the result
/// can still quote it.
fn fallback_id(index: usize) -> String {
    format!("call_{index}")
}

/// Tool calls of a stream, built from `delta.tool_calls` pieces: the first piece of a call
/// carries its `index`, `id` and `function.name`; later ones only the `index` and more of
/// `function.arguments`.
#[derive(Debug, Default)]
pub(crate) struct StreamedCalls {
    calls: BTreeMap<u64, ToolCall>,
}

impl StreamedCalls {
    /// Takes the `tool_calls` of one `choices[0].delta`, if any.
    pub fn on_delta(&mut self, delta: &Value) {
        let Some(pieces) = delta.get("tool_calls").and_then(Value::as_array) else {
            return;
        };
        for (position, piece) in pieces.iter().enumerate() {
            let index = piece
                .get("index")
                .and_then(Value::as_u64)
                .unwrap_or(position as u64);
            let call = self.calls.entry(index).or_insert_with(|| ToolCall {
                id: String::new(),
                name: String::new(),
                arguments: String::new(),
            });
            if let Some(id) = piece.get("id").and_then(Value::as_str)
                && call.id.is_empty()
            {
                call.id = id.to_owned();
            }
            if let Some(name) = piece.pointer("/function/name").and_then(Value::as_str)
                && call.name.is_empty()
            {
                call.name = name.to_owned();
            }
            if let Some(more) = piece.pointer("/function/arguments").and_then(Value::as_str) {
                call.arguments.push_str(more);
            }
        }
    }

    /// The calls in index order.
    pub fn finish(self) -> Vec<ToolCall> {
        self.calls
            .into_values()
            .enumerate()
            .map(|(position, mut call)| {
                if call.id.is_empty() {
                    call.id = fallback_id(position);
                }
                call
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ToolDefinition, ToolOutput};

    #[test]
    fn tools_choice_and_tool_turns_take_the_wire_shape() {
        let schema = json!({"type": "object", "properties": {"query": {"type": "string"}}});
        let mut request = ChatRequest::new("x")
            .user("q")
            .tool(ToolDefinition::new(
                "search",
                "Search the store.",
                schema.clone(),
            ))
            .tool_choice(ToolChoice::Tool("search".to_owned()));
        request.messages.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::new("call_1", "search", r#"{"query":"a"}"#)],
        ));
        request.messages.push(Message::tool_result(
            "call_1",
            ToolOutput::error("no store"),
        ));
        let body = super::super::openai::request_body(
            &request,
            "gpt-4o",
            false,
            crate::capabilities::MaxTokensField::MaxTokens,
        );
        assert_eq!(body["tools"][0]["type"], "function");
        assert_eq!(body["tools"][0]["function"]["name"], "search");
        assert_eq!(body["tools"][0]["function"]["parameters"], schema);
        assert_eq!(body["tool_choice"]["function"]["name"], "search");
        let assistant = &body["messages"][1];
        assert!(assistant["content"].is_null());
        assert_eq!(assistant["tool_calls"][0]["id"], "call_1");
        assert_eq!(
            assistant["tool_calls"][0]["function"]["arguments"],
            r#"{"query":"a"}"#
        );
        let result = &body["messages"][2];
        assert_eq!(result["role"], "tool");
        assert_eq!(result["tool_call_id"], "call_1");
        assert_eq!(result["content"], "error: no store");
        for (choice, wire) in [
            (ToolChoice::Auto, "auto"),
            (ToolChoice::None, "none"),
            (ToolChoice::Required, "required"),
        ] {
            let request = request.clone().tool_choice(choice);
            let body = super::super::openai::request_body(
                &request,
                "gpt-4o",
                false,
                crate::capabilities::MaxTokensField::MaxTokens,
            );
            assert_eq!(body["tool_choice"], wire);
        }
    }

    #[test]
    fn streamed_pieces_join_by_index() {
        let mut calls = StreamedCalls::default();
        for delta in [
            json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                "function": {"name": "search", "arguments": ""}}]}),
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"q\":"}}]}),
            json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
                "function": {"name": "grep", "arguments": "{}"}}]}),
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"x\"}"}}]}),
        ] {
            calls.on_delta(&delta);
        }
        assert_eq!(
            calls.finish(),
            vec![
                ToolCall::new("call_a", "search", r#"{"q":"x"}"#),
                ToolCall::new("call_b", "grep", "{}"),
            ]
        );
    }
}
