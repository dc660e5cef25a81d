//! OpenAI's Responses API (`POST {base}/responses`), the only endpoint of some OpenAI models
//! (`o1-pro`, `o3-pro`, `gpt-5-pro`, the `-codex` models; see `capabilities.rs`).
//!
//! The request carries the system prompt as `instructions` and the conversation as `input`
//! items: plain `{role, content}` messages, `function_call` items for the assistant's tool
//! calls and `function_call_output` items for their results. There is no `stop` parameter
//! (the client applies stop sequences itself), the output cap is `max_output_tokens`, and JSON
//! mode is `text.format`. The answer is a list of `output` items (`message` with `output_text`
//! parts, `function_call`, `reasoning`), with a `status` instead of a finish reason. A stream
//! is a sequence of typed events ending with `response.completed` (or `response.incomplete`,
//! `response.failed`), whose `response` is the whole answer.

use serde_json::{Map, Value, json};

use super::{EventError, Parsed, count};
use crate::sse::SseEvent;
use crate::{ChatRequest, Message, Role, ToolCall, ToolChoice, Usage};

/// Prefix of a failed tool's output: the format has no error flag.
const ERROR_PREFIX: &str = "error: ";

pub(crate) fn request_body(request: &ChatRequest, model: &str, stream: bool) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    if let Some(system) = &request.system {
        body.insert("instructions".into(), json!(system));
    }
    let input: Vec<Value> = request.messages.iter().flat_map(input_items).collect();
    body.insert("input".into(), Value::Array(input));
    if let Some(temperature) = request.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(max_tokens) = request.max_tokens {
        body.insert("max_output_tokens".into(), json!(max_tokens));
    }
    if let Some(schema) = &request.json_schema {
        body.insert(
            "text".into(),
            json!({"format": {"type": "json_schema", "name": schema.name, "strict": true,
                "schema": schema.schema}}),
        );
    } else if request.json {
        body.insert("text".into(), json!({"format": {"type": "json_object"}}));
    }
    add_tools(&mut body, request);
    // Nothing is kept on the provider's side: every call carries its whole conversation.
    body.insert("store".into(), json!(false));
    if stream {
        body.insert("stream".into(), json!(true));
    }
    Value::Object(body)
}

/// The `input` items of one message: an assistant turn with tool calls becomes its text (if
/// any) followed by one `function_call` item per call.
fn input_items(message: &Message) -> Vec<Value> {
    match message.role {
        Role::Tool => {
            let output = if message.is_error {
                format!("{ERROR_PREFIX}{}", message.content)
            } else {
                message.content.clone()
            };
            vec![json!({
                "type": "function_call_output",
                "call_id": message.tool_call_id.as_deref().unwrap_or_default(),
                "output": output,
            })]
        }
        Role::Assistant => {
            let mut items = Vec::with_capacity(1 + message.tool_calls.len());
            if !message.content.is_empty() || message.tool_calls.is_empty() {
                items.push(json!({"role": "assistant", "content": message.content}));
            }
            items.extend(message.tool_calls.iter().map(|call| {
                json!({"type": "function_call", "call_id": call.id, "name": call.name,
                    "arguments": call.arguments})
            }));
            items
        }
        Role::System => vec![json!({"role": "system", "content": message.content})],
        Role::User => vec![json!({"role": "user", "content": message.content})],
    }
}

/// Tools are flat on this wire: `{type: function, name, description, parameters}`.
fn add_tools(body: &mut Map<String, Value>, request: &ChatRequest) {
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "name": tool.name, "description": tool.description,
                    "parameters": tool.parameters})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(choice) = &request.tool_choice {
        let choice = match choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Tool(name) => json!({"type": "function", "name": name}),
        };
        body.insert("tool_choice".into(), choice);
    }
}

/// `input_tokens` count every prompt token, cached ones included, as [`Usage::input_tokens`]
/// means; there are no billed cache writes.
fn usage(value: &Value) -> Usage {
    Usage {
        input_tokens: count(value, "/input_tokens"),
        output_tokens: count(value, "/output_tokens"),
        cache_read_tokens: count(value, "/input_tokens_details/cached_tokens"),
        cache_write_tokens: 0,
    }
}

