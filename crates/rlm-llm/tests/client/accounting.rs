//! Usage, cost with unknown prices, and budgets.

use std::time::Duration;

use rlm_fake::FakeReply;
use rlm_llm::{Budget, ChatRequest, Error, Exhausted, Ledger, Price, PriceTable, Usage};

use crate::{fast_retries, server};

fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        ..Usage::default()
    }
}

#[tokio::test]
async fn usage_and_cost_add_up_per_model_with_unknown_prices_unknown() {
    let server = server().await;
    server.script(
        "priced",
        [
            FakeReply::server_error(),
            FakeReply::text("a").with_usage(usage(1000, 500)),
        ],
    );
    server.script(
        "priced",
        [FakeReply::text("b").with_usage(usage(3000, 500))],
    );
    server.script("local", [FakeReply::text("c").with_usage(usage(10, 10))]);
    let mut prices = PriceTable::empty();
    prices.insert(
        "priced",
        Price {
            input_per_mtok: 1.0,
            output_per_mtok: 2.0,
            cache_read_per_mtok: None,
            cache_write_per_mtok: None,
        },
    );
    let client = rlm_llm::testing::client_builder(server.address())
        .retry(fast_retries(2))
        .prices(prices)
        .build()
        .unwrap();
    let first = client
        .chat(&ChatRequest::new("priced").user("1"))
        .await
        .unwrap();
    assert!((first.cost_usd.unwrap() - 0.002).abs() < 1e-12);
    client
        .chat(&ChatRequest::new("priced").user("2"))
        .await
        .unwrap();

    let run = client.with_ledger(Ledger::new());
    let local = run
        .chat(&ChatRequest::new("local").user("3"))
        .await
        .unwrap();
    assert_eq!(
        local.cost_usd, None,
        "an unknown price is unknown, not zero"
    );

    let process = client.ledger().report();
    let priced = &process.models["fake:priced"];
    assert_eq!(priced.calls, 2);
    assert_eq!(priced.retries, 1);
    assert_eq!(priced.usage, usage(4000, 1000));
    assert!((priced.cost_usd - 0.006).abs() < 1e-12);
    assert!(!priced.cost_is_partial());
    assert!(
        !process.models.contains_key("fake:local"),
        "the run ledger is separate"
    );

    let run_report = run.ledger().report();
    assert_eq!(run_report.total.calls, 1);
    assert_eq!(run_report.total.cost_usd, 0.0);
    assert_eq!(
        run_report.total.unpriced_calls, 1,
        "a lower bound, said to be one"
    );
    assert_eq!(run_report.models["fake:local"].usage, usage(10, 10));
}

