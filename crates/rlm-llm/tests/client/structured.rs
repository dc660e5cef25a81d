//! Structured outputs: a request's JSON Schema goes out in the wire's own form, and a server
//! that refuses it gets plain JSON mode instead.

use rlm_fake::FakeReply;
use rlm_llm::testing::FAKE_ANTHROPIC;
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
}

/// Ollama is served through its OpenAI-compatible endpoint (the built-in `ollama` provider):
/// the schema goes out as the same strict `response_format`, which Ollama (0.5 and later) turns
/// into its own `format`, a grammar over the model's output; no setting is needed.
#[tokio::test]
async fn ollama_gets_the_schema_as_response_format_on_its_openai_endpoint() {
    let server = server().await;
    server.respond_with(|_| FakeReply::text(r#"{"ids": [2]}"#));
    let base = format!("http://{}/v1", server.address());
    let client = rlm_llm::LlmClient::builder()
        .builtin_providers(&|name| (name == "OLLAMA_BASE_URL").then(|| base.clone()))
        .retry(fast_retries(0))
        .build()
        .unwrap();
    let model = "ollama:qwen2.5:7b";
    assert!(client.constrains_output(model));
    let answer = client.chat(&ask(model)).await.unwrap();
    assert_eq!(answer.text, r#"{"ids": [2]}"#);
    let seen = &server.requests()[0];
    assert_eq!(seen.endpoint, "/v1/chat/completions");
    assert_eq!(seen.model, "qwen2.5:7b");
    let body = &seen.body;
    assert_eq!(body["response_format"]["type"], "json_schema", "{body}");
    assert_eq!(body["response_format"]["json_schema"]["strict"], true);
    assert_eq!(body["response_format"]["json_schema"]["schema"], schema());
}

/// On Anthropic the schema is the `input_schema` of the one tool the model must call, and the
/// call's input comes back as the reply's text, whole or streamed, as `response_format` gives
/// it on OpenAI.
#[tokio::test]
async fn anthropic_gets_the_schema_as_a_forced_tool_and_answers_in_text() {
    let server = server().await;
    server.respond_with(|_| FakeReply::text(r#"{"ids": [3, 4]}"#));
    let model = format!("{FAKE_ANTHROPIC}:claude");
    // Not streamed unless a caller reads the pieces.
    let client = rlm_llm::testing::client_builder(server.address())
        .retry(fast_retries(0))
        .streaming(false)
        .build()
        .unwrap();
    assert!(client.constrains_output(&model));
    let whole = client.chat(&ask(&model)).await.unwrap();
    let mut pieces = String::new();
    let streamed = client
        .chat_streaming(&ask(&model), &mut |piece| pieces.push_str(piece))
        .await
        .unwrap();
    assert_eq!(pieces, streamed.text, "the pieces are the answer");
    for answer in [whole, streamed] {
        let reply: serde_json::Value = serde_json::from_str(&answer.text).unwrap();
        assert_eq!(reply, json!({"ids": [3, 4]}));
        assert!(answer.tool_calls.is_empty(), "{:?}", answer.tool_calls);
        assert_eq!(answer.finish_reason.as_deref(), Some("end_turn"));
    }
    let seen = server.requests();
    assert_eq!(seen.len(), 2);
    assert!(!seen[0].stream && seen[1].stream);
    for request in &seen {
        let body = &request.body;
        assert_eq!(body["tools"].as_array().unwrap().len(), 1, "{body}");
        assert_eq!(body["tools"][0]["name"], "ids");
        assert_eq!(body["tools"][0]["input_schema"], schema());
        assert_eq!(body["tool_choice"], json!({"type": "tool", "name": "ids"}));
        assert!(body.get("response_format").is_none(), "{body}");
        let system = request.system.as_deref().unwrap_or_default();
        assert!(!system.contains("JSON object"), "{system}");
    }
}

/// Anthropic with `json_schema = false`, or a request that brings tools of its own: plain
/// JSON mode, no answer tool.
#[tokio::test]
async fn anthropic_without_the_capability_or_with_tools_is_plain_json_mode() {
    let server = server().await;
    server.respond_with(|_| FakeReply::text(r#"{"ids": []}"#));
    let mut table = CapabilityTable::builtin();
    let plain = ModelCapabilities {
        json_schema: false,
        ..ModelCapabilities::default()
    };
    table.insert(format!("{FAKE_ANTHROPIC}:plain"), plain);
    let client = rlm_llm::testing::client_builder(server.address())
        .retry(fast_retries(0))
        .capabilities(table)
        .build()
        .unwrap();
    let model = format!("{FAKE_ANTHROPIC}:plain");
    assert!(!client.constrains_output(&model));
    let answer = client.chat(&ask(&model)).await.unwrap();
    assert_eq!(answer.text, r#"{"ids": []}"#);
    let with_tool = ask(&format!("{FAKE_ANTHROPIC}:claude")).tool(rlm_llm::ToolDefinition::new(
        "search",
        "Search.",
        json!({"type": "object"}),
    ));
    client.chat(&with_tool).await.unwrap();
    let seen = server.requests();
    assert!(seen[0].body.get("tools").is_none(), "{}", seen[0].body);
    assert_eq!(seen[1].tool_names(), ["search"]);
    assert!(
        seen[1].body.get("tool_choice").is_none(),
        "{}",
        seen[1].body
    );
    for request in &seen {
        let system = request.system.as_deref().unwrap_or_default();
        assert!(system.contains("JSON object"), "{system}");
    }
}

/// A 400 about the answer tool's schema (as Anthropic words it) sends plain JSON mode once
/// more, remembered for the model.
#[tokio::test]
async fn anthropic_refusing_the_schema_falls_back_to_json_mode() {
    let server = server().await;
    server.script(
        "claude",
        [FakeReply::status(
            400,
            "tools.0.custom.input_schema: JSON schema is invalid",
        )],
    );
    server.respond_with(|_| FakeReply::text(r#"{"ids": [5]}"#));
    let client = client(&server, 0);
    let model = format!("{FAKE_ANTHROPIC}:claude");
    let answer = client.chat(&ask(&model)).await.unwrap();
    assert_eq!(answer.text, r#"{"ids": [5]}"#);
    let seen = server.requests();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].body["tool_choice"]["type"], "tool");
    assert!(
        seen[1].body.get("tool_choice").is_none(),
        "{}",
        seen[1].body
    );
    assert!(!client.constrains_output(&model));
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
    let client = rlm_llm::testing::client_builder(server.address())
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
