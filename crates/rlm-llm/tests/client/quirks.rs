//! Models that refuse parameters: the capability table, one retry without a refused
//! parameter, and stop sequences applied by the client.

use rlm_fake::FakeReply;
use rlm_llm::{CapabilityTable, ChatRequest, ErrorKind, FinishReason, ModelCapabilities};

use crate::{client, fast_retries, server};

/// The RLM loop's kind of request: a temperature and a stop sequence at a code fence's end.
fn loop_request(model: &str) -> ChatRequest {
    ChatRequest::new(model)
        .user("go")
        .temperature(0.2)
        .max_tokens(50)
        .stop("```\n")
}

#[tokio::test]
async fn a_refused_parameter_is_dropped_once_and_remembered_for_the_model() {
    let server = server().await;
    server.reasoning_model("custom-reasoner");
    server.respond_with(|_| FakeReply::text("```repl\nx = 1\n```\nand more after the fence"));
    // Not in the table: the refusals teach the client, one parameter per retry.
    let client = rlm_llm::testing::client_builder(server.address())
        .retry(fast_retries(0))
        .capabilities(CapabilityTable::empty())
        .build()
        .unwrap();

    let answer = client.chat(&loop_request("custom-reasoner")).await.unwrap();
    // Applied by the client as the provider would have: cut before the stop sequence.
    assert_eq!(answer.text, "```repl\nx = 1\n");
    assert_eq!(answer.finish(), FinishReason::EndTurn);
    assert_eq!(answer.retries, 0, "adapting is not a retry of a failure");
    let seen = server.requests();
    assert_eq!(
        seen.len(),
        4,
        "stop, temperature, max_tokens refused, then answered"
    );
    assert!(seen[0].body.get("stop").is_some());
    assert!(seen[1].body.get("stop").is_none());
    assert!(seen[1].body.get("temperature").is_some());
    assert!(seen[2].body.get("temperature").is_none());
    assert_eq!(seen[3].body["max_completion_tokens"], 50);
    assert!(seen[3].body.get("max_tokens").is_none());

    // Remembered for the rest of the process: the next call is sent right the first time.
    client.chat(&loop_request("custom-reasoner")).await.unwrap();
    assert_eq!(server.request_count(), 5);
    let learned = client.capabilities("custom-reasoner").unwrap();
    assert_eq!(learned, ModelCapabilities::REASONING);
    // Another model is not affected.
    assert_eq!(
        client.capabilities("other").unwrap(),
        ModelCapabilities::default()
    );
}

#[tokio::test]
async fn table_families_are_sent_right_the_first_time_whole_and_streamed() {
    let server = server().await;
    server.reasoning_model("gpt-5-mini");
    server.respond_with(|_| FakeReply::text("```repl\nprint(2)\n```\nFINAL(after the fence)"));
    let client = client(&server, 0);
    let answer = client.chat(&loop_request("gpt-5-mini")).await.unwrap();
    assert_eq!(answer.text, "```repl\nprint(2)\n");
    assert_eq!(answer.finish_reason.as_deref(), Some("stop"));
    assert_eq!(server.request_count(), 1);
    // `chat` streams, but nobody sees the pieces: the stream is read past the stop to the
    // usage OpenAI sends last, so the call is accounted for as a whole body would be.
    assert!(server.requests()[0].stream);
    assert!(answer.usage.input_tokens > 0, "{:?}", answer.usage);
    assert!(answer.usage.output_tokens > 0, "{:?}", answer.usage);

    let mut pieces = String::new();
    let streamed = client
        .chat_streaming(&loop_request("gpt-5-mini"), &mut |piece| {
            pieces.push_str(piece);
        })
        .await
        .unwrap();
    assert_eq!(server.request_count(), 2);
    assert_eq!(streamed.text, "```repl\nprint(2)\n");
    assert_eq!(
        pieces, streamed.text,
        "nothing past the stop reaches the caller"
    );
    assert_eq!(streamed.finish_reason.as_deref(), Some("stop"));
}

#[tokio::test]
async fn other_400s_are_reported_at_once_with_keys_masked() {
    let server = server().await;
    server.script(
        "m",
        [FakeReply::status(
            400,
            "Invalid value for 'temperature': must be at most 2. Key sk-proj-abcdefgh1234 used.",
        )],
    );
    let client = client(&server, 3);
    let err = client
        .chat(&ChatRequest::new("m").user("q").temperature(5.0))
        .await
        .unwrap_err();
    assert_eq!(server.request_count(), 1, "not retried");
    assert_eq!(err.kind(), ErrorKind::Input);
    let shown = err.to_string();
    assert!(shown.contains("must be at most 2"), "{shown}");
    assert!(!shown.contains("abcdefgh1234"), "{shown}");
}

/// A local server that does not know a model's chat template returns its end-of-turn token as
/// text, and the model goes on to write the next turn itself: the client cuts the reply at the
/// token, whole or streamed, as at a stop sequence.
#[tokio::test]
async fn chat_template_tokens_end_the_reply_whole_or_streamed() {
    let server = server().await;
    server.respond_with(|_| {
        FakeReply::text("FINAL(42)<|im_end|>\n<|im_start|>user\nYour reply had no ```repl block")
    });
    let client = client(&server, 0);
    let whole = client
        .chat(&ChatRequest::new("small").user("go"))
        .await
        .unwrap();
    assert_eq!(whole.text, "FINAL(42)");
    assert_eq!(whole.finish(), FinishReason::EndTurn);

    let mut pieces = String::new();
    let streamed = client
        .chat_streaming(&ChatRequest::new("small").user("go"), &mut |piece: &str| {
            pieces.push_str(piece);
        })
        .await
        .unwrap();
    assert_eq!(streamed.text, "FINAL(42)");
    assert_eq!(
        pieces, "FINAL(42)",
        "nothing after the token reaches the caller"
    );

    // Other templates' tokens too; text without one is untouched.
    server.respond_with(|seen| {
        FakeReply::text(match seen.last_user_message() {
            "gemma" => "done<end_of_turn>\nmodel\nmore",
            "llama" => "done<|eot_id|><|start_header_id|>user",
            _ => "plain <|im_start|> stays",
        })
    });
    for (prompt, expected) in [
        ("gemma", "done"),
        ("llama", "done"),
        ("other", "plain <|im_start|> stays"),
    ] {
        let answer = client
            .chat(&ChatRequest::new("small").user(prompt))
            .await
            .unwrap();
        assert_eq!(answer.text, expected, "{prompt}");
    }
}
