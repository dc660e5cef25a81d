//! Tool calling on both wire formats, whole and streamed, the bounded tool loop, and tool
//! calls in recordings.

use std::sync::{Arc, Mutex};

use rlm_fake::{FakeReply, FakeServer};
use rlm_llm::testing::{FAKE_ANTHROPIC, FAKE_OPENAI};
use rlm_llm::{
    Budget, ChatRequest, ChatResponse, Error, FinishReason, Ledger, LlmClient, ProviderKind, Role,
    TOOL_ROUNDS_USED_UP, ToolCall, ToolChoice, ToolDefinition, ToolOutput, ToolRun, Usage,
};
use serde_json::json;

use crate::{fast_retries, server};

/// A client whose `chat` asks for whole bodies, so each test covers both shapes: `chat` whole,
/// `chat_streaming` streamed.
fn client(server: &FakeServer, max_retries: u32) -> LlmClient {
    rlm_llm::testing::client_builder(server.address())
        .retry(fast_retries(max_retries))
        .streaming(false)
        .build()
        .unwrap()
}

/// Both fake providers: (provider name, wire).
const WIRES: [(&str, ProviderKind); 2] = [
    (FAKE_OPENAI, ProviderKind::OpenAi),
    (FAKE_ANTHROPIC, ProviderKind::Anthropic),
];

fn search_tool() -> ToolDefinition {
    ToolDefinition::new(
        "search",
        "Search the store for chunks.",
        json!({"type": "object", "properties": {"query": {"type": "string"}},
            "required": ["query"]}),
    )
}

fn grep_tool() -> ToolDefinition {
    ToolDefinition::new(
        "grep",
        "Find lines matching a pattern.",
        json!({"type": "object", "properties": {"pattern": {"type": "string"}}}),
    )
}

fn request(provider: &str, model: &str) -> ChatRequest {
    ChatRequest::new(format!("{provider}:{model}"))
        .system("Answer from the store.")
        .user("Where is the token refreshed?")
        .tool(search_tool())
        .tool(grep_tool())
}

fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        ..Usage::default()
    }
}

/// The ids the fake server gives unnamed calls on each wire.
fn fake_id(wire: ProviderKind, index: usize) -> String {
    match wire {
        ProviderKind::OpenAi => format!("call_fake_{index}"),
        _ => format!("toolu_fake_{index}"),
    }
}

async fn ask(client: &LlmClient, request: &ChatRequest, stream: bool) -> (ChatResponse, String) {
    if !stream {
        let response = client.chat(request).await.unwrap();
        let text = response.text.clone();
        return (response, text);
    }
    let mut streamed = String::new();
    let response = client
        .chat_streaming(request, &mut |piece: &str| streamed.push_str(piece))
        .await
        .unwrap();
    (response, streamed)
}

