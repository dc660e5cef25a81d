//! The two wire formats: request bodies, response parsing, and streaming decoders.

pub(crate) mod anthropic;
pub(crate) mod openai;

use crate::provider::ProviderKind;
use crate::sse::SseEvent;
use crate::types::{ChatRequest, Usage};

/// What a finished response says, in provider-neutral form.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Parsed {
    pub text: String,
    pub finish_reason: Option<String>,
    pub usage: Usage,
}

/// The request body for `kind`. `model` is the name without the provider prefix.
pub(crate) fn request_body(
    kind: ProviderKind,
    request: &ChatRequest,
    model: &str,
    stream: bool,
) -> serde_json::Value {
    match kind {
        ProviderKind::OpenAi => openai::request_body(request, model, stream),
        ProviderKind::Anthropic => anthropic::request_body(request, model, stream),
    }
}

/// Parses a complete (non-streamed) response body.
pub(crate) fn parse_response(kind: ProviderKind, body: &[u8]) -> Result<Parsed, String> {
    match kind {
        ProviderKind::OpenAi => openai::parse_response(body),
        ProviderKind::Anthropic => anthropic::parse_response(body),
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
    Anthropic(anthropic::StreamState),
}

impl StreamDecoder {
    pub fn new(kind: ProviderKind) -> Self {
        match kind {
            ProviderKind::OpenAi => Self::OpenAi(openai::StreamState::default()),
            ProviderKind::Anthropic => Self::Anthropic(anthropic::StreamState::default()),
        }
    }

    /// Handles one event; returns new answer text, if any.
    pub fn on_event(&mut self, event: &SseEvent) -> Result<Option<String>, EventError> {
        match self {
            Self::OpenAi(state) => state.on_event(event),
            Self::Anthropic(state) => state.on_event(event),
        }
    }

    /// Whether the final event arrived.
    pub fn is_done(&self) -> bool {
        match self {
            Self::OpenAi(state) => state.done,
            Self::Anthropic(state) => state.done,
        }
    }

    pub fn finish(self) -> Parsed {
        match self {
            Self::OpenAi(state) => state.parsed,
            Self::Anthropic(state) => state.parsed,
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
    truncate(message.trim(), 300)
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
