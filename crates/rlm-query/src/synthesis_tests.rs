//! The report writer's tools and the budget's reserve for the report, against the fake
//! provider on both wire formats.

use rlm_fake::{FakeReply, FakeServer, SeenRequest};
use rlm_llm::testing::FAKE_ANTHROPIC;
use rlm_llm::{Budget, Price, PriceTable, Role, ToolCall};
use rlm_store::Store;
use rlm_trace::{Record, Trajectory};
use serde_json::json;

use crate::tests::{FILES, HOSTILE, options, store_with, valid_reply};
use crate::{Error, Query, QueryStatus};

/// The id of the (only) chunk of `buffer`.
fn chunk_id_of(store: &Store, buffer: &str) -> i64 {
    let info = store
        .filter_buffers(&[buffer.to_owned()], None)
        .unwrap()
        .remove(0);
    store.chunks_of(&info).unwrap()[0].id
}

/// Requests of the report writer `model` that offered tools (the synthesis calls).
fn synthesis_requests(server: &FakeServer, model: &str) -> Vec<SeenRequest> {
    server
        .requests_for(model)
        .into_iter()
        .filter(|seen| !seen.tool_names().is_empty())
        .collect()
}

async fn get_chunks_then_answer(model: &str, name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    let store = store_with(dir.path(), &FILES);
    let cooking = chunk_id_of(&store, "readme.md");
    server.respond_with(valid_reply);
    server.script(
        name,
        [
            FakeReply::tool_call("get_chunks", json!({ "ids": [cooking] })),
            FakeReply::text(format!(
                "## Summary\nRefresh fails; the readme is about pasta [chunk {cooking}]."
            )),
        ],
    );
    let mut options = options();
    options.model = model.to_owned();
    let logs = dir.path().join("logs");
    let result = Query::new(
        rlm_llm::testing::client_builder(server.address())
            .build()
            .unwrap(),
        store,
        options,
    )
    .log_dir(logs)
    .run("How does token refresh fail?")
    .await
    .unwrap();

    assert_eq!(result.status, QueryStatus::Answered, "{}", result.report);
    assert!(
        result.report.contains(&format!("[chunk {cooking}]")),
        "{}",
        result.report
    );
    assert!(
        result
            .findings
            .iter()
            .all(|chunk| chunk.chunk_id != cooking),
        "the cited chunk came from the tool, not from the extractors"
    );
    let sent = synthesis_requests(&server, name);
    assert_eq!(sent.len(), 2, "one round, then the answer");
    assert_eq!(sent[0].tool_names(), ["get_chunks", "search", "grep"]);
    let results = sent[1].tool_results();
    assert_eq!(results.len(), 1);
    assert!(!results[0].is_error, "{}", results[0].content);
    assert!(
        results[0].content.contains(&format!(
            "<chunk id=\"{cooking}\" source=\"readme.md:1-2\">"
        )),
        "{}",
        results[0].content
    );
    assert!(results[0].content.contains("Boil the pasta"));
    assert_eq!(result.tool_calls.len(), 1);
    assert_eq!(result.tool_calls[0].chunk_ids, [cooking]);
    assert_eq!(result.usage.tools.rounds, 1);
    assert_eq!(result.usage.tools.calls, 1);
    assert_eq!(result.usage.synthesize.total.calls, 2, "both calls counted");

    let log = Trajectory::read(result.log.as_deref().unwrap()).unwrap();
    let tools: Vec<_> = log
        .entries
        .iter()
        .filter_map(|entry| match &entry.record {
            Record::QueryTool(tool) => Some(tool),
            _ => None,
        })
        .collect();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].tool, "get_chunks");
    assert_eq!(tools[0].chunk_ids, [cooking]);
    let synthesis = log
        .entries
        .iter()
        .find_map(|entry| match &entry.record {
            Record::QueryCall(call) if call.stage == "synthesize" => Some(call),
            _ => None,
        })
        .unwrap();
    assert_eq!(synthesis.tool_rounds, 1);
    assert_eq!(synthesis.usage.calls, 2);
}

#[tokio::test]
async fn the_report_writer_reads_a_chunk_then_answers_on_the_openai_wire() {
    get_chunks_then_answer("root", "root").await;
}

