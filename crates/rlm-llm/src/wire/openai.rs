//! OpenAI-compatible chat completions (`POST {base}/chat/completions`).

use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{EventError, Parsed, count, openai_tools};
use crate::capabilities::MaxTokensField;
use crate::sse::SseEvent;
use crate::{ChatRequest, Role, Usage};

/// `response_format`: the schema, strict, when the request has one (the caller has already
/// dropped it for a model that refuses it), else JSON mode when asked.
pub(crate) fn response_format(request: &ChatRequest) -> Option<Value> {
    match &request.json_schema {
        Some(schema) => Some(json!({"type": "json_schema", "json_schema": {
            "name": schema.name, "strict": true, "schema": schema.schema}})),
        None => request.json.then(|| json!({"type": "json_object"})),
    }
}

pub(crate) fn request_body(
    request: &ChatRequest,
    model: &str,
    stream: bool,
    max_tokens_field: MaxTokensField,
) -> Value {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if let Some(system) = &request.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    for message in &request.messages {
        messages.push(openai_tools::message(message));
    }
    let mut body = serde_json::Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(messages));
    if let Some(temperature) = request.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(max_tokens) = request.max_tokens {
        // Reasoning models reject the older `max_tokens`; other OpenAI-compatible servers
        // (Ollama, vLLM, llama.cpp) only know `max_tokens` (see `capabilities.rs`).
        let field = match max_tokens_field {
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
            MaxTokensField::MaxTokens => "max_tokens",
        };
        body.insert(field.into(), json!(max_tokens));
    }
    if !request.stop.is_empty() {
        body.insert("stop".into(), json!(request.stop));
    }
    if let Some(format) = response_format(request) {
        body.insert("response_format".into(), format);
    }
    openai_tools::add_tools(&mut body, request);
    if stream {
        body.insert("stream".into(), json!(true));
        // Without this the stream carries no token counts.
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Value::Object(body)
}

/// [`request_body`] written straight to bytes for a request of plain messages (every extractor
/// and planner call, and a report's first round): the same JSON, without a `Value` tree that
/// copies the prompt and hashes every key. `None` for a request with tool turns (assistant
/// tool calls, tool results).
pub(crate) fn plain_request_bytes(
    request: &ChatRequest,
    model: &str,
    stream: bool,
    max_tokens_field: MaxTokensField,
) -> Option<serde_json::Result<Vec<u8>>> {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if let Some(system) = &request.system {
        messages.push(PlainMessage {
            role: "system",
            content: system,
        });
    }
    for message in &request.messages {
        let role = match message.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant if message.tool_calls.is_empty() => "assistant",
            Role::Assistant | Role::Tool => return None,
        };
        messages.push(PlainMessage {
            role,
            content: &message.content,
        });
    }
    let (max_tokens, max_completion_tokens) = match max_tokens_field {
        MaxTokensField::MaxTokens => (request.max_tokens, None),
        MaxTokensField::MaxCompletionTokens => (None, request.max_tokens),
    };
    let body = PlainBody {
        model,
        messages,
        // As `json!` writes an f32: widened to f64.
        temperature: request.temperature.map(f64::from),
        max_tokens,
        max_completion_tokens,
        stop: &request.stop,
        response_format: response_format(request),
        tools: request
            .tools
            .iter()
            .map(|tool| PlainTool {
                r#type: "function",
                function: PlainFunction {
                    name: &tool.name,
                    description: &tool.description,
                    parameters: &tool.parameters,
                },
            })
            .collect(),
        tool_choice: request.tool_choice.as_ref().map(openai_tools::choice),
        stream: stream.then_some(true),
        stream_options: stream.then_some(StreamOptions {
            include_usage: true,
        }),
    };
    Some(serde_json::to_vec(&body))
}

#[derive(Serialize)]
struct PlainBody<'a> {
    model: &'a str,
    messages: Vec<PlainMessage<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<PlainTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

#[derive(Serialize)]
struct PlainMessage<'a> {
    role: &'static str,
    content: &'a str,
}

#[derive(Serialize)]
struct PlainTool<'a> {
    r#type: &'static str,
    function: PlainFunction<'a>,
}

#[derive(Serialize)]
struct PlainFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// OpenAI's `prompt_tokens` already count the cached ones (`prompt_tokens_details`), which
/// is the meaning of [`Usage::input_tokens`]. OpenAI does not bill cache writes.
fn usage(value: &Value) -> Usage {
    Usage {
        input_tokens: count(value, "/prompt_tokens"),
        output_tokens: count(value, "/completion_tokens"),
        cache_read_tokens: count(value, "/prompt_tokens_details/cached_tokens"),
        cache_write_tokens: 0,
    }
}

