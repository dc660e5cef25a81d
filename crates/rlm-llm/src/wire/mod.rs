//! The two wire formats: request bodies, response parsing, and streaming decoders.

pub(crate) mod anthropic;
mod anthropic_cache;
mod anthropic_tools;
pub(crate) mod openai;
mod openai_tools;
pub(crate) mod responses;

use crate::ToolCall;
use crate::capabilities::{MaxTokensField, ModelCapabilities, OpenAiApi};
use crate::provider::ProviderKind;
use crate::sse::SseEvent;
use crate::{ChatRequest, Usage};

/// What a finished response says, in provider-neutral form.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Parsed {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: Option<String>,
    pub usage: Usage,
}

/// The shape of one call's request and answer: the provider's kind, and for OpenAI the
/// endpoint that serves the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    /// OpenAI chat completions (and every compatible server).
    Chat,
    /// OpenAI's Responses API.
    Responses,
    /// Anthropic Messages.
    Anthropic,
}

impl Wire {
    pub fn of(kind: ProviderKind, capabilities: ModelCapabilities) -> Self {
        match (kind, capabilities.api) {
            (ProviderKind::Anthropic, _) => Self::Anthropic,
            (ProviderKind::OpenAi, OpenAiApi::ChatCompletions) => Self::Chat,
            (ProviderKind::OpenAi, OpenAiApi::Responses) => Self::Responses,
        }
    }

    /// The endpoint after the provider's base URL.
    pub fn path(self) -> &'static str {
        match self {
            Self::Chat => "/chat/completions",
            Self::Responses => "/responses",
            Self::Anthropic => "/v1/messages",
        }
    }

    /// Whether requests can carry stop sequences at all (the Responses API has none).
    pub fn has_stop(self) -> bool {
        self != Self::Responses
    }
}

/// The request body for `wire`, as the bytes sent. `model` is the name without the provider
/// prefix. `prompt_cache` places Anthropic's cache breakpoints; OpenAI-compatible servers
/// cache prefixes on their own, and the body never carries anything per call before the
/// messages that would break a prefix. Plain chat requests are written without a `Value` tree.
pub(crate) fn request_bytes(
    wire: Wire,
    request: &ChatRequest,
    model: &str,
    stream: bool,
    max_tokens_field: MaxTokensField,
    prompt_cache: bool,
) -> serde_json::Result<Vec<u8>> {
    let body = match wire {
        Wire::Chat => {
            if let Some(bytes) =
                openai::plain_request_bytes(request, model, stream, max_tokens_field)
            {
                return bytes;
            }
            openai::request_body(request, model, stream, max_tokens_field)
        }
        Wire::Responses => responses::request_body(request, model, stream),
        Wire::Anthropic => anthropic::request_body(request, model, stream, prompt_cache),
    };
    serde_json::to_vec(&body)
}

/// Parses a complete (non-streamed) response body; on Anthropic, the input of the tool
/// `answer_tool` is the answer ([`anthropic::answer_tool`]).
pub(crate) fn parse_response(
    wire: Wire,
    body: &[u8],
    answer_tool: Option<&str>,
) -> Result<Parsed, String> {
    match wire {
        Wire::Chat => openai::parse_response(body),
        Wire::Responses => responses::parse_response(body),
        Wire::Anthropic => {
            let mut parsed = anthropic::parse_response(body)?;
            if let Some(name) = answer_tool {
                anthropic::answer_from_tool(&mut parsed, name);
            }
            Ok(parsed)
        }
    }
}

/// Cleans an answer given in JSON mode: Anthropic has no enforced JSON mode, and models there
/// sometimes wrap the object in a Markdown fence.
pub(crate) fn clean_json_answer(kind: ProviderKind, text: &mut String) {
    if kind == ProviderKind::Anthropic {
        anthropic::strip_json_fence(text);
    }
}

/// Why a stream event could not be used.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum EventError {
    /// The event is not what the format promises.
    Malformed(String),
    /// The provider sent an error event (e.g. Anthropic `overloaded_error` mid-stream).
    Provider(String),
}

/// Decodes the events of a streamed response.
#[derive(Debug)]
pub(crate) enum StreamDecoder {
    OpenAi(openai::StreamState),
    Responses(responses::StreamState),
    Anthropic(anthropic::StreamState),
}

impl StreamDecoder {
    /// A decoder for `wire`; on Anthropic, `answer_tool` names the tool whose input is the
    /// answer ([`anthropic::answer_tool`]).
    pub fn new(wire: Wire, answer_tool: Option<&str>) -> Self {
        match wire {
            Wire::Chat => Self::OpenAi(openai::StreamState::default()),
            Wire::Responses => Self::Responses(responses::StreamState::default()),
            Wire::Anthropic => Self::Anthropic(anthropic::StreamState::answering_with(answer_tool)),
        }
    }

