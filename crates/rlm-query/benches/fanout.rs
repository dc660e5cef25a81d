//! Fan-out figures against the fake provider (no timed assertions): 1,000 chunks in batches of
//! 10 at concurrency 50, every call answered 50 ms after it reached the provider. Two
//! configurations:
//! - with the plan, as the issue defines the ideal: the plan call, two rounds of 50 extractor
//!   calls and the report call, 4 × 50 = 200 ms;
//! - without it (`--skip-plan`), stricter because the store's listing and scan then sit alone
//!   before the first call: 150 ms.
//!
//! Also prints when requests reached the server, and the prompt tokens sent per token of chunk
//! text (the wrapper's overhead) at batch sizes 1, 10 and 50.
//!
//! `cargo bench -p rlm-query --bench fanout` (`FANOUT_RUNS=9` for more runs, `FANOUT_STREAM=0`
//! for whole answers instead of streamed ones).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use rlm_context::chunk::ChunkOptions;
use rlm_fake::{FakeReply, FakeServer, SeenRequest};
use rlm_llm::testing::FAKE_OPENAI;
use rlm_llm::{LlmClient, RetryPolicy};
use rlm_query::{Query, QueryOptions, ScanMode};
use rlm_store::{Source, Store};

const CHUNKS: usize = 1_000;
const LATENCY: Duration = Duration::from_millis(50);
const RUNS: usize = 5;

fn runs() -> usize {
    std::env::var("FANOUT_RUNS")
        .ok()
        .and_then(|runs| runs.parse().ok())
        .unwrap_or(RUNS)
}

/// When each request reached the server, in arrival order.
static ARRIVALS: std::sync::Mutex<Vec<Instant>> = std::sync::Mutex::new(Vec::new());

