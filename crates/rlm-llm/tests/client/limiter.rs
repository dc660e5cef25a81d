//! The per-provider limiter and batches.

use std::time::Duration;

use rlm_llm::fake::FakeReply;
use rlm_llm::{ChatRequest, Error, LlmClient};

use crate::server;

#[tokio::test]
async fn peak_in_flight_equals_the_limit_across_clones() {
    let server = server().await;
    server.set_latency(Duration::from_millis(30));
    server.respond_with(|_| FakeReply::text("ok"));
    let client = LlmClient::builder()
        .provider(server.openai_provider("p").max_concurrency(5))
        .default_provider("p")
        .build()
        .unwrap();
    // Two independent callers (clones) share the provider's limiter.
    let requests: Vec<ChatRequest> = (0..20)
        .map(|i| ChatRequest::new("m").user(format!("q{i}")))
        .collect();
    let other_caller = client.clone();
    let (first, second) = tokio::join!(
        client.chat_batch(&requests),
        other_caller.chat_batch(&requests)
    );
    assert!(first.iter().chain(&second).all(Result::is_ok));
    assert_eq!(server.peak_in_flight(), 5);
    assert_eq!(server.request_count(), 40);
}

#[tokio::test]
async fn providers_have_separate_limits() {
    let server = server().await;
    server.set_latency(Duration::from_millis(30));
    server.respond_with(|_| FakeReply::text("ok"));
    let client = LlmClient::builder()
        .provider(server.openai_provider("a").max_concurrency(2))
        .provider(server.openai_provider("b").max_concurrency(3))
        .build()
        .unwrap();
    let requests: Vec<ChatRequest> = (0..10)
        .flat_map(|i| {
            [
                ChatRequest::new(format!("a:m{i}")).user("x"),
                ChatRequest::new(format!("b:m{i}")).user("x"),
            ]
        })
        .collect();
    let results = client.chat_batch(&requests).await;
    assert!(results.iter().all(Result::is_ok));
    assert_eq!(server.peak_in_flight(), 5);
}

#[tokio::test]
async fn a_failed_item_fails_only_itself() {
    let server = server().await;
    server.respond_with(|seen| match seen.last_user_message() {
        "bad" => FakeReply::status(400, "refused"),
        prompt => FakeReply::text(prompt.to_uppercase()),
    });
    let client = crate::client(&server, 2);
    let requests: Vec<ChatRequest> = ["a", "bad", "c"]
        .iter()
        .map(|p| ChatRequest::new("m").user(*p))
        .collect();
    let results = client.chat_batch(&requests).await;
    assert_eq!(results.len(), 3);
    assert_eq!(results[0].as_ref().unwrap().text, "A");
    assert!(matches!(results[1], Err(Error::Status { status: 400, .. })));
    assert_eq!(results[2].as_ref().unwrap().text, "C");
    let report = client.ledger().report();
    assert_eq!(report.total.calls, 2);
    assert_eq!(report.total.failures, 1);
}
