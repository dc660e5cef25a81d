//! Record then replay, redaction, and misses.

use rlm_fake::FakeReply;
use rlm_llm::testing::FAKE_ANTHROPIC;
use rlm_llm::{ApiKey, ChatRequest, Error, LlmClient, Usage};

use crate::server;

const SECRET: &str = "sk-live-never-write-me";

#[tokio::test]
async fn record_then_replay_without_network_or_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.jsonl");
    let server = server().await;
    server.script(
        "gpt-4o",
        [
            FakeReply::text("first answer"),
            FakeReply::text("second answer"),
        ],
    );
    server.script(
        "claude-x",
        [FakeReply::text("cached").with_usage(Usage {
            input_tokens: 8,
            output_tokens: 2,
            cache_read_tokens: 3,
            cache_write_tokens: 4,
        })],
    );
    let recording = LlmClient::builder()
        .provider(
            rlm_llm::testing::openai_provider("openai", server.address())
                .api_key(Some(ApiKey::new(SECRET))),
        )
        .provider(
            rlm_llm::testing::anthropic_provider(FAKE_ANTHROPIC, server.address())
                .api_key(Some(ApiKey::new(SECRET))),
        )
        .record(&path)
        .build()
        .unwrap();
    let question = ChatRequest::new("openai:gpt-4o")
        .system("s")
        .user("same question");
    let claude = ChatRequest::new(format!("{FAKE_ANTHROPIC}:claude-x")).user("q");
    assert_eq!(
        recording.chat(&question).await.unwrap().text,
        "first answer"
    );
    assert_eq!(
        recording.chat(&question).await.unwrap().text,
        "second answer"
    );
    let mut streamed = String::new();
    recording
        .chat_streaming(&claude, &mut |piece: &str| streamed.push_str(piece))
        .await
        .unwrap();
    drop(recording);

    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 3);
    assert!(!text.contains(SECRET), "the key leaked into the recording");
    assert!(text.contains("<redacted>"));
    assert!(text.contains("\"authorization\""));
    assert!(text.contains("\"x-api-key\""));

    // Replay: providers without keys, a base URL nobody listens on.
    let replay = LlmClient::builder()
        .builtin_providers(&|_| None)
        .provider(rlm_llm::ProviderConfig::new(
            FAKE_ANTHROPIC,
            rlm_llm::ProviderKind::Anthropic,
            "http://127.0.0.1:9",
        ))
        .replay(&path)
        .build()
        .unwrap();
    let before = server.request_count();
    let first = replay.chat(&question).await.unwrap();
    assert_eq!(first.text, "first answer");
    assert!(first.replayed);
    assert_eq!(replay.chat(&question).await.unwrap().text, "second answer");
    // Exhausted: the last recorded answer repeats, so loops stay deterministic.
    assert_eq!(replay.chat(&question).await.unwrap().text, "second answer");
    let mut pieces = String::new();
    let cached = replay
        .chat_streaming(&claude, &mut |piece: &str| pieces.push_str(piece))
        .await
        .unwrap();
    assert_eq!(pieces, "cached");
    assert_eq!(cached.usage.cache_write_tokens, 4);
    assert_eq!(server.request_count(), before, "replay touched the network");
    assert_eq!(replay.ledger().report().total.calls, 4);

    let miss = replay
        .chat(
            &ChatRequest::new("openai:gpt-4o")
                .system("s")
                .user("another question"),
        )
        .await
        .unwrap_err();
    assert!(matches!(miss, Error::ReplayMiss { .. }), "{miss:?}");
    assert!(miss.to_string().contains("calls.jsonl"), "{miss}");
}

#[tokio::test]
async fn a_corrupt_recording_is_reported_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.jsonl");
    std::fs::write(&path, "\n{not json}\n").unwrap();
    let err = LlmClient::builder().replay(&path).build().unwrap_err();
    assert!(matches!(err, Error::Recording { .. }));
    assert!(err.to_string().contains("line 2"), "{err}");
    let missing = LlmClient::builder()
        .replay(dir.path().join("none.jsonl"))
        .build()
        .unwrap_err();
    assert!(matches!(missing, Error::Recording { .. }));
}