/// Reads a whole response object (a body, or the `response` of a final stream event).
fn parse_object(value: &Value) -> Result<Parsed, String> {
    if let Some(message) = value.pointer("/error/message").and_then(Value::as_str) {
        return Err(format!("the response failed: {message}"));
    }
    let output = value
        .get("output")
        .and_then(Value::as_array)
        .ok_or("no `output` array in the response")?;
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for (index, item) in output.iter().enumerate() {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                for part in item
                    .get("content")
                    .and_then(Value::as_array)
                    .map_or(&[][..], Vec::as_slice)
                {
                    if part.get("type").and_then(Value::as_str) == Some("output_text") {
                        text.push_str(part.get("text").and_then(Value::as_str).unwrap_or(""));
                    }
                }
            }
            Some("function_call") => {
                let name = item
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("output item {index} (function_call) has no `name`"))?;
                let id = item
                    .get("call_id")
                    .or_else(|| item.get("id"))
                    .and_then(Value::as_str)
                    .map_or_else(|| format!("call_{index}"), str::to_owned);
                let arguments = match item.get("arguments") {
                    Some(Value::String(arguments)) => arguments.clone(),
                    None | Some(Value::Null) => String::new(),
                    Some(other) => other.to_string(),
                };
                tool_calls.push(ToolCall::new(id, name, arguments));
            }
            // Reasoning summaries and other items carry no answer text.
            _ => {}
        }
    }
    let status = value.get("status").and_then(Value::as_str);
    let incomplete = value
        .pointer("/incomplete_details/reason")
        .and_then(Value::as_str);
    let finish_reason = match (status, incomplete) {
        (Some("incomplete"), Some("max_output_tokens")) => Some("length".to_owned()),
        (Some("incomplete"), Some(reason)) => Some(reason.to_owned()),
        (Some("completed"), _) if !tool_calls.is_empty() => Some("tool_calls".to_owned()),
        (Some("completed"), _) => Some("stop".to_owned()),
        (other, _) => other.map(str::to_owned),
    };
    Ok(Parsed {
        text,
        tool_calls,
        finish_reason,
        usage: value.get("usage").map(usage).unwrap_or_default(),
    })
}

pub(crate) fn parse_response(body: &[u8]) -> Result<Parsed, String> {
    let value: Value = serde_json::from_slice(body).map_err(|err| err.to_string())?;
    parse_object(&value)
}

/// State of a streamed response: text arrives in `response.output_text.delta` events; the
/// final `response.completed` / `response.incomplete` event carries the whole response, which
/// gives the tool calls, the status and the usage.
#[derive(Debug, Default)]
pub(crate) struct StreamState {
    pub parsed: Parsed,
    pub done: bool,
    /// Whether the model has begun its answer (text, a tool call or reasoning), as opposed
    /// to the `response.created` / `in_progress` events that open every stream.
    pub started: bool,
}