#[tokio::test]
async fn tool_calls_are_read_from_both_wires_whole_and_streamed() {
    let server = server().await;
    let client = client(&server, 0);
    for (provider, wire) in WIRES {
        for stream in [false, true] {
            let model = format!("m-{provider}-{stream}");
            let arguments = r#"{"query": "refresh token", "k": 3}"#;
            server.script(
                &model,
                [FakeReply::tool_calls(
                    "Let me search.",
                    [
                        ToolCall::new("", "search", arguments),
                        ToolCall::new("", "grep", r#"{"pattern": "401"}"#),
                    ],
                )],
            );
            let request = request(provider, &model).tool_choice(ToolChoice::Required);
            let (response, streamed) = ask(&client, &request, stream).await;
            let case = format!("{wire:?} stream={stream}");
            assert_eq!(response.finish(), FinishReason::ToolCalls, "{case}");
            assert_eq!(response.text, "Let me search.", "{case}");
            assert_eq!(streamed, "Let me search.", "{case}");
            assert_eq!(response.tool_calls.len(), 2, "{case}");
            let search = &response.tool_calls[0];
            assert_eq!(search.id, fake_id(wire, 0), "{case}");
            assert_eq!(search.name, "search", "{case}");
            assert_eq!(
                search.arguments_value().unwrap(),
                json!({"query": "refresh token", "k": 3}),
                "{case}"
            );
            assert_eq!(response.tool_calls[1].id, fake_id(wire, 1), "{case}");
            assert_eq!(
                response.tool_calls[1].arguments_value().unwrap()["pattern"],
                "401"
            );

            let seen = server.requests_for(&model).pop().unwrap();
            assert_eq!(seen.tool_names(), ["search", "grep"], "{case}");
            match wire {
                ProviderKind::OpenAi => {
                    assert_eq!(seen.body["tool_choice"], "required");
                    assert_eq!(
                        seen.body["tools"][0]["function"]["parameters"]["required"][0],
                        "query"
                    );
                }
                _ => {
                    assert_eq!(seen.body["tool_choice"], json!({"type": "any"}));
                    assert_eq!(
                        seen.body["tools"][0]["input_schema"]["required"][0],
                        "query"
                    );
                }
            }
        }
    }
}

/// Runs the tool loop with an executor that answers `search` from a fixed table and records
/// the calls it saw. Streamed runs also return the text streamed.
async fn run_loop(
    client: &LlmClient,
    request: &ChatRequest,
    max_rounds: u32,
) -> (ToolRun, Vec<ToolCall>) {
    let (run, executed, _) = run_loop_with(client, request, max_rounds, false).await;
    (run, executed)
}

async fn run_loop_with(
    client: &LlmClient,
    request: &ChatRequest,
    max_rounds: u32,
    stream: bool,
) -> (ToolRun, Vec<ToolCall>, String) {
    let executed = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&executed);
    let execute = move |call: ToolCall| {
        seen.lock().unwrap().push(call.clone());
        let output = match call.arguments_value() {
            Ok(arguments) => ToolOutput::ok(format!("chunk 7 matches {}", arguments["query"])),
            Err(invalid) => invalid.into(),
        };
        std::future::ready(output)
    };
    let mut streamed = String::new();
    let run = if stream {
        let mut sink = |piece: &str| streamed.push_str(piece);
        client
            .chat_with_tools_streaming(request, max_rounds, &mut sink, execute)
            .await
    } else {
        client.chat_with_tools(request, max_rounds, execute).await
    };
    let executed = executed.lock().unwrap().clone();
    (run.unwrap(), executed, streamed)
}

#[tokio::test]
async fn the_loop_sends_results_back_and_sums_usage_on_both_wires() {
    let server = server().await;
    for ((provider, wire), stream) in WIRES.into_iter().flat_map(|w| [(w, false), (w, true)]) {
        let model = format!("loop-{provider}-{stream}");
        server.script(
            &model,
            [
                FakeReply::tool_call("search", json!({"query": "refresh"}))
                    .with_usage(usage(100, 10)),
                FakeReply::text("Refreshed in auth.rs (chunk 7).").with_usage(usage(150, 20)),
            ],
        );
        let ledger = Ledger::new();
        let client = client(&server, 0).with_ledger(Arc::clone(&ledger));
        let (run, executed, streamed) =
            run_loop_with(&client, &request(provider, &model), 3, stream).await;
        let case = format!("{wire:?} stream={stream}");
        assert_eq!(
            run.response.text, "Refreshed in auth.rs (chunk 7).",
            "{case}"
        );
        if stream {
            assert_eq!(streamed, run.response.text, "{case}");
        }
        assert_eq!(run.rounds, 1, "{case}");
        assert_eq!(run.model_calls, 2, "{case}");
        assert!(!run.rounds_exhausted, "{case}");
        assert_eq!(run.usage, usage(250, 30), "{case}");
        assert_eq!(ledger.total().usage, usage(250, 30), "{case}");
        assert_eq!(ledger.total().calls, 2, "{case}");
        assert_eq!(executed.len(), 1, "{case}");
        assert_eq!(run.executed[0].call.id, fake_id(wire, 0), "{case}");
        // The conversation: assistant tool turn, tool result, final answer.
        let roles: Vec<Role> = run.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::Assistant, Role::Tool, Role::Assistant],
            "{case}"
        );

        let second = &server.requests_for(&model)[1];
        let results = second.tool_results();
        assert_eq!(results.len(), 1, "{case}");
        assert_eq!(
            results[0].tool_call_id.as_deref(),
            Some(fake_id(wire, 0).as_str())
        );
        assert_eq!(results[0].content, "chunk 7 matches \"refresh\"", "{case}");
        assert!(!results[0].is_error, "{case}");
        let calls = &second.messages[1].tool_calls;
        assert_eq!(calls[0].name, "search", "{case}");
        match wire {
            ProviderKind::OpenAi => {
                assert_eq!(second.body["messages"][3]["role"], "tool");
                assert_eq!(
                    second.body["messages"][2]["tool_calls"][0]["type"],
                    "function"
                );
            }
            _ => {
                assert_eq!(second.body["messages"][1]["content"][0]["type"], "tool_use");
                assert_eq!(second.body["messages"][2]["role"], "user");
                assert_eq!(
                    second.body["messages"][2]["content"][0]["type"],
                    "tool_result"
                );
            }
        }
    }
}

