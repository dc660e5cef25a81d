//! A query that ends in reasonable time: output caps sized to each call's reply and within the
//! user's cap, re-asks that quote the problem and not the reply, splits only for size, a stop
//! after the first batches fail the same way, a default time bound, and a result that says
//! what was searched when nothing was found.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rlm_fake::{FakeReply, FakeServer, SeenRequest};

use crate::extract::{EXTRACT_TOKENS_PER_CHUNK, reply_cap};
use crate::tests::{FILES, ids_in, options, store_with, valid_reply};
use crate::{DEFAULT_SECONDS_PER_ROUND, Query, QueryStatus, ScanMode, TimeLimit};

fn max_tokens(request: &SeenRequest) -> u64 {
    request.body["max_tokens"].as_u64().unwrap()
}

/// Every call of a query obeys the user's output cap, or its own cap when that is smaller:
/// the plan's, an extractor's sized to its batch, the report's.
#[tokio::test]
async fn every_call_obeys_the_user_cap_or_its_own_smaller_one() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    server.respond_with(|seen| match seen.model.as_str() {
        "root" if seen.body["response_format"].is_object() => {
            FakeReply::text(r#"{"queries": ["refresh", "AuthError"], "mode": "bm25"}"#)
        }
        "root" => FakeReply::text("the report [chunk 1]"),
        _ => valid_reply(seen),
    });
    for (round, (cap, expected)) in [
        // Without a user cap: the plan's 1,024, an extractor's for its 1 or 2 chunks, the
        // report's 4,096.
        (
            None,
            [1_024, reply_cap(u32::MAX, 1), reply_cap(u32::MAX, 2), 4_096],
        ),
        (Some(300), [300, 300, 300, 300]),
        (Some(700), [700, reply_cap(u32::MAX, 1), 700, 700]),
    ]
    .into_iter()
    .enumerate()
    {
        for batch_size in [1, 2] {
            let before = server.request_count();
            let mut options = options();
            options.skip_plan = false;
            options.max_tool_rounds = 0;
            options.batch_size = Some(batch_size);
            options.max_output_tokens = cap;
            let store = store_with(&dir.path().join(format!("{round}-{batch_size}")), &FILES);
            let result = Query::new(
                rlm_llm::testing::client_builder(server.address())
                    .build()
                    .unwrap(),
                store,
                options,
            )
            .run("How does token refresh fail?")
            .await
            .unwrap();
            assert_eq!(result.status, QueryStatus::Answered, "{}", result.report);
            let seen = &server.requests()[before..];
            let plan = &seen[0];
            let report = seen.last().unwrap();
            assert_eq!(
                max_tokens(plan),
                u64::from(expected[0]),
                "plan, cap {cap:?}"
            );
            assert_eq!(
                max_tokens(report),
                u64::from(expected[3]),
                "report, cap {cap:?}"
            );
            let extractor = expected[batch_size];
            for request in seen.iter().filter(|request| request.model == "sub") {
                assert_eq!(
                    max_tokens(request),
                    u64::from(extractor),
                    "extractor of {batch_size} chunks, cap {cap:?}"
                );
            }
        }
    }
    assert!(reply_cap(u32::MAX, 2) < 2 * EXTRACT_TOKENS_PER_CHUNK + 200);
}

