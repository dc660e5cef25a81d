//! Both wire formats, whole and streamed, and model-routed scripts.

use std::time::Duration;

use rlm_fake::{DEFAULT_STREAM_GAP, FakeReply};
use rlm_llm::testing::FAKE_ANTHROPIC;
use rlm_llm::{ApiKey, ChatRequest, Error, LlmClient, Usage};

use crate::{client, server};

/// `chat` streams by default and assembles the answer a whole body would give (text, finish
/// reason, usage with cache reads), asking OpenAI for the usage chunk; `streaming(false)` sends
/// the same request for a whole body.
#[tokio::test]
async fn openai_request_and_response_round_trip() {
    for stream in [true, false] {
        let server = server().await;
        server.script(
            "gpt-test",
            [FakeReply::text("four").with_usage(Usage {
                input_tokens: 40,
                output_tokens: 2,
                cache_read_tokens: 30,
                cache_write_tokens: 0,
            })],
        );
        let client = LlmClient::builder()
            .provider(
                rlm_llm::testing::openai_provider("openai", server.address())
                    .api_key(Some(ApiKey::new("sk-test-key"))),
            )
            .streaming(stream)
            .build()
            .unwrap();
        let request = ChatRequest::new("openai:gpt-test")
            .system("be brief")
            .user("2+2?")
            .temperature(0.0)
            .max_tokens(5)
            .stop("\n\n")
            .json(true);
        assert!(
            !format!("{client:?}").contains("sk-test-key"),
            "Debug leaked the key"
        );
        let answer = client.chat(&request).await.unwrap();
        assert_eq!(answer.text, "four");
        assert_eq!(answer.model, "openai:gpt-test");
        assert_eq!(answer.finish_reason.as_deref(), Some("stop"));
        assert_eq!(answer.usage.input_tokens, 40, "stream {stream}");
        assert_eq!(answer.usage.cache_read_tokens, 30);
        assert_eq!(answer.retries, 0);

        let seen = &server.requests()[0];
        assert_eq!(seen.wire, rlm_fake::Wire::OpenAi);
        assert_eq!(seen.system.as_deref(), Some("be brief"));
        assert_eq!(seen.last_user_message(), "2+2?");
        assert_eq!(seen.header("authorization"), Some("Bearer sk-test-key"));
        assert_eq!(seen.body["response_format"]["type"], "json_object");
        assert_eq!(seen.body["stop"][0], "\n\n");
        assert_eq!(seen.body["max_tokens"], 5);
        assert_eq!(seen.stream, stream);
        assert_eq!(
            seen.body["stream_options"]["include_usage"].as_bool(),
            stream.then_some(true)
        );
    }
}

