//! The vocabulary rlm's crates share, with nothing that talks to a network: what a model call
//! sends and answers ([`Message`], [`Role`], [`ChatRequest`], [`ChatResponse`], [`Usage`], the
//! tool-calling types), what calls cost summed ([`ModelTotals`], [`UsageReport`]), an
//! [`ApiKey`] and the process-wide [`secrets`] registry that masks keys at every exit, and how
//! values are shown ([`error_chain`], [`thousands`]).
//!
//! `rlm-llm` (the provider clients) re-exports all of it at the same names (`rlm_llm::Message`,
//! `rlm_llm::secrets`, …); `rlm-trace` (the trajectory schema and viewer) and `rlm-context`
//! use it directly, so they build without an HTTP client. The registry of keys lives here
//! only, so a key registered through either crate is masked by both.
//!
//! ```
//! use rlm_types::{ApiKey, Message, ModelTotals, Usage, secrets, thousands};
//!
//! let key = ApiKey::new("sk-example-0123456789abcdef");
//! assert_eq!(key.to_string(), "<redacted>");
//! let message = Message::user("my key is sk-example-0123456789abcdef");
//! assert_eq!(secrets::mask(&message.content), "my key is <redacted>");
//!
//! let totals = ModelTotals {
//!     usage: Usage { input_tokens: 1_200_000, output_tokens: 3_400, ..Usage::default() },
//!     ..ModelTotals::default()
//! };
//! assert_eq!(thousands(totals.usage.total()), "1,203,400");
//! ```

mod api_key;
mod display;
pub mod secrets;
mod tools;
mod types;
mod usage;

pub use api_key::ApiKey;
pub use display::{error_chain, thousands};
pub use tools::{InvalidToolArguments, ToolCall, ToolChoice, ToolDefinition, ToolOutput};
pub use types::{ChatRequest, ChatResponse, FinishReason, JsonSchema, Message, Role, Usage};
pub use usage::{ModelTotals, UsageReport};