/// A re-ask quotes the first problem and never the broken reply (which could push the
/// request past a small window); a batch whose reply was cut at its cap goes straight to its
/// halves; a problem that is not about the batch's size is not split.
#[tokio::test]
async fn reasks_quote_the_problem_and_only_size_problems_split() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    let runaway =
        "{\"results\": [{\"chunk_id\": 1, \"findings\": [\"".to_owned() + &"ha ".repeat(500);
    let cut = runaway.clone();
    server.respond_with(move |seen| {
        let ids = ids_in(seen.last_user_message());
        match (seen.model.as_str(), ids.len()) {
            ("root", _) => FakeReply::text("report"),
            // A whole batch: the model runs into its cap.
            ("sub", 2) => FakeReply::text(cut.clone()).with_finish_reason("length"),
            _ => valid_reply(seen),
        }
    });
    let mut options = options();
    options.scan = ScanMode::All;
    options.batch_size = Some(2);
    let files = [("a.txt", "alpha"), ("b.txt", "beta")];
    let result = Query::new(
        rlm_llm::testing::client_builder(server.address())
            .build()
            .unwrap(),
        store_with(dir.path(), &files),
        options.clone(),
    )
    .run("letters?")
    .await
    .unwrap();
    let sizes: Vec<usize> = server
        .requests_for("sub")
        .iter()
        .map(|request| ids_in(request.last_user_message()).len())
        .collect();
    assert_eq!(
        sizes,
        [2, 1, 1],
        "cut → halves, no re-ask of the whole batch"
    );
    assert_eq!(result.chunks_analyzed, 2);
    assert!(
        result.batches_failed[0].reason.contains("cut at its cap"),
        "{:?}",
        result.batches_failed
    );

    // An answer that breaks the contract otherwise (an unknown relevance): asked again once,
    // the problem quoted, the reply not; then the batch fails whole, unsplit.
    let server = FakeServer::start().await.unwrap();
    let broken = r#"{"results": [{"chunk_id": 1, "relevance": "very", "findings": ["MARKER"]}, {"chunk_id": 2, "relevance": "very"}]}"#;
    server.respond_with(move |seen| match seen.model.as_str() {
        "root" => FakeReply::text("report"),
        _ => FakeReply::text(broken),
    });
    let result = Query::new(
        rlm_llm::testing::client_builder(server.address())
            .build()
            .unwrap(),
        store_with(&dir.path().join("second"), &files),
        options,
    )
    .run("letters?")
    .await
    .unwrap();
    let asked = server.requests_for("sub");
    assert_eq!(asked.len(), 2, "ask and one re-ask, no halves");
    let again = &asked[1];
    assert_eq!(
        again.messages.len(),
        asked[0].messages.len(),
        "no reply appended"
    );
    let text: String = again.messages.iter().map(|m| m.content.as_str()).collect();
    assert!(
        !text.contains("MARKER"),
        "the broken reply is not sent back"
    );
    assert!(
        text.contains("Your previous reply was rejected: chunk_id 1: `relevance`"),
        "{text}"
    );
    assert_eq!(result.status, QueryStatus::ExtractionFailed);
    assert_eq!(result.chunk_failures.len(), 2);
}

/// When the first batches all fail the same way and nothing was found, the rest are not sent:
/// the result and the report say why, and what was searched.
#[tokio::test]
async fn a_systematic_failure_stops_the_extraction_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    server.respond_with(|_| FakeReply::text("I cannot write JSON, sorry."));
    let mut options = options();
    options.scan = ScanMode::All;
    options.batch_size = Some(1);
    options.max_concurrency = 1;
    let files: Vec<(String, String)> = (0..8)
        .map(|n| (format!("f{n}.txt"), format!("text {n}\n")))
        .collect();
    let borrowed: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let result = Query::new(
        rlm_llm::testing::client_builder(server.address())
            .build()
            .unwrap(),
        store_with(dir.path(), &borrowed),
        options,
    )
    .run("anything?")
    .await
    .unwrap();
    // Three batches of one chunk, each asked and asked again; five never sent.
    assert_eq!(server.requests_for("sub").len(), 6);
    assert_eq!(result.status, QueryStatus::ExtractionFailed);
    assert_eq!(result.chunk_failures.len(), 8);
    let not_sent = result
        .chunk_failures
        .iter()
        .filter(|failure| failure.reason.starts_with("not sent: the first 3 batches"))
        .count();
    assert_eq!(not_sent, 5, "{:?}", result.chunk_failures);
    let stopped = result.stopped_early.as_deref().unwrap();
    assert!(stopped.contains("not JSON"), "{stopped}");
    let why = result.no_findings_reason.as_deref().unwrap();
    assert!(why.contains("the other 5 chunks were not sent"), "{why}");
    assert!(
        result.report.contains("Read every chunk of 8 buffers"),
        "{}",
        result.report
    );

    // Failures that differ are not one cause: every batch is tried.
    let server = FakeServer::start().await.unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    server.respond_with(move |_| match counter.fetch_add(1, Ordering::SeqCst) {
        0 | 1 => FakeReply::text("not json"),
        _ => FakeReply::text(r#"{"answer": 1}"#),
    });
    let mut options = crate::tests::options();
    options.scan = ScanMode::All;
    options.batch_size = Some(1);
    options.max_concurrency = 1;
    let result = Query::new(
        rlm_llm::testing::client_builder(server.address())
            .build()
            .unwrap(),
        store_with(&dir.path().join("second"), &borrowed),
        options,
    )
    .run("anything?")
    .await
    .unwrap();
    assert_eq!(server.requests_for("sub").len(), 16);
    assert_eq!(result.stopped_early, None);
}

