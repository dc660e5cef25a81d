//! Provider-neutral request and response types.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person or program asking.
    User,
    /// The model's earlier answers.
    Assistant,
}

/// One turn of a conversation. The system prompt is not a message: it is [`ChatRequest::system`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
}

impl Message {
    /// A user turn.
    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: content.into(),
        }
    }

    /// An assistant turn.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// A chat request, independent of the provider that will serve it.
///
/// `model` is a model reference such as `anthropic:claude-sonnet-4-5`, `openai:gpt-4o-mini`,
/// `ollama:qwen2.5:7b` or a bare name resolved by [`crate::ModelRef::parse`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    pub model: String,
    /// System prompt. Anthropic requests mark it with `cache_control` so a stable prefix is cached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    pub messages: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// Ask for a JSON object (`response_format` on OpenAI; a prefilled `{` on Anthropic).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub json: bool,
}

impl ChatRequest {
    /// A request for `model` with no messages yet.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            system: None,
            messages: Vec::new(),
            temperature: None,
            max_tokens: None,
            stop: Vec::new(),
            json: false,
        }
    }

    /// Sets the system prompt.
    #[must_use]
    pub fn system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// Appends a user message.
    #[must_use]
    pub fn user(mut self, content: impl Into<String>) -> Self {
        self.messages.push(Message::user(content));
        self
    }

    /// Appends an assistant message.
    #[must_use]
    pub fn assistant(mut self, content: impl Into<String>) -> Self {
        self.messages.push(Message::assistant(content));
        self
    }

    /// Sets the sampling temperature.
    #[must_use]
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Caps the answer length in tokens.
    #[must_use]
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Adds a stop sequence.
    #[must_use]
    pub fn stop(mut self, sequence: impl Into<String>) -> Self {
        self.stop.push(sequence.into());
        self
    }

    /// Asks for a JSON object as the answer.
    #[must_use]
    pub fn json(mut self, json: bool) -> Self {
        self.json = json;
        self
    }
}

/// Token counts of one call. `input_tokens` excludes cached input, so the four fields add up to
/// everything billed: OpenAI's `prompt_tokens` is split into `input_tokens` + `cache_read_tokens`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_read_tokens: u64,
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl Usage {
    /// All tokens of the call, cached or not.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens
    }

    /// Adds another call's counts.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }
}

/// The answer to a [`ChatRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The answer text (for JSON mode on Anthropic, including the prefilled `{`).
    pub text: String,
    /// The model reference as requested (`provider:name`).
    pub model: String,
    /// Why generation stopped, as the provider said it (`stop`, `end_turn`, `length`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    pub usage: Usage,
    /// Cost in US dollars, `None` when the price of the model is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Wall time of the call including retries and waiting for the limiter.
    #[serde(with = "duration_ms")]
    pub latency: Duration,
    /// How many attempts were retried.
    pub retries: u32,
    /// Whether the answer came from a replay file rather than the network.
    #[serde(default)]
    pub replayed: bool,
}

/// Serializes a `Duration` as whole milliseconds, the unit trajectories and JSON output use.
pub(crate) mod duration_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(u64::try_from(value.as_millis()).unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(deserializer)?))
    }
}
