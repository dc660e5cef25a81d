//! Which request parameters a model accepts, and what to do when it refuses one.
//!
//! Reasoning models refuse parameters other models take for granted: OpenAI's `gpt-5*` and
//! `o1`/`o3`/`o4` families answer HTTP 400 to `stop`, to any `temperature` but the default, and
//! to `max_tokens` (they want `max_completion_tokens`). A [`CapabilityTable`] says, per model
//! family, what to leave out; unknown models are assumed to accept everything.
//!
//! | model name starts with | `stop` | non-default `temperature` | output cap sent as | tools |
//! |---|---|---|---|---|
//! | `gpt-5`, `o1`, `o3`, `o4` | no | no | `max_completion_tokens` | yes |
//! | `o1-mini`, `o1-preview` | no | no | `max_completion_tokens` | no |
//! | `o1-pro`, `o3-pro`, `gpt-5-pro`, `gpt-5.2-pro`, `gpt-5-codex`, `gpt-5.1-codex`, `codex-mini`, `o3-deep-research`, `o4-mini-deep-research` | no | no | `max_output_tokens` (Responses API) | yes |
//! | anything else | yes | yes | `max_tokens` | yes |
//!
//! The last column but one is also the endpoint: the `-pro`, `-codex` and deep-research
//! models are served only by OpenAI's Responses API (`/responses`, [`OpenAiApi::Responses`]);
//! the others by chat completions. A configured rule can move any model to either endpoint.
//!
//! `tools` is not a request parameter the client leaves out: it tells callers that offer tools
//! (`rlm query`'s synthesizer) to ask without them.
//!
//! `json_schema` (default yes) says whether a request's JSON Schema goes out as structured
//! output (`response_format: {"type": "json_schema", "strict": true, ...}` on chat completions,
//! `text.format` on the Responses API: OpenAI, llama.cpp's, Ollama's and vLLM's servers take
//! it; on Anthropic a forced tool whose `input_schema` is the schema); no sends plain JSON
//! mode. A 400 naming `response_format`, `json_schema`, `input_schema` or `tool_choice` about a
//! request that carried a schema turns it off for the model, as for any refused parameter. A rule whose prefix has a colon matches
//! `provider:model`, so `[llm.capabilities."ollama:"] json_schema = false` covers a provider.
//!
//! A vendor prefix before the last `/` is ignored (`openai/gpt-5` on OpenRouter matches `gpt-5`).
//! A stop sequence the model cannot take is applied by the client instead: the reply is cut at
//! the first stop sequence, as a provider would. When a provider still refuses a parameter
//! (HTTP 400 naming it as unsupported), the call is retried once without it and the model's
//! entry is corrected for the rest of the process ([`rejected_parameter`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The name an OpenAI-compatible request gives the output token cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaxTokensField {
    /// `max_tokens` (most servers: Ollama, vLLM, llama.cpp, older OpenAI models).
    #[default]
    MaxTokens,
    /// `max_completion_tokens` (OpenAI reasoning models).
    MaxCompletionTokens,
}

/// Which OpenAI endpoint serves a model. Anthropic providers ignore it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpenAiApi {
    /// `POST {base}/chat/completions`: OpenAI's chat models and every compatible server.
    #[default]
    ChatCompletions,
    /// `POST {base}/responses`: models OpenAI serves only there (`o1-pro`, `o3-pro`,
    /// `gpt-5-pro`, the `-codex` models).
    Responses,
}

/// What one model accepts. The default accepts everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelCapabilities {
    /// Server-side stop sequences; without them the client cuts the reply itself.
    pub stop: bool,
    /// A temperature other than the default; without it none is sent.
    pub temperature: bool,
    /// How the output cap is named on the OpenAI wire (Anthropic always says `max_tokens`).
    pub max_tokens_field: MaxTokensField,
    /// Native tool calling (`tools` in the request); callers ask without tools otherwise.
    pub tools: bool,
    /// The endpoint an OpenAI provider sends the model's requests to.
    pub api: OpenAiApi,
    /// Structured output: a request's JSON Schema is sent for the server to enforce.
    pub json_schema: bool,
}

impl Default for ModelCapabilities {
    fn default() -> Self {
        Self {
            stop: true,
            temperature: true,
            max_tokens_field: MaxTokensField::MaxTokens,
            tools: true,
            api: OpenAiApi::ChatCompletions,
            json_schema: true,
        }
    }
}

impl ModelCapabilities {
    /// What OpenAI's reasoning models accept.
    pub const REASONING: Self = Self {
        stop: false,
        temperature: false,
        max_tokens_field: MaxTokensField::MaxCompletionTokens,
        tools: true,
        api: OpenAiApi::ChatCompletions,
        json_schema: true,
    };