impl StreamState {
    pub fn on_event(&mut self, event: &SseEvent) -> Result<Option<String>, EventError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(None);
        }
        let value: Value = serde_json::from_str(data)
            .map_err(|err| EventError::Malformed(format!("bad stream event: {err}")))?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(event.event.as_str());
        if !matches!(kind, "response.created" | "response.in_progress") {
            self.started = true;
        }
        match kind {
            "response.output_text.delta" => {
                let piece = value.get("delta").and_then(Value::as_str).unwrap_or("");
                if piece.is_empty() {
                    return Ok(None);
                }
                self.parsed.text.push_str(piece);
                Ok(Some(piece.to_owned()))
            }
            "response.completed" | "response.incomplete" => {
                let response = value.get("response").ok_or_else(|| {
                    EventError::Malformed(format!("`{kind}` event without its `response`"))
                })?;
                let whole = parse_object(response).map_err(EventError::Malformed)?;
                // The deltas are the text as it was shown; the final object only confirms it.
                let text = std::mem::take(&mut self.parsed.text);
                self.parsed = Parsed { text, ..whole };
                self.done = true;
                Ok(None)
            }
            "response.failed" => {
                let message = value
                    .pointer("/response/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("the response failed");
                Err(EventError::Provider(message.to_owned()))
            }
            "error" => {
                let message = value
                    .get("message")
                    .or_else(|| value.pointer("/error/message"))
                    .and_then(Value::as_str)
                    .unwrap_or("error event without a message");
                Err(EventError::Provider(message.to_owned()))
            }
            _ => Ok(None),
        }
    }

    pub fn into_parsed(self) -> Parsed {
        self.parsed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ToolDefinition, ToolOutput};

    #[test]
    fn the_request_takes_the_responses_shape() {
        let mut request = ChatRequest::new("x")
            .system("sys")
            .user("hi")
            .temperature(0.5)
            .max_tokens(9)
            .stop("END")
            .json(true)
            .tool(ToolDefinition::new(
                "search",
                "Search.",
                json!({"type": "object"}),
            ))
            .tool_choice(ToolChoice::Tool("search".to_owned()));
        request.messages.push(Message::assistant_tool_calls(
            "looking",
            vec![ToolCall::new("call_1", "search", r#"{"q":"a"}"#)],
        ));
        request.messages.push(Message::tool_result(
            "call_1",
            ToolOutput::error("no store"),
        ));
        let body = request_body(&request, "o3-pro", true);
        assert_eq!(body["model"], "o3-pro");
        assert_eq!(body["instructions"], "sys");
        assert_eq!(body["input"][0], json!({"role": "user", "content": "hi"}));
        assert_eq!(
            body["input"][1],
            json!({"role": "assistant", "content": "looking"})
        );
        assert_eq!(body["input"][2]["type"], "function_call");
        assert_eq!(body["input"][2]["call_id"], "call_1");
        assert_eq!(body["input"][2]["arguments"], r#"{"q":"a"}"#);
        assert_eq!(body["input"][3]["type"], "function_call_output");
        assert_eq!(body["input"][3]["output"], "error: no store");
        assert_eq!(body["max_output_tokens"], 9);
        assert_eq!(body["text"]["format"]["type"], "json_object");
        assert_eq!(body["tools"][0]["name"], "search");
        assert_eq!(body["tool_choice"]["name"], "search");
        assert_eq!(body["stream"], true);
        assert_eq!(body["store"], false);
        for absent in ["stop", "messages", "max_tokens", "stream_options"] {
            assert!(body.get(absent).is_none(), "{absent} sent");
        }
    }

    #[test]
    fn a_whole_response_gives_text_calls_status_and_usage() {
        let body = json!({
            "id": "resp_1", "object": "response", "status": "completed",
            "output": [
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {"type": "message", "role": "assistant", "content": [
                    {"type": "output_text", "text": "Hello ", "annotations": []},
                    {"type": "output_text", "text": "there", "annotations": []}]},
                {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "grep",
                    "arguments": "{}"}
            ],
            "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 60},
                "output_tokens": 7, "output_tokens_details": {"reasoning_tokens": 5},
                "total_tokens": 107}
        });
        let parsed = parse_response(body.to_string().as_bytes()).unwrap();
        assert_eq!(parsed.text, "Hello there");
        assert_eq!(
            parsed.tool_calls,
            vec![ToolCall::new("call_9", "grep", "{}")]
        );
        assert_eq!(parsed.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(
            parsed.usage,
            Usage {
                input_tokens: 100,
                output_tokens: 7,
                cache_read_tokens: 60,
                cache_write_tokens: 0
            }
        );
        let cut = json!({"status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"}, "output": []});
        let parsed = parse_response(cut.to_string().as_bytes()).unwrap();
        assert_eq!(parsed.finish_reason.as_deref(), Some("length"));
        assert!(parse_response(br#"{"status":"completed"}"#).is_err());
    }

    fn event(data: Value) -> SseEvent {
        SseEvent {
            event: data["type"].as_str().unwrap_or_default().to_owned(),
            data: data.to_string(),
        }
    }

    #[test]
    fn a_stream_gives_text_as_it_comes_and_the_rest_at_the_end() {
        let mut state = StreamState::default();
        let mut shown = String::new();
        for data in [
            json!({"type": "response.created", "response": {"status": "in_progress", "output": []}}),
            json!({"type": "response.output_text.delta", "delta": "Hel"}),
            json!({"type": "response.output_text.delta", "delta": "lo"}),
            json!({"type": "response.completed", "response": {"status": "completed",
                "output": [{"type": "message", "content": [{"type": "output_text", "text": "Hello"}]}],
                "usage": {"input_tokens": 3, "output_tokens": 2}}}),
        ] {
            if let Some(piece) = state.on_event(&event(data)).unwrap() {
                shown.push_str(&piece);
            }
        }
        assert!(state.done && state.started);
        assert_eq!(shown, "Hello");
        let parsed = state.into_parsed();
        assert_eq!(parsed.text, "Hello");
        assert_eq!(parsed.finish_reason.as_deref(), Some("stop"));
        assert_eq!(parsed.usage.total(), 5);

        let mut failed = StreamState::default();
        let outcome = failed.on_event(&event(json!({"type": "response.failed",
            "response": {"status": "failed", "error": {"code": "server_error", "message": "boom"}}})));
        assert_eq!(outcome, Err(EventError::Provider("boom".to_owned())));
    }
}