#[tokio::test]
async fn a_budget_refuses_calls_without_sending_them() {
    let server = server().await;
    server.respond_with(|_| FakeReply::text("ok").with_usage(usage(60, 0)));
    let ledger = Ledger::with_budget(Budget {
        max_tokens: Some(100),
        ..Budget::default()
    });
    let client = rlm_llm::testing::client_builder(server.address())
        .ledger(ledger)
        .build()
        .unwrap();
    let ask = ChatRequest::new("m").user("x");
    client.chat(&ask).await.unwrap();
    client.chat(&ask).await.unwrap();
    let err = client.chat(&ask).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::BudgetExhausted {
                limit: Exhausted::Tokens,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(server.request_count(), 2);
}

/// Spend of one `chat_batch` of `size` requests under `budget`: (spent, answered, refused).
async fn batch_spend(size: usize, budget: Budget) -> (rlm_llm::ModelTotals, usize, usize) {
    let server = server().await;
    server.respond_with(|_| FakeReply::text("ok").with_usage(usage(100, 50)));
    let mut prices = PriceTable::empty();
    // $1,000 per million tokens: $0.15 a reply, estimated at $0.154 (104 + 50 tokens).
    prices.insert(
        "m",
        Price {
            input_per_mtok: 1_000.0,
            output_per_mtok: 1_000.0,
            cache_read_per_mtok: None,
            cache_write_per_mtok: None,
        },
    );
    let ledger = Ledger::with_budget(budget);
    let client = rlm_llm::testing::client_builder(server.address())
        .prices(prices)
        .ledger(std::sync::Arc::clone(&ledger))
        .build()
        .unwrap();
    let request = ChatRequest::new("m").user("x".repeat(300)).max_tokens(50);
    let requests = vec![request; size];
    let results = client.chat_batch(&requests).await;
    let refused = results
        .iter()
        .filter(|result| matches!(result, Err(Error::BudgetExhausted { .. })))
        .count();
    let answered = results.iter().filter(|result| result.is_ok()).count();
    assert_eq!(
        ledger.reserved(),
        rlm_llm::Reserved::default(),
        "no reservation outlives its call"
    );
    assert_eq!(
        server.request_count(),
        answered,
        "refused requests are not sent"
    );
    (ledger.total(), answered, refused)
}

#[tokio::test]
async fn a_batch_spends_no_more_than_the_budget_whatever_its_size() {
    let cost_cap = Budget {
        max_cost_usd: Some(1.0),
        ..Budget::default()
    };
    let token_cap = Budget {
        max_tokens: Some(1_000),
        ..Budget::default()
    };
    for size in [1, 100, 10_000] {
        let (spent, answered, refused) = batch_spend(size, cost_cap).await;
        eprintln!(
            "batch of {size:>6} under --max-cost 1: spent ${:.3} of $1.000 ({answered} sent, {refused} refused)",
            spent.cost_usd
        );
        assert!(spent.cost_usd <= 1.0, "{size}: ${}", spent.cost_usd);
        assert_eq!(answered + refused, size);
        let (spent, answered, refused) = batch_spend(size, token_cap).await;
        eprintln!(
            "batch of {size:>6} under --max-tokens 1000: spent {} of 1000 tokens ({answered} sent, {refused} refused)",
            spent.usage.total()
        );
        assert!(spent.usage.total() <= 1_000, "{size}: {spent:?}");
        assert_eq!(answered + refused, size);
    }
}

/// A call cancelled with its request out (the server never answered) releases its hold and
/// is counted as one cut-off call: its input as estimated, no output.
#[tokio::test]
async fn a_cancelled_call_releases_its_reservation() {
    let server = server().await;
    server.respond_with(|_| FakeReply::hang());
    let ledger = Ledger::with_budget(Budget {
        max_tokens: Some(100_000),
        ..Budget::default()
    });
    let client = rlm_llm::testing::client_builder(server.address())
        .ledger(std::sync::Arc::clone(&ledger))
        .build()
        .unwrap();
    let request = ChatRequest::new("m").user("hello");
    let call = client.chat(&request);
    let timed_out = tokio::time::timeout(std::time::Duration::from_millis(100), call).await;
    assert!(timed_out.is_err());
    assert_eq!(ledger.reserved(), rlm_llm::Reserved::default());
    let spent = ledger.total();
    assert_eq!(
        (spent.calls, spent.failures, spent.cut_off_calls),
        (0, 1, 1),
        "{spent:?}"
    );
    assert!(spent.usage.input_tokens > 0, "{spent:?}");
    assert_eq!(spent.usage.output_tokens, 0, "{spent:?}");
}

/// A provider reporting far more output than a call's `max_tokens`: the reply is counted as
/// reported, and no further call is sent under the budget, though it has plenty left; the
/// refusal names the provider.
#[tokio::test]
async fn after_a_reply_over_its_cap_nothing_more_is_sent_under_the_budget() {
    let lying = server().await;
    lying.respond_with(|_| FakeReply::text("ok").with_usage(usage(20, 20_000)));
    let mut prices = PriceTable::empty();
    prices.insert(
        "m",
        Price {
            input_per_mtok: 1.0,
            output_per_mtok: 1.0,
            cache_read_per_mtok: None,
            cache_write_per_mtok: None,
        },
    );
    // $0.02 a reply as reported against $10: without the stop, all five would be sent.
    let ledger = Ledger::with_budget(Budget {
        max_cost_usd: Some(10.0),
        ..Budget::default()
    });
    let client = rlm_llm::testing::client_builder(lying.address())
        .prices(prices)
        .ledger(std::sync::Arc::clone(&ledger))
        .build()
        .unwrap();
    let ask = ChatRequest::new("m").user("x").max_tokens(50);
    client.chat(&ask).await.unwrap();
    for _ in 0..4 {
        let err = client.chat(&ask).await.unwrap_err();
        assert!(
            matches!(
                err,
                Error::BudgetExhausted {
                    limit: Exhausted::Cost,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(
            err.to_string()
                .contains("fake reported 20,000 output tokens for a call to `m` capped at 50"),
            "{err}"
        );
    }
    assert_eq!(lying.request_count(), 1);
    let spent = ledger.total();
    assert_eq!(spent.usage.output_tokens, 20_000);
    assert_eq!(spent.overrun_calls, 1);

    // An honest provider under the same budget goes on.
    let honest = server().await;
    honest.respond_with(|_| FakeReply::text("ok").with_usage(usage(20, 50)));
    let client = rlm_llm::testing::client_builder(honest.address())
        .ledger(Ledger::with_budget(Budget {
            max_tokens: Some(10_000),
            ..Budget::default()
        }))
        .build()
        .unwrap();
    for _ in 0..5 {
        client.chat(&ask).await.unwrap();
    }
    assert_eq!(honest.request_count(), 5);
}

/// Calls admitted while a budget had room, then queued behind the provider's limiter: once a
/// reply reports 1,000,000 tokens, the queued ones are refused when their turn comes instead of
/// being sent. Only the calls already on the wire (the limiter's 4) reach the server.
#[tokio::test]
async fn calls_queued_behind_the_limiter_are_not_sent_after_a_reply_over_reports() {
    let lying = server().await;
    lying.set_latency(std::time::Duration::from_millis(20));
    lying.respond_with(|_| FakeReply::text("ok").with_usage(usage(20, 1_000_000)));
    // 64 calls of at most ~60 tokens each fit 100,000 tokens with room to spare.
    let ledger = Ledger::with_budget(Budget {
        max_tokens: Some(100_000),
        ..Budget::default()
    });
    let client = rlm_llm::LlmClient::builder()
        .provider(rlm_llm::testing::openai_provider("p", lying.address()).max_concurrency(4))
        .default_provider("p")
        .ledger(std::sync::Arc::clone(&ledger))
        .build()
        .unwrap();
    let requests: Vec<ChatRequest> = (0..64)
        .map(|n| ChatRequest::new("m").user(format!("q{n}")).max_tokens(50))
        .collect();
    let results = client.chat_batch(&requests).await;
    assert!(
        lying.request_count() <= 4,
        "{} requests reached the server",
        lying.request_count()
    );
    let refused = results
        .iter()
        .filter(|result| matches!(result, Err(Error::BudgetExhausted { .. })))
        .count();
    assert_eq!(refused + lying.request_count(), 64);
    // Refused before sending: released, not counted as failed calls.
    let spent = ledger.total();
    assert_eq!(spent.failures, 0);
    assert_eq!(spent.calls as usize, lying.request_count());
    assert_eq!(ledger.reserved(), rlm_llm::Reserved::default());
}

/// A caller that keeps its own budget (a run's ledger, apart from the client's) hands its
/// reservation over with `chat_reserved`: it is asked again before the send and settled with
/// the reply under the caller's name before the next call waiting for the slot goes out.
#[tokio::test]
async fn a_callers_own_reservation_is_checked_before_each_send_and_settled() {
    let lying = server().await;
    lying.set_latency(std::time::Duration::from_millis(10));
    lying.respond_with(|_| FakeReply::text("ok").with_usage(usage(20, 1_000_000)));
    let client = rlm_llm::LlmClient::builder()
        .provider(rlm_llm::testing::openai_provider("p", lying.address()).max_concurrency(1))
        .default_provider("p")
        .build()
        .unwrap();
    let run = Ledger::with_budget(Budget {
        max_tokens: Some(100_000),
        ..Budget::default()
    });
    let calls = (0..8).map(|n| {
        let request = ChatRequest::new("m").user(format!("q{n}")).max_tokens(50);
        let reservation = run.reserve(rlm_llm::Estimate::of(&request, None)).unwrap();
        let client = client.clone();
        async move { client.chat_reserved(&request, reservation).await }
    });
    let results = futures::future::join_all(calls).await;
    assert_eq!(lying.request_count(), 1);
    assert!(results[0].is_ok());
    assert!(
        results[1..]
            .iter()
            .all(|result| matches!(result, Err(Error::BudgetExhausted { .. })))
    );
    let report = run.report();
    assert_eq!(report.total.calls, 1);
    assert_eq!(report.total.overrun_calls, 1);
    assert!(
        report.models.contains_key("m"),
        "{:?}",
        report.models.keys()
    );
    assert_eq!(run.reserved(), rlm_llm::Reserved::default());
    // The client's own ledger counted the same call under the resolved name.
    assert_eq!(client.ledger().total().calls, 1);
}

/// A call cut off after its request went out is counted: by its deadline mid-answer, or by
/// its future dropped (a stopped run). Its input is the request's estimate, its output the
/// text streamed before the cut, and it is marked cut off; a call dropped before it was sent
/// counts nothing.
#[tokio::test]
async fn calls_cut_off_mid_answer_count_what_they_streamed() {
    let server = crate::server().await;
    let text = "word ".repeat(300);
    server.script(
        "m",
        [
            FakeReply::slow_stream(text.clone(), 30, Duration::from_millis(50)),
            FakeReply::slow_stream(text, 30, Duration::from_millis(50)),
        ],
    );
    let client = crate::client(&server, 0);
    let cut = client.with_deadline(std::time::Instant::now() + Duration::from_millis(600));
    let err = cut
        .chat(&ChatRequest::new("m").user("say many words"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, rlm_llm::Error::DeadlineExceeded { .. }),
        "{err:?}"
    );
    let spent = client.ledger().total();
    assert_eq!(
        (spent.calls, spent.failures, spent.cut_off_calls),
        (0, 1, 1),
        "{spent:?}"
    );
    assert!(spent.usage.input_tokens > 0, "{spent:?}");
    // About half of 1,500 bytes streamed in 600 ms, at 3 bytes a token.
    assert!((50..=500).contains(&spent.usage.output_tokens), "{spent:?}");

    let dropped = {
        let client = client.clone();
        tokio::spawn(async move { client.chat(&ChatRequest::new("m").user("again")).await })
    };
    while server.in_flight() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    dropped.abort();
    assert!(dropped.await.unwrap_err().is_cancelled());
    let spent = client.ledger().total();
    assert_eq!((spent.failures, spent.cut_off_calls), (2, 2), "{spent:?}");
}

/// A call that outlived its request timeout, or whose streamed answer stalled, had its prompt
/// read by the server: it is counted as cut off with its estimated tokens, not as free.
#[tokio::test]
async fn calls_ended_by_a_timeout_count_as_cut_off() {
    let server = crate::server().await;
    server.script(
        "m",
        [FakeReply::hang(), FakeReply::stall("the answer began")],
    );
    let client = rlm_llm::testing::client_builder(server.address())
        .retry(crate::fast_retries(0))
        .request_timeout(Duration::from_millis(300))
        .idle_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let ask = || ChatRequest::new("m").user("a long prompt ".repeat(100));
    let err = client.chat(&ask()).await.unwrap_err();
    assert!(matches!(err, rlm_llm::Error::Timeout { .. }), "{err:?}");
    let spent = client.ledger().total();
    assert_eq!(
        (spent.calls, spent.failures, spent.cut_off_calls),
        (0, 1, 1),
        "{spent:?}"
    );
    assert!(spent.usage.input_tokens >= 300, "{spent:?}");

    let err = client.chat(&ask()).await.unwrap_err();
    assert!(matches!(err, rlm_llm::Error::Stalled { .. }), "{err:?}");
    let spent = client.ledger().total();
    assert_eq!((spent.failures, spent.cut_off_calls), (2, 2), "{spent:?}");
    assert!(
        spent.usage.output_tokens > 0,
        "the streamed start: {spent:?}"
    );
}
