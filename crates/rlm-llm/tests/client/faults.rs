//! Fault injection: statuses, retry-after, hangs, malformed JSON, deadlines, cancellation.

use std::time::{Duration, Instant};

use rlm_fake::FakeReply;
use rlm_llm::{ChatRequest, Error, LlmClient};

use crate::{client, fast_retries, server};

fn ask(model: &str) -> ChatRequest {
    ChatRequest::new(model).user("question")
}

#[tokio::test]
async fn server_errors_and_overload_are_retried() {
    let server = server().await;
    server.script(
        "m",
        [
            FakeReply::server_error(),
            FakeReply::overloaded(),
            FakeReply::text("ok"),
        ],
    );
    let answer = client(&server, 3).chat(&ask("m")).await.unwrap();
    assert_eq!(answer.text, "ok");
    assert_eq!(answer.retries, 2);
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn retries_stop_at_the_limit_with_the_last_status() {
    let server = server().await;
    server.script("m", std::iter::repeat_n(FakeReply::server_error(), 5));
    let err = client(&server, 2).chat(&ask("m")).await.unwrap_err();
    assert!(matches!(err, Error::Status { status: 500, .. }), "{err:?}");
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn rate_limit_waits_as_long_as_retry_after_says() {
    let server = server().await;
    // Whole seconds only, as most servers send it; the client's own backoff is 5 ms here.
    server.script(
        "m",
        [FakeReply::rate_limited_seconds(1), FakeReply::text("ok")],
    );
    let started = Instant::now();
    let answer = client(&server, 3).chat(&ask("m")).await.unwrap();
    let waited = started.elapsed();
    assert_eq!(answer.retries, 1);
    assert!(
        waited >= Duration::from_millis(950),
        "waited only {waited:?}"
    );
    assert!(waited < Duration::from_secs(4), "waited {waited:?}");
}

#[tokio::test]
async fn retry_after_ms_takes_precedence() {
    let server = server().await;
    server.script(
        "m",
        [
            FakeReply::rate_limited(Duration::from_millis(300)),
            FakeReply::text("ok"),
        ],
    );
    let started = Instant::now();
    client(&server, 3).chat(&ask("m")).await.unwrap();
    let waited = started.elapsed();
    // retry-after says 1 s (rounded up), retry-after-ms says 300 ms: the precise one wins.
    assert!(waited >= Duration::from_millis(290), "{waited:?}");
    assert!(waited < Duration::from_millis(900), "{waited:?}");
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    for status in [400, 401, 403] {
        let server = server().await;
        server.script(
            "m",
            [
                FakeReply::status(status, "bad key or request"),
                FakeReply::text("never"),
            ],
        );
        let err = client(&server, 3).chat(&ask("m")).await.unwrap_err();
        match &err {
            Error::Status {
                status: got,
                message,
                ..
            } => {
                assert_eq!(*got, status);
                assert_eq!(message, "bad key or request");
            }
            other => panic!("{status}: {other:?}"),
        }
        assert!(err.is_input_error());
        assert_eq!(server.request_count(), 1, "{status} was retried");
        assert_eq!(server.remaining("m"), 1);
    }
}

#[tokio::test]
async fn a_hang_times_out_per_attempt() {
    let server = server().await;
    server.script("m", [FakeReply::hang(), FakeReply::hang()]);
    let client = rlm_llm::testing::client_builder(server.address())
        .retry(fast_retries(1))
        .request_timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let started = Instant::now();
    let err = client.chat(&ask("m")).await.unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    assert_eq!(server.request_count(), 2);
    assert!(started.elapsed() < Duration::from_secs(3));
}

/// A server that went silent in the middle of its answer (a model that never stops, on a
/// server that sends nothing more until it is done): the timeout is reported, not retried —
/// another attempt would cost another whole timeout. A whole body times out once it had
/// started; a stream that had opened but carried no token yet times out on the request
/// timeout; one that had carried tokens stalls on the idle timeout — whether or not the
/// caller sees the pieces.
#[tokio::test]
async fn a_timeout_while_the_server_is_answering_is_not_retried() {
    for (streaming, sink, partial, stalls) in [
        (false, false, "runaway", false),
        (true, false, "", false),
        (true, false, "runaway", true),
        (true, true, "", false),
        (true, true, "runaway", true),
    ] {
        let case = format!("streaming {streaming}, sink {sink}, {partial:?}");
        let server = server().await;
        server.script("m", [FakeReply::stall(partial), FakeReply::text("again")]);
        let client = rlm_llm::testing::client_builder(server.address())
            .retry(fast_retries(2))
            .request_timeout(Duration::from_millis(300))
            .streaming(streaming)
            .build()
            .unwrap();
        let err = if sink {
            client
                .chat_streaming(&ask("m"), &mut |_| {})
                .await
                .unwrap_err()
        } else {
            client.chat(&ask("m")).await.unwrap_err()
        };
        if stalls {
            assert!(matches!(err, Error::Stalled { .. }), "{case}: {err:?}");
        } else {
            assert!(matches!(err, Error::Timeout { .. }), "{case}: {err:?}");
        }
        assert_eq!(server.request_count(), 1, "{case} was retried");
    }
}

#[tokio::test]
async fn malformed_json_is_a_decode_error() {
    let server = server().await;
    server.script(
        "m",
        [FakeReply::malformed_json(), FakeReply::malformed_json()],
    );
    let client = rlm_llm::testing::client_builder(server.address())
        .retry(fast_retries(3))
        .streaming(false)
        .build()
        .unwrap();
    let err = client.chat(&ask("m")).await.unwrap_err();
    assert!(matches!(err, Error::Decode { .. }), "{err:?}");
    let err = client
        .chat_streaming(&ask("m"), &mut |_: &str| {})
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Decode { .. }), "{err:?}");
    assert_eq!(server.request_count(), 2);
}