#[tokio::test]
async fn bad_arguments_arrive_intact_and_go_back_to_the_model_as_tool_errors() {
    let server = server().await;
    let client = client(&server, 0);
    let cut = r#"{"query": "refr"#;
    for (provider, wire) in WIRES {
        for stream in [false, true] {
            let model = format!("cut-{provider}-{stream}");
            server.script(
                &model,
                [FakeReply::tool_calls(
                    "",
                    [ToolCall::new("", "search", cut)],
                )],
            );
            let (response, _) = ask(&client, &request(provider, &model), stream).await;
            let call = &response.tool_calls[0];
            let case = format!("{wire:?} stream={stream}");
            let error = call.arguments_value().unwrap_err();
            if wire == ProviderKind::Anthropic && !stream {
                // A whole Anthropic reply carries `input` as JSON; the fake sends the unusable
                // arguments as a string there.
                assert_eq!(
                    error.detail, "expected a JSON object, got a string",
                    "{case}"
                );
            } else {
                assert_eq!(call.arguments, cut, "{case}");
                assert!(
                    error.detail.starts_with("not valid JSON"),
                    "{case}: {error}"
                );
            }
        }

        let model = format!("bad-{provider}");
        server.script(
            &model,
            [
                FakeReply::tool_calls(
                    "",
                    [
                        ToolCall::new("", "search", cut),
                        ToolCall::new("", "delete_everything", "{}"),
                    ],
                ),
                FakeReply::text("Sorry."),
            ],
        );
        let (run, executed) = run_loop(&client, &request(provider, &model), 2).await;
        let case = format!("{wire:?}");
        assert!(executed.is_empty(), "{case}: the executor saw a bad call");
        assert_eq!(run.response.text, "Sorry.", "{case}");
        assert!(
            run.executed.iter().all(|done| done.output.is_error),
            "{case}"
        );
        let invalid = &run.executed[0].output.content;
        assert!(
            invalid.starts_with("the arguments of tool `search` are unusable"),
            "{case}: {invalid}"
        );
        let unknown = &run.executed[1].output.content;
        assert_eq!(
            unknown, "there is no tool named `delete_everything`; the tools are: search, grep",
            "{case}"
        );
        let sent = server.requests_for(&model).pop().unwrap();
        let results = sent.tool_results();
        assert_eq!(results.len(), 2, "{case}");
        match wire {
            // No error flag on this wire: the content says it.
            ProviderKind::OpenAi => {
                assert!(
                    results[0].content.starts_with("error: the arguments"),
                    "{case}"
                );
                assert_eq!(results[1].content, format!("error: {unknown}"), "{case}");
            }
            _ => {
                assert!(results[0].is_error && results[1].is_error, "{case}");
                assert_eq!(&results[1].content, unknown, "{case}");
            }
        }
    }
}