/// Without `--timeout` the extraction gets a bound scaled to its rounds of batches (as many
/// at once as the query and the provider allow), said before any batch is sent.
#[tokio::test]
async fn the_default_time_limit_scales_with_the_rounds_of_batches() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    server.respond_with(|seen| match seen.model.as_str() {
        "root" => FakeReply::text("report [chunk 1]"),
        _ => valid_reply(seen),
    });
    for (at_once, rounds) in [(16, 1), (1, 3), (2, 2)] {
        let mut options = options();
        options.scan = ScanMode::All;
        options.batch_size = Some(1);
        options.max_concurrency = at_once;
        let store = store_with(&dir.path().join(at_once.to_string()), &FILES);
        let result = Query::new(
            rlm_llm::testing::client_builder(server.address())
                .build()
                .unwrap(),
            store,
            options,
        )
        .run("anything?")
        .await
        .unwrap();
        let limit = result.time_limit.unwrap();
        assert!(limit.default);
        let seconds = (rounds * DEFAULT_SECONDS_PER_ROUND) as f64;
        assert!(
            limit.seconds >= seconds && limit.seconds < seconds + 5.0,
            "{at_once} at once: {limit:?}"
        );
    }
    let mut options = options();
    options.timeout = Some(std::time::Duration::from_secs(42));
    let store = store_with(&dir.path().join("timeout"), &FILES);
    let result = Query::new(
        rlm_llm::testing::client_builder(server.address())
            .build()
            .unwrap(),
        store,
        options,
    )
    .run("How does token refresh fail?")
    .await
    .unwrap();
    assert_eq!(
        result.time_limit,
        Some(TimeLimit {
            seconds: 42.0,
            default: false
        })
    );
}

/// With nothing found, the result says why and the report what was searched.
#[tokio::test]
async fn no_findings_say_what_was_searched_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    let result = Query::new(
        rlm_llm::testing::client_builder(server.address())
            .build()
            .unwrap(),
        store_with(dir.path(), &FILES),
        options(),
    )
    .run("zebra giraffe")
    .await
    .unwrap();
    assert_eq!(result.status, QueryStatus::NoEvidence);
    assert!(
        result
            .no_findings_reason
            .as_deref()
            .is_some_and(|why| why.contains("No chunk of the selection matched")),
        "{:?}",
        result.no_findings_reason
    );
    assert!(
        result.report.contains("Searched 3 buffers") && result.report.contains("zebra"),
        "{}",
        result.report
    );

    // Chunks analysed, none relevant.
    server.respond_with(|seen| {
        let entries: Vec<String> = ids_in(seen.last_user_message())
            .iter()
            .map(|id| format!(r#"{{"chunk_id": {id}, "relevance": "none"}}"#))
            .collect();
        FakeReply::text(format!(r#"{{"results": [{}]}}"#, entries.join(",")))
    });
    let result = Query::new(
        rlm_llm::testing::client_builder(server.address())
            .build()
            .unwrap(),
        store_with(&dir.path().join("second"), &FILES),
        options(),
    )
    .run("token refresh")
    .await
    .unwrap();
    assert_eq!(result.status, QueryStatus::NoEvidence);
    let why = result.no_findings_reason.as_deref().unwrap();
    assert!(why.contains("holds anything relevant"), "{why}");
    assert!(
        result.report.contains("Searched 3 buffers"),
        "{}",
        result.report
    );
    assert_eq!(
        server.requests_for("root").len(),
        0,
        "no report call without findings"
    );
}

/// A local server saying it serves 32 requests at once gets 32 batches at once: the query's
/// own default of 16 follows the provider's discovered limit. A fan-out the caller chose stays.
#[tokio::test]
async fn the_fan_out_follows_a_servers_reported_slots_unless_chosen() {
    for chosen in [false, true] {
        let server = FakeServer::start().await.unwrap();
        server.set_props(serde_json::json!({"total_slots": 32}));
        server.set_latency(std::time::Duration::from_millis(100));
        server.respond_with(|seen| match seen.model.as_str() {
            "root" => FakeReply::text("the report [chunk 1]"),
            _ => valid_reply(seen),
        });
        let local = rlm_llm::ProviderConfig::new(
            "local",
            rlm_llm::ProviderKind::OpenAi,
            server.openai_base_url(),
        );
        let client = rlm_llm::LlmClient::builder()
            .provider(local)
            .default_provider("local")
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<(String, String)> = (1..=64)
            .map(|n| {
                (
                    format!("app{n:02}.log"),
                    format!("ERROR token refresh failed for {n}\n"),
                )
            })
            .collect();
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(name, text)| (name.as_str(), text.as_str()))
            .collect();
        let mut options = options();
        options.scan = ScanMode::All;
        options.batch_size = Some(1);
        options.max_tool_rounds = 0;
        options.concurrency_from_server = !chosen;
        Query::new(client, store_with(dir.path(), &files), options)
            .run("token refresh failed")
            .await
            .unwrap();
        let expected = if chosen { 16 } else { 32 };
        assert_eq!(server.peak_in_flight(), expected, "chosen: {chosen}");
        assert_eq!(server.props_requests(), 1);
    }
}
