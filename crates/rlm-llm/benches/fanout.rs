//! Overhead of the provider layer: 1,000 calls at 50 ms simulated latency with concurrency 50
//! against the fake server. The ideal is 1,000 / 50 × 50 ms = 1.0 s; prints the median of a few
//! runs, its ratio to the ideal, and peak memory (VmHWM).
//!
//! Run: `cargo bench -p rlm-llm --bench fanout`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use rlm_fake::{FakeReply, FakeServer};
use rlm_llm::{ChatRequest, LlmClient};

const CALLS: usize = 1_000;
const CONCURRENCY: usize = 50;
const LATENCY: Duration = Duration::from_millis(50);
const RUNS: usize = 5;

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The same fan-out with bare reqwest and a semaphore: what the fake server and the loopback
/// HTTP cost on this machine, so the layer's own overhead is the difference.
async fn baseline(url: &str) -> f64 {
    let http = reqwest::Client::new();
    let limiter = std::sync::Arc::new(tokio::sync::Semaphore::new(CONCURRENCY));
    let started = Instant::now();
    let calls = (0..CALLS).map(|i| {
        let http = http.clone();
        let limiter = std::sync::Arc::clone(&limiter);
        let body = serde_json::json!({
            "model": "bench",
            "messages": [{"role": "system", "content": "You are a benchmark."},
                         {"role": "user", "content": format!("question {i}")}],
        })
        .to_string();
        async move {
            let _permit = limiter.acquire().await.unwrap();
            let response = http.post(url).body(body).send().await.unwrap();
            response.bytes().await.unwrap().len()
        }
    });
    let sizes = futures::future::join_all(calls).await;
    assert!(sizes.iter().all(|&size| size > 0));
    started.elapsed().as_secs_f64()
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let server = FakeServer::start().await.unwrap();
        server.set_latency(LATENCY);
        server.respond_with(|seen| {
            FakeReply::text(format!("answer to {}", seen.last_user_message()))
        });
        let client = LlmClient::builder()
            .provider(rlm_llm::testing::openai_provider("fake", server.address()).max_concurrency(CONCURRENCY))
            .default_provider("fake")
            .build()
            .unwrap();
        let requests: Vec<ChatRequest> = (0..CALLS)
            .map(|i| {
                ChatRequest::new("bench")
                    .system("You are a benchmark.")
                    .user(format!("question {i}"))
            })
            .collect();
        let ideal = LATENCY.as_secs_f64() * (CALLS / CONCURRENCY) as f64;
        let mut walls = Vec::with_capacity(RUNS);
        for run in 0..RUNS {
            let started = Instant::now();
            let results = client.chat_batch(&requests).await;
            let wall = started.elapsed().as_secs_f64();
            let failed = results.iter().filter(|r| r.is_err()).count();
            assert_eq!(failed, 0, "run {run}: {failed} calls failed");
            println!("run {run}: {wall:.3} s (ratio {:.3})", wall / ideal);
            walls.push(wall);
        }
        walls.sort_by(f64::total_cmp);
        let median = walls[RUNS / 2];
        let url = format!("{}/chat/completions", server.openai_base_url());
        let mut bare = Vec::with_capacity(RUNS);
        for _ in 0..RUNS {
            bare.push(baseline(&url).await);
        }
        bare.sort_by(f64::total_cmp);
        let bare_median = bare[RUNS / 2];
        let report = client.ledger().report();
        println!(
            "fanout: {CALLS} calls x {RUNS} runs, latency {} ms, concurrency {CONCURRENCY}",
            LATENCY.as_millis()
        );
        println!(
            "median wall {median:.3} s, ideal {ideal:.3} s, ratio {:.3}",
            median / ideal
        );
        println!(
            "baseline (bare reqwest + semaphore, same server): median {bare_median:.3} s, ratio {:.3}; layer / baseline {:.3}",
            bare_median / ideal,
            median / bare_median
        );
        println!(
            "peak in flight at the server {} (limit {CONCURRENCY}); calls recorded {}; retries {}",
            server.peak_in_flight(),
            report.total.calls,
            report.total.retries
        );
        match peak_rss_kib() {
            Some(kib) => println!("peak RSS (VmHWM) {:.1} MiB", kib as f64 / 1024.0),
            None => println!("peak RSS unavailable (no /proc/self/status)"),
        }
    });
}
