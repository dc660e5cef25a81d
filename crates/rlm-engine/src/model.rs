//! The engine's view of a language model: one chat completion with usage.
//!
//! The engine talks to models only through [`ModelClient`], so the loop can be driven by an
//! in-memory fake in unit tests and by the `rlm-llm` provider layer in the product.

use std::fmt;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// Who wrote a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions for the whole conversation.
    System,
    /// The engine speaking for the user: the query, REPL output, turn markers.
    User,
    /// The model's own replies.
    Assistant,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Who wrote it.
    pub role: Role,
    /// Its text.
    pub content: String,
}

impl ChatMessage {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self {
            role: Role::System,
            content: content.into(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: content.into(),
        }
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// One request to a model.
#[derive(Debug, Clone, Copy)]
pub struct ModelRequest<'a> {
    /// The model name, as the client understands it (e.g. `openai:gpt-4o-mini`).
    pub model: &'a str,
    /// The conversation so far.
    pub messages: &'a [ChatMessage],
    /// Generation stops before any of these strings.
    pub stop: &'a [String],
    /// Upper bound on generated tokens, if any.
    pub max_output_tokens: Option<u32>,
}

/// Tokens and money spent by one model call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CallUsage {
    /// Prompt tokens (including cached ones).
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's cache.
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's cache.
    pub cache_write_tokens: u64,
    /// Cost in US dollars; `None` when the model has no known price.
    pub cost_usd: Option<f64>,
}

impl CallUsage {
    /// Input plus output tokens.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    /// The usage of two calls together (the cost is unknown if either's is).
    pub fn plus(&self, other: &Self) -> Self {
        Self {
            input_tokens: self.input_tokens + other.input_tokens,
            output_tokens: self.output_tokens + other.output_tokens,
            cache_read_tokens: self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens: self.cache_write_tokens + other.cache_write_tokens,
            cost_usd: self.cost_usd.zip(other.cost_usd).map(|(a, b)| a + b),
        }
    }
}

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The model ended its turn.
    EndTurn,
    /// A stop sequence was reached (the sequence itself is not in the text).
    StopSequence,
    /// The output token limit was reached.
    Length,
    /// Anything else the provider reported.
    Other,
}

/// A model's answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelReply {
    /// The generated text.
    pub text: String,
    /// What the call cost.
    pub usage: CallUsage,
    /// Why generation ended.
    pub finish: FinishReason,
}

/// A failed model call, after the client's own retries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelError {
    /// What went wrong, safe to show and log (never contains credentials).
    pub message: String,
}

impl ModelError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ModelError {}

/// Sends chat completions to a model.
///
/// Implementations own retries, rate limiting and concurrency limits; the engine calls
/// [`ModelClient::complete`] concurrently for batched sub-calls and expects the client to queue
/// them. Dropping the returned future cancels the call.
pub trait ModelClient: Send + Sync + fmt::Debug {
    /// Runs one completion.
    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>>;
}
