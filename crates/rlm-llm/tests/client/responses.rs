//! OpenAI's Responses API: models the capability table (or configuration) sends to
//! `/responses` get its request shape, whole and streamed, with tools, JSON mode, output caps
//! and stop sequences applied by the client (the endpoint has no `stop`).

use std::sync::{Arc, Mutex};

use rlm_fake::FakeReply;
use rlm_llm::{
    CapabilityTable, ChatRequest, FinishReason, LlmClient, ModelCapabilities, OpenAiApi, ToolCall,
    ToolDefinition, ToolOutput, Usage,
};
use serde_json::json;

use crate::{client, fast_retries, server};

/// The RLM loop's kind of request: a system prompt, a stop sequence at a fence's end.
fn loop_request(model: &str) -> ChatRequest {
    ChatRequest::new(model)
        .system("You write code.")
        .user("go")
        .max_tokens(50)
        .stop("```\n")
}

#[tokio::test]
async fn responses_only_models_go_to_responses_whole_and_streamed() {
    let server = server().await;
    server.respond_with(|_| {
        FakeReply::text("```repl\nprint(2)\n```\nFINAL(after the fence)").with_usage(Usage {
            input_tokens: 40,
            output_tokens: 9,
            cache_read_tokens: 32,
            cache_write_tokens: 0,
        })
    });
    let client = client(&server, 0);

    let whole = client.chat(&loop_request("o3-pro")).await.unwrap();
    assert_eq!(whole.text, "```repl\nprint(2)\n", "cut by the client");
    assert_eq!(whole.finish(), FinishReason::EndTurn);
    assert_eq!(whole.usage.input_tokens, 40);
    assert_eq!(whole.usage.cache_read_tokens, 32);

    let mut pieces = String::new();
    let streamed = client
        .chat_streaming(&loop_request("gpt-5-pro"), &mut |piece| {
            pieces.push_str(piece)
        })
        .await
        .unwrap();
    assert_eq!(streamed.text, "```repl\nprint(2)\n");
    assert_eq!(
        pieces, streamed.text,
        "nothing past the stop reaches the caller"
    );

    let seen = server.requests();
    assert_eq!(seen.len(), 2, "each answered at the first attempt");
    for request in &seen {
        assert_eq!(request.endpoint, "/v1/responses");
        assert_eq!(request.body["instructions"], "You write code.");
        assert_eq!(request.body["input"][0]["content"], "go");
        assert_eq!(request.body["max_output_tokens"], 50);
        assert!(request.body.get("stop").is_none());
        assert!(request.body.get("temperature").is_none());
    }
    assert_eq!(seen[1].body["stream"], true);

    // Models of chat completions are unchanged.
    server.script("gpt-4o", [FakeReply::text("plain")]);
    assert_eq!(
        client.chat(&loop_request("gpt-4o")).await.unwrap().text,
        "plain"
    );
    assert_eq!(server.requests()[2].endpoint, "/v1/chat/completions");
}