    /// Handles one event; returns new answer text, if any.
    pub fn on_event(&mut self, event: &SseEvent) -> Result<Option<String>, EventError> {
        match self {
            Self::OpenAi(state) => state.on_event(event),
            Self::Responses(state) => state.on_event(event),
            Self::Anthropic(state) => state.on_event(event),
        }
    }

    /// Whether the model has begun writing its answer (text, a tool call or reasoning), as
    /// opposed to the stream's opening events.
    pub fn started(&self) -> bool {
        match self {
            Self::OpenAi(state) => state.started,
            Self::Responses(state) => state.started,
            Self::Anthropic(state) => state.started,
        }
    }

    /// Whether the final event arrived.
    pub fn is_done(&self) -> bool {
        match self {
            Self::OpenAi(state) => state.done,
            Self::Responses(state) => state.done,
            Self::Anthropic(state) => state.done,
        }
    }

    pub fn finish(self) -> Parsed {
        match self {
            Self::OpenAi(state) => state.into_parsed(),
            Self::Responses(state) => state.into_parsed(),
            Self::Anthropic(state) => state.into_parsed(),
        }
    }
}

/// The human-readable message of an error body (`{"error":{"message":...}}` in both formats),
/// else the start of the raw body.
pub(crate) fn error_message(body: &[u8]) -> String {
    let from_json = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|value| {
            value
                .pointer("/error/message")
                .and_then(|m| m.as_str())
                .map(str::to_owned)
        });
    let message = from_json.unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
    // Masked before it is cut, so no key loses its tail to the cut and escapes the mask.
    truncate(&crate::secrets::mask_provider_text(message.trim()), 300)
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Reads a token count that may be absent or null.
pub(crate) fn count(value: &serde_json::Value, pointer: &str) -> u64 {
    value
        .pointer(pointer)
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The usage a stream of `data:` payloads ends with.
    fn streamed(wire: Wire, events: &[&str]) -> Usage {
        let mut decoder = StreamDecoder::new(wire, None);
        for data in events {
            let event = SseEvent {
                event: String::new(),
                data: (*data).to_owned(),
            };
            decoder.on_event(&event).unwrap();
        }
        assert!(decoder.is_done());
        decoder.finish().usage
    }

    /// Pins the one meaning of [`Usage::input_tokens`]: every prompt token, cached or not, with
    /// cache reads and writes as parts of it. A call with 100 prompt tokens, 60 of them read
    /// from the cache (and, on Anthropic, 30 written to it), says 100 whichever wire it came
    /// from, whole or streamed. OpenAI's `prompt_tokens` already include the cached ones;
    /// Anthropic's `input_tokens` leave both kinds out.
    #[test]
    fn input_tokens_count_every_prompt_token_on_both_wires() {
        let openai = Usage {
            input_tokens: 100,
            output_tokens: 7,
            cache_read_tokens: 60,
            cache_write_tokens: 0,
        };
        let anthropic = Usage {
            cache_write_tokens: 30,
            ..openai
        };
        let openai_usage = r#""usage":{"prompt_tokens":100,"completion_tokens":7,
            "prompt_tokens_details":{"cached_tokens":60}}"#;
        let anthropic_usage = r#""usage":{"input_tokens":10,"output_tokens":7,
            "cache_read_input_tokens":60,"cache_creation_input_tokens":30}"#;

        let body = format!(r#"{{"choices":[{{"message":{{"content":"ok"}}}}],{openai_usage}}}"#);
        let whole = parse_response(Wire::Chat, body.as_bytes(), None).unwrap();
        assert_eq!(whole.usage, openai);
        let stream = streamed(
            Wire::Chat,
            &[
                r#"{"choices":[{"delta":{"content":"ok"}}]}"#,
                &format!(r#"{{"choices":[],{openai_usage}}}"#),
                "[DONE]",
            ],
        );
        assert_eq!(stream, openai);

        let body = format!(r#"{{"content":[{{"type":"text","text":"ok"}}],{anthropic_usage}}}"#);
        let whole = parse_response(Wire::Anthropic, body.as_bytes(), None).unwrap();
        assert_eq!(whole.usage, anthropic);
        let stream = streamed(
            Wire::Anthropic,
            &[
                &format!(r#"{{"type":"message_start","message":{{{anthropic_usage}}}}}"#),
                r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"ok"}}"#,
                r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}"#,
                r#"{"type":"message_stop"}"#,
            ],
        );
        assert_eq!(stream, anthropic);

        assert_eq!(openai.uncached_input_tokens(), 40);
        assert_eq!(anthropic.uncached_input_tokens(), 10);
        assert_eq!(anthropic.total(), 107);
    }
}
