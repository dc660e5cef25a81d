//! Messages and tool calling on the Anthropic Messages API: `tools` with `input_schema`,
//! `tool_choice`, assistant `tool_use` blocks, `tool_result` blocks in a user message, and
//! streamed `input_json_delta` pieces joined per content block.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::{ChatRequest, Message, Role, ToolCall, ToolChoice};

/// Adds `tools` and `tool_choice` to a request body.
pub(crate) fn add_tools(body: &mut Map<String, Value>, request: &ChatRequest) {
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({"name": tool.name, "description": tool.description,
                    "input_schema": tool.parameters})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(choice) = &request.tool_choice {
        let choice = match choice {
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::None => json!({"type": "none"}),
            ToolChoice::Required => json!({"type": "any"}),
            ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
        };
        body.insert("tool_choice".into(), choice);
    }
}

/// One turn being built: its role, its content blocks, and whether it holds tool results (a
/// user message that follows them joins the same turn, after them, as the API wants).
struct Turn {
    role: &'static str,
    blocks: Vec<Value>,
    has_tool_results: bool,
}

/// The `messages` array for the non-system turns. A turn that is one text block goes as a
/// plain string.
pub(crate) fn messages(turns: &[&Message]) -> Vec<Value> {
    let mut built: Vec<Turn> = Vec::with_capacity(turns.len());
    for message in turns {
        let joins_tool_results = built.last().is_some_and(|turn| turn.has_tool_results);
        match message.role {
            Role::Tool => {
                let mut block = json!({"type": "tool_result",
                    "tool_use_id": message.tool_call_id.as_deref().unwrap_or_default(),
                    "content": message.content});
                if message.is_error {
                    block["is_error"] = json!(true);
                }
                match built.last_mut() {
                    Some(turn) if turn.has_tool_results => turn.blocks.push(block),
                    _ => built.push(Turn {
                        role: "user",
                        blocks: vec![block],
                        has_tool_results: true,
                    }),
                }
            }
            Role::Assistant => {
                let text = (!message.content.is_empty() || message.tool_calls.is_empty())
                    .then(|| text_block(&message.content));
                let blocks = text
                    .into_iter()
                    .chain(message.tool_calls.iter().map(tool_use_block))
                    .collect();
                built.push(Turn {
                    role: "assistant",
                    blocks,
                    has_tool_results: false,
                });
            }
            // System messages were moved into the system prompt before this.
            _ => match built.last_mut() {
                Some(turn) if joins_tool_results => {
                    turn.blocks.push(text_block(&message.content));
                    turn.has_tool_results = false;
                }
                _ => built.push(Turn {
                    role: "user",
                    blocks: vec![text_block(&message.content)],
                    has_tool_results: false,
                }),
            },
        }
    }
    built
        .into_iter()
        .map(|turn| match turn.blocks.as_slice() {
            [only] if only["type"] == "text" => {
                json!({"role": turn.role, "content": only["text"]})
            }
            _ => json!({"role": turn.role, "content": turn.blocks}),
        })
        .collect()
}

fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// A `tool_use` block. The API wants `input` to be an object: arguments that were not one
/// (the model was told so in the call's result) go as `{}`.
fn tool_use_block(call: &ToolCall) -> Value {
    let input = call
        .arguments_value()
        .unwrap_or_else(|_| Value::Object(Map::new()));
    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input})
}

/// The `tool_use` blocks of a whole response's `content`.
pub(crate) fn parse_calls(blocks: &[Value]) -> Result<Vec<ToolCall>, String> {
    blocks
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("tool_use"))
        .map(|block| {
            let field = |name: &str| {
                block
                    .get(name)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .ok_or_else(|| format!("a `tool_use` block has no `{name}`"))
            };
            Ok(ToolCall {
                id: field("id")?,
                name: field("name")?,
                arguments: block
                    .get("input")
                    .map_or_else(String::new, Value::to_string),
            })
        })
        .collect()
}

/// Tool calls of a stream: `content_block_start` opens a `tool_use` block (id, name, an empty
/// `input`), `content_block_delta` events of type `input_json_delta` carry its arguments in
/// pieces of `partial_json`, keyed by the block `index`.
#[derive(Debug, Default)]
pub(crate) struct StreamedCalls {
    blocks: BTreeMap<u64, (ToolCall, Value)>,
}