/// A body or stream cut before the answer was shown to anyone is asked again, whether `chat`
/// streamed it or not.
#[tokio::test]
async fn a_cut_answer_nobody_saw_is_retried() {
    for streaming in [false, true] {
        let server = server().await;
        server.script(
            "m",
            [FakeReply::cut_stream("part of it"), FakeReply::text("ok")],
        );
        let client = rlm_llm::testing::client_builder(server.address())
            .retry(fast_retries(2))
            .streaming(streaming)
            .build()
            .unwrap();
        let answer = client.chat(&ask("m")).await.unwrap();
        assert_eq!(answer.text, "ok", "streaming {streaming}");
        assert_eq!(answer.retries, 1);
        assert_eq!(server.requests()[0].stream, streaming);
    }
}

#[tokio::test]
async fn the_deadline_bounds_slow_answers_and_retries() {
    let server = server().await;
    server.script(
        "m",
        [FakeReply::text("late").with_delay(Duration::from_secs(5))],
    );
    let client = client(&server, 3).with_deadline(Instant::now() + Duration::from_millis(150));
    let started = Instant::now();
    let err = client.chat(&ask("m")).await.unwrap_err();
    assert!(matches!(err, Error::DeadlineExceeded { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(2));

    server.script(
        "r",
        [FakeReply::rate_limited_seconds(30), FakeReply::text("ok")],
    );
    let client = client.with_deadline(Instant::now() + Duration::from_secs(2));
    let started = Instant::now();
    let err = client.chat(&ask("r")).await.unwrap_err();
    assert!(matches!(err, Error::DeadlineExceeded { .. }), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "slept past the deadline"
    );
}

#[tokio::test]
async fn cancelling_a_call_frees_its_slot() {
    let server = server().await;
    server.script("m", [FakeReply::hang(), FakeReply::text("after")]);
    let client = LlmClient::builder()
        .provider(rlm_llm::testing::openai_provider("only", server.address()).max_concurrency(1))
        .default_provider("only")
        .build()
        .unwrap();
    let hanging = {
        let client = client.clone();
        tokio::spawn(async move { client.chat(&ask("m")).await })
    };
    while server.in_flight() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    hanging.abort();
    assert!(hanging.await.unwrap_err().is_cancelled());
    // With one slot, this only gets through if the cancelled call released it.
    let answer = tokio::time::timeout(Duration::from_secs(5), client.chat(&ask("m")))
        .await
        .expect("slot was not released")
        .unwrap();
    assert_eq!(answer.text, "after");
}

#[tokio::test]
async fn missing_key_names_the_variable_before_any_request() {
    let server = server().await;
    let client = LlmClient::builder()
        .builtin_providers(&|name| (name == "OPENAI_BASE_URL").then(|| server.openai_base_url()))
        .build()
        .unwrap();
    let err = client.chat(&ask("openai:gpt-4o")).await.unwrap_err();
    assert!(matches!(err, Error::MissingApiKey { .. }));
    assert!(err.to_string().contains("OPENAI_API_KEY"), "{err}");
    assert_eq!(server.request_count(), 0);
}

/// `check_model` finds what the call would fail on, without a call: a missing key, an unknown
/// provider; a keyless local provider and a replaying client pass.
#[tokio::test]
async fn check_model_fails_as_the_call_would_without_sending() {
    let server = server().await;
    let client = LlmClient::builder()
        .builtin_providers(&|name| (name == "OPENAI_BASE_URL").then(|| server.openai_base_url()))
        .build()
        .unwrap();
    let err = client.check_model("openai:gpt-4o").unwrap_err();
    assert!(
        matches!(&err, Error::MissingApiKey { variable, .. } if variable == "OPENAI_API_KEY"),
        "{err:?}"
    );
    let err = client.check_model("nosuch:m").unwrap_err();
    assert!(matches!(err, Error::UnknownProvider { .. }), "{err:?}");
    client.check_model("ollama:llama3").unwrap();
    assert_eq!(server.request_count(), 0);

    let recording = tempfile::NamedTempFile::new().unwrap();
    let replaying = LlmClient::builder()
        .builtin_providers(&|_| None)
        .replay(recording.path())
        .build()
        .unwrap();
    replaying.check_model("openai:gpt-4o").unwrap();
}

#[tokio::test]
async fn x_should_retry_overrides_the_status_but_never_for_auth_errors() {
    let server = server().await;
    server.script(
        "m",
        [
            FakeReply::status(503, "maintenance").with_header("x-should-retry", "false"),
            FakeReply::status(401, "bad key").with_header("x-should-retry", "true"),
            FakeReply::status(418, "odd").with_header("x-should-retry", "true"),
            FakeReply::text("ok"),
        ],
    );
    let client = client(&server, 3);
    let err = client.chat(&ask("m")).await.unwrap_err();
    assert!(matches!(err, Error::Status { status: 503, .. }), "{err:?}");
    let err = client.chat(&ask("m")).await.unwrap_err();
    assert!(matches!(err, Error::Status { status: 401, .. }), "{err:?}");
    let answer = client.chat(&ask("m")).await.unwrap();
    assert_eq!((answer.text.as_str(), answer.retries), ("ok", 1));
    assert_eq!(server.request_count(), 4);
}

#[tokio::test]
async fn an_error_event_mid_stream_is_retried_before_any_text() {
    for model in ["ev-openai", "fake-anthropic:ev-anthropic"] {
        let server = server().await;
        let bare = model.rsplit(':').next().unwrap();
        server.script(
            bare,
            [
                FakeReply::error_event("Overloaded"),
                FakeReply::text("fine"),
            ],
        );
        let mut text = String::new();
        let answer = client(&server, 2)
            .chat_streaming(&ask(model), &mut |piece: &str| text.push_str(piece))
            .await
            .unwrap();
        assert_eq!((text.as_str(), answer.retries), ("fine", 1), "{model}");

        // A provider echoing the key in its event is masked as in an error body.
        server.script(
            bare,
            [FakeReply::error_event(
                "Overloaded for key sk-proj-0123456789abcdef",
            )],
        );
        let err = client(&server, 0)
            .chat_streaming(&ask(model), &mut |_: &str| {})
            .await
            .unwrap_err();
        assert!(matches!(err, Error::StreamError { .. }), "{model}: {err:?}");
        assert!(err.to_string().contains("Overloaded"), "{err}");
        assert!(!err.to_string().contains("0123456789abcdef"), "{err}");
    }
}

#[test]
fn a_base_url_without_http_is_refused_without_showing_credentials() {
    let config = rlm_llm::ProviderConfig::new(
        "proxy",
        rlm_llm::ProviderKind::OpenAi,
        "ftp://user:sk-proj-0123456789abcdef@proxy.example/v1?api-key=secret",
    );
    let Err(err) = LlmClient::builder().provider(config).build() else {
        panic!("an ftp base URL was accepted");
    };
    let shown = err.to_string();
    assert!(
        shown.contains("must start with http:// or https://"),
        "{shown}"
    );
    assert!(shown.contains("proxy.example"), "{shown}");
    assert!(
        !shown.contains("0123456789abcdef") && !shown.contains("secret"),
        "{shown}"
    );
}
