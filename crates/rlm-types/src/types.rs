//! Provider-neutral request and response types (sent and read by `rlm-llm`'s clients).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::tools::{ToolCall, ToolChoice, ToolDefinition, ToolOutput};

/// Who wrote a message.
///
/// Not `#[non_exhaustive]`, though it lives apart from the code that sends it: `rlm-llm`'s wire
/// encoders match every role, and a new one must be encoded there on purpose, not fall into a
/// catch-all arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions for the whole conversation. A request carries its system prompt in
    /// [`ChatRequest::system`]; the role exists so that a transcript
    /// ([`ChatRequest::transcript`]) can show it in order.
    System,
    /// The person or program asking.
    User,
    /// The model's earlier answers.
    Assistant,
    /// A tool's answer to one of the model's tool calls ([`Message::tool_result`]).
    Tool,
}

/// One message of a conversation.
///
/// Tool calling adds two shapes: an assistant turn with [`Message::tool_calls`] (its `content`
/// is the text the model wrote beside them, often empty) and a [`Role::Tool`] message answering
/// one call ([`Message::tool_result`]). The tool fields are left out of the serialized form
/// when unused, so recordings of plain messages keep their keys.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
    /// The tools the model asked to call in this assistant turn, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a [`Role::Tool`] message: the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For a [`Role::Tool`] message: the tool failed and `content` says why.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

impl Message {
    /// A message of `role` with plain text.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            is_error: false,
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }

    /// A user turn.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }

    /// An assistant turn.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }

    /// An assistant turn that asked for tool calls, with the text written beside them.
    pub fn assistant_tool_calls(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self {
            tool_calls,
            ..Self::new(Role::Assistant, content)
        }
    }

    /// The answer to the tool call with id `call_id`.
    pub fn tool_result(call_id: impl Into<String>, output: ToolOutput) -> Self {
        Self {
            tool_call_id: Some(call_id.into()),
            is_error: output.is_error,
            ..Self::new(Role::Tool, output.content)
        }
    }
}

/// A JSON Schema for an answer ([`ChatRequest::json_schema`]). Sent with `strict: true`: every
/// property required, `additionalProperties: false`, as OpenAI's strict mode wants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonSchema {
    pub name: String,
    pub schema: serde_json::Value,
}

/// A chat request, independent of the provider that will serve it.
///
/// `model` is a model reference such as `anthropic:claude-sonnet-4-5`, `openai:gpt-4o-mini`,
/// `ollama:qwen2.5:7b` or a bare name resolved by `rlm_llm::ModelRef::parse`.
///
/// The system prompt belongs in [`ChatRequest::system`]. A [`Role::System`] message in
/// `messages` is still sent sensibly (OpenAI keeps it in place, Anthropic appends it to the
/// system prompt), but it makes a different recording key than the same text in `system`.
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
    /// Ask for a JSON object (`response_format` on OpenAI; an instruction in the system prompt
    /// on Anthropic).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub json: bool,
    /// The JSON Schema the answer must follow, sent where the wire can constrain the output
    /// (OpenAI-compatible `response_format: {"type": "json_schema", ...}`, the Responses API's
    /// `text.format`, on Anthropic a forced tool whose input is the answer, for a request
    /// without tools of its own) unless the model's capabilities say it refuses it
    /// (`rlm_llm::ModelCapabilities::json_schema`); elsewhere the request is plain JSON mode and
    /// the caller validates. Not part of a recording's key: the prompt already fixes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_schema: Option<JsonSchema>,
    /// Tools the model may call (left out of recordings' keys when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDefinition>,
    /// Whether and which tools it may call; `None` leaves it to the provider (auto).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
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
            json_schema: None,
            tools: Vec::new(),
            tool_choice: None,
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

    /// Asks for a JSON answer following `schema`, named `name` (letters, digits, `_`, `-`), to
    /// be enforced by the server where it can ([`Self::json_schema`]); implies [`Self::json`].
    #[must_use]
    pub fn json_schema(mut self, name: impl Into<String>, schema: serde_json::Value) -> Self {
        self.json = true;
        self.json_schema = Some(JsonSchema {
            name: name.into(),
            schema,
        });
        self
    }

    /// Offers a tool to the model.
    #[must_use]
    pub fn tool(mut self, tool: ToolDefinition) -> Self {
        self.tools.push(tool);
        self
    }

    /// Sets whether and which tools the model may call.
    #[must_use]
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// The conversation as a reader sees it: the system prompt as a [`Role::System`] message,
    /// then the messages.
    pub fn transcript(&self) -> Vec<Message> {
        let system = self.system.as_deref().map(Message::system);
        system
            .into_iter()
            .chain(self.messages.iter().cloned())
            .collect()
    }
}