#[tokio::test]
async fn anthropic_request_caches_the_system_prompt_and_counts_cache_tokens() {
    let server = server().await;
    let usage = Usage {
        input_tokens: 1204,
        output_tokens: 3,
        cache_read_tokens: 1000,
        cache_write_tokens: 200,
    };
    server.script("claude-test", [FakeReply::text("hello").with_usage(usage)]);
    let client = LlmClient::builder()
        .provider(
            rlm_llm::testing::anthropic_provider("anthropic", server.address())
                .api_key(Some(ApiKey::new("ak-test-key"))),
        )
        .build()
        .unwrap();
    let request = ChatRequest::new("anthropic:claude-test")
        .system("long stable prefix")
        .user("hi")
        .stop("END");
    let answer = client.chat(&request).await.unwrap();
    assert_eq!(answer.text, "hello");
    assert_eq!(answer.usage, usage);
    assert_eq!(answer.finish_reason.as_deref(), Some("end_turn"));

    let seen = &server.requests()[0];
    assert_eq!(seen.wire, rlm_fake::Wire::Anthropic);
    assert_eq!(seen.header("x-api-key"), Some("ak-test-key"));
    assert_eq!(seen.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(seen.body["system"][0]["cache_control"]["type"], "ephemeral");
    assert_eq!(seen.body["stop_sequences"][0], "END");
    assert_eq!(seen.system.as_deref(), Some("long stable prefix"));
}

async fn stream_and_collect(
    model: &str,
    reply: FakeReply,
) -> (Vec<String>, Result<rlm_llm::ChatResponse, Error>, usize) {
    stream_and_collect_paced(model, reply, DEFAULT_STREAM_GAP).await
}

/// [`stream_and_collect`] with the server pausing `gap` between two body chunks.
async fn stream_and_collect_paced(
    model: &str,
    reply: FakeReply,
    gap: Duration,
) -> (Vec<String>, Result<rlm_llm::ChatResponse, Error>, usize) {
    let server = server().await;
    server.set_stream_gap(gap);
    let bare = model.rsplit(':').next().unwrap();
    server.script(bare, [reply]);
    let client = client(&server, 2);
    let mut pieces = Vec::new();
    let result = client
        .chat_streaming(
            &ChatRequest::new(model).user("tell me"),
            &mut |piece: &str| {
                pieces.push(piece.to_owned());
            },
        )
        .await;
    (pieces, result, server.request_count())
}

/// Pieces arrive one by one whether each event is its own write (the server's default pause)
/// or all events come back to back and may share a read (no pause).
#[tokio::test]
async fn streaming_delivers_pieces_in_both_formats() {
    let text = "The quick brown fox jumps over the lazy dög.";
    for (model, gap) in [
        ("stream-openai".to_owned(), DEFAULT_STREAM_GAP),
        (
            format!("{FAKE_ANTHROPIC}:stream-anthropic"),
            DEFAULT_STREAM_GAP,
        ),
        ("stream-openai".to_owned(), Duration::ZERO),
        (format!("{FAKE_ANTHROPIC}:stream-anthropic"), Duration::ZERO),
    ] {
        let model = model.as_str();
        let usage = Usage {
            input_tokens: 7,
            output_tokens: 11,
            ..Usage::default()
        };
        let (pieces, result, _) =
            stream_and_collect_paced(model, FakeReply::text(text).with_usage(usage), gap).await;
        let answer = result.unwrap();
        assert!(
            pieces.len() > 1,
            "{model} ({gap:?} between chunks): answer came in {} piece(s)",
            pieces.len()
        );
        assert_eq!(pieces.concat(), text, "{model}");
        assert_eq!(answer.text, text);
        assert_eq!(answer.usage.output_tokens, 11, "{model}");
        assert_eq!(answer.usage.input_tokens, 7, "{model}");
        assert!(answer.finish_reason.is_some(), "{model}");
    }
}

#[tokio::test]
async fn stream_cut_after_text_is_an_error_and_not_retried() {
    for model in ["cut-openai", &format!("{FAKE_ANTHROPIC}:cut-anthropic")] {
        let (pieces, result, requests) =
            stream_and_collect(model, FakeReply::cut_stream("partial answer")).await;
        assert!(
            matches!(result, Err(Error::StreamInterrupted { .. })),
            "{model}: {result:?}"
        );
        assert_eq!(pieces.concat(), "partial answer", "{model}");
        assert_eq!(
            requests, 1,
            "{model}: a stream that already produced text must not be retried"
        );
    }
}

#[tokio::test]
async fn stream_cut_before_any_text_is_retried() {
    let server = server().await;
    server.script("m", [FakeReply::cut_stream(""), FakeReply::text("whole")]);
    let client = client(&server, 2);
    let mut text = String::new();
    let answer = client
        .chat_streaming(&ChatRequest::new("m").user("x"), &mut |piece: &str| {
            text.push_str(piece)
        })
        .await
        .unwrap();
    assert_eq!(text, "whole");
    assert_eq!(answer.retries, 1);
}

#[tokio::test]
async fn scripts_are_per_model_and_the_responder_sees_the_prompt() {
    let server = server().await;
    server.script(
        "root",
        [FakeReply::text("root-1"), FakeReply::text("root-2")],
    );
    server.script("sub", [FakeReply::text("sub-1")]);
    server
        .respond_with(|seen| FakeReply::text(format!("{} chars", seen.last_user_message().len())));
    let client = client(&server, 0);
    let ask = |model: &str, prompt: &str| ChatRequest::new(model).user(prompt);
    assert_eq!(client.chat(&ask("sub", "a")).await.unwrap().text, "sub-1");
    assert_eq!(client.chat(&ask("root", "b")).await.unwrap().text, "root-1");
    assert_eq!(
        client.chat(&ask("sub", "hello")).await.unwrap().text,
        "5 chars"
    );
    assert_eq!(client.chat(&ask("root", "c")).await.unwrap().text, "root-2");
    assert_eq!(server.requests_for("root").len(), 2);
    assert_eq!(server.requests_for("sub")[1].last_user_message(), "hello");
}

#[tokio::test]
async fn unscripted_model_without_responder_is_a_clear_error() {
    let server = server().await;
    let client = client(&server, 3);
    let err = client
        .chat(&ChatRequest::new("nobody").user("x"))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("no scripted reply for model `nobody`"),
        "{err}"
    );
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn the_fake_ends_replies_at_a_stop_sequence_like_the_real_apis() {
    let server = server().await;
    let reply = "```repl\nx = 1\n```\nFINAL(1)";
    server.script("gpt-test", [FakeReply::text(reply), FakeReply::text(reply)]);
    server.script("claude-test", [FakeReply::text(reply)]);
    let client = LlmClient::builder()
        .provider(rlm_llm::testing::openai_provider(
            "openai",
            server.address(),
        ))
        .provider(rlm_llm::testing::anthropic_provider(
            "anthropic",
            server.address(),
        ))
        .build()
        .unwrap();
    let ask = |model: &str, stop: Option<&str>| {
        let mut request = ChatRequest::new(model).user("go");
        if let Some(stop) = stop {
            request = request.stop(stop);
        }
        request
    };
    let openai = client
        .chat(&ask("openai:gpt-test", Some("\n```\n")))
        .await
        .unwrap();
    assert_eq!(openai.text, "```repl\nx = 1");
    assert_eq!(openai.finish_reason.as_deref(), Some("stop"));
    let anthropic = client
        .chat(&ask("anthropic:claude-test", Some("\n```\n")))
        .await
        .unwrap();
    assert_eq!(anthropic.text, "```repl\nx = 1");
    assert_eq!(anthropic.finish_reason.as_deref(), Some("stop_sequence"));
    // Without a stop sequence the whole scripted reply comes back.
    let whole = client.chat(&ask("openai:gpt-test", None)).await.unwrap();
    assert_eq!(whole.text, reply);
}
