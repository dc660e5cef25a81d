//! What the timeouts measure: the request timeout bounds the wait for an answer to start (not
//! the time queued behind the limiter), the idle timeout the silence inside a streamed answer;
//! a steady answer runs as long as it writes. No assertion here is about elapsed time: each
//! case's outcome differs by kind (an answer, `Timeout`, `Stalled`).

use std::time::Duration;

use rlm_fake::FakeReply;
use rlm_llm::testing::FAKE_ANTHROPIC;
use rlm_llm::{ChatRequest, Error, LlmClient, Usage};

use crate::{fast_retries, server};

/// Long enough that a test reaching it has hung, not merely run slowly.
const HUNG: Duration = Duration::from_secs(30);

fn ask(model: &str) -> ChatRequest {
    ChatRequest::new(model).user("question")
}

/// Twelve pieces 100 ms apart: 1.2 s in all, twice the 600 ms request and idle timeouts, each
/// gap a sixth of them. Streamed (the default of `chat`), the answer arrives whole with its
/// usage, on both wires; the same reply as one body, which the server sends only when done,
/// times out.
#[tokio::test]
async fn a_steady_answer_longer_than_the_timeouts_arrives() {
    let text = "one two three four five six seven eight nine ten eleven twelve";
    let usage = Usage {
        input_tokens: 9,
        output_tokens: 12,
        ..Usage::default()
    };
    for model in ["steady", &format!("{FAKE_ANTHROPIC}:steady")] {
        let server = server().await;
        let reply = FakeReply::slow_stream(text, 12, Duration::from_millis(100)).with_usage(usage);
        server.script("steady", [reply.clone(), reply]);
        let client = |streaming: bool| {
            rlm_llm::testing::client_builder(server.address())
                .retry(fast_retries(0))
                .request_timeout(Duration::from_millis(600))
                .idle_timeout(Duration::from_millis(600))
                .streaming(streaming)
                .build()
                .unwrap()
        };
        let answer = tokio::time::timeout(HUNG, client(true).chat(&ask(model)))
            .await
            .expect("hung")
            .unwrap();
        assert_eq!(answer.text, text, "{model}");
        assert_eq!(answer.usage, usage, "{model}");
        assert!(answer.finish_reason.is_some(), "{model}");
        assert!(server.requests()[0].stream);

        let err = tokio::time::timeout(HUNG, client(false).chat(&ask(model)))
            .await
            .expect("hung")
            .unwrap_err();
        assert!(matches!(err, Error::Timeout { .. }), "{model}: {err:?}");
    }
}

/// A stream that stops after its first tokens fails on the idle timeout (200 ms here), long
/// before the request timeout (an hour), and is not asked again: the server was generating.
#[tokio::test]
async fn a_stalled_answer_fails_after_the_idle_timeout() {
    for sink in [false, true] {
        let server = server().await;
        server.script(
            "m",
            [
                FakeReply::stall("the answer began"),
                FakeReply::text("again"),
            ],
        );
        let client = rlm_llm::testing::client_builder(server.address())
            .retry(fast_retries(2))
            .request_timeout(Duration::from_secs(3600))
            .idle_timeout(Duration::from_millis(200))
            .build()
            .unwrap();
        let mut shown = String::new();
        let call = async {
            if sink {
                client
                    .chat_streaming(&ask("m"), &mut |piece: &str| shown.push_str(piece))
                    .await
            } else {
                client.chat(&ask("m")).await
            }
        };
        let err = tokio::time::timeout(HUNG, call)
            .await
            .expect("the idle timeout did not fire")
            .unwrap_err();
        match &err {
            Error::Stalled { idle, .. } => assert_eq!(*idle, Duration::from_millis(200)),
            other => panic!("sink {sink}: {other:?}"),
        }
        assert!(err.to_string().contains("stalled"), "{err}");
        assert_eq!(server.request_count(), 1, "a stall was retried");
        assert_eq!(shown, if sink { "the answer began" } else { "" });
    }
}

/// The idle timeout is never longer than the request timeout: a client given only a short
/// request timeout (300 ms) gives up on a stalled stream after it, not after the 60 s default.
#[tokio::test]
async fn a_short_request_timeout_shortens_the_idle_timeout() {
    let server = server().await;
    server.script("m", [FakeReply::stall("partial")]);
    let client = rlm_llm::testing::client_builder(server.address())
        .retry(fast_retries(0))
        .request_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let err = tokio::time::timeout(HUNG, client.chat(&ask("m")))
        .await
        .expect("hung on the default idle timeout")
        .unwrap_err();
    assert!(
        matches!(err, Error::Stalled { idle, .. } if idle == Duration::from_millis(300)),
        "{err:?}"
    );
}

/// One slot, six answers of 250 ms each, a 1 s request timeout: the last waits 1.25 s for the
/// slot and still succeeds, because the timeout starts when the request is sent. Whole bodies
/// and streams alike.
#[tokio::test]
async fn time_queued_behind_the_limiter_does_not_count() {
    for streaming in [false, true] {
        let server = server().await;
        server.respond_with(|_| FakeReply::text("ok").with_delay(Duration::from_millis(250)));
        let client = LlmClient::builder()
            .provider(rlm_llm::testing::openai_provider("one", server.address()).max_concurrency(1))
            .default_provider("one")
            .retry(fast_retries(0))
            .request_timeout(Duration::from_secs(1))
            .streaming(streaming)
            .build()
            .unwrap();
        let requests: Vec<ChatRequest> = (0..6).map(|i| ask(&format!("m{i}"))).collect();
        let results = tokio::time::timeout(HUNG, client.chat_batch(&requests))
            .await
            .expect("hung");
        for result in &results {
            assert_eq!(result.as_ref().unwrap().text, "ok", "streaming {streaming}");
        }
        assert_eq!(server.peak_in_flight(), 1);
        assert_eq!(server.request_count(), 6, "something was retried");
    }
}
