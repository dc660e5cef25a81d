//! The per-provider limiter and batches.

use std::time::Duration;

use rlm_fake::FakeReply;
use rlm_llm::{ChatRequest, Error, LlmClient};

use crate::server;

#[tokio::test]
async fn peak_in_flight_equals_the_limit_across_clones() {
    let server = server().await;
    server.set_latency(Duration::from_millis(30));
    server.respond_with(|_| FakeReply::text("ok"));
    let client = LlmClient::builder()
        .provider(rlm_llm::testing::openai_provider("p", server.address()).max_concurrency(5))
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
        .provider(rlm_llm::testing::openai_provider("a", server.address()).max_concurrency(2))
        .provider(rlm_llm::testing::openai_provider("b", server.address()).max_concurrency(3))
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

/// A client whose provider `local` is the fake server on loopback with no concurrency
/// configured (as `ollama`, `vllm` or `llamacpp` are built in), or `pinned` when given.
fn local_client(server: &rlm_fake::FakeServer, pinned: Option<usize>) -> LlmClient {
    let mut provider = rlm_llm::ProviderConfig::new(
        "local",
        rlm_llm::ProviderKind::OpenAi,
        server.openai_base_url(),
    );
    if let Some(max) = pinned {
        provider = provider.max_concurrency(max);
    }
    LlmClient::builder()
        .provider(provider)
        .default_provider("local")
        .retry(crate::fast_retries(3))
        .build()
        .unwrap()
}

fn asks(count: usize) -> Vec<ChatRequest> {
    (0..count)
        .map(|i| ChatRequest::new("m").user(format!("q{i}")))
        .collect()
}

/// llama.cpp on this machine says how many requests it serves at once (`/props`
/// `total_slots`): that many go out together, asked once.
#[tokio::test]
async fn a_local_server_gets_as_many_requests_as_it_reports_slots() {
    let server = server().await;
    server.set_props(serde_json::json!({"total_slots": 4}));
    server.set_latency(Duration::from_millis(50));
    server.respond_with(|_| FakeReply::text("ok"));
    let client = local_client(&server, None);
    let results = client.chat_batch(&asks(12)).await;
    assert!(results.iter().all(Result::is_ok));
    assert_eq!(server.peak_in_flight(), 4);
    assert_eq!(server.props_requests(), 1);
    let concurrency = client.concurrency("local").unwrap();
    assert_eq!(
        (concurrency.limit, concurrency.source),
        (4, rlm_llm::ConcurrencySource::Server)
    );
}

/// A server reporting an absurd number of slots (2^61, past what a semaphore counts) gets at
/// most `MAX_REPORTED_SLOTS` requests at once, and nothing panics; a configured limit past
/// any use is held to `CONCURRENCY_CEILING`.
#[tokio::test]
async fn absurd_slot_counts_are_clamped() {
    let server = server().await;
    server.set_props(serde_json::json!({"total_slots": 1_u64 << 61}));
    server.respond_with(|_| FakeReply::text("ok"));
    let client = local_client(&server, None);
    client.chat(&asks(1)[0]).await.unwrap();
    let concurrency = client.concurrency("local").unwrap();
    assert_eq!(
        (concurrency.limit, concurrency.source),
        (
            rlm_llm::MAX_REPORTED_SLOTS,
            rlm_llm::ConcurrencySource::Server
        )
    );
    let configured = local_client(&server, Some(usize::MAX));
    assert_eq!(
        configured.concurrency("local").unwrap().limit,
        rlm_llm::CONCURRENCY_CEILING
    );
    configured.chat(&asks(1)[0]).await.unwrap();
}

/// Text Generation Inference (`/info` `max_concurrent_requests`) and SGLang
/// (`/get_server_info` `max_running_requests`) say how many requests they take at once, where
/// llama.cpp's `/props` is missing: that many go out together, and none waits in the server's
/// queue (it serves that many).
#[tokio::test]
async fn tgi_and_sglang_servers_get_as_many_requests_as_they_say() {
    for tgi in [true, false] {
        let server = server().await;
        if tgi {
            server.set_tgi_info(6);
        } else {
            server.set_sglang_info(6);
        }
        server.set_slots(6);
        server.set_latency(Duration::from_millis(50));
        server.respond_with(|_| FakeReply::text("ok"));
        let client = local_client(&server, None);
        let results = client.chat_batch(&asks(18)).await;
        assert!(results.iter().all(Result::is_ok));
        assert_eq!(server.peak_in_flight(), 6, "tgi {tgi}");
        assert_eq!(server.queued_requests(), 0, "tgi {tgi}");
        let concurrency = client.concurrency("local").unwrap();
        assert_eq!(
            (concurrency.limit, concurrency.source),
            (6, rlm_llm::ConcurrencySource::Server),
            "tgi {tgi}"
        );
    }
}

/// A limit the user set wins over what the server reports, which is then not asked.
#[tokio::test]
async fn a_configured_limit_wins_over_the_server_report() {
    let server = server().await;
    server.set_props(serde_json::json!({"total_slots": 4}));
    server.set_latency(Duration::from_millis(50));
    server.respond_with(|_| FakeReply::text("ok"));
    let client = local_client(&server, Some(2));
    let results = client.chat_batch(&asks(8)).await;
    assert!(results.iter().all(Result::is_ok));
    assert_eq!(server.peak_in_flight(), 2);
    assert_eq!(server.props_requests(), 0);
    let concurrency = client.concurrency("local").unwrap();
    assert_eq!(concurrency.source, rlm_llm::ConcurrencySource::Fixed);
}

/// A local server that reports nothing (vLLM, SGLang, TGI, a LiteLLM proxy) starts at one
/// request, doubles after each window of answers as quick as before, and is halved by a 503. The decisions follow the answers, not a clock: every reply takes the same 50 ms.
#[tokio::test]
async fn a_silent_local_server_grows_while_answers_stay_quick_and_halves_on_overload() {
    let server = server().await;
    server.set_latency(Duration::from_millis(50));
    server.respond_with(|_| FakeReply::text("ok"));
    let client = local_client(&server, None);
    let limit = || client.concurrency("local").unwrap().limit;
    assert_eq!(limit(), rlm_llm::ADAPTIVE_START_CONCURRENCY);
    // Windows of 1 and 2 quick answers: 1 -> 2 -> 4.
    for request in asks(3) {
        client.chat(&request).await.unwrap();
    }
    assert_eq!(limit(), 4);
    let results = client.chat_batch(&asks(4)).await;
    assert!(results.iter().all(Result::is_ok));
    assert_eq!(server.peak_in_flight(), 4, "the grown limit is used");
    let before = limit();
    server.script("m", [FakeReply::status(503, "overloaded")]);
    client
        .chat(&ChatRequest::new("m").user("again"))
        .await
        .unwrap();
    assert_eq!(limit(), before / 2);
    let concurrency = client.concurrency("local").unwrap();
    assert_eq!(concurrency.source, rlm_llm::ConcurrencySource::Adaptive);
    assert_eq!(server.props_requests(), 1, "asked once, nothing reported");
}

/// A call whose deadline passes while it waits for a slot of rlm's own limiter was never
/// sent: it fails with the deadline, and the ledger counts no call and no failure for it (the
/// call that held the slot is the only one counted).
#[tokio::test]
async fn waiting_for_a_slot_past_the_deadline_is_not_a_failed_call() {
    let server = server().await;
    server.script(
        "m",
        [FakeReply::text("slow").with_delay(Duration::from_millis(600))],
    );
    let client = LlmClient::builder()
        .provider(rlm_llm::testing::openai_provider("one", server.address()).max_concurrency(1))
        .default_provider("one")
        .build()
        .unwrap();
    let holding = {
        let client = client.clone();
        tokio::spawn(async move { client.chat(&ChatRequest::new("m").user("first")).await })
    };
    while server.in_flight() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let waiting = client.with_deadline(std::time::Instant::now() + Duration::from_millis(150));
    let err = waiting
        .chat(&ChatRequest::new("m").user("second"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::DeadlineExceeded { .. }), "{err:?}");
    assert_eq!(holding.await.unwrap().unwrap().text, "slow");
    let spent = client.ledger().total();
    assert_eq!((spent.calls, spent.failures), (1, 0), "{spent:?}");
    assert_eq!(server.request_count(), 1);
}