    /// What OpenAI's Responses-only reasoning models accept (no `stop` exists there).
    pub const RESPONSES: Self = Self {
        api: OpenAiApi::Responses,
        ..Self::REASONING
    };

    /// What OpenAI's early reasoning previews accept: no tools either.
    pub const REASONING_WITHOUT_TOOLS: Self = Self {
        tools: false,
        ..Self::REASONING
    };

    /// These capabilities corrected after the provider refused `rejected`, or `None` when the
    /// refusal names something already left out (retrying would send the same request).
    pub fn without(self, rejected: Rejected) -> Option<Self> {
        let mut next = self;
        match rejected {
            Rejected::Stop => next.stop = false,
            Rejected::Temperature => next.temperature = false,
            Rejected::MaxTokens => next.max_tokens_field = MaxTokensField::MaxCompletionTokens,
            Rejected::MaxCompletionTokens => next.max_tokens_field = MaxTokensField::MaxTokens,
            Rejected::JsonSchema => next.json_schema = false,
        }
        (next != self).then_some(next)
    }
}

/// A parameter a provider refused that the call can do without (or send under its other name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rejected {
    Stop,
    Temperature,
    MaxTokens,
    MaxCompletionTokens,
    /// `response_format` / `text.format` carrying a JSON Schema (refused or the schema itself).
    JsonSchema,
}

/// OpenAI model families served only by the Responses API.
const RESPONSES_ONLY: &[&str] = &[
    "o1-pro",
    "o3-pro",
    "o3-deep-research",
    "o4-mini-deep-research",
    "gpt-5-pro",
    "gpt-5-codex",
    "gpt-5.1-codex",
    "gpt-5.2-pro",
    "codex-mini",
];

/// Model families and what they accept: built-in rules plus rules from configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct CapabilityTable {
    rules: Vec<(String, ModelCapabilities)>,
}

impl Default for CapabilityTable {
    fn default() -> Self {
        Self::builtin()
    }
}

impl CapabilityTable {
    /// The documented built-in rules (see the module documentation).
    pub fn builtin() -> Self {
        let rules = ["gpt-5", "o1", "o3", "o4"]
            .into_iter()
            .map(|prefix| (prefix.to_owned(), ModelCapabilities::REASONING))
            .chain(["o1-mini", "o1-preview"].into_iter().map(|prefix| {
                (
                    prefix.to_owned(),
                    ModelCapabilities::REASONING_WITHOUT_TOOLS,
                )
            }))
            .chain(
                RESPONSES_ONLY
                    .iter()
                    .map(|prefix| ((*prefix).to_owned(), ModelCapabilities::RESPONSES)),
            )
            .collect();
        Self { rules }
    }

    /// A table with no rules: every model accepts everything.
    pub fn empty() -> Self {
        Self { rules: Vec::new() }
    }

    /// Adds a rule for model names starting with `prefix`; it wins over a built-in rule with
    /// the same prefix, and a longer prefix wins over a shorter one.
    pub fn insert(&mut self, prefix: impl Into<String>, capabilities: ModelCapabilities) {
        self.rules.push((prefix.into(), capabilities));
    }

    /// What `model` (the name without `provider:`) accepts.
    pub fn lookup(&self, model: &str) -> ModelCapabilities {
        self.lookup_at(None, model)
    }

    /// What `model` of `provider` accepts: as [`Self::lookup`], and rules written
    /// `provider:prefix` match too.
    pub fn lookup_at(&self, provider: Option<&str>, model: &str) -> ModelCapabilities {
        let name = model.rsplit('/').next().unwrap_or(model);
        let mut best: Option<(usize, ModelCapabilities)> = None;
        for (prefix, capabilities) in &self.rules {
            let for_provider = provider.is_some_and(|provider| {
                prefix
                    .strip_prefix(provider)
                    .and_then(|rest| rest.strip_prefix(':'))
                    .is_some_and(|rest| model.starts_with(rest))
            });
            let matches = for_provider
                || name.starts_with(prefix.as_str())
                || model.starts_with(prefix.as_str());
            if matches && best.is_none_or(|(length, _)| prefix.len() >= length) {
                best = Some((prefix.len(), *capabilities));
            }
        }
        best.map(|(_, capabilities)| capabilities)
            .unwrap_or_default()
    }
}

