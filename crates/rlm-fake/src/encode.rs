//! Encodes fake answers in the two wire formats, whole or as SSE events.

use serde::Serialize;
use serde_json::{Value, json};

use crate::Wire;
use rlm_types::Usage;

/// A complete (non-streamed) success body.
pub(crate) fn full_body(wire: Wire, model: &str, text: &str, finish: &str, usage: &Usage) -> Value {
    match wire {
        Wire::OpenAi => json!({
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish,
            }],
            "usage": openai_usage(usage),
        }),
        Wire::Anthropic => json!({
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": finish,
            "stop_sequence": null,
            "usage": anthropic_usage(usage),
        }),
    }
}

/// `usage.input_tokens` counts every prompt token, as OpenAI's `prompt_tokens` do.
pub(crate) fn openai_usage(usage: &Usage) -> Value {
    serde_json::to_value(OpenAiUsage::of(usage)).unwrap_or_default()
}

/// Anthropic's `input_tokens` leave out cache reads and writes.
pub(crate) fn anthropic_usage(usage: &Usage) -> Value {
    json!({
        "input_tokens": usage.uncached_input_tokens(),
        "output_tokens": usage.output_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens,
    })
}

/// An error body in the wire format.
pub(crate) fn error_body(wire: Wire, status: u16, message: &str) -> Value {
    match wire {
        Wire::OpenAi => json!({
            "error": {"message": message, "type": "fake_error", "code": status}
        }),
        Wire::Anthropic => {
            let kind = match status {
                429 => "rate_limit_error",
                529 => "overloaded_error",
                400 => "invalid_request_error",
                401 => "authentication_error",
                _ => "api_error",
            };
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
    }
}

/// OpenAI's refusal of a parameter its reasoning models do not take, as the real API words it,
/// or `None` when the body sends none of them (the Anthropic endpoint refuses nothing).
pub(crate) fn reasoning_refusal(wire: Wire, body: &Value) -> Option<Value> {
    if wire != Wire::OpenAi {
        return None;
    }
    let refusal = |param: &str, code: &str, message: String| {
        json!({"error": {
            "message": message,
            "type": "invalid_request_error",
            "param": param,
            "code": code,
        }})
    };
    if body.get("stop").is_some_and(|stop| !stop.is_null()) {
        return Some(refusal(
            "stop",
            "unsupported_parameter",
            "Unsupported parameter: 'stop' is not supported with this model.".to_owned(),
        ));
    }
    if let Some(temperature) = body.get("temperature").and_then(Value::as_f64)
        && (temperature - 1.0).abs() > f64::EPSILON
    {
        return Some(refusal(
            "temperature",
            "unsupported_value",
            format!(
                "Unsupported value: 'temperature' does not support {temperature} with this model. \
                 Only the default (1) value is supported."
            ),
        ));
    }
    if body.get("max_tokens").is_some() {
        return Some(refusal(
            "max_tokens",
            "unsupported_parameter",
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use \
             'max_completion_tokens' instead."
                .to_owned(),
        ));
    }
    None
}

/// One SSE event. The data is written straight from `data` (no `Value` tree in between).
pub(crate) fn event(name: Option<&str>, data: &impl Serialize) -> String {
    let mut event = match name {
        Some(name) => format!("event: {name}\ndata: "),
        None => "data: ".to_owned(),
    };
    // Writing to a String cannot fail, and the fake's payloads have string keys.
    let data = serde_json::to_string(data).unwrap_or_default();
    event.push_str(&data);
    event.push_str("\n\n");
    event
}

/// An OpenAI `chat.completion.chunk`, typed: a streamed answer is several of them per call.
#[derive(Serialize)]
struct OpenAiChunk<'a> {
    id: &'static str,
    object: &'static str,
    model: &'a str,
    choices: Vec<OpenAiChunkChoice<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<OpenAiUsage>,
}

