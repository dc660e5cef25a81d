//! Anthropic Messages API (`POST {base}/v1/messages`).

use serde_json::{Value, json};

use super::{EventError, Parsed, anthropic_cache, anthropic_tools, count};
use crate::sse::SseEvent;
use crate::{ChatRequest, JsonSchema, Message, Role, Usage};

/// The API version header value this client speaks.
pub(crate) const API_VERSION: &str = "2023-06-01";

/// Anthropic requires `max_tokens`; used when the request sets none.
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 4096;

/// Appended to the system prompt in JSON mode without a schema tool: the Messages API has no
/// `response_format`.
const JSON_INSTRUCTION: &str = "Answer with one JSON object and nothing else.";

/// The description of the tool a schema goes out as ([`answer_tool`]).
const ANSWER_TOOL_DESCRIPTION: &str = "Give your answer: its input is the whole answer.";

/// The schema a request's answer is constrained to on this wire, sent as the one tool the
/// model must call (`tools: [{name, input_schema}]`, `tool_choice: {type: "tool"}`), whose
/// `input` the client turns back into the reply's text ([`answer_from_tool`]). Only for a
/// request that offers no tools of its own, and an object schema (the only kind
/// `input_schema` takes); otherwise the request is plain JSON mode, validated by the caller.
pub(crate) fn answer_tool(request: &ChatRequest) -> Option<&JsonSchema> {
    let schema = request.json_schema.as_ref()?;
    let is_object = schema.schema.get("type").and_then(Value::as_str) == Some("object");
    (is_object && request.tools.is_empty() && request.tool_choice.is_none()).then_some(schema)
}

/// Makes the call of the answer tool `name` the reply: its input becomes the text (replacing
/// any text beside it), and the stop reason the one a plain answer has, so callers see what
/// a server with `response_format` sends. A reply without the call is left as it is.
pub(crate) fn answer_from_tool(parsed: &mut Parsed, name: &str) {
    let Some(position) = parsed.tool_calls.iter().position(|call| call.name == name) else {
        return;
    };
    let call = parsed.tool_calls.remove(position);
    parsed.text = call.arguments;
    if parsed.finish_reason.as_deref() == Some("tool_use") {
        parsed.finish_reason = Some("end_turn".to_owned());
    }
}

/// The request body; with `prompt_cache`, cache breakpoints go on the system prompt and the
/// growing conversation ([`anthropic_cache`]).
pub(crate) fn request_body(
    request: &ChatRequest,
    model: &str,
    stream: bool,
    prompt_cache: bool,
) -> Value {
    // The Messages API has no system role: system messages join the system prompt.
    let (system_messages, turns): (Vec<&Message>, Vec<&Message>) = request
        .messages
        .iter()
        .partition(|message| message.role == Role::System);
    let messages = anthropic_tools::messages(&turns);
    let answer_tool = answer_tool(request);
    let mut body = serde_json::Map::new();
    body.insert("model".into(), json!(model));
    body.insert(
        "max_tokens".into(),
        json!(request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
    );
    let system_parts: Vec<&str> = request
        .system
        .as_deref()
        .into_iter()
        .chain(
            system_messages
                .iter()
                .map(|message| message.content.as_str()),
        )
        .chain((request.json && answer_tool.is_none()).then_some(JSON_INSTRUCTION))
        .collect();
    if !system_parts.is_empty() {
        let system = system_parts.join("\n\n");
        body.insert("system".into(), json!([{"type": "text", "text": system}]));
    }
    body.insert("messages".into(), Value::Array(messages));
    if let Some(temperature) = request.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if !request.stop.is_empty() {
        body.insert("stop_sequences".into(), json!(request.stop));
    }
    anthropic_tools::add_tools(&mut body, request);
    if let Some(schema) = answer_tool {
        body.insert(
            "tools".into(),
            json!([{"name": schema.name, "description": ANSWER_TOOL_DESCRIPTION,
                "input_schema": schema.schema}]),
        );
        body.insert(
            "tool_choice".into(),
            json!({"type": "tool", "name": schema.name}),
        );
    }
    if prompt_cache {
        anthropic_cache::mark(&mut body);
    }
    if stream {
        body.insert("stream".into(), json!(true));
    }
    Value::Object(body)
}

/// Anthropic's `usage` object. Its `input_tokens` are only the prompt tokens that were neither
/// read from nor written to the cache, so [`WireUsage::usage`] adds those back: a [`Usage`]
/// counts every prompt token as input.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct WireUsage {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
}

impl WireUsage {
    fn read(value: &Value) -> Self {
        Self {
            input: count(value, "/input_tokens"),
            output: count(value, "/output_tokens"),
            cache_read: count(value, "/cache_read_input_tokens"),
            cache_write: count(value, "/cache_creation_input_tokens"),
        }
    }