fn answer(seen: &SeenRequest) -> FakeReply {
    ARRIVALS.lock().unwrap().push(Instant::now());
    if seen.model != "sub" {
        // The planner asks for JSON; the report is Markdown.
        if seen.body.get("response_format").is_some() {
            return FakeReply::text(
                r#"{"mode": "bm25", "queries": ["workers"], "top_k": 20, "batch_size": 10, "buffers": []}"#,
            );
        }
        return FakeReply::text("report");
    }
    let message = seen.last_user_message();
    let entries: Vec<String> = message
        .match_indices("<chunk id=\"")
        .filter_map(|(at, tag)| {
            let rest = &message[at + tag.len()..];
            rest[..rest.find('"')?].parse::<i64>().ok()
        })
        .map(|id| format!(r#"{{"chunk_id": {id}, "relevance": "low", "findings": ["line {id}"], "summary": null, "follow_up": []}}"#))
        .collect();
    FakeReply::text(format!(r#"{{"results": [{}]}}"#, entries.join(",")))
}

fn store(dir: &std::path::Path) -> Store {
    let mut store = Store::open(dir).expect("store");
    let sources = (0..CHUNKS)
        .map(|n| Source::Text {
            name: format!("file{n:04}.log"),
            text: format!(
                "2026-01-01 INFO request {n} served in {} ms by worker {}\n",
                n % 97,
                n % 7
            ),
        })
        .collect();
    store
        .load(sources, &ChunkOptions::default(), &mut |_| {
            ControlFlow::Continue(())
        })
        .expect("load");
    store
}

fn client(server: &FakeServer, concurrency: usize) -> LlmClient {
    LlmClient::builder()
        .provider(
            rlm_llm::testing::openai_provider(FAKE_OPENAI, server.address())
                .max_concurrency(concurrency),
        )
        .default_provider(FAKE_OPENAI)
        // Streamed answers are the default; `FANOUT_STREAM=0` measures whole answers.
        .streaming(std::env::var("FANOUT_STREAM").map_or(true, |value| value != "0"))
        .retry(RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        })
        .build()
        .expect("client")
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Runs the query `runs()` times and prints the medians: wall time against the ideal, the
/// stages, and when requests reached the server.
async fn measure(server: &FakeServer, dir: &std::path::Path, with_plan: bool) {
    let calls_before_extraction = usize::from(with_plan);
    let ideal = (2 + 1 + calls_before_extraction) as f64 * LATENCY.as_secs_f64();
    let mut walls = Vec::new();
    let mut setups = Vec::new();
    let mut stages: Vec<[f64; 4]> = Vec::new();
    // When requests reached the server: the first extractor call, the last of each round, the
    // report's.
    let mut arrivals: Vec<[f64; 4]> = Vec::new();
    for _ in 0..runs() {
        let mut options = QueryOptions::new("root", "sub");
        options.skip_plan = !with_plan;
        options.scan = ScanMode::All;
        options.batch_size = Some(10);
        options.max_concurrency = 50;
        // What a process pays once before the pipeline starts, measured apart: the HTTP
        // client (TLS roots) and opening the store (SQLite, the tantivy index).
        let setup_started = Instant::now();
        let client = client(server, 50);
        let store = Store::open(dir).expect("store");
        setups.push(setup_started.elapsed().as_secs_f64());
        ARRIVALS.lock().unwrap().clear();
        let started = Instant::now();
        let result = Query::new(client, store, options)
            .run("which workers served requests?")
            .await
            .expect("query");
        walls.push(started.elapsed().as_secs_f64());
        assert_eq!(result.chunks_analyzed, CHUNKS);
        let planned = matches!(result.plan_source, rlm_query::PlanSource::Model { .. });
        assert_eq!(planned, with_plan, "{:?}", result.plan_source);
        let arrived = ARRIVALS.lock().unwrap();
        let at = |index: usize| (arrived[index] - started).as_secs_f64() * 1000.0;
        let first = calls_before_extraction;
        if arrived.len() == first + 2 * 50 + 1 {
            arrivals.push([at(first), at(first + 49), at(first + 99), at(first + 100)]);
        }
        let t = &result.timings;
        stages.push([t.plan, t.search, t.extract, t.synthesize]);
    }
    let runs = walls.len();
    let wall = median(walls);
    println!(
        "fan-out {}: {CHUNKS} chunks, batch 10, concurrency 50, {} ms per call: median wall {:.0} ms over {runs} runs, ideal {:.0} ms, ratio {:.2}x (peak in flight {})",
        if with_plan {
            "with the plan"
        } else {
            "without the plan"
        },
        LATENCY.as_millis(),
        wall * 1000.0,
        ideal * 1000.0,
        wall / ideal,
        server.peak_in_flight()
    );
    println!(
        "  setup before the pipeline (HTTP client + Store::open), not in the wall time: median {:.0} ms",
        median(setups) * 1000.0
    );
    let stage = |index: usize| median(stages.iter().map(|s| s[index] * 1000.0).collect());
    println!(
        "  stages (medians): plan {:.0} ms, search {:.1} ms, extract {:.0} ms (ideal 100), report {:.0} ms (ideal 50)",
        stage(0),
        stage(1),
        stage(2),
        stage(3)
    );
    if !arrivals.is_empty() {
        let arrival = |index: usize| median(arrivals.iter().map(|a| a[index]).collect());
        println!(
            "  requests reached the server (medians): first extractor {:.1} ms, last of round 1 {:.1} ms, last of round 2 {:.1} ms, report {:.1} ms",
            arrival(0),
            arrival(1),
            arrival(2),
            arrival(3)
        );
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // The provider's work is not the client's: the fake server runs on a runtime of its own
    // (one thread), as a remote provider would, and does not queue on the client's workers.
    let provider = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("provider runtime");
    let server = provider.block_on(FakeServer::start()).expect("fake server");
    runtime.block_on(async {
        let dir = tempfile::tempdir().expect("temp dir");
        drop(store(dir.path()));
        server.respond_with(answer);
        server.set_latency(LATENCY);
        // Streamed answers come back to back, so a streamed call takes the latency, as a
        // whole one does (the server's default pause between chunks is for tests).
        server.set_stream_gap(Duration::ZERO);

        for with_plan in [true, false] {
            measure(&server, dir.path(), with_plan).await;
        }

        server.set_latency(Duration::ZERO);
        ARRIVALS.lock().unwrap().clear();
        for batch in [1, 10, 50] {
            let mut options = QueryOptions::new("root", "sub");
            options.skip_plan = true;
            options.scan = ScanMode::All;
            options.batch_size = Some(batch);
            options.max_concurrency = 50;
            let before = server.request_count();
            let result = Query::new(client(&server, 50), Store::open(dir.path()).expect("store"), options)
                .run("which workers served requests?")
                .await
                .expect("query");
            let t = &result.timings;
            let requests = server.requests();
            let sent: Vec<&SeenRequest> = requests[before..].iter().filter(|seen| seen.model == "sub").collect();
            let prompt_bytes: usize = sent
                .iter()
                .map(|seen| seen.system.as_deref().map_or(0, str::len) + seen.last_user_message().len())
                .sum();
            let text_bytes: usize = (0..CHUNKS)
                .map(|n| format!("2026-01-01 INFO request {n} served in {} ms by worker {}\n", n % 97, n % 7).len())
                .sum();
            println!(
                "wrapper overhead at batch {batch:>2}: {:.1} prompt bytes per byte of chunk text ({} calls); with answers at once: search {:.0} ms, extract {:.0} ms, report {:.0} ms",
                prompt_bytes as f64 / text_bytes as f64,
                sent.len(),
                t.search * 1000.0,
                t.extract * 1000.0,
                t.synthesize * 1000.0
            );
        }
    });
}
