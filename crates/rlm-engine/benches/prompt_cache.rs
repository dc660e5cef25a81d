//! Prints what prompt caching saves on a 20-turn RLM run (figures, not a timed test): the same
//! scripted run against the fake server's simulated caches, with and without caching.
//!
//! - Anthropic (`claude-sonnet-4-5` list prices: input $3, cache write $3.75, cache read $0.30
//!   per million tokens): `cache_control` breakpoints on, then off (`prompt_cache(false)`).
//! - OpenAI (`gpt-4o`: input $2.50, cached input $1.25): automatic prefix caching, which
//!   applies because every turn's request extends the previous one.
//!
//! "Billed input" weights each input token by its price relative to plain input (a cache read
//! counts 0.1, a write 1.25 on Anthropic). Run with
//! `cargo bench -p rlm-engine --bench prompt_cache`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use rlm_engine::testing::FakeRepl;
use rlm_engine::{ContextPart, Rlm, RunLimits, Status};
use rlm_fake::{FakeReply, FakeServer};
use rlm_llm::testing::{FAKE_ANTHROPIC, FAKE_OPENAI};
use rlm_llm::{ModelTotals, PriceTable};

const TURNS: usize = 20;
/// Characters each turn's code prints: what the REPL feeds back, as a turn of real work would.
const OUTPUT_CHARS: usize = 1_600;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        println!(
            "prompt caching over a {TURNS}-turn run ({OUTPUT_CHARS} chars of output per turn; \
             the fake counts 4 bytes per token)"
        );
        println!(
            "{:<34} {:>12} {:>12} {:>12} {:>14} {:>10}",
            "", "input tok", "cache read", "cache write", "billed input", "cost"
        );
        let (provider, model) = (FAKE_ANTHROPIC, "claude-sonnet-4-5");
        let without = run(provider, model, false).await;
        let with = run(provider, model, true).await;
        report("anthropic, no cache_control", model, &without);
        report("anthropic, breakpoints", model, &with);
        ratios(model, &without, &with);
        let (provider, model) = (FAKE_OPENAI, "gpt-4o");
        let automatic = run(provider, model, true).await;
        report("openai, automatic prefix cache", model, &automatic);
        // Without a cache every input token is billed at the plain rate.
        let mut uncached = automatic.clone();
        uncached.usage.cache_read_tokens = 0;
        uncached.cost_usd = PriceTable::builtin().cost(model, &uncached.usage).unwrap();
        report("openai, if nothing were cached", model, &uncached);
        ratios(model, &uncached, &automatic);
    });
}

/// The scripted run's root-model totals.
async fn run(provider: &str, model: &str, prompt_cache: bool) -> ModelTotals {
    let server = FakeServer::start().await.unwrap();
    let mut replies: Vec<FakeReply> = (1..TURNS)
        .map(|turn| {
            let output = format!("turn {turn}: {}", "row,".repeat(OUTPUT_CHARS / 4));
            FakeReply::text(format!("```repl\nprint(\"{output}\")\n```"))
        })
        .collect();
    replies.push(FakeReply::text("FINAL(done)"));
    server.script(model, replies);
    let client = rlm_llm::testing::client_builder(server.address())
        .prompt_cache(prompt_cache)
        .build()
        .unwrap();
    let model_ref = format!("{provider}:{model}");
    let rlm = Rlm::builder()
        .client(Arc::new(client))
        .repl(Arc::new(FakeRepl))
        .model(model_ref.as_str())
        .subcall_model(model_ref.as_str())
        .limits(RunLimits::default())
        .build()
        .unwrap();
    let result = rlm
        .completion("Summarise the rows.", vec![ContextPart::new("x")])
        .await
        .unwrap();
    assert_eq!(result.outcome.status, Status::Answered);
    assert_eq!(result.outcome.iterations as usize, TURNS);
    result.outcome.usage.models[&model_ref].clone()
}

/// Input tokens weighted by their price relative to plain input.
fn billed_input(model: &str, totals: &ModelTotals) -> f64 {
    let price = *PriceTable::builtin().get(model).unwrap();
    let relative = |rate: Option<f64>| rate.unwrap_or(price.input_per_mtok) / price.input_per_mtok;
    let usage = totals.usage;
    usage.uncached_input_tokens() as f64
        + usage.cache_read_tokens as f64 * relative(price.cache_read_per_mtok)
        + usage.cache_write_tokens as f64 * relative(price.cache_write_per_mtok)
}

fn report(label: &str, model: &str, totals: &ModelTotals) {
    let usage = totals.usage;
    println!(
        "{label:<34} {:>12} {:>12} {:>12} {:>14.0} {:>10}",
        usage.input_tokens,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
        billed_input(model, totals),
        format!("${:.4}", totals.cost_usd)
    );
}

fn ratios(model: &str, without: &ModelTotals, with: &ModelTotals) {
    println!(
        "{:<34} billed input {:.3}x, cost {:.3}x of uncached",
        "  ratio with cache",
        billed_input(model, with) / billed_input(model, without),
        with.cost_usd / without.cost_usd
    );
}