pub(crate) fn parse_response(body: &[u8]) -> Result<Parsed, String> {
    let value: Value = serde_json::from_slice(body).map_err(|err| err.to_string())?;
    let choice = value
        .pointer("/choices/0")
        .ok_or("no `choices[0]` in the response")?;
    let text = match choice.pointer("/message/content") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => return Err(format!("`message.content` is not a string: {other}")),
    };
    let tool_calls = choice
        .get("message")
        .map(openai_tools::parse_calls)
        .transpose()?
        .unwrap_or_default();
    Ok(Parsed {
        text,
        tool_calls,
        finish_reason: choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_owned),
        usage: value.get("usage").map(usage).unwrap_or_default(),
    })
}

/// State of a streamed completion: chunks carry `choices[0].delta.content`; with
/// `include_usage` a last chunk has empty `choices` and the usage; `data: [DONE]` ends it.
#[derive(Debug, Default)]
pub(crate) struct StreamState {
    pub parsed: Parsed,
    pub done: bool,
    /// Whether the model has begun its answer: text, a tool call or reasoning arrived (a
    /// role-only first chunk or a usage chunk does not count).
    pub started: bool,
    tool_calls: openai_tools::StreamedCalls,
}

impl StreamState {
    pub fn on_event(&mut self, event: &SseEvent) -> Result<Option<String>, EventError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(None);
        }
        if data.is_empty() {
            return Ok(None);
        }
        // Only an object: serde would also read a struct from an array of its fields.
        if data.starts_with('{')
            && let Ok(chunk) = serde_json::from_str::<TypedChunk>(data)
            && chunk.is_plain()
        {
            return Ok(self.on_typed(chunk));
        }
        let value: Value = serde_json::from_str(data)
            .map_err(|err| EventError::Malformed(format!("bad stream chunk: {err}")))?;
        self.on_value(&value)
    }

    /// A chunk read as a `Value`: every shape a server may send.
    fn on_value(&mut self, value: &Value) -> Result<Option<String>, EventError> {
        if let Some(message) = value
            .get("error")
            .and_then(|error| error.get("message"))
            .and_then(Value::as_str)
        {
            return Err(EventError::Provider(message.to_owned()));
        }
        if let Some(found) = value.get("usage").filter(|u| !u.is_null()) {
            self.parsed.usage = usage(found);
        }
        let Some(choice) = value.get("choices").and_then(|choices| choices.get(0)) else {
            return Ok(None);
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.parsed.finish_reason = Some(reason.to_owned());
        }
        if let Some(delta) = choice.get("delta") {
            self.tool_calls.on_delta(delta);
            // `reasoning_content` (llama.cpp, DeepSeek, vLLM) and `reasoning` (OpenRouter,
            // Ollama) carry a thinking model's tokens before its answer.
            let writes = |field: &str| match delta.get(field) {
                None | Some(Value::Null) => false,
                Some(Value::String(text)) => !text.is_empty(),
                Some(Value::Array(items)) => !items.is_empty(),
                Some(_) => true,
            };
            if ["content", "tool_calls", "reasoning_content", "reasoning"]
                .into_iter()
                .any(writes)
            {
                self.started = true;
            }
        }
        match choice
            .get("delta")
            .and_then(|delta| delta.get("content"))
            .and_then(Value::as_str)
        {
            Some(piece) if !piece.is_empty() => {
                self.parsed.text.push_str(piece);
                Ok(Some(piece.to_owned()))
            }
            _ => Ok(None),
        }
    }

    /// A chunk read through [`TypedChunk`]: what [`Self::on_event`] does with the same chunk
    /// read as a `Value`.
    fn on_typed(&mut self, chunk: TypedChunk) -> Option<String> {
        if let Some(found) = chunk.usage {
            self.parsed.usage = found.usage();
        }
        let choice = chunk.choices?.into_iter().next()?;
        if let Some(reason) = choice.finish_reason {
            self.parsed.finish_reason = Some(reason);
        }
        let delta = choice.delta?;
        let writes = |field: &Option<String>| field.as_ref().is_some_and(|text| !text.is_empty());
        if writes(&delta.content) || writes(&delta.reasoning_content) || writes(&delta.reasoning) {
            self.started = true;
        }
        let piece = delta.content.filter(|piece| !piece.is_empty())?;
        self.parsed.text.push_str(&piece);
        Some(piece)
    }

    /// What the stream said, tool calls included.
    pub fn into_parsed(self) -> Parsed {
        Parsed {
            tool_calls: self.tool_calls.finish(),
            ..self.parsed
        }
    }
}