/// The parameter an HTTP 400 body refuses as unsupported, if it is one the call can do
/// without. OpenAI's shape is `{"error": {"message": "Unsupported parameter: 'stop' is not
/// supported with this model.", "param": "stop", "code": "unsupported_parameter"}}` (or
/// `unsupported_value` for a temperature); other servers at least name the parameter in
/// quotes in a message saying it is unsupported.
pub fn rejected_parameter(body: &[u8]) -> Option<Rejected> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let error = value.get("error")?;
    let text = |key: &str| error.get(key).and_then(Value::as_str).unwrap_or_default();
    let message = text("message");
    let lowered = message.to_lowercase();
    // Refused or found invalid (a schema a strict mode does not take), the schema can go:
    // plain JSON mode and the caller's validation remain.
    if text("param").starts_with("response_format")
        || text("param").starts_with("text.format")
        || lowered.contains("response_format")
        || lowered.contains("json_schema")
        // Anthropic, about the answer tool a schema goes out as.
        || lowered.contains("input_schema")
        || lowered.contains("tool_choice")
    {
        return Some(Rejected::JsonSchema);
    }
    let unsupported = matches!(text("code"), "unsupported_parameter" | "unsupported_value")
        || lowered.contains("unsupported")
        || lowered.contains("not supported");
    if !unsupported {
        return None;
    }
    let named = |name: &str| {
        text("param") == name
            || message.contains(&format!("'{name}'"))
            || message.contains(&format!("`{name}`"))
            || message.contains(&format!("\"{name}\""))
    };
    // The longer name first: a message about `max_completion_tokens` may also mention
    // `max_tokens` as the alternative, and vice versa, so the `param` field decides first.
    match text("param") {
        "stop" | "stop_sequences" => return Some(Rejected::Stop),
        "temperature" => return Some(Rejected::Temperature),
        "max_tokens" => return Some(Rejected::MaxTokens),
        "max_completion_tokens" => return Some(Rejected::MaxCompletionTokens),
        _ => {}
    }
    if named("stop") || named("stop_sequences") {
        Some(Rejected::Stop)
    } else if named("temperature") {
        Some(Rejected::Temperature)
    } else if lowered.find("max_tokens").is_some_and(|at| {
        lowered
            .find("max_completion_tokens")
            .is_none_or(|other| at < other)
    }) {
        Some(Rejected::MaxTokens)
    } else if named("max_completion_tokens") {
        Some(Rejected::MaxCompletionTokens)
    } else {
        None
    }
}

/// Cuts a reply at the first of `stops` the way a provider does: the sequence and everything
/// after it are dropped. Returns whether a sequence was found.
pub(crate) fn cut_at_stop(text: &mut String, stops: &[String]) -> bool {
    let first = stops
        .iter()
        .filter(|stop| !stop.is_empty())
        .filter_map(|stop| text.find(stop.as_str()))
        .min();
    if let Some(at) = first {
        text.truncate(at);
    }
    first.is_some()
}

/// Applies stop sequences to a stream of text pieces: emits text as soon as it cannot be the
/// start of a stop sequence, and reports when one was reached so the caller stops reading.
#[derive(Debug)]
pub(crate) struct StopCutter {
    stops: Vec<String>,
    pending: String,
    stopped: bool,
}

impl StopCutter {
    pub fn new(stops: Vec<String>) -> Self {
        Self {
            stops: stops.into_iter().filter(|stop| !stop.is_empty()).collect(),
            pending: String::new(),
            stopped: false,
        }
    }

    /// Takes a piece; returns the text now safe to pass on.
    pub fn push(&mut self, piece: &str) -> String {
        if self.stopped {
            return String::new();
        }
        self.pending.push_str(piece);
        if cut_at_stop(&mut self.pending, &self.stops) {
            self.stopped = true;
            return std::mem::take(&mut self.pending);
        }
        // Hold back the longest tail that could still grow into a stop sequence.
        let held = self
            .stops
            .iter()
            .flat_map(|stop| {
                (1..stop.len())
                    .filter(|&length| stop.is_char_boundary(length))
                    .filter(|&length| self.pending.ends_with(&stop[..length]))
            })
            .max()
            .unwrap_or(0);
        let keep_from = self.pending.len() - held;
        let tail = self.pending.split_off(keep_from);
        std::mem::replace(&mut self.pending, tail)
    }

