//! What the fake server answers: text, or a fault.

use std::time::Duration;

use crate::Wire;
use rlm_types::ToolCall;
use rlm_types::{Message, Role, Usage};

/// A request as the fake server received it, decoded from either wire format.
#[derive(Debug, Clone)]
pub struct SeenRequest {
    /// Which wire format it spoke (the Responses API counts as OpenAI).
    pub wire: Wire,
    /// The path it was sent to (`/v1/chat/completions`, `/v1/responses`, `/v1/messages`).
    pub endpoint: String,
    /// The `model` field of the body (the name without provider prefix).
    pub model: String,
    /// System prompt (OpenAI `system` message or Anthropic `system`, text joined).
    pub system: Option<String>,
    /// The other messages, in order.
    pub messages: Vec<Message>,
    /// Whether a streamed answer was asked for.
    pub stream: bool,
    /// The raw JSON body.
    pub body: serde_json::Value,
    /// Request headers, names lower-cased.
    pub headers: Vec<(String, String)>,
}

impl SeenRequest {
    /// The content of the last user message, or `""`.
    pub fn last_user_message(&self) -> &str {
        self.messages
            .iter()
            .rev()
            .find(|message| message.role == Role::User)
            .map_or("", |message| message.content.as_str())
    }

    /// The tool results sent back ([`Role::Tool`] messages: call id, content, error flag),
    /// decoded from OpenAI `role: tool` messages or Anthropic `tool_result` blocks.
    pub fn tool_results(&self) -> Vec<&Message> {
        self.messages
            .iter()
            .filter(|message| message.role == Role::Tool)
            .collect()
    }

    /// The names of the tools offered (`tools[].function.name` or `tools[].name`).
    pub fn tool_names(&self) -> Vec<String> {
        let Some(tools) = self.body.get("tools").and_then(serde_json::Value::as_array) else {
            return Vec::new();
        };
        tools
            .iter()
            .filter_map(|tool| {
                tool.pointer("/function/name")
                    .or_else(|| tool.get("name"))
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_owned)
            })
            .collect()
    }

    /// A header value by (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// What the server does with one request.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum FakeBehavior {
    /// Answer with this text (streamed in several SSE chunks when the request streams).
    Text(String),
    /// Answer with an HTTP error status, extra headers, and an error body in the wire format.
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        message: String,
    },
    /// Never answer (the client's timeout must fire).
    Hang,
    /// Answer 200 with a body that is not valid JSON (or a stream event that is not).
    MalformedJson,
    /// When streaming, send the stream's opening events and then a provider error event (as
    /// Anthropic does for `overloaded_error` mid-stream); without streaming, a 529.
    ErrorEvent(String),
    /// Stream part of this text, then cut the connection in the middle of an event. Without
    /// streaming, the body is cut in the middle instead.
    CutStream(String),
    /// Answer with tool calls (and this text beside them), as OpenAI `tool_calls` with finish
    /// reason `tool_calls` or Anthropic `tool_use` blocks with stop reason `tool_use`; streamed
    /// as argument pieces per call. A call with an empty id gets `call_fake_N` or
    /// `toolu_fake_N`. Arguments are sent as scripted, so a test can script invalid ones.
    ToolCalls { text: String, calls: Vec<ToolCall> },
    /// Start answering (the first part of this text when streaming, half the body otherwise),
    /// then send nothing more and keep the connection open: a server still generating.
    Stall(String),
    /// A model writing steadily: when streaming, this text in `pieces` events with `gap`
    /// between two of them; without streaming, the whole answer after `pieces × gap`, as a
    /// server that answers when it is done.
    SlowStream {
        text: String,
        pieces: usize,
        gap: Duration,
    },
    /// Answer with this status and exactly this JSON body.
    Body {
        status: u16,
        body: serde_json::Value,
    },
}

/// One scripted reply: a behaviour plus optional latency, usage and finish reason.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeReply {
    pub behavior: FakeBehavior,
    /// Wait before answering; `None` uses the server's default latency.
    pub delay: Option<Duration>,
    /// Token counts to report; `None` derives them from text length (4 bytes per token).
    pub usage: Option<Usage>,
    /// Finish reason to report; `None` uses `stop` (OpenAI) or `end_turn` (Anthropic), or for
    /// tool calls `tool_calls` (OpenAI) or `tool_use` (Anthropic).
    pub finish_reason: Option<String>,
}