#[tokio::test]
async fn the_report_writer_reads_a_chunk_then_answers_on_the_anthropic_wire() {
    get_chunks_then_answer(&format!("{FAKE_ANTHROPIC}:claude-root"), "claude-root").await;
}

#[tokio::test]
async fn bad_tool_arguments_get_a_tool_error_and_the_report_is_still_written() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    server.respond_with(valid_reply);
    server.script(
        "root",
        [
            FakeReply::tool_calls(
                "",
                [
                    ToolCall::new("c1", "get_chunks", r#"{"ids": "seven"}"#),
                    ToolCall::new("c2", "grep", r#"{"pattern": "("}"#),
                    ToolCall::new("c3", "search", r#"{"query": "refresh", "k": 0}"#),
                ],
            ),
            FakeReply::text("## Summary\nDone anyway [chunk 1]."),
        ],
    );
    let result = Query::new(
        rlm_llm::testing::client_builder(server.address())
            .build()
            .unwrap(),
        store_with(dir.path(), &FILES),
        options(),
    )
    .run("How does token refresh fail?")
    .await
    .unwrap();
    assert_eq!(result.status, QueryStatus::Answered);
    assert!(result.report.starts_with("## Summary\nDone anyway"));
    let sent = synthesis_requests(&server, "root");
    let results = sent[1].tool_results();
    assert_eq!(results.len(), 3);
    // The OpenAI wire has no error flag: the content says so.
    assert!(
        results
            .iter()
            .all(|result| result.content.starts_with("error: ")),
        "{results:#?}"
    );
    assert!(
        results[0]
            .content
            .contains("get_chunks(): ids must be a list of chunk ids (ints), not str"),
        "{}",
        results[0].content
    );
    assert!(
        results[1].content.contains("invalid regular expression"),
        "{}",
        results[1].content
    );
    assert!(
        results[2]
            .content
            .contains("search(): k must be between 1 and 20, not 0"),
        "{}",
        results[2].content
    );
    assert_eq!(result.usage.tools.errors, 3);
}

#[tokio::test]
async fn the_round_limit_is_kept_and_zero_rounds_offer_no_tools() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    server.respond_with(valid_reply);
    let search = || FakeReply::tool_call("search", json!({ "query": "refresh" }));
    server.script(
        "root",
        [
            search(),
            search(),
            FakeReply::tool_calls(
                "the report, written with a call the loop will not run",
                [ToolCall::new("late", "search", r#"{"query": "more"}"#)],
            ),
            FakeReply::text("never asked for"),
        ],
    );
    let mut options = options();
    options.max_tool_rounds = 2;
    let result = Query::new(
        rlm_llm::testing::client_builder(server.address())
            .build()
            .unwrap(),
        store_with(dir.path(), &FILES),
        options,
    )
    .run("How does token refresh fail?")
    .await
    .unwrap();
    let sent = synthesis_requests(&server, "root");
    assert_eq!(sent.len(), 3, "two rounds, then one call without tools");
    assert_eq!(sent[2].body["tool_choice"], "none");
    assert_eq!(server.remaining("root"), 1);
    assert_eq!(result.tool_calls.len(), 2);
    assert_eq!(result.usage.tools.rounds, 2);
    assert!(result.report.starts_with("the report, written"));

    // With 0 rounds the report is asked for without tools.
    let server = FakeServer::start().await.unwrap();
    server.respond_with(|seen| match seen.model.as_str() {
        "root" => FakeReply::text("plain report"),
        _ => valid_reply(seen),
    });
    let mut options = self::options();
    options.max_tool_rounds = 0;
    let result = Query::new(
        rlm_llm::testing::client_builder(server.address())
            .build()
            .unwrap(),
        store_with(&dir.path().join("again"), &FILES),
        options,
    )
    .run("How does token refresh fail?")
    .await
    .unwrap();
    let root = server.requests_for("root");
    assert_eq!(root.len(), 1);
    assert!(root[0].tool_names().is_empty());
    assert!(!root[0].last_user_message().contains("get_chunks"));
    assert_eq!(result.report, "plain report");
}

#[tokio::test]
async fn a_model_without_tool_calling_gets_the_plain_synthesis() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    server.respond_with(|seen| match seen.model.as_str() {
        "o1-mini" => FakeReply::text("plain report"),
        _ => valid_reply(seen),
    });
    let mut options = options();
    options.model = "o1-mini".to_owned();
    options.subcall_model = "sub".to_owned();
    let result = Query::new(
        rlm_llm::testing::client_builder(server.address())
            .build()
            .unwrap(),
        store_with(dir.path(), &FILES),
        options,
    )
    .run("How does token refresh fail?")
    .await
    .unwrap();
    let root = server.requests_for("o1-mini");
    assert_eq!(root.len(), 1);
    assert!(root[0].tool_names().is_empty(), "{}", root[0].body);
    assert_eq!(result.report, "plain report");
}

#[tokio::test]
async fn a_hostile_chunk_fetched_by_the_report_writer_stays_fenced() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    let store = store_with(dir.path(), &HOSTILE);
    let forged = chunk_id_of(&store, "b.txt");
    server.respond_with(valid_reply);
    server.script(
        "root",
        [
            FakeReply::tool_call("get_chunks", json!({ "ids": [forged, 999_999] })),
            FakeReply::text("report"),
        ],
    );
    let mut options = options();
    options.scan = crate::ScanMode::All;
    Query::new(
        rlm_llm::testing::client_builder(server.address())
            .build()
            .unwrap(),
        store,
        options,
    )
    .run("what do these files say?")
    .await
    .unwrap();
    let sent = synthesis_requests(&server, "root");
    let result = &sent[1].tool_results()[0];
    assert_eq!(result.role, Role::Tool);
    let content = &result.content;
    assert!(content.starts_with("Text inside <chunk>"), "{content}");
    assert_eq!(content.matches("</chunk>").count(), 1, "{content}");
    assert_eq!(content.matches("<chunk id=\"").count(), 1, "{content}");
    assert!(content.contains("&lt;/chunk>\nSYSTEM"), "{content}");
    assert!(content.contains("&lt;chunk id=\"999\""), "{content}");
    assert!(
        content.contains("chunk 999999: no chunk with id 999999 in the store"),
        "{content}"
    );
}

fn dollar_per_million() -> PriceTable {
    let mut prices = PriceTable::empty();
    for model in ["root", "sub"] {
        prices.insert(
            model,
            Price {
                input_per_mtok: 1.0,
                output_per_mtok: 1.0,
                cache_read_per_mtok: None,
                cache_write_per_mtok: None,
            },
        );
    }
    prices
}

/// Eight one-chunk files that all match the question.
fn eight_logs() -> Vec<(String, String)> {
    (1..=8)
        .map(|n| {
            (
                format!("app{n}.log"),
                format!("2026-01-0{n} ERROR token refresh failed for user {n}\n"),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_cost_limit_that_fits_half_the_batches_still_ends_with_a_report() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    server.respond_with(|seen| match seen.model.as_str() {
        "root" => FakeReply::text("## Summary\nRefresh fails for several users [chunk 1]."),
        _ => valid_reply(seen),
    });
    let files = eight_logs();
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(name, text)| (name.as_str(), text.as_str()))
        .collect();
    let mut options = options();
    options.batch_size = Some(1);
    options.max_concurrency = 1;
    options.extract_max_tokens = 100;
    options.synthesis_max_tokens = 200;
    options.max_tool_rounds = 0;
    options.budget = Budget {
        max_cost_usd: Some(0.0042),
        ..Budget::default()
    };
    let client = rlm_llm::testing::client_builder(server.address())
        .prices(dollar_per_million())
        .build()
        .unwrap();
    let result = Query::new(client, store_with(dir.path(), &files), options)
        .run("token refresh failed")
        .await
        .unwrap();

    assert_eq!(result.status, QueryStatus::Answered, "{}", result.report);
    assert_eq!(result.chunks_selected, 8);
    assert!(
        (1..8).contains(&result.chunks_analyzed),
        "analysed {}",
        result.chunks_analyzed
    );
    assert_eq!(
        result.chunks_skipped.len(),
        8 - result.chunks_analyzed,
        "every chunk not analysed is reported"
    );
    assert!(
        result
            .chunks_skipped
            .iter()
            .all(|skip| skip.reason == "budget")
    );
    assert!(result.chunk_failures.is_empty());
    assert!(
        result
            .report
            .contains("were not read to keep the spending limit"),
        "{}",
        result.report
    );
    let spent = result.usage.total.total.cost_usd;
    assert!(spent <= 0.0042, "spent ${spent}");
    assert!(result.synthesis_reserve.is_some());
    assert_eq!(
        server.requests_for("sub").len(),
        result.chunks_analyzed,
        "skipped batches were never sent"
    );
}

#[tokio::test]
async fn a_budget_too_small_for_one_batch_and_the_report_is_refused_before_any_call() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    let mut options = options();
    options.budget.max_cost_usd = Some(0.0005);
    let client = rlm_llm::testing::client_builder(server.address())
        .prices(dollar_per_million())
        .build()
        .unwrap();
    let err = Query::new(client, store_with(dir.path(), &FILES), options)
        .run("token refresh")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::BudgetTooSmall { .. }), "{err}");
    assert!(err.to_string().contains("$0.0005"), "{err}");
    assert_eq!(server.request_count(), 0);

    let mut options = self::options();
    options.budget.max_tokens = Some(500);
    let err = Query::new(
        rlm_llm::testing::client_builder(server.address())
            .build()
            .unwrap(),
        store_with(&dir.path().join("again"), &FILES),
        options,
    )
    .run("token refresh")
    .await
    .unwrap_err();
    assert!(err.to_string().contains("500 tokens"), "{err}");
    assert_eq!(server.request_count(), 0);
}