#[tokio::test]
async fn rounds_are_bounded_then_an_answer_is_asked_for_without_tools() {
    let server = server().await;
    let client = client(&server, 0);
    for (provider, wire) in WIRES {
        let model = format!("eager-{provider}");
        let search = || FakeReply::tool_call("search", json!({"query": "more"}));
        server.script(
            &model,
            [
                search(),
                search(),
                search(),
                FakeReply::text("Best effort."),
            ],
        );
        let (run, executed) = run_loop(&client, &request(provider, &model), 2).await;
        let case = format!("{wire:?}");
        assert_eq!(run.rounds, 2, "{case}");
        assert_eq!(executed.len(), 2, "{case}");
        assert_eq!(run.model_calls, 3, "{case}");
        assert!(run.rounds_exhausted, "{case}");
        // The third reply called tools anyway (a model may ignore the choice): not run.
        assert_eq!(run.response.tool_calls.len(), 1, "{case}");
        assert_eq!(server.remaining(&model), 1, "{case}");

        let sent = server.requests_for(&model);
        assert_eq!(sent.len(), 3, "{case}");
        let last = &sent[2];
        assert_eq!(last.last_user_message(), TOOL_ROUNDS_USED_UP, "{case}");
        match wire {
            ProviderKind::OpenAi => assert_eq!(last.body["tool_choice"], "none"),
            _ => assert_eq!(last.body["tool_choice"], json!({"type": "none"})),
        }
        assert!(sent[1].body.get("tool_choice").is_none(), "{case}");
    }
}

#[tokio::test]
async fn every_call_of_the_loop_is_charged_to_the_budget() {
    let server = server().await;
    server.script(
        "spender",
        [
            FakeReply::tool_call("search", json!({"query": "a"})),
            FakeReply::tool_call("search", json!({"query": "b"})),
            FakeReply::text("never reached"),
        ],
    );
    let ledger = Ledger::with_budget(Budget {
        max_calls: Some(2),
        ..Budget::default()
    });
    let client = client(&server, 0).with_ledger(Arc::clone(&ledger));
    let error = client
        .chat_with_tools(&request(FAKE_OPENAI, "spender"), 5, |_call| {
            std::future::ready(ToolOutput::ok("r"))
        })
        .await
        .unwrap_err();
    assert!(matches!(error, Error::BudgetExhausted { .. }), "{error}");
    assert_eq!(ledger.total().calls, 2);
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn a_recorded_tool_loop_replays_without_the_network() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.jsonl");
    let server = server().await;
    let model = format!("{FAKE_ANTHROPIC}:recorded");
    server.script(
        "recorded",
        [
            FakeReply::tool_call("search", json!({"query": "refresh"})),
            FakeReply::text("From chunk 7."),
        ],
    );
    let recording = rlm_llm::testing::client_builder(server.address())
        .record(&path)
        .build()
        .unwrap();
    let request = request(FAKE_ANTHROPIC, "recorded");
    let (recorded, recorded_calls) = run_loop(&recording, &request, 2).await;
    assert_eq!(model, request.model);

    // A server with nothing scripted: any request reaching it fails.
    let empty = FakeServer::start().await.unwrap();
    let replaying = rlm_llm::testing::client_builder(empty.address())
        .replay(&path)
        .build()
        .unwrap();
    let (replayed, replayed_calls) = run_loop(&replaying, &request, 2).await;
    assert_eq!(empty.request_count(), 0);
    assert_eq!(replayed.messages, recorded.messages);
    assert_eq!(replayed.executed, recorded.executed);
    assert_eq!(replayed_calls, recorded_calls);
    assert_eq!(replayed.usage, recorded.usage);
    assert!(replayed.response.replayed);
    assert_eq!(replayed.response.text, "From chunk 7.");
}