    /// Whether a stop sequence was reached.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// The text held back when the stream ended without a stop sequence.
    pub fn finish(self) -> String {
        if self.stopped {
            String::new()
        } else {
            self.pending
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasoning_families_leave_out_stop_and_temperature() {
        let table = CapabilityTable::builtin();
        for model in [
            "gpt-5",
            "gpt-5-mini",
            "gpt-5.2",
            "o3-mini",
            "o4-mini",
            "openai/gpt-5",
        ] {
            assert_eq!(table.lookup(model), ModelCapabilities::REASONING, "{model}");
        }
        for model in ["gpt-4o", "claude-sonnet-4-5", "qwen2.5:7b", "mystery"] {
            assert_eq!(table.lookup(model), ModelCapabilities::default(), "{model}");
        }
        for model in ["o1-mini", "o1-preview-2024-09-12", "openai/o1-mini"] {
            let caps = table.lookup(model);
            assert!(!caps.tools && !caps.stop, "{model}: {caps:?}");
        }
        assert!(table.lookup("o1").tools && table.lookup("gpt-4o").tools);
    }

    #[test]
    fn pro_codex_and_deep_research_models_go_to_the_responses_api() {
        let table = CapabilityTable::builtin();
        for model in [
            "o1-pro",
            "o3-pro-2025-06-10",
            "gpt-5-pro",
            "gpt-5.2-pro",
            "gpt-5-codex",
            "gpt-5.1-codex-max",
            "codex-mini-latest",
            "o3-deep-research",
            "openai/o3-pro",
        ] {
            let caps = table.lookup(model);
            assert_eq!(caps.api, OpenAiApi::Responses, "{model}");
            assert!(!caps.stop && !caps.temperature, "{model}");
        }
        for model in ["o3", "o3-mini", "gpt-5", "gpt-5.1", "gpt-4o", "mystery"] {
            assert_eq!(
                table.lookup(model).api,
                OpenAiApi::ChatCompletions,
                "{model}"
            );
        }
    }

    #[test]
    fn configured_rules_extend_and_override() {
        let mut table = CapabilityTable::builtin();
        let no_stop = ModelCapabilities {
            stop: false,
            ..ModelCapabilities::default()
        };
        table.insert("my-reasoner", no_stop);
        table.insert("o3", ModelCapabilities::default());
        assert_eq!(table.lookup("my-reasoner-v2"), no_stop);
        assert_eq!(table.lookup("o3-mini"), ModelCapabilities::default());
        assert_eq!(table.lookup("o1"), ModelCapabilities::REASONING);
    }

    #[test]
    fn openai_refusals_name_the_parameter() {
        let stop = br#"{"error":{"message":"Unsupported parameter: 'stop' is not supported with this model.","type":"invalid_request_error","param":"stop","code":"unsupported_parameter"}}"#;
        assert_eq!(rejected_parameter(stop), Some(Rejected::Stop));
        let temperature = br#"{"error":{"message":"Unsupported value: 'temperature' does not support 0.2 with this model. Only the default (1) value is supported.","type":"invalid_request_error","param":"temperature","code":"unsupported_value"}}"#;
        assert_eq!(rejected_parameter(temperature), Some(Rejected::Temperature));
        let max_tokens = br#"{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}"#;
        assert_eq!(rejected_parameter(max_tokens), Some(Rejected::MaxTokens));
        let no_param = br#"{"error":{"message":"Unsupported parameter: 'max_completion_tokens' is not supported, use 'max_tokens'"}}"#;
        assert_eq!(
            rejected_parameter(no_param),
            Some(Rejected::MaxCompletionTokens)
        );
    }

    #[test]
    fn other_400s_are_not_refusals() {
        for body in [
            &br#"{"error":{"message":"This model's maximum context length is 128000 tokens.","param":"messages","code":"context_length_exceeded"}}"#[..],
            br#"{"error":{"message":"Invalid value for 'temperature': must be at most 2.","param":"temperature","code":"invalid_value"}}"#,
            b"not json",
        ] {
            assert_eq!(rejected_parameter(body), None);
        }
    }

    #[test]
    fn a_refusal_of_something_already_left_out_is_not_retried() {
        let caps = ModelCapabilities::REASONING;
        assert_eq!(caps.without(Rejected::Stop), None);
        assert_eq!(
            caps.without(Rejected::MaxCompletionTokens)
                .map(|c| c.max_tokens_field),
            Some(MaxTokensField::MaxTokens)
        );
        assert!(
            !ModelCapabilities::default()
                .without(Rejected::Stop)
                .unwrap()
                .stop
        );
    }

    #[test]
    fn stream_cut_matches_whole_text_cut_across_piece_boundaries() {
        let stops = vec!["```\n".to_owned(), "END".to_owned()];
        let text = "code ``x``` ``\n``` tail END more";
        let mut whole = text.to_owned();
        assert!(cut_at_stop(&mut whole, &stops));
        assert_eq!(whole, "code ``x``` ``\n``` tail ");
        for size in 1..=text.len() {
            let mut cutter = StopCutter::new(stops.clone());
            let mut out = String::new();
            let bytes: Vec<char> = text.chars().collect();
            for piece in bytes.chunks(size) {
                out.push_str(&cutter.push(&piece.iter().collect::<String>()));
                if cutter.stopped() {
                    break;
                }
            }
            assert!(cutter.stopped(), "piece size {size}");
            assert_eq!(out, whole, "piece size {size}");
        }
        let mut cutter = StopCutter::new(stops);
        let mut out = cutter.push("no stop E");
        assert!(!cutter.stopped());
        out.push_str(&cutter.finish());
        assert_eq!(out, "no stop E");
    }
}