    /// Applies a `message_delta` usage: output tokens are cumulative there, input counts repeat
    /// the start's or are absent (zero).
    fn update(&mut self, value: &Value) {
        let update = Self::read(value);
        self.output = update.output;
        for (field, new) in [
            (&mut self.input, update.input),
            (&mut self.cache_read, update.cache_read),
            (&mut self.cache_write, update.cache_write),
        ] {
            if new > 0 {
                *field = new;
            }
        }
    }

    fn usage(self) -> Usage {
        Usage {
            input_tokens: self.input + self.cache_read + self.cache_write,
            output_tokens: self.output,
            cache_read_tokens: self.cache_read,
            cache_write_tokens: self.cache_write,
        }
    }
}

pub(crate) fn parse_response(body: &[u8]) -> Result<Parsed, String> {
    let value: Value = serde_json::from_slice(body).map_err(|err| err.to_string())?;
    let blocks = value
        .get("content")
        .and_then(Value::as_array)
        .ok_or("no `content` array in the response")?;
    let text: String = blocks
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect();
    Ok(Parsed {
        text,
        tool_calls: anthropic_tools::parse_calls(blocks)?,
        finish_reason: value
            .get("stop_reason")
            .and_then(Value::as_str)
            .map(str::to_owned),
        usage: value
            .get("usage")
            .map(|usage| WireUsage::read(usage).usage())
            .unwrap_or_default(),
    })
}

/// Removes a Markdown code fence around a JSON answer, which models add despite instructions.
pub(crate) fn strip_json_fence(text: &mut String) {
    let trimmed = text.trim();
    let Some(inner) = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.strip_suffix("```"))
    else {
        return;
    };
    *text = inner.trim().to_owned();
}

/// State of a streamed message: `message_start` carries input usage, `content_block_delta`
/// the text, `message_delta` the stop reason and output usage, `message_stop` ends it.
#[derive(Debug, Default)]
pub(crate) struct StreamState {
    pub parsed: Parsed,
    pub done: bool,
    /// Whether a content block delta (text, tool input or thinking) arrived; `ping` and
    /// `message_start` events do not count.
    pub started: bool,
    usage: WireUsage,
    tool_calls: anthropic_tools::StreamedCalls,
    /// The answer tool's name ([`answer_tool`]): its input pieces are the answer's text.
    answer_tool: Option<String>,
}

impl StreamState {
    /// A stream whose answer is the input of the tool `name` ([`answer_tool`]): its
    /// `input_json_delta` pieces are passed on as text as they arrive.
    pub fn answering_with(name: Option<&str>) -> Self {
        Self {
            answer_tool: name.map(str::to_owned),
            ..Self::default()
        }
    }

    pub fn on_event(&mut self, event: &SseEvent) -> Result<Option<String>, EventError> {
        if event.data.trim().is_empty() {
            return Ok(None);
        }
        // Text deltas are most of a stream: read typed, not as a `Value` tree each.
        // Only an object: serde would also read a struct from an array of its fields.
        if event.data.trim_start().starts_with('{')
            && let Ok(typed) = serde_json::from_str::<TextDeltaEvent>(&event.data)
            && typed.kind == "content_block_delta"
            && typed.delta.kind == "text_delta"
        {
            self.started = true;
            let piece = typed.delta.text;
            if piece.is_empty() {
                return Ok(None);
            }
            self.parsed.text.push_str(&piece);
            return Ok(Some(piece));
        }
        let value: Value = serde_json::from_str(&event.data)
            .map_err(|err| EventError::Malformed(format!("bad stream event: {err}")))?;
        self.on_value(&value, &event.event)
    }

