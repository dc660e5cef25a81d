//! The client against the fake provider (and a non-HTTP backend): wire formats, streaming, faults,
//! limiter, accounting, record/replay. One binary so the crate links once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod accounting;
mod backend;
mod caching;
mod cassette;
mod faults;
mod limiter;
mod quirks;
mod responses;
mod secrets;
mod server_props;
mod structured;
mod timeouts;
mod tools;
mod wire;

use std::time::Duration;

use rlm_fake::FakeServer;
use rlm_llm::{LlmClient, RetryPolicy};

/// A started fake server.
pub async fn server() -> FakeServer {
    FakeServer::start().await.unwrap()
}

/// Retries that are quick unless a server hint says otherwise.
pub fn fast_retries(max_retries: u32) -> RetryPolicy {
    RetryPolicy {
        max_retries,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(20),
        max_server_delay: Duration::from_secs(5),
    }
}

/// A client for the fake server with `max_retries` quick retries.
pub fn client(server: &FakeServer, max_retries: u32) -> LlmClient {
    rlm_llm::testing::client_builder(server.address())
        .retry(fast_retries(max_retries))
        .build()
        .unwrap()
}