impl<'a> OpenAiChunk<'a> {
    fn new(model: &'a str, choice: Option<OpenAiChunkChoice<'a>>, usage: Option<&Usage>) -> Self {
        Self {
            id: "chatcmpl-fake",
            object: "chat.completion.chunk",
            model,
            choices: choice.into_iter().collect(),
            usage: usage.map(OpenAiUsage::of),
        }
    }
}

#[derive(Serialize)]
struct OpenAiChunkChoice<'a> {
    index: u32,
    delta: OpenAiDelta<'a>,
    finish_reason: Option<&'a str>,
}

impl<'a> OpenAiChunkChoice<'a> {
    /// The only choice the fake streams (index 0).
    fn first(
        role: Option<&'static str>,
        content: Option<&'a str>,
        finish: Option<&'a str>,
    ) -> Self {
        Self {
            index: 0,
            delta: OpenAiDelta { role, content },
            finish_reason: finish,
        }
    }
}

#[derive(Serialize)]
struct OpenAiDelta<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'a str>,
}

#[derive(Serialize)]
struct OpenAiUsage {
    prompt_tokens: u64,
    completion_tokens: u64,
    total_tokens: u64,
    prompt_tokens_details: OpenAiCachedTokens,
}

#[derive(Serialize)]
struct OpenAiCachedTokens {
    cached_tokens: u64,
}

impl OpenAiUsage {
    /// `usage.input_tokens` counts every prompt token, as OpenAI's `prompt_tokens` do.
    fn of(usage: &Usage) -> Self {
        Self {
            prompt_tokens: usage.input_tokens,
            completion_tokens: usage.output_tokens,
            total_tokens: usage.total(),
            prompt_tokens_details: OpenAiCachedTokens {
                cached_tokens: usage.cache_read_tokens,
            },
        }
    }
}

/// An Anthropic `content_block_delta` of text.
#[derive(Serialize)]
struct AnthropicTextDelta<'a> {
    r#type: &'static str,
    index: u32,
    delta: AnthropicText<'a>,
}

#[derive(Serialize)]
struct AnthropicText<'a> {
    r#type: &'static str,
    text: &'a str,
}

/// Splits text into up to `parts` pieces of about equal bytes, cut on character boundaries.
pub(crate) fn pieces(text: &str, parts: usize) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    let per = text.len().div_ceil(parts.max(1));
    let mut pieces = Vec::with_capacity(parts);
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + per).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        pieces.push(&text[start..end]);
        start = end;
    }
    pieces
}

/// The SSE events before the text (one string per event).
pub(crate) fn stream_head(wire: Wire, model: &str, usage: &Usage) -> Vec<String> {
    match wire {
        Wire::OpenAi => vec![event(
            None,
            &OpenAiChunk::new(
                model,
                Some(OpenAiChunkChoice::first(Some("assistant"), Some(""), None)),
                None,
            ),
        )],
        Wire::Anthropic => {
            let mut start_usage = anthropic_usage(usage);
            start_usage["output_tokens"] = json!(1);
            vec![
                event(
                    Some("message_start"),
                    &json!({"type": "message_start", "message": {"id": "msg_fake", "type": "message",
                        "role": "assistant", "model": model, "content": [], "stop_reason": null,
                        "usage": start_usage}}),
                ),
                event(
                    Some("content_block_start"),
                    &json!({"type": "content_block_start", "index": 0,
                        "content_block": {"type": "text", "text": ""}}),
                ),
                event(Some("ping"), &json!({"type": "ping"})),
            ]
        }
    }
}

/// One SSE event carrying a piece of text.
pub(crate) fn stream_delta(wire: Wire, model: &str, piece: &str) -> String {
    match wire {
        Wire::OpenAi => event(
            None,
            &OpenAiChunk::new(
                model,
                Some(OpenAiChunkChoice::first(None, Some(piece), None)),
                None,
            ),
        ),
        Wire::Anthropic => event(
            Some("content_block_delta"),
            &AnthropicTextDelta {
                r#type: "content_block_delta",
                index: 0,
                delta: AnthropicText {
                    r#type: "text_delta",
                    text: piece,
                },
            },
        ),
    }
}

