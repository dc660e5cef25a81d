//! Prompt caching through the fake server's simulated caches: a conversation growing call after
//! call reads what the call before wrote (Anthropic breakpoints, OpenAI automatic prefixes),
//! parsed whole and streamed, priced at the cache rates; and the off switch.

use rlm_fake::{FakeReply, FakeServer, MIN_CACHED_TOKENS};
use rlm_llm::testing::FAKE_ANTHROPIC;
use rlm_llm::{ChatRequest, ChatResponse, LlmClient, Price, PriceTable, Usage};

use crate::server;

/// ~1,500 tokens at the fake's 4 bytes per token: past the 1,024-token minimum.
fn system_prompt() -> String {
    "You answer questions about the context with code. ".repeat(120)
}

/// Sends a conversation growing by a reply and a feedback message per call, streaming every
/// other call; returns each call's usage.
async fn converse(client: &LlmClient, model: &str, calls: usize) -> Vec<ChatResponse> {
    let mut request = ChatRequest::new(model)
        .system(system_prompt())
        .user("first question");
    let mut answers = Vec::new();
    for call in 0..calls {
        let answer = if call % 2 == 0 {
            client.chat(&request).await.unwrap()
        } else {
            client.chat_streaming(&request, &mut |_| {}).await.unwrap()
        };
        request = request
            .assistant(answer.text.clone())
            .user(format!("output of call {call}: {}", "data ".repeat(50)));
        answers.push(answer);
    }
    answers
}

fn scripted(server: &FakeServer, model: &str, calls: usize) {
    server.script(
        model,
        (0..calls).map(|call| FakeReply::text(format!("```repl\nprint({call})\n```"))),
    );
}

/// Claude Sonnet's list prices: cache writes 1.25x input, reads 0.1x.
fn sonnet_prices() -> PriceTable {
    let mut prices = PriceTable::empty();
    prices.insert(
        "claude-cached",
        Price {
            input_per_mtok: 3.0,
            output_per_mtok: 15.0,
            cache_read_per_mtok: Some(0.3),
            cache_write_per_mtok: Some(3.75),
        },
    );
    prices
}

#[tokio::test]
async fn anthropic_calls_read_what_the_call_before_wrote_whole_and_streamed() {
    let server = server().await;
    scripted(&server, "claude-cached", 8);
    let client = rlm_llm::testing::client_builder(server.address())
        .prices(sonnet_prices())
        .build()
        .unwrap();
    let model = format!("{FAKE_ANTHROPIC}:claude-cached");
    let answers = converse(&client, &model, 8).await;
    let usage: Vec<Usage> = answers.iter().map(|answer| answer.usage).collect();
    // The first call writes the system prompt only: one message is not worth a breakpoint.
    assert_eq!(usage[0].cache_read_tokens, 0);
    assert!(usage[0].cache_write_tokens >= MIN_CACHED_TOKENS);
    assert!(usage[0].uncached_input_tokens() > 0);
    assert_eq!(usage[1].cache_read_tokens, usage[0].cache_write_tokens);
    for call in 2..usage.len() {
        let (now, before) = (usage[call], usage[call - 1]);
        assert_eq!(now.cache_read_tokens, before.input_tokens, "call {call}");
        assert_eq!(
            now.cache_read_tokens + now.cache_write_tokens,
            now.input_tokens,
            "call {call}"
        );
    }
    // Priced at each rate: reads at a tenth, writes at 1.25x input.
    for answer in &answers {
        let usage = answer.usage;
        let expected = (usage.uncached_input_tokens() as f64 * 3.0
            + usage.cache_read_tokens as f64 * 0.3
            + usage.cache_write_tokens as f64 * 3.75
            + usage.output_tokens as f64 * 15.0)
            / 1e6;
        let cost = answer.cost_usd.unwrap();
        assert!((cost - expected).abs() < 1e-12, "{cost} vs {expected}");
    }
    let totals = client.ledger().report().total;
    assert_eq!(
        totals.usage.cache_read_tokens,
        usage.iter().map(|u| u.cache_read_tokens).sum::<u64>()
    );
}

#[tokio::test]
async fn with_caching_off_anthropic_bodies_carry_no_cache_control() {
    let server = server().await;
    scripted(&server, "claude-plain", 5);
    let client = rlm_llm::testing::client_builder(server.address())
        .prompt_cache(false)
        .build()
        .unwrap();
    let answers = converse(&client, &format!("{FAKE_ANTHROPIC}:claude-plain"), 5).await;
    for answer in &answers {
        assert_eq!(answer.usage.cache_read_tokens, 0);
        assert_eq!(answer.usage.cache_write_tokens, 0);
    }
    for seen in server.requests() {
        assert!(!seen.body.to_string().contains("cache_control"));
    }
}

#[tokio::test]
async fn openai_reports_automatic_prefix_caching_whole_and_streamed() {
    let server = server().await;
    scripted(&server, "gpt-cached", 6);
    let client = rlm_llm::testing::client_builder(server.address())
        .build()
        .unwrap();
    let answers = converse(&client, "gpt-cached", 6).await;
    assert_eq!(answers[0].usage.cache_read_tokens, 0);
    for pair in answers.windows(2) {
        let (before, now) = (pair[0].usage, pair[1].usage);
        assert!(now.cache_read_tokens >= MIN_CACHED_TOKENS, "{now:?}");
        assert_eq!((now.cache_read_tokens - MIN_CACHED_TOKENS) % 128, 0);
        // At most the whole previous prompt, and within a step of it.
        assert!(now.cache_read_tokens <= before.input_tokens);
        assert!(now.cache_read_tokens + 128 >= before.input_tokens);
        assert_eq!(now.cache_write_tokens, 0);
    }
    // A short prompt is never cached, however often it is sent.
    server.script("gpt-cached", [FakeReply::text("a"), FakeReply::text("b")]);
    for _ in 0..2 {
        let short = ChatRequest::new("gpt-cached").user("short");
        assert_eq!(
            client.chat(&short).await.unwrap().usage.cache_read_tokens,
            0
        );
    }
    for seen in server.requests() {
        assert!(!seen.body.to_string().contains("cache_control"));
    }
}
