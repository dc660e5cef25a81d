//! Configured keys never leave the client: not in provider errors (bodies, stream events),
//! whatever shape the provider echoes them in, nor in recordings.

use rlm_fake::{FakeBehavior, FakeReply, FakeServer};
use rlm_llm::{ApiKey, ChatRequest, LlmClient, error_chain};

use crate::{fast_retries, server};

/// A key without any prefix a heuristic would know.
const PLAIN_KEY: &str = "Lq3vT9xW2mZr8NcB5kYp0HdFa7";
/// A Groq-style key, not `sk-`.
const GROQ_KEY: &str = "gsk_W4nR8tY2uI6oP0aS3dF7gH1jK5";

/// Fails when `text` holds any 8 characters in a row of `key`.
#[track_caller]
fn assert_no_part_of(key: &str, text: &str) {
    for start in 0..=key.len() - 8 {
        let part = &key[start..start + 8];
        assert!(!text.contains(part), "`{part}` of the key is in: {text}");
    }
}

fn client(server: &FakeServer, provider: &str, key: &str) -> LlmClient {
    LlmClient::builder()
        .provider(
            rlm_llm::testing::openai_provider(provider, server.address())
                .api_key(Some(ApiKey::new(key))),
        )
        .retry(fast_retries(0))
        .build()
        .unwrap()
}

/// The shapes providers and proxies echo a key in.
fn echoes(key: &str) -> Vec<String> {
    vec![
        format!("Invalid key={key}; check your settings"),
        format!(r#"upstream said {{"api_key":"{key}","error":"denied"}}"#),
        format!("Incorrect API key provided: {key}."),
        format!("key ending {} is revoked", &key[key.len() - 12..]),
        format!("auth failed for ({})", &key[4..16]),
    ]
}

#[tokio::test]
async fn error_bodies_echoing_the_configured_key_show_none_of_it() {
    for key in [PLAIN_KEY, GROQ_KEY] {
        let server = server().await;
        let client = client(&server, "groq", key);
        for (status, message) in [401, 400]
            .into_iter()
            .flat_map(|status| echoes(key).into_iter().map(move |echo| (status, echo)))
        {
            server.script("m", [FakeReply::status(status, message.clone())]);
            let err = client
                .chat(&ChatRequest::new("groq:m").user("q"))
                .await
                .unwrap_err();
            let shown = error_chain(&err);
            assert!(shown.contains(&format!("HTTP {status}")), "{shown}");
            assert!(shown.contains("<redacted>"), "{message} became {shown}");
            assert_no_part_of(key, &shown);
        }
        // A body that is not the wire's error shape is quoted raw, and masked the same way.
        server.script(
            "m",
            [FakeReply {
                behavior: FakeBehavior::Body {
                    status: 403,
                    body: serde_json::json!({ "detail": format!("token {key} not allowed") }),
                },
                delay: None,
                usage: None,
                finish_reason: None,
            }],
        );
        let err = client
            .chat(&ChatRequest::new("groq:m").user("q"))
            .await
            .unwrap_err();
        assert_no_part_of(key, &error_chain(&err));
    }
}

#[tokio::test]
async fn a_stream_error_event_echoing_the_key_shows_none_of_it() {
    let server = server().await;
    let client = client(&server, "groq", PLAIN_KEY);
    server.script(
        "m",
        [FakeReply::error_event(format!(
            "overloaded; retry with key={PLAIN_KEY}"
        ))],
    );
    let err = client
        .chat_streaming(&ChatRequest::new("groq:m").user("q"), &mut |_: &str| {})
        .await
        .unwrap_err();
    let shown = error_chain(&err);
    assert!(shown.contains("overloaded"), "{shown}");
    assert_no_part_of(PLAIN_KEY, &shown);
}

/// A prompt quoting a file that holds the key, and an answer repeating part of it, are
/// recorded masked; the recording still replays.
#[tokio::test]
async fn a_recording_holds_no_part_of_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.jsonl");
    let server = server().await;
    server.script(
        "m",
        [FakeReply::text(format!(
            "your key starts {}",
            &PLAIN_KEY[..12]
        ))],
    );
    let recording = LlmClient::builder()
        .provider(
            rlm_llm::testing::openai_provider("groq", server.address())
                .api_key(Some(ApiKey::new(PLAIN_KEY))),
        )
        .record(&path)
        .build()
        .unwrap();
    let question = ChatRequest::new("groq:m").user(format!("my .env says GROQ_KEY={PLAIN_KEY}"));
    recording.chat(&question).await.unwrap();
    drop(recording);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("GROQ_KEY=<redacted>"), "{text}");
    assert_no_part_of(PLAIN_KEY, &text);

    let replay = LlmClient::builder()
        .provider(rlm_llm::ProviderConfig::new(
            "groq",
            rlm_llm::ProviderKind::OpenAi,
            "http://127.0.0.1:9",
        ))
        .replay(&path)
        .build()
        .unwrap();
    let answer = replay.chat(&question).await.unwrap();
    assert_eq!(answer.text, "your key starts <redacted>");
}
