//! Usage, cost with unknown prices, and budgets.

use rlm_llm::fake::FakeReply;
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
    let client = server
        .client_builder()
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
    let client = server.client_builder().ledger(ledger).build().unwrap();
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
