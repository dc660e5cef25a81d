//! LLM provider clients for rlm: OpenAI-compatible chat completions and the Anthropic Messages
//! API, hand-written on reqwest + serde.
//!
//! - **Providers** are chosen by a prefix in the model string (`anthropic:claude-…`,
//!   `openai:gpt-…`, `ollama:qwen2.5:7b`, …; see [`BUILTIN_PROVIDERS`]) or added with
//!   [`ProviderConfig`].
//! - **Reliability**: jittered exponential backoff on connection errors, 408/409/429/5xx/529,
//!   honouring `retry-after`, `retry-after-ms` and `x-ratelimit-reset-*`; no retry on other 4xx.
//!   Answers are streamed by default (also by [`LlmClient::chat`], which assembles the same
//!   response), so a stalled server is detected after an idle gap ([`DEFAULT_IDLE_TIMEOUT`])
//!   while a slow but steady answer runs to its end; the request timeout bounds the wait for the
//!   answer to start, never the time a request queues for its provider's limiter. Optional
//!   overall deadline, and one semaphore per provider shared by every clone of the client (one
//!   request at a time for a server on this machine unless configured).
//! - **Model quirks** ([`capabilities`]): parameters a model family refuses (`stop`,
//!   `temperature` and `max_tokens` on OpenAI reasoning models) are left out, stop sequences
//!   applied by the client instead; a 400 refusing such a parameter is retried once without it.
//! - **Accounting**: [`Usage`] per call (`input_tokens` counts every prompt token, cached or
//!   not), cost from a [`PriceTable`] (unknown price → `None`, never zero), and a [`Ledger`]
//!   tree with [`ModelTotals`] per model and a [`Budget`] that refuses calls.
//! - **Tool calling**: [`ToolDefinition`]s on a [`ChatRequest`], [`ToolCall`]s in a
//!   [`ChatResponse`], [`Message::tool_result`] answers, on both wire formats whole or streamed;
//!   [`LlmClient::chat_with_tools`] runs bounded rounds of model → tools → model.
//! - **Backends**: a provider that is not an HTTP service implements [`ChatBackend`] and is
//!   added under its name with [`LlmClientBuilder::backend`] (the MCP server's sampling is
//!   one); it gets the same limiter, budget, deadline and ledger, and its replies' usage is
//!   estimated when it reports none ([`ChatResponse::usage_estimated`]).
//! - **Record/replay**: JSON Lines cassettes with secrets redacted ([`cassette`]).
//! - **Secrets**: every [`ApiKey`] registers its value with [`secrets`], whose [`secrets::mask`]
//!   removes it, and any part of it of 8 characters or more, from errors, recordings and
//!   whatever else a front end writes (the trajectory, the CLI's stderr).
//! - **Types** shared with crates that call no model (the trajectory, the viewer) live in the
//!   leaf crate `rlm-types` and are re-exported here: [`Message`], [`Usage`], [`ModelTotals`],
//!   [`ApiKey`], [`secrets`], [`error_chain`], …
//! - **Test support** lives in the dev-only crate `rlm-fake`: `FakeServer`, a local server
//!   speaking both wire formats with scripted replies per model and fault injection.
//!
//! ```no_run
//! use rlm_llm::{ChatRequest, LlmClient};
//!
//! # async fn demo() -> Result<(), rlm_llm::Error> {
//! let client = LlmClient::builder()
//!     .builtin_providers(&|name| std::env::var(name).ok())
//!     .build()?;
//! let request = ChatRequest::new("openai:gpt-4o-mini")
//!     .system("Answer briefly.")
//!     .user("What is 2 + 2?");
//! let answer = client.chat(&request).await?;
//! println!("{} ({} tokens)", answer.text, answer.usage.total());
//! let totals = client.ledger().report();
//! println!("cost so far: at least ${:.4}", totals.total.cost_usd);
//! # Ok(())
//! # }
//! ```

mod admission;
mod backend;
mod call;
pub mod capabilities;
pub mod cassette;
mod client;
mod error;
mod limiter;
#[cfg(test)]
mod property_tests;
mod provider;
pub mod retry;
pub mod secrets;
mod server_props;
pub mod sse;
pub mod testing;
mod tool_loop;
mod tools;
mod usage;
mod window;
mod wire;

pub use backend::{BackendReply, ChatBackend, estimated_usage};
pub use capabilities::{CapabilityTable, MaxTokensField, ModelCapabilities, OpenAiApi};
pub use client::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_REQUEST_TIMEOUT, LlmClient,
    LlmClientBuilder,
};
pub use error::{Error, ErrorKind, Result};
pub use limiter::{
    ADAPTIVE_MAX_CONCURRENCY, ADAPTIVE_START_CONCURRENCY, CONCURRENCY_CEILING, Concurrency,
    ConcurrencyMode, ConcurrencySource, LATENCY_TOLERANCE,
};
pub use provider::{
    BUILTIN_PROVIDERS, BuiltinProvider, DEFAULT_MAX_CONCURRENCY, ModelRef, ProviderConfig,
    ProviderKind, default_concurrency, is_loopback_url,
};
pub use retry::RetryPolicy;
pub use server_props::{MAX_REPORTED_SLOTS, PROPS_BODY_LIMIT, ServerProps};
pub use tool_loop::{ExecutedToolCall, TOOL_ROUNDS_USED_UP, ToolRun};
// The shared vocabulary, at the names this crate has always given it.
pub use rlm_types::{
    ApiKey, ChatRequest, ChatResponse, FinishReason, InvalidToolArguments, JsonSchema, Message,
    ModelTotals, Role, ToolCall, ToolChoice, ToolDefinition, ToolOutput, Usage, UsageReport,
    error_chain,
};
pub use usage::{
    Budget, DEFAULT_OUTPUT_ESTIMATE, ESTIMATE_BYTES_PER_TOKEN, Estimate, Exhausted,
    INPUT_FRAMING_ALLOWANCE, Ledger, Price, PriceTable, Remaining, Reservation, Reserved,
};
pub use window::{ContextWindows, TooLong, WINDOW_BYTES_PER_TOKEN, estimate_input_tokens};