/// The fields of a stream chunk the decoder reads, typed, so the chunks of a plain answer are
/// read without building a `Value` tree for each (they are most of a stream). A chunk this
/// view cannot take (a field of another type than these) or that [`TypedChunk::is_plain`]
/// refuses (an error, tool-call pieces) is read as a `Value`, so both ways mean the same.
#[derive(Deserialize)]
struct TypedChunk {
    #[serde(default)]
    error: Option<IgnoredAny>,
    #[serde(default)]
    usage: Option<TypedUsage>,
    #[serde(default)]
    choices: Option<Vec<TypedChoice>>,
}

impl TypedChunk {
    fn is_plain(&self) -> bool {
        self.error.is_none()
            && self.choices.iter().flatten().all(|choice| {
                choice
                    .delta
                    .as_ref()
                    .is_none_or(|delta| delta.tool_calls.is_none())
            })
    }
}

#[derive(Deserialize)]
struct TypedUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<TypedPromptDetails>,
}

impl TypedUsage {
    /// As [`usage`] reads the same object.
    fn usage(&self) -> Usage {
        Usage {
            input_tokens: self.prompt_tokens.unwrap_or(0),
            output_tokens: self.completion_tokens.unwrap_or(0),
            cache_read_tokens: self
                .prompt_tokens_details
                .as_ref()
                .and_then(|details| details.cached_tokens)
                .unwrap_or(0),
            cache_write_tokens: 0,
        }
    }
}

#[derive(Deserialize)]
struct TypedPromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct TypedChoice {
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(default)]
    delta: Option<TypedDelta>,
}