/// Token counts of one call (or, summed, of several).
///
/// `input_tokens` counts **every** prompt token, cached or not; `cache_read_tokens` and
/// `cache_write_tokens` are parts of it, not additions to it. So `input_tokens + output_tokens`
/// is everything the call processed, whichever provider served it:
///
/// | wire reply | `input_tokens` | `cache_read_tokens` | `cache_write_tokens` |
/// |---|---|---|---|
/// | OpenAI `usage` | `prompt_tokens` | `prompt_tokens_details.cached_tokens` | 0 |
/// | Anthropic `usage` | `input_tokens + cache_read_input_tokens + cache_creation_input_tokens` | `cache_read_input_tokens` | `cache_creation_input_tokens` |
///
/// Recordings made before this meaning was fixed (cassette version 1, where `input_tokens`
/// excluded cached tokens) are converted when they are read.
///
/// Every field defaults when absent, so trajectories written before a field existed still read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    /// Every prompt token, including the cached ones below.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's cache (a part of `input_tokens`).
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's cache (a part of `input_tokens`).
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Every token of the call: input (cached or not) plus output.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    /// Prompt tokens billed at the plain input rate: neither read from nor written to a cache.
    pub fn uncached_input_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_sub(self.cache_read_tokens)
            .saturating_sub(self.cache_write_tokens)
    }

    /// Adds another call's counts.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }
}

/// Why generation ended, in provider-neutral form (see [`ChatResponse::finish`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FinishReason {
    /// The model ended its turn (OpenAI `stop`, Anthropic `end_turn`).
    EndTurn,
    /// A stop sequence was reached; the sequence itself is not in the text. OpenAI reports
    /// this as `stop` too, so only Anthropic replies are told apart.
    StopSequence,
    /// The output token limit was reached (OpenAI `length`, Anthropic `max_tokens`).
    Length,
    /// The model stopped to call tools (OpenAI `tool_calls`, Anthropic `tool_use`).
    ToolCalls,
    /// Anything else, or nothing, was reported.
    Other,
}

impl FinishReason {
    /// The neutral reason for a provider's `finish_reason` / `stop_reason` string.
    pub fn from_provider(reason: Option<&str>) -> Self {
        match reason {
            Some("stop" | "end_turn") => Self::EndTurn,
            Some("stop_sequence") => Self::StopSequence,
            Some("length" | "max_tokens") => Self::Length,
            Some("tool_calls" | "tool_use" | "function_call") => Self::ToolCalls,
            _ => Self::Other,
        }
    }
}

/// The answer to a [`ChatRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The answer text (for JSON mode on Anthropic, including the prefilled `{`).
    pub text: String,
    /// The tool calls the model asked for, in order (empty when it answered in text only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The model reference as requested (`provider:name`).
    pub model: String,
    /// Why generation stopped, as the provider said it (`stop`, `end_turn`, `length`, ...);
    /// [`ChatResponse::finish`] gives the neutral [`FinishReason`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    pub usage: Usage,
    /// `usage` is an estimate from the texts' sizes: the provider reported no counts (a
    /// `rlm_llm::ChatBackend` such as MCP sampling).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub usage_estimated: bool,
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

impl ChatResponse {
    /// Why generation ended, in provider-neutral form.
    pub fn finish(&self) -> FinishReason {
        FinishReason::from_provider(self.finish_reason.as_deref())
    }

    /// This answer as an assistant turn of the conversation, tool calls included.
    pub fn to_message(&self) -> Message {
        Message::assistant_tool_calls(self.text.clone(), self.tool_calls.clone())
    }
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
