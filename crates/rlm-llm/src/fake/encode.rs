//! Encodes fake answers in the two wire formats, whole or as SSE events.

use serde_json::{Value, json};

use crate::provider::ProviderKind;
use crate::types::Usage;

/// A complete (non-streamed) success body.
pub(crate) fn full_body(
    wire: ProviderKind,
    model: &str,
    text: &str,
    finish: &str,
    usage: &Usage,
) -> Value {
    match wire {
        ProviderKind::OpenAi => json!({
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
        ProviderKind::Anthropic => json!({
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
    json!({
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total(),
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens},
    })
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
pub(crate) fn error_body(wire: ProviderKind, status: u16, message: &str) -> Value {
    match wire {
        ProviderKind::OpenAi => json!({
            "error": {"message": message, "type": "fake_error", "code": status}
        }),
        ProviderKind::Anthropic => {
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
pub(crate) fn reasoning_refusal(wire: ProviderKind, body: &Value) -> Option<Value> {
    if wire != ProviderKind::OpenAi {
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

pub(crate) fn event(name: Option<&str>, data: &Value) -> String {
    match name {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

/// Splits text into up to `parts` pieces on character boundaries.
pub(crate) fn pieces(text: &str, parts: usize) -> Vec<&str> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    if chars.is_empty() {
        return Vec::new();
    }
    let per = chars.len().div_ceil(parts.max(1));
    chars
        .chunks(per)
        .map(|chunk| {
            let start = chunk[0].0;
            let last = chunk[chunk.len() - 1];
            &text[start..last.0 + last.1.len_utf8()]
        })
        .collect()
}

/// The SSE events before the text (one string per event).
pub(crate) fn stream_head(wire: ProviderKind, model: &str, usage: &Usage) -> Vec<String> {
    match wire {
        ProviderKind::OpenAi => vec![event(
            None,
            &json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": model,
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]}),
        )],
        ProviderKind::Anthropic => {
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
pub(crate) fn stream_delta(wire: ProviderKind, model: &str, piece: &str) -> String {
    match wire {
        ProviderKind::OpenAi => event(
            None,
            &json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": model,
                "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]}),
        ),
        ProviderKind::Anthropic => event(
            Some("content_block_delta"),
            &json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": piece}}),
        ),
    }
}

/// The SSE events after the text.
pub(crate) fn stream_tail(
    wire: ProviderKind,
    model: &str,
    finish: &str,
    usage: &Usage,
) -> Vec<String> {
    match wire {
        ProviderKind::OpenAi => vec![
            event(
                None,
                &json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": model,
                    "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
            ),
            event(
                None,
                &json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": model,
                    "choices": [], "usage": openai_usage(usage)}),
            ),
            "data: [DONE]\n\n".to_owned(),
        ],
        ProviderKind::Anthropic => vec![
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
pub(crate) fn stream_error(wire: ProviderKind, message: &str) -> String {
    match wire {
        ProviderKind::OpenAi => event(
            None,
            &json!({"error": {"message": message, "type": "server_error"}}),
        ),
        ProviderKind::Anthropic => event(
            Some("error"),
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": message}}),
        ),
    }
}