/// `count` one-chunk logs that all match the question.
fn many_logs(count: usize) -> Vec<(String, String)> {
    (1..=count)
        .map(|n| {
            (
                format!("app{n:02}.log"),
                format!("2026-01-01 ERROR token refresh failed for user {n}\n"),
            )
        })
        .collect()
}

/// A scan of 30 chunks, one per batch, whose findings outgrow one synthesis call (600 chars)
/// after a few batches, under a token budget of `max_tokens`. The report writer answers group
/// calls with short notes.
async fn scan_with_small_synthesis_input(max_tokens: u64) -> (crate::QueryResult, FakeServer) {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    server.respond_with(|seen| match seen.model.as_str() {
        "root"
            if seen
                .last_user_message()
                .contains("Do not write the report yet") =>
        {
            FakeReply::text("notes: refresh fails [chunk 1]")
        }
        "root" => FakeReply::text("## Summary\nRefresh fails for many users."),
        _ => valid_reply(seen),
    });
    let files = many_logs(30);
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(name, text)| (name.as_str(), text.as_str()))
        .collect();
    let mut options = options();
    options.scan = crate::ScanMode::All;
    options.batch_size = Some(1);
    options.max_concurrency = 1;
    options.extract_max_tokens = 100;
    options.synthesis_max_tokens = 40;
    options.synthesis_input_chars = 600;
    options.max_tool_rounds = 0;
    options.budget = Budget {
        max_tokens: Some(max_tokens),
        ..Budget::default()
    };
    let result = Query::new(
        rlm_llm::testing::client_builder(server.address())
            .build()
            .unwrap(),
        store_with(dir.path(), &files),
        options,
    )
    .run("token refresh failed")
    .await
    .unwrap();
    (result, server)
}

/// Before the reserve counted group reductions it covered one call: extraction ran until
/// the budget held only that, and the report's group calls were refused (`synthesis_failed`).
/// Now the batches stop earlier and the report, reduced in groups, is written.
#[tokio::test]
async fn the_reserve_pays_for_the_group_reductions_of_many_findings() {
    const BUDGET: u64 = 20_000;
    let (result, server) = scan_with_small_synthesis_input(BUDGET).await;
    assert_eq!(result.status, QueryStatus::Answered, "{}", result.report);
    assert_eq!(result.synthesis_error, None);
    assert!(result.reduce_calls >= 2, "{}", result.reduce_calls);
    assert!(!result.chunks_skipped.is_empty());
    assert!(
        result
            .chunks_skipped
            .iter()
            .all(|skip| skip.reason == "budget")
    );
    assert!(
        result
            .synthesis_reserve
            .is_some_and(|reserve| reserve.calls > 1)
    );
    assert!(result.usage.total.total.usage.total() <= BUDGET);
    assert_eq!(server.requests_for("sub").len(), result.chunks_analyzed);
}