/// A client whose capability table has one configured rule: models starting with `prefix`
/// go to the Responses API and accept everything else.
fn client_sending_to_responses(server: &rlm_fake::FakeServer, prefix: &str) -> LlmClient {
    let mut table = CapabilityTable::builtin();
    table.insert(
        prefix,
        ModelCapabilities {
            api: OpenAiApi::Responses,
            ..ModelCapabilities::default()
        },
    );
    rlm_llm::testing::client_builder(server.address())
        .retry(fast_retries(0))
        .capabilities(table)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_configured_rule_moves_any_model_to_responses() {
    let server = server().await;
    server.script("in-house", [FakeReply::text("{\"ok\": true}")]);
    let client = client_sending_to_responses(&server, "in-house");
    let request = ChatRequest::new("in-house")
        .user("answer in JSON")
        .temperature(0.3)
        .json(true);
    let answer = client.chat(&request).await.unwrap();
    assert_eq!(answer.text, "{\"ok\": true}");
    let seen = server.requests_for("in-house").pop().unwrap();
    assert_eq!(seen.endpoint, "/v1/responses");
    assert_eq!(seen.body["text"]["format"]["type"], "json_object");
    assert_eq!(seen.body["temperature"], json!(0.3_f32));
}

#[tokio::test]
async fn the_tool_loop_runs_over_responses_whole_and_streamed() {
    let server = server().await;
    let client = client(&server, 0);
    for stream in [false, true] {
        let model = if stream { "o3-pro-2025" } else { "o3-pro" };
        server.script(
            model,
            [
                FakeReply::tool_calls(
                    "Searching.",
                    [ToolCall::new("", "search", r#"{"query": "refresh"}"#)],
                ),
                FakeReply::text("Refreshed in auth.rs (chunk 7)."),
            ],
        );
        let request = ChatRequest::new(model)
            .system("Answer from the store.")
            .user("Where is the token refreshed?")
            .tool(ToolDefinition::new(
                "search",
                "Search the store.",
                json!({"type": "object", "properties": {"query": {"type": "string"}}}),
            ));
        let executed = Arc::new(Mutex::new(Vec::new()));
        let seen_calls = Arc::clone(&executed);
        let execute = move |call: ToolCall| {
            seen_calls.lock().unwrap().push(call);
            std::future::ready(ToolOutput::ok("chunk 7: refresh_token() in auth.rs"))
        };
        let run = if stream {
            let mut sink = |_: &str| {};
            client
                .chat_with_tools_streaming(&request, 3, &mut sink, execute)
                .await
                .unwrap()
        } else {
            client.chat_with_tools(&request, 3, execute).await.unwrap()
        };
        assert_eq!(
            run.response.text, "Refreshed in auth.rs (chunk 7).",
            "stream={stream}"
        );
        let executed = executed.lock().unwrap().clone();
        assert_eq!(executed.len(), 1);
        assert_eq!(executed[0].name, "search");
        assert_eq!(executed[0].arguments_value().unwrap()["query"], "refresh");

        let second = server.requests_for(model).pop().unwrap();
        assert_eq!(second.endpoint, "/v1/responses");
        let input = second.body["input"].as_array().unwrap();
        let call = input
            .iter()
            .find(|item| item["type"] == "function_call")
            .unwrap();
        let output = input
            .iter()
            .find(|item| item["type"] == "function_call_output")
            .unwrap();
        assert_eq!(
            call["call_id"], output["call_id"],
            "the result answers its call"
        );
        assert_eq!(output["output"], "chunk 7: refresh_token() in auth.rs");
        assert_eq!(second.body["tools"][0]["name"], "search");
    }
}

#[tokio::test]
async fn an_output_cap_reached_is_a_length_finish() {
    let server = server().await;
    server.script(
        "o1-pro",
        [FakeReply::text("a long answer cut").with_finish_reason("length")],
    );
    let client = client(&server, 0);
    let answer = client
        .chat(&ChatRequest::new("o1-pro").user("go on").max_tokens(5))
        .await
        .unwrap();
    assert_eq!(answer.finish(), FinishReason::Length);
}

#[tokio::test]
async fn stop_sequences_never_go_to_responses_even_when_a_rule_allows_them() {
    // `stop` is an unknown parameter on the Responses API (the fake endpoint refuses it as the
    // real one does), so a rule saying the model takes stop sequences must not make the
    // client send one there: it cuts the reply itself.
    let server = server().await;
    server.script("claims-stop", [FakeReply::text("x\n```\ny")]);
    let client = client_sending_to_responses(&server, "claims-stop");
    let answer = client.chat(&loop_request("claims-stop")).await.unwrap();
    assert_eq!(answer.text, "x\n");
    let seen = server.requests_for("claims-stop").pop().unwrap();
    assert!(seen.body.get("stop").is_none());
}