impl FakeReply {
    pub(crate) fn of(behavior: FakeBehavior) -> Self {
        Self {
            behavior,
            delay: None,
            usage: None,
            finish_reason: None,
        }
    }

    /// A normal answer.
    pub fn text(text: impl Into<String>) -> Self {
        Self::of(FakeBehavior::Text(text.into()))
    }

    /// A reply calling these tools, with `text` beside the calls (often empty).
    pub fn tool_calls(text: impl Into<String>, calls: impl IntoIterator<Item = ToolCall>) -> Self {
        Self::of(FakeBehavior::ToolCalls {
            text: text.into(),
            calls: calls.into_iter().collect(),
        })
    }

    /// A reply calling one tool with these arguments; the server gives it an id.
    pub fn tool_call(name: impl Into<String>, arguments: serde_json::Value) -> Self {
        Self::tool_calls("", [ToolCall::new("", name, arguments.to_string())])
    }

    /// An error status with a wire-format error body.
    pub fn status(status: u16, message: impl Into<String>) -> Self {
        Self::of(FakeBehavior::Status {
            status,
            headers: Vec::new(),
            message: message.into(),
        })
    }

    /// 429 with `retry-after` (whole seconds, rounded up) and `retry-after-ms`.
    pub fn rate_limited(retry_after: Duration) -> Self {
        let seconds = retry_after.as_millis().div_ceil(1000);
        Self::status(429, "rate limited")
            .with_header("retry-after", seconds.to_string())
            .with_header("retry-after-ms", retry_after.as_millis().to_string())
    }

    /// 429 with only `retry-after` in whole seconds, as most servers send it.
    pub fn rate_limited_seconds(seconds: u64) -> Self {
        Self::status(429, "rate limited").with_header("retry-after", seconds.to_string())
    }

    /// 500 Internal Server Error.
    pub fn server_error() -> Self {
        Self::status(500, "internal error")
    }

    /// 529, Anthropic's "overloaded".
    pub fn overloaded() -> Self {
        Self::status(529, "Overloaded")
    }

    /// Never answers.
    pub fn hang() -> Self {
        Self::of(FakeBehavior::Hang)
    }

    /// 200 with an invalid JSON body.
    pub fn malformed_json() -> Self {
        Self::of(FakeBehavior::MalformedJson)
    }

    /// An error event inside a 200 stream (a 529 when the request does not stream).
    pub fn error_event(message: impl Into<String>) -> Self {
        Self::of(FakeBehavior::ErrorEvent(message.into()))
    }

    /// Starts answering with `partial`, then goes silent with the connection open.
    pub fn stall(partial: impl Into<String>) -> Self {
        Self::of(FakeBehavior::Stall(partial.into()))
    }

    /// Writes `text` in `pieces` pieces with `gap` between them (see
    /// [`FakeBehavior::SlowStream`]).
    pub fn slow_stream(text: impl Into<String>, pieces: usize, gap: Duration) -> Self {
        Self::of(FakeBehavior::SlowStream {
            text: text.into(),
            pieces: pieces.max(1),
            gap,
        })
    }

    /// Streams `partial` and then cuts the connection mid-event.
    pub fn cut_stream(partial: impl Into<String>) -> Self {
        Self::of(FakeBehavior::CutStream(partial.into()))
    }

    /// Adds a response header (only for [`FakeBehavior::Status`]).
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let FakeBehavior::Status { headers, .. } = &mut self.behavior {
            headers.push((name.into(), value.into()));
        }
        self
    }

    /// Waits this long before answering.
    #[must_use]
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    /// Reports these token counts.
    #[must_use]
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Reports this finish reason.
    #[must_use]
    pub fn with_finish_reason(mut self, reason: impl Into<String>) -> Self {
        self.finish_reason = Some(reason.into());
        self
    }
}

/// Usage derived from lengths when a reply does not set it, so accounting has numbers to add.
pub(crate) fn estimated_usage(request: &SeenRequest, answer: &str) -> Usage {
    let prompt_bytes: usize = request.system.as_deref().map_or(0, str::len)
        + request
            .messages
            .iter()
            .map(|m| {
                m.content.len()
                    + m.tool_calls
                        .iter()
                        .map(|c| c.arguments.len())
                        .sum::<usize>()
            })
            .sum::<usize>();
    Usage {
        input_tokens: (prompt_bytes as u64).div_ceil(4),
        output_tokens: (answer.len() as u64).div_ceil(4),
        cache_read_tokens: 0,
        cache_write_tokens: 0,
    }
}
