//! What goes on the wire for one request, given what the model accepts.

use crate::ChatRequest;
use crate::capabilities::ModelCapabilities;
use crate::error::{Error, Result};
use crate::provider::ProviderKind;
use crate::wire::{self, Wire};

/// The end-of-turn tokens of common chat templates. A local server (llama.cpp, Ollama, vLLM)
/// serving a model whose template it does not know returns them as text, and the model goes
/// on to write the next turn itself (`<|im_end|>user Your reply had no …`): the client cuts a
/// reply at the first of them, as at a stop sequence. OpenAI-compatible servers only;
/// Anthropic's API never returns them.
const TURN_END_TOKENS: &[&str] = &[
    "<|im_end|>",
    "<|eot_id|>",
    "<|end_of_text|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|end|>",
    "<｜end▁of▁sentence｜>",
];

/// What goes on the wire for one request given what the model accepts, and the stop sequences
/// the client applies itself.
pub(super) struct Plan {
    pub(super) body: bytes::Bytes,
    /// Whether the body asks for a streamed answer.
    pub(super) stream: bool,
    pub(super) client_stops: Vec<String>,
    pub(super) wire: Wire,
    /// Whether the body carries the request's JSON Schema (so a 400 refusing a schema is
    /// about it).
    pub(super) sends_schema: bool,
    /// On Anthropic, the tool whose input is the answer ([`wire::anthropic::answer_tool`]).
    pub(super) answer_tool: Option<String>,
}

impl Plan {
    pub(super) fn new(
        kind: ProviderKind,
        request: &ChatRequest,
        model: &str,
        stream: bool,
        capabilities: ModelCapabilities,
        prompt_cache: bool,
    ) -> Result<Self> {
        let wire = Wire::of(kind, capabilities);
        let strip_stop = !capabilities.stop || !wire.has_stop();
        let strip_temperature = !capabilities.temperature;
        let strip_schema = !capabilities.json_schema;
        let mut client_stops = Vec::new();
        // Copied only when a field the model refuses must go.
        let sent = if (strip_stop && !request.stop.is_empty())
            || (strip_temperature && request.temperature.is_some())
            || (strip_schema && request.json_schema.is_some())
        {
            let mut sent = request.clone();
            if strip_schema {
                sent.json_schema = None;
            }
            if strip_stop {
                client_stops = std::mem::take(&mut sent.stop);
            }
            if strip_temperature {
                sent.temperature = None;
            }
            std::borrow::Cow::Owned(sent)
        } else {
            std::borrow::Cow::Borrowed(request)
        };
        let body = wire::request_bytes(
            wire,
            &sent,
            model,
            stream,
            capabilities.max_tokens_field,
            prompt_cache,
        )
        .map_err(|err| Error::Config(err.to_string()))?;
        if kind == ProviderKind::OpenAi {
            client_stops.extend(TURN_END_TOKENS.iter().map(|&token| token.to_owned()));
        }
        let answer_tool = (wire == Wire::Anthropic)
            .then(|| wire::anthropic::answer_tool(&sent))
            .flatten()
            .map(|schema| schema.name.clone());
        Ok(Self {
            // Shared, not copied, by every attempt.
            body: bytes::Bytes::from(body),
            stream,
            client_stops,
            wire,
            sends_schema: sent.json_schema.is_some()
                && (wire != Wire::Anthropic || answer_tool.is_some()),
            answer_tool,
        })
    }
}
