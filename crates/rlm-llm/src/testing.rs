//! Clients for tests against a local fake provider (the `rlm-fake` crate, or any server that
//! speaks the wire formats on loopback): providers named [`FAKE_OPENAI`] and [`FAKE_ANTHROPIC`]
//! at a server's address, with a hosted API's concurrency and fast retries. The fake knows only
//! the wire; the client is built here, from its address.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use rlm_fake::{FakeReply, FakeServer};
//! use rlm_llm::ChatRequest;
//!
//! let server = FakeServer::start().await?;
//! server.script("root", [FakeReply::text("first"), FakeReply::text("second")]);
//! server.respond_with(|seen| FakeReply::text(format!("echo: {}", seen.last_user_message())));
//! let client = rlm_llm::testing::client_builder(server.address()).build()?;
//! assert_eq!(client.chat(&ChatRequest::new("root").user("hi")).await?.text, "first");
//! assert_eq!(client.chat(&ChatRequest::new("sub").user("hi")).await?.text, "echo: hi");
//! assert_eq!(server.requests_for("root").len(), 1);
//! # Ok(())
//! # }
//! ```

use std::net::SocketAddr;
use std::time::Duration;

use crate::{LlmClient, LlmClientBuilder, ProviderConfig, ProviderKind, RetryPolicy};

/// Name of the OpenAI-format provider in [`client_builder`] (also the default).
pub const FAKE_OPENAI: &str = "fake";
/// Name of the Anthropic-format provider in [`client_builder`].
pub const FAKE_ANTHROPIC: &str = "fake-anthropic";

/// A provider named `name` speaking the OpenAI format to the server at `address`
/// (`http://ADDRESS/v1`). It stands in for a hosted API, so it gets a hosted API's default
/// concurrency ([`crate::DEFAULT_MAX_CONCURRENCY`]), not the one-at-a-time default of a
/// loopback URL.
pub fn openai_provider(name: &str, address: SocketAddr) -> ProviderConfig {
    ProviderConfig::new(name, ProviderKind::OpenAi, format!("http://{address}/v1"))
        .max_concurrency(crate::DEFAULT_MAX_CONCURRENCY)
}

/// A provider named `name` speaking the Anthropic format to the server at `address`
/// (concurrency as [`openai_provider`]).
pub fn anthropic_provider(name: &str, address: SocketAddr) -> ProviderConfig {
    ProviderConfig::new(name, ProviderKind::Anthropic, format!("http://{address}"))
        .max_concurrency(crate::DEFAULT_MAX_CONCURRENCY)
}

/// A client builder with providers [`FAKE_OPENAI`] (the default, so bare model names like
/// `root` go there) and [`FAKE_ANTHROPIC`] at `address`, and fast retries for tests.
pub fn client_builder(address: SocketAddr) -> LlmClientBuilder {
    LlmClient::builder()
        .provider(openai_provider(FAKE_OPENAI, address))
        .provider(anthropic_provider(FAKE_ANTHROPIC, address))
        .default_provider(FAKE_OPENAI)
        .retry(RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(50),
            max_server_delay: Duration::from_secs(5),
        })
}