/// The SSE events after the text.
pub(crate) fn stream_tail(wire: Wire, model: &str, finish: &str, usage: &Usage) -> Vec<String> {
    match wire {
        Wire::OpenAi => vec![
            event(
                None,
                &OpenAiChunk::new(
                    model,
                    Some(OpenAiChunkChoice::first(None, None, Some(finish))),
                    None,
                ),
            ),
            event(None, &OpenAiChunk::new(model, None, Some(usage))),
            "data: [DONE]\n\n".to_owned(),
        ],
        Wire::Anthropic => vec![
            event(
                Some("content_block_stop"),
                &json!({"type": "content_block_stop", "index": 0}),
            ),
            event(
                Some("message_delta"),
                &json!({"type": "message_delta", "delta": {"stop_reason": finish, "stop_sequence": null},
                    "usage": {"output_tokens": usage.output_tokens}}),
            ),
            event(Some("message_stop"), &json!({"type": "message_stop"})),
        ],
    }
}

/// A provider error event inside a stream.
pub(crate) fn stream_error(wire: Wire, message: &str) -> String {
    match wire {
        Wire::OpenAi => event(
            None,
            &json!({"error": {"message": message, "type": "server_error"}}),
        ),
        Wire::Anthropic => event(
            Some("error"),
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": message}}),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_the_text_on_character_boundaries() {
        assert_eq!(pieces("abcdefghij", 4), ["abc", "def", "ghi", "j"]);
        let split = pieces("héllo wörld", 3);
        assert_eq!(split.len(), 3);
        assert_eq!(split.concat(), "héllo wörld");
        assert_eq!(pieces("ab", 4), ["a", "b"]);
        assert!(pieces("", 4).is_empty());
    }

    #[test]
    fn typed_stream_events_read_as_the_wire_format() {
        let usage = Usage {
            input_tokens: 10,
            output_tokens: 3,
            cache_read_tokens: 4,
            cache_write_tokens: 0,
        };
        let data = |event: &str| -> Value {
            serde_json::from_str(event.strip_prefix("data: ").unwrap().trim_end()).unwrap()
        };
        let head = data(&stream_head(Wire::OpenAi, "m", &usage)[0]);
        assert_eq!(head["choices"][0]["delta"]["role"], "assistant");
        assert_eq!(head["object"], "chat.completion.chunk");
        let delta = data(&stream_delta(Wire::OpenAi, "m", "a \"quoted\" piece"));
        assert_eq!(
            delta["choices"][0]["delta"]["content"],
            "a \"quoted\" piece"
        );
        assert!(delta["choices"][0]["finish_reason"].is_null());
        let tail = stream_tail(Wire::OpenAi, "m", "stop", &usage);
        assert_eq!(data(&tail[0])["choices"][0]["finish_reason"], "stop");
        assert_eq!(data(&tail[0])["choices"][0]["delta"], json!({}));
        let usage_chunk = data(&tail[1]);
        assert_eq!(usage_chunk["choices"], json!([]));
        assert_eq!(usage_chunk["usage"]["total_tokens"], 13);
        assert_eq!(
            usage_chunk["usage"]["prompt_tokens_details"]["cached_tokens"],
            4
        );
        assert_eq!(tail[2], "data: [DONE]\n\n");
        let anthropic = stream_delta(Wire::Anthropic, "m", "x");
        let body = anthropic
            .strip_prefix("event: content_block_delta\ndata: ")
            .unwrap();
        let body: Value = serde_json::from_str(body.trim_end()).unwrap();
        assert_eq!(body["delta"], json!({"type": "text_delta", "text": "x"}));
    }
}