    /// An event read as a `Value`: every kind of event.
    fn on_value(&mut self, value: &Value, name: &str) -> Result<Option<String>, EventError> {
        let kind = value.get("type").and_then(Value::as_str).unwrap_or(name);
        match kind {
            "message_start" => {
                if let Some(found) = value.pointer("/message/usage") {
                    self.usage = WireUsage::read(found);
                    self.parsed.usage = self.usage.usage();
                }
                Ok(None)
            }
            "content_block_start" => {
                self.tool_calls.on_block_start(value);
                Ok(None)
            }
            "content_block_delta" if self.tool_calls.on_delta(value) => {
                self.started = true;
                let piece = value.pointer("/delta/partial_json").and_then(Value::as_str);
                let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
                let answering = self.answer_tool.is_some()
                    && self.tool_calls.name_at(index) == self.answer_tool.as_deref();
                Ok(piece
                    .filter(|piece| answering && !piece.is_empty())
                    .map(str::to_owned))
            }
            "content_block_delta" => match value.pointer("/delta/text").and_then(Value::as_str) {
                Some(piece) if !piece.is_empty() => {
                    self.started = true;
                    self.parsed.text.push_str(piece);
                    Ok(Some(piece.to_owned()))
                }
                _ => {
                    // A thinking or signature delta: the model is writing.
                    self.started = true;
                    Ok(None)
                }
            },
            "message_delta" => {
                if let Some(reason) = value.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.parsed.finish_reason = Some(reason.to_owned());
                }
                if let Some(found) = value.get("usage") {
                    self.usage.update(found);
                    self.parsed.usage = self.usage.usage();
                }
                Ok(None)
            }
            "message_stop" => {
                self.done = true;
                Ok(None)
            }
            "error" => Err(EventError::Provider(
                value
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("no message")
                    .to_owned(),
            )),
            _ => Ok(None),
        }
    }

    /// What the stream said, tool calls included, the answer tool's input as the text.
    pub fn into_parsed(self) -> Parsed {
        let mut parsed = Parsed {
            tool_calls: self.tool_calls.finish(),
            ..self.parsed
        };
        if let Some(name) = &self.answer_tool {
            answer_from_tool(&mut parsed, name);
        }
        parsed
    }
}

/// A `content_block_delta` event as a text delta has it; other events do not fit it.
#[derive(serde::Deserialize)]
struct TextDeltaEvent {
    #[serde(rename = "type")]
    kind: String,
    delta: TextDelta,
}

#[derive(serde::Deserialize)]
struct TextDelta {
    #[serde(rename = "type")]
    kind: String,
    text: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The typed reading of a text delta and the `Value` one agree.
    #[test]
    fn typed_and_value_readings_of_text_deltas_agree() {
        let events = [
            r#"{"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a \"b\""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"x"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":7}}"#,
            r#"["content_block_delta",["text_delta","not an object"]]"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":4}}"#,
        ];
        let mut typed = StreamState::default();
        let mut by_value = StreamState::default();
        for (index, data) in events.iter().enumerate() {
            let event = SseEvent {
                event: String::new(),
                data: (*data).to_owned(),
            };
            let value: Value = serde_json::from_str(data).unwrap();
            assert_eq!(
                typed.on_event(&event).unwrap(),
                by_value.on_value(&value, "").unwrap(),
                "event {index}"
            );
            assert_eq!(typed.started, by_value.started, "event {index}");
            assert_eq!(typed.parsed, by_value.parsed, "event {index}");
        }
        assert_eq!(typed.parsed.text, "a \"b\"");
    }

    #[test]
    fn system_prompt_is_cached_and_options_mapped() {
        let request = ChatRequest::new("x")
            .system("stable prefix")
            .user("hi")
            .stop("END")
            .temperature(0.0);
        let body = request_body(&request, "claude-sonnet-4-5", false, true);
        assert_eq!(body["system"][0]["text"], "stable prefix");
        assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        assert_eq!(body["stop_sequences"][0], "END");
        assert!(body.get("stream").is_none());
    }

    #[test]
    fn multi_turn_history_gets_a_cache_breakpoint_single_shot_does_not() {
        let single = request_body(&ChatRequest::new("x").user("q"), "m", false, true);
        assert_eq!(single["messages"][0]["content"], "q");
        let turns = ChatRequest::new("x").user("q1").assistant("a1").user("q2");
        let body = request_body(&turns, "m", false, true);
        assert_eq!(body["messages"][0]["content"], "q1");
        assert_eq!(body["messages"][2]["content"][0]["text"], "q2");
        assert_eq!(
            body["messages"][2]["content"][0]["cache_control"]["type"],
            "ephemeral"
        );
    }

    #[test]
    fn text_blocks_are_joined() {
        let body = br#"{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],
            "stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":2}}"#;
        let parsed = parse_response(body).unwrap();
        assert_eq!(parsed.text, "ab");
        assert_eq!(parsed.finish_reason.as_deref(), Some("end_turn"));
    }

    #[test]
    fn system_messages_join_the_system_prompt() {
        let mut request = ChatRequest::new("x").system("first").user("q");
        request.messages.insert(0, Message::system("second"));
        let body = request_body(&request, "m", false, true);
        assert_eq!(body["system"][0]["text"], "first\n\nsecond");
        assert_eq!(body["messages"].as_array().unwrap().len(), 1);
        assert_eq!(body["messages"][0]["role"], "user");
    }

    #[test]
    fn json_fence_is_removed() {
        let mut text = "```json\n{\"a\": 1}\n```".to_owned();
        strip_json_fence(&mut text);
        assert_eq!(text, "{\"a\": 1}");
    }
}
