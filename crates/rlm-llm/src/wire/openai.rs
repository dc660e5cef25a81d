//! OpenAI-compatible chat completions (`POST {base}/chat/completions`).

use serde_json::{Value, json};

use super::{EventError, Parsed, count, openai_tools};
use crate::capabilities::MaxTokensField;
use crate::sse::SseEvent;
use crate::types::{ChatRequest, Usage};

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
    if request.json {
        body.insert("response_format".into(), json!({"type": "json_object"}));
    }
    openai_tools::add_tools(&mut body, request);
    if stream {
        body.insert("stream".into(), json!(true));
        // Without this the stream carries no token counts.
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Value::Object(body)
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
        let value: Value = serde_json::from_str(data)
            .map_err(|err| EventError::Malformed(format!("bad stream chunk: {err}")))?;
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

    /// What the stream said, tool calls included.
    pub fn into_parsed(self) -> Parsed {
        Parsed {
            tool_calls: self.tool_calls.finish(),
            ..self.parsed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Message;

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
