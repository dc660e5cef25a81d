//! Structured outputs: a request's JSON Schema goes out in the wire's own form, and a server
//! that refuses it gets plain JSON mode instead.

use rlm_llm::fake::{FAKE_ANTHROPIC, FakeReply};
use rlm_llm::{CapabilityTable, ChatRequest, ModelCapabilities};
use serde_json::json;

use crate::{client, fast_retries, server};

fn schema() -> serde_json::Value {
    json!({"type": "object", "properties": {"ids": {"type": "array", "items": {"type": "integer"}}},
           "required": ["ids"], "additionalProperties": false})
}

fn ask(model: &str) -> ChatRequest {
    ChatRequest::new(model)
        .user("which ids?")
        .json_schema("ids", schema())
}

#[tokio::test]
async fn the_schema_goes_out_as_strict_response_format() {
    let server = server().await;
    server.respond_with(|_| FakeReply::text(r#"{"ids": [1]}"#));
    let client = client(&server, 0);
    assert!(client.constrains_output("m"));
    let answer = client.chat(&ask("m")).await.unwrap();
    assert_eq!(answer.text, r#"{"ids": [1]}"#);
    let body = &server.requests()[0].body;
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(body["response_format"]["json_schema"]["name"], "ids");
    assert_eq!(body["response_format"]["json_schema"]["strict"], true);
    assert_eq!(body["response_format"]["json_schema"]["schema"], schema());

    // Anthropic: no schema field, plain JSON mode (validated by the caller).
    assert!(!client.constrains_output(&format!("{FAKE_ANTHROPIC}:m")));
    client
        .chat(&ask(&format!("{FAKE_ANTHROPIC}:m")))
        .await
        .unwrap();
    let body = &server.requests()[1].body;
    assert!(!body.to_string().contains("additionalProperties"), "{body}");
}

/// A 400 refusing `response_format` (as an older server or a strict-mode schema check
/// answers) is answered by sending plain JSON mode once more, remembered for the model.
#[tokio::test]
async fn a_refused_schema_falls_back_to_json_mode_and_is_remembered() {
    let server = server().await;
    server.script(
        "m",
        [FakeReply::status(
            400,
            "Unsupported parameter: 'response_format' of type 'json_schema' is not supported",
        )],
    );
    server.respond_with(|_| FakeReply::text(r#"{"ids": [2]}"#));
    let client = client(&server, 0);
    let answer = client.chat(&ask("m")).await.unwrap();
    assert_eq!(answer.text, r#"{"ids": [2]}"#);
    let seen = server.requests();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].body["response_format"]["type"], "json_schema");
    assert_eq!(
        seen[1].body["response_format"],
        json!({"type": "json_object"})
    );
    assert!(!client.constrains_output("m"));
    client.chat(&ask("m")).await.unwrap();
    assert_eq!(server.request_count(), 3, "sent right the first time");
    assert_eq!(
        server.requests()[2].body["response_format"]["type"],
        "json_object"
    );
}

/// A capability rule `provider:` turns the schema off for every model of a provider.
#[tokio::test]
async fn a_provider_rule_turns_the_schema_off() {
    let server = server().await;
    server.respond_with(|_| FakeReply::text("{}"));
    let mut table = CapabilityTable::builtin();
    let plain = ModelCapabilities {
        json_schema: false,
        ..ModelCapabilities::default()
    };
    table.insert("fake:", plain);
    let client = server
        .client_builder()
        .retry(fast_retries(0))
        .capabilities(table)
        .build()
        .unwrap();
    assert!(!client.constrains_output("any-model"));
    client.chat(&ask("any-model")).await.unwrap();
    assert_eq!(
        server.requests()[0].body["response_format"],
        json!({"type": "json_object"})
    );
}