impl StreamedCalls {
    /// Takes a `content_block_start` event.
    pub fn on_block_start(&mut self, event: &Value) {
        let Some(block) = event.get("content_block") else {
            return;
        };
        if block.get("type").and_then(Value::as_str) != Some("tool_use") {
            return;
        }
        let text = |name: &str| {
            block
                .get(name)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        let call = ToolCall::new(text("id"), text("name"), String::new());
        let start_input = block.get("input").cloned().unwrap_or(Value::Null);
        self.blocks.insert(index, (call, start_input));
    }

    /// Takes a `content_block_delta` event; whether it was an `input_json_delta`.
    pub fn on_delta(&mut self, event: &Value) -> bool {
        if event.pointer("/delta/type").and_then(Value::as_str) != Some("input_json_delta") {
            return false;
        }
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        let piece = event
            .pointer("/delta/partial_json")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if let Some((call, _)) = self.blocks.get_mut(&index) {
            call.arguments.push_str(piece);
        }
        true
    }

    /// The tool name of the content block at `index`, if it is a tool call.
    pub fn name_at(&self, index: u64) -> Option<&str> {
        self.blocks.get(&index).map(|(call, _)| call.name.as_str())
    }

    /// The calls in block order. A block that streamed no arguments keeps the `input` it
    /// started with.
    pub fn finish(self) -> Vec<ToolCall> {
        self.blocks
            .into_values()
            .map(|(mut call, start_input)| {
                if call.arguments.is_empty() && !start_input.is_null() {
                    call.arguments = start_input.to_string();
                }
                call
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::anthropic::request_body;
    use crate::{ToolDefinition, ToolOutput};

    #[test]
    fn tool_turns_take_the_wire_shape() {
        let schema = json!({"type": "object", "properties": {"ids": {"type": "array"}}});
        let mut request = ChatRequest::new("x")
            .user("q")
            .tool(ToolDefinition::new(
                "get_chunks",
                "Fetch chunks.",
                schema.clone(),
            ))
            .tool_choice(ToolChoice::Required);
        request.messages.push(Message::assistant_tool_calls(
            "Let me look.",
            vec![
                ToolCall::new("toolu_1", "get_chunks", r#"{"ids":[1]}"#),
                ToolCall::new("toolu_2", "get_chunks", "{broken"),
            ],
        ));
        request
            .messages
            .push(Message::tool_result("toolu_1", ToolOutput::ok("chunk 1")));
        request.messages.push(Message::tool_result(
            "toolu_2",
            ToolOutput::error("bad JSON"),
        ));
        request.messages.push(Message::user("Answer now."));
        let body = request_body(&request, "claude", false, true);
        assert_eq!(body["tools"][0]["name"], "get_chunks");
        assert_eq!(body["tools"][0]["input_schema"], schema);
        assert_eq!(body["tool_choice"], json!({"type": "any"}));
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3, "{messages:#?}");
        let assistant = &messages[1]["content"];
        assert_eq!(
            assistant[0],
            json!({"type": "text", "text": "Let me look."})
        );
        assert_eq!(assistant[1]["type"], "tool_use");
        assert_eq!(assistant[1]["input"], json!({"ids": [1]}));
        assert_eq!(assistant[2]["input"], json!({}));
        let results = &messages[2];
        assert_eq!(results["role"], "user");
        assert_eq!(results["content"][0]["type"], "tool_result");
        assert_eq!(results["content"][0]["tool_use_id"], "toolu_1");
        assert!(results["content"][0].get("is_error").is_none());
        assert_eq!(results["content"][1]["is_error"], true);
        assert_eq!(results["content"][2]["text"], "Answer now.");
        // Four turns: the newest message is a cache breakpoint, on its last block.
        assert_eq!(results["content"][2]["cache_control"]["type"], "ephemeral");
        let choices = [
            (ToolChoice::Auto, json!({"type": "auto"})),
            (ToolChoice::None, json!({"type": "none"})),
            (
                ToolChoice::Tool("get_chunks".to_owned()),
                json!({"type": "tool", "name": "get_chunks"}),
            ),
        ];
        for (choice, wire) in choices {
            let body = request_body(&request.clone().tool_choice(choice), "claude", false, true);
            assert_eq!(body["tool_choice"], wire);
        }
    }

    #[test]
    fn streamed_input_json_joins_per_block() {
        let mut calls = StreamedCalls::default();
        calls.on_block_start(&json!({"type": "content_block_start", "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_a", "name": "search", "input": {}}}));
        calls.on_block_start(&json!({"type": "content_block_start", "index": 2,
            "content_block": {"type": "tool_use", "id": "toolu_b", "name": "buffers", "input": {}}}));
        for piece in ["", "{\"query\": ", "\"x\"}"] {
            assert!(
                calls.on_delta(&json!({"type": "content_block_delta", "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": piece}}))
            );
        }
        assert!(
            !calls.on_delta(&json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": "hi"}}))
        );
        assert_eq!(
            calls.finish(),
            vec![
                ToolCall::new("toolu_a", "search", r#"{"query": "x"}"#),
                ToolCall::new("toolu_b", "buffers", "{}"),
            ]
        );
    }
}
