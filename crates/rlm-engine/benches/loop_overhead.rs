//! Prints the engine's own overhead (not a timed test):
//! - a `llm_query_batched` fan-out of 50 prompts at 50 ms simulated latency through the real
//!   `rlm-llm` client and fake server, against the ideal of one latency;
//! - describing a 50 MB context (sizes + `rlm-context` metadata) before the first turn.
//!
//! Run with `cargo bench -p rlm-engine --bench loop_overhead`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rlm_engine::testing::FakeRepl;
use rlm_engine::{ContextPart, Rlm, RunLimits};
use rlm_fake::{FakeReply, FakeServer};

const ROUNDS: usize = 7;
const FAN_OUT: usize = 50;
const LATENCY: Duration = Duration::from_millis(50);

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(fan_out());
    context_description();
}

async fn fan_out() {
    let server = FakeServer::start().await.unwrap();
    server.set_latency(LATENCY);
    server.respond_with(|_| FakeReply::text("ok"));
    // A limiter wide enough for the whole batch, so the figure is the engine's overhead.
    let client = rlm_llm::LlmClient::builder()
        .provider(
            rlm_llm::testing::openai_provider("fake", server.address()).max_concurrency(FAN_OUT),
        )
        .default_provider("fake")
        .build()
        .unwrap();
    let prompts: Vec<String> = (0..FAN_OUT).map(|i| format!("\"p{i}\"")).collect();
    let code = format!(
        "```repl\nys = llm_query_batched([{}])\n```\nFINAL(done)",
        prompts.join(", ")
    );
    let mut samples = Vec::new();
    for _ in 0..ROUNDS {
        server.script("root", [FakeReply::text(code.clone())]);
        let rlm = Rlm::builder()
            .client(Arc::new(client.clone()))
            .repl(Arc::new(FakeRepl))
            .model("root")
            .subcall_model("sub")
            .limits(RunLimits::default())
            .build()
            .unwrap();
        let started = Instant::now();
        let result = rlm
            .completion("q", vec![ContextPart::new("x")])
            .await
            .unwrap();
        samples.push(started.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(result.outcome.subcalls, FAN_OUT as u64);
    }
    // One root turn (latency) + one batched round (latency) is the ideal.
    let ideal = 2.0 * LATENCY.as_secs_f64() * 1000.0;
    let median = median(samples);
    println!(
        "fan-out: 1 root turn + {FAN_OUT} batched sub-calls at {} ms latency: median {median:.1} ms over {ROUNDS} runs, ideal {ideal:.0} ms, ratio {:.2}",
        LATENCY.as_millis(),
        median / ideal
    );
}

fn context_description() {
    let mut text = String::with_capacity(52 << 20);
    let mut line = 0u64;
    while text.len() < 50 << 20 {
        line += 1;
        let _ = writeln!(
            text,
            "{{\"id\":{line},\"level\":\"INFO\",\"msg\":\"event {line} ok\"}}"
        );
    }
    let text: Arc<str> = text.into();
    let mut samples = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let part = ContextPart::analyzed(Arc::clone(&text), Some("events.ndjson"));
        let description = rlm_engine::describe_contexts(&[part]);
        samples.push(started.elapsed().as_secs_f64() * 1000.0);
        assert!(description.contains("Records"));
    }
    println!(
        "context description of {} MB NDJSON: median {:.1} ms over 5 runs",
        text.len() >> 20,
        median(samples)
    );
}
