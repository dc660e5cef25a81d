//! A query's budget against a provider that over-reports (1,000,000 output tokens for a call
//! capped far lower): after the first such reply nothing more is sent under the budget, by any
//! stage — extractors, their re-asks, the report's group calls. Only calls already on the wire
//! may overshoot. In each case most calls were admitted while the budget had room and then
//! waited for a slot of the provider's limiter.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rlm_fake::{FakeReply, FakeServer};
use rlm_llm::{Budget, LlmClient, Price, PriceTable, ProviderConfig, ProviderKind, Usage};

use crate::tests::{options, store_with, valid_reply};
use crate::{Query, QueryResult, ScanMode};

const OVER_REPORTED: Usage = Usage {
    input_tokens: 10,
    output_tokens: 1_000_000,
    cache_read_tokens: 0,
    cache_write_tokens: 0,
};

/// gpt-4o-mini's list price for both models, so a money budget applies.
fn prices() -> PriceTable {
    let mut prices = PriceTable::empty();
    for model in ["root", "sub"] {
        prices.insert(
            model,
            Price {
                input_per_mtok: 0.15,
                output_per_mtok: 0.6,
                cache_read_per_mtok: None,
                cache_write_per_mtok: None,
            },
        );
    }
    prices
}

/// `count` one-chunk logs that all match the question.
fn logs(count: usize) -> Vec<(String, String)> {
    (1..=count)
        .map(|n| {
            (
                format!("app{n:02}.log"),
                format!("2026-01-01 ERROR token refresh failed for user {n}\n"),
            )
        })
        .collect()
}

async fn scan(client: LlmClient, files: usize, budget: Budget) -> QueryResult {
    let dir = tempfile::tempdir().unwrap();
    let files = logs(files);
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(name, text)| (name.as_str(), text.as_str()))
        .collect();
    let mut options = options();
    options.scan = ScanMode::All;
    options.batch_size = Some(1);
    options.extract_max_tokens = 100;
    options.synthesis_max_tokens = 40;
    options.synthesis_input_chars = 600;
    options.max_tool_rounds = 0;
    options.budget = budget;
    Query::new(client, store_with(dir.path(), &files), options)
        .run("token refresh failed")
        .await
        .unwrap()
}

/// A server on this machine nobody configured: its limit starts at one request and adapts,
/// so the query sends one batch at a time (never more than the provider serves now). The first
/// extractor reply breaks the contract and over-reports: its re-ask, the other batches and the
/// report are not sent.
#[tokio::test]
async fn extractors_and_reasks_send_nothing_more_after_a_reply_over_reports() {
    let server = FakeServer::start().await.unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    server.respond_with(move |seen| match counter.fetch_add(1, Ordering::SeqCst) {
        0 => FakeReply::text("not json").with_usage(OVER_REPORTED),
        _ => valid_reply(seen).with_usage(OVER_REPORTED),
    });
    let local = ProviderConfig::new("local", ProviderKind::OpenAi, server.openai_base_url());
    let client = LlmClient::builder()
        .provider(local)
        .default_provider("local")
        .prices(prices())
        .build()
        .unwrap();
    let result = scan(
        client,
        40,
        Budget {
            max_cost_usd: Some(0.5),
            ..Budget::default()
        },
    )
    .await;
    let sent = server.requests_for("sub");
    assert_eq!(sent.len(), 1, "{} extractor requests were sent", sent.len());
    assert_eq!(server.peak_in_flight(), 1);
    assert_eq!(server.requests_for("root").len(), 0, "the report was sent");
    assert_eq!(result.usage.total.total.overrun_calls, 1);
}

/// Findings too many for one report call are reduced in groups, all admitted at once; one
/// slot. The first group call over-reports: the others are not sent, nor the final call.
#[tokio::test]
async fn report_group_calls_send_nothing_more_after_a_reply_over_reports() {
    let server = FakeServer::start().await.unwrap();
    server.respond_with(|seen| match seen.model.as_str() {
        "root" => FakeReply::text("notes: refresh fails [chunk 1]").with_usage(OVER_REPORTED),
        _ => valid_reply(seen),
    });
    let client = rlm_llm::testing::client_builder(server.address())
        .provider(
            rlm_llm::testing::openai_provider(rlm_llm::testing::FAKE_OPENAI, server.address())
                .max_concurrency(1),
        )
        .prices(prices())
        .build()
        .unwrap();
    let result = scan(
        client,
        30,
        Budget {
            max_cost_usd: Some(0.5),
            ..Budget::default()
        },
    )
    .await;
    assert_eq!(server.requests_for("sub").len(), 30, "every chunk was read");
    assert_eq!(server.requests_for("root").len(), 1, "report calls sent");
    assert_eq!(result.usage.total.total.overrun_calls, 1);
    let error = result.synthesis_error.unwrap_or_default();
    assert!(
        error.contains("fake reported 1,000,000 output tokens"),
        "{error}"
    );
}