#[derive(Deserialize)]
struct TypedDelta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<IgnoredAny>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Message;

    #[test]
    fn body_carries_every_option() {
        let request = ChatRequest::new("x")
            .system("sys")
            .user("hi")
            .temperature(0.5)
            .max_tokens(9)
            .stop("END")
            .json(true);
        let body = request_body(&request, "gpt-4o", true, MaxTokensField::MaxTokens);
        assert_eq!(body["model"], "gpt-4o");
        assert_eq!(body["messages"][0]["role"], "system");
        assert_eq!(body["messages"][1]["content"], "hi");
        assert_eq!(body["max_tokens"], 9);
        assert_eq!(body["stop"][0], "END");
        assert_eq!(body["response_format"]["type"], "json_object");
        assert_eq!(body["stream_options"]["include_usage"], true);
    }

    /// The bytes written without a `Value` tree are the same JSON as [`request_body`].
    #[test]
    fn plain_bodies_read_as_the_value_body() {
        let mut later_system = ChatRequest::new("x").system("first").user("q");
        later_system.messages.push(Message::system("later"));
        let requests = [
            ChatRequest::new("x").user("hi"),
            ChatRequest::new("x")
                .system("sys \"quoted\" <chunk>\n")
                .user("q")
                .assistant("a")
                .user("q2")
                .temperature(0.7)
                .max_tokens(9)
                .stop("END")
                .json(true),
            later_system,
            ChatRequest::new("x")
                .user("q")
                .tool(crate::ToolDefinition::new(
                    "get_chunks",
                    "Reads chunks",
                    json!({"type": "object", "properties": {"ids": {"type": "array"}}}),
                ))
                .tool_choice(crate::ToolChoice::Tool("get_chunks".to_owned())),
            ChatRequest::new("x")
                .user("q")
                .tool_choice(crate::ToolChoice::Auto),
        ];
        for request in &requests {
            for stream in [false, true] {
                for field in [
                    MaxTokensField::MaxTokens,
                    MaxTokensField::MaxCompletionTokens,
                ] {
                    let bytes = plain_request_bytes(request, "gpt-4o", stream, field)
                        .expect("a plain request")
                        .unwrap();
                    let typed: Value = serde_json::from_slice(&bytes).unwrap();
                    assert_eq!(typed, request_body(request, "gpt-4o", stream, field));
                }
            }
        }
        let mut tool_turn = ChatRequest::new("x").user("q");
        tool_turn
            .messages
            .push(Message::tool_result("call_1", crate::ToolOutput::ok("42")));
        let plain = |request: &ChatRequest| {
            plain_request_bytes(request, "m", false, MaxTokensField::MaxTokens).is_some()
        };
        assert!(!plain(&tool_turn));
        let mut call_turn = ChatRequest::new("x").user("q");
        call_turn.messages.push(Message::assistant_tool_calls(
            "",
            vec![crate::ToolCall {
                id: "call_1".to_owned(),
                name: "f".to_owned(),
                arguments: "{}".to_owned(),
            }],
        ));
        assert!(!plain(&call_turn));
    }

    #[test]
    fn the_output_cap_takes_the_field_name_it_is_given() {
        let request = ChatRequest::new("x").user("q").max_tokens(7);
        let completion = MaxTokensField::MaxCompletionTokens;
        assert_eq!(
            request_body(&request, "o3-mini", false, completion)["max_completion_tokens"],
            7
        );
        assert!(
            request_body(&request, "o3-mini", false, completion)
                .get("max_tokens")
                .is_none()
        );
        let plain = MaxTokensField::MaxTokens;
        assert_eq!(
            request_body(&request, "qwen2.5:7b", false, plain)["max_tokens"],
            7
        );
    }

    #[test]
    fn a_stream_starts_with_the_first_token_not_the_role_chunk() {
        let mut state = StreamState::default();
        let event = |data: &str| SseEvent {
            event: String::new(),
            data: data.to_owned(),
        };
        for quiet in [
            r#"{"choices":[{"delta":{"role":"assistant","content":null}}]}"#,
            r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":3}}"#,
        ] {
            state.on_event(&event(quiet)).unwrap();
            assert!(!state.started, "{quiet}");
        }
        for data in [
            r#"{"choices":[{"delta":{"content":"Hi"}}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"Let me think"}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f"}}]}}]}"#,
        ] {
            let mut state = StreamState::default();
            state.on_event(&event(data)).unwrap();
            assert!(state.started, "{data}");
        }
    }

    /// The typed reading of a chunk and the `Value` one agree, whichever way a chunk goes.
    #[test]
    fn typed_and_value_readings_of_a_stream_agree() {
        let chunks = [
            r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"thinking"}}]}"#,
            r#"{"choices":[{"delta":{"content":"He said \"hi\"\n"},"logprobs":null}]}"#,
            r#"{"choices":[{"delta":{"content":["odd"]}}]}"#,
            r#"{"choices":null}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}],"usage":null}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3.0,"prompt_tokens_details":{"cached_tokens":4}}}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"prompt_tokens_details":null}}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"t","function":{"name":"f","arguments":"{}"}}]}}]}"#,
            r#"{"error":{"code":1}}"#,
            r#"[null,null,[{"delta":{"content":"not an object"}}]]"#,
        ];
        let event = |data: &str| SseEvent {
            event: String::new(),
            data: data.to_owned(),
        };
        let mut both = StreamState::default();
        let mut by_value = StreamState::default();
        for (index, data) in chunks.iter().enumerate() {
            let typed = both.on_event(&event(data)).unwrap();
            let value: Value = serde_json::from_str(data).unwrap();
            let mut value_only = std::mem::take(&mut by_value);
            let expected = value_only.on_value(&value).unwrap();
            by_value = value_only;
            assert_eq!(typed, expected, "chunk {index}");
            assert_eq!(both.started, by_value.started, "chunk {index}");
            assert_eq!(both.parsed, by_value.parsed, "chunk {index}");
        }
        assert_eq!(both.parsed.text, "He said \"hi\"\n");
        assert_eq!(both.parsed.usage.input_tokens, 12);
        assert_eq!(both.into_parsed().tool_calls.len(), 1);
        let mut state = StreamState::default();
        let err = state
            .on_event(&event(r#"{"error":{"message":"overloaded"}}"#))
            .unwrap_err();
        assert_eq!(err, EventError::Provider("overloaded".to_owned()));
    }

    #[test]
    fn system_messages_stay_in_place() {
        let mut request = ChatRequest::new("x").system("first").user("q");
        request.messages.push(Message::system("later"));
        let body = request_body(&request, "m", false, MaxTokensField::MaxTokens);
        assert_eq!(body["messages"][0]["role"], "system");
        assert_eq!(body["messages"][2]["role"], "system");
        assert_eq!(body["messages"][2]["content"], "later");
    }
}
