//! Concurrency nobody configured (29.2): `llm_query_batched`'s fan-out of 64 prompts through
//! the client to fake servers on loopback, with no `max_concurrency` (Auto). The servers
//! answer each request in 50 ms once it has a slot, the others waiting in the server's queue:
//! - 32 slots, saying nothing: the adaptive limit; the goal is within 1.2x the ideal
//!   (64 / 32 x 50 ms = 100 ms);
//! - 32 slots, saying so (llama.cpp `/props` `total_slots`, TGI `/info`
//!   `max_concurrent_requests`);
//! - one slot, saying nothing and saying so: the ideal is 64 x 50 ms = 3.2 s, and the longest
//!   wait of a request in the server's queue is printed against the request timeout (counted
//!   from when the client sends, so a request queued too long in the server times out).
//!
//! Prints the median wall time of a few runs (a new client each, as a new process starts
//! afresh) and its ratio to the ideal.
//!
//! Run: `cargo bench -p rlm-llm --bench auto_concurrency`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use rlm_fake::{FakeReply, FakeServer};
use rlm_llm::{ChatRequest, LlmClient, ProviderConfig, ProviderKind};

const PROMPTS: usize = 64;
const LATENCY: Duration = Duration::from_millis(50);
const RUNS: usize = 5;

/// How a fake server says how many requests it serves at once.
#[derive(Clone, Copy, Debug)]
enum Says {
    Nothing,
    LlamaCppProps,
    TgiInfo,
}

struct Scenario {
    slots: usize,
    says: Says,
}

struct Measured {
    median: f64,
    longest_queue_wait: Duration,
    final_limit: usize,
    peak_in_flight: usize,
}

async fn measure(scenario: &Scenario) -> Measured {
    let mut walls = Vec::with_capacity(RUNS);
    let mut longest_queue_wait = Duration::ZERO;
    let mut final_limit = 0;
    let mut peak_in_flight = 0;
    let requests: Vec<ChatRequest> = (0..PROMPTS)
        .map(|i| ChatRequest::new("local:bench").user(format!("question {i}")))
        .collect();
    for _ in 0..RUNS {
        let server = FakeServer::start().await.unwrap();
        server.set_latency(LATENCY);
        server.set_stream_gap(Duration::ZERO);
        server.set_slots(scenario.slots);
        match scenario.says {
            Says::Nothing => {}
            Says::LlamaCppProps => {
                server.set_props(serde_json::json!({"total_slots": scenario.slots}));
            }
            Says::TgiInfo => server.set_tgi_info(scenario.slots),
        }
        server.respond_with(|seen| {
            FakeReply::text(format!("answer to {}", seen.last_user_message()))
        });
        // As `rlm` builds a loopback provider nobody configured: Auto concurrency.
        let client = LlmClient::builder()
            .provider(ProviderConfig::new(
                "local",
                ProviderKind::OpenAi,
                server.openai_base_url(),
            ))
            .build()
            .unwrap();
        let started = Instant::now();
        let results = client.chat_batch(&requests).await;
        walls.push(started.elapsed().as_secs_f64());
        assert!(results.iter().all(Result::is_ok), "a call failed");
        longest_queue_wait = longest_queue_wait.max(server.longest_queue_wait());
        final_limit = client.concurrency("local").map_or(0, |c| c.limit);
        peak_in_flight = peak_in_flight.max(server.peak_in_flight());
    }
    walls.sort_by(f64::total_cmp);
    Measured {
        median: walls[RUNS / 2],
        longest_queue_wait,
        final_limit,
        peak_in_flight,
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let scenarios = [
        Scenario {
            slots: 32,
            says: Says::Nothing,
        },
        Scenario {
            slots: 32,
            says: Says::LlamaCppProps,
        },
        Scenario {
            slots: 32,
            says: Says::TgiInfo,
        },
        Scenario {
            slots: 1,
            says: Says::Nothing,
        },
        Scenario {
            slots: 1,
            says: Says::LlamaCppProps,
        },
    ];
    println!(
        "{PROMPTS} prompts, {} ms a request once it has a slot, median of {RUNS} runs; request timeout {} s",
        LATENCY.as_millis(),
        rlm_llm::DEFAULT_REQUEST_TIMEOUT.as_secs()
    );
    runtime.block_on(async {
        for scenario in &scenarios {
            let measured = measure(scenario).await;
            let rounds = PROMPTS.div_ceil(scenario.slots);
            let ideal = LATENCY.as_secs_f64() * rounds as f64;
            println!(
                "{:>2} slot(s), says {:<13} wall {:.3} s, ideal {ideal:.3} s, ratio {:.2}; final limit {}, peak at the server {}, longest queue wait {:.3} s ({:.4} of the timeout)",
                scenario.slots,
                format!("{:?}:", scenario.says),
                measured.median,
                measured.median / ideal,
                measured.final_limit,
                measured.peak_in_flight,
                measured.longest_queue_wait.as_secs_f64(),
                measured.longest_queue_wait.as_secs_f64()
                    / rlm_llm::DEFAULT_REQUEST_TIMEOUT.as_secs_f64(),
            );
        }
    });
}
