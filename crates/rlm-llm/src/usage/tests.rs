use super::*;

fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        ..Usage::default()
    }
}

fn reply(usage: Usage, cost_usd: Option<f64>) -> ChatResponse {
    ChatResponse {
        text: String::new(),
        tool_calls: Vec::new(),
        model: "provider:model".to_owned(),
        finish_reason: None,
        usage,
        usage_estimated: false,
        cost_usd,
        latency: Duration::from_millis(10),
        retries: 0,
        replayed: false,
    }
}

#[test]
fn longest_prefix_price_wins() {
    let table = PriceTable::builtin();
    let mini = table.get("gpt-4o-mini-2024-07-18").unwrap();
    assert_eq!(mini.input_per_mtok, 0.15);
    assert!(table.get("qwen2.5:7b").is_none());
    let cost = table.cost("gpt-4o", &usage(1_000_000, 1_000_000)).unwrap();
    assert!((cost - 12.5).abs() < 1e-9);
}

#[test]
fn cached_input_is_billed_at_its_own_rate_not_twice() {
    let table = PriceTable::builtin();
    // 3M input tokens of which 1M read from and 1M written to the cache.
    let used = Usage {
        input_tokens: 3_000_000,
        cache_read_tokens: 1_000_000,
        cache_write_tokens: 1_000_000,
        ..Usage::default()
    };
    let cost = table.cost("claude-sonnet-4-5", &used).unwrap();
    assert!((cost - (3.0 + 0.3 + 3.75)).abs() < 1e-9, "{cost}");
}

#[test]
fn unknown_prices_make_the_cost_a_lower_bound_not_zero() {
    let ledger = Ledger::new();
    ledger.record("a:priced", &reply(usage(10, 5), Some(0.5)));
    assert!(!ledger.total().cost_is_partial());
    ledger.record("b:local", &reply(usage(7, 3), None));
    ledger.record_failure("b:local", Duration::from_millis(20), 2);
    let report = ledger.report();
    assert_eq!(report.total.cost_usd, 0.5);
    assert!(report.total.cost_is_partial());
    assert_eq!(report.models["a:priced"].unpriced_calls, 0);
    assert_eq!(report.models["b:local"].unpriced_calls, 1);
    assert_eq!(report.models["b:local"].failures, 1);
    assert_eq!(report.total.usage.total(), 25);
    assert_eq!(report.total.retries, 2);
    assert_eq!(report.total.latency, Duration::from_millis(40));
}

#[test]
fn budget_refuses_once_spent() {
    let ledger = Ledger::with_budget(Budget {
        max_tokens: Some(20),
        ..Budget::default()
    });
    assert!(ledger.check(false).is_ok());
    ledger.record("m", &reply(usage(15, 10), None));
    assert!(matches!(
        ledger.check(false),
        Err(Error::BudgetExhausted {
            limit: Exhausted::Tokens,
            ..
        })
    ));
    assert_eq!(ledger.exhausted(), Some(Exhausted::Tokens));

    let money = Ledger::with_budget(Budget {
        max_cost_usd: Some(1.0),
        ..Budget::default()
    });
    assert!(
        money.check(false).is_err(),
        "unknown price cannot be checked"
    );
    assert!(money.check(true).is_ok());
    money.record("m", &reply(usage(1, 1), Some(1.5)));
    assert!(money.check(true).is_err());
    assert_eq!(money.exhausted(), Some(Exhausted::Cost));
}

#[test]
fn usage_sums_up_the_tree() {
    let root = Ledger::new();
    let child = Ledger::child(&root, Budget::default());
    let grandchild = Ledger::child(&child, Budget::default());
    root.record("big", &reply(usage(100, 10), Some(0.5)));
    grandchild.record("small", &reply(usage(7, 3), None));
    assert_eq!(grandchild.total().usage.total(), 10);
    assert_eq!(child.total().usage.total(), 10);
    let total = root.report();
    assert_eq!(total.total.usage.total(), 120);
    assert_eq!(total.total.calls, 2);
    assert!((total.total.cost_usd - 0.5).abs() < 1e-9);
    assert!(total.total.cost_is_partial());
    assert_eq!(total.models["small"].unpriced_calls, 1);
}

#[test]
fn child_cannot_outspend_parent() {
    let root = Ledger::with_budget(Budget {
        max_tokens: Some(100),
        ..Budget::default()
    });
    root.record("m", &reply(usage(90, 0), None));
    // The child's own budget is larger, but the parent has only 10 tokens left.
    let child = Ledger::child(
        &root,
        Budget {
            max_tokens: Some(1_000),
            ..Budget::default()
        },
    );
    assert_eq!(child.exhausted(), None);
    child.record("m", &reply(usage(5, 5), None));
    assert_eq!(child.exhausted(), Some(Exhausted::Tokens));
    assert!(child.check(true).is_err());
    assert_eq!(child.total().usage.total(), 10);
}

#[test]
fn calls_and_failures_count_against_the_call_limit() {
    let ledger = Ledger::with_budget(Budget {
        max_calls: Some(2),
        ..Budget::default()
    });
    ledger.record("m", &reply(usage(1, 1), Some(0.0)));
    assert_eq!(ledger.exhausted(), None);
    ledger.record_failure("m", Duration::ZERO, 0);
    assert_eq!(ledger.exhausted(), Some(Exhausted::Calls));
}

#[test]
fn totals_serialize_flat_with_a_lower_bound_cost() {
    let mut totals = ModelTotals::default();
    totals.add(&reply(usage(3, 2), None));
    let value = serde_json::to_value(&totals).unwrap();
    assert_eq!(value["input_tokens"], 3);
    assert_eq!(value["cost_usd"], 0.0);
    assert_eq!(value["unpriced_calls"], 1);
    assert_eq!(value["latency_ms"], 10);
    let back: ModelTotals = serde_json::from_value(value).unwrap();
    assert_eq!(back, totals);
}

#[test]
fn reservations_hold_budget_until_settled_or_dropped() {
    let root = Ledger::with_budget(Budget {
        max_tokens: Some(100),
        ..Budget::default()
    });
    let child = Ledger::child(&root, Budget::default());
    let estimate = Estimate {
        tokens: 40,
        cost_usd: None,
        ..Estimate::default()
    };
    let first = child.reserve(estimate).unwrap();
    let second = child.reserve(estimate).unwrap();
    assert_eq!(root.reserved().tokens, 80);
    let refused = child.reserve(estimate).unwrap_err();
    assert!(refused.to_string().contains("80 held"), "{refused}");
    drop(second);
    assert_eq!(root.reserved().calls, 1);
    first.settle("m", &reply(usage(10, 5), None));
    assert_eq!(root.reserved(), Reserved::default());
    assert_eq!(root.total().usage.total(), 15);
    // A call that fits no budget of this size may use what is left, alone.
    let alone = root
        .reserve(Estimate {
            tokens: 1_000,
            cost_usd: None,
            ..Estimate::default()
        })
        .unwrap();
    let with_company = root.reserve(Estimate {
        tokens: 1_000,
        cost_usd: None,
        ..Estimate::default()
    });
    assert!(with_company.is_err());
    // One that could fit must fit.
    assert!(
        root.reserve(Estimate {
            tokens: 90,
            cost_usd: None,
            ..Estimate::default()
        })
        .is_err()
    );
    alone.fail("m", Duration::ZERO, 0);
    assert_eq!(root.total().failures, 1);
    assert_eq!(root.reserved(), Reserved::default());
}

#[test]
fn an_unknown_price_is_refused_under_a_cost_limit() {
    let ledger = Ledger::with_budget(Budget {
        max_cost_usd: Some(1.0),
        ..Budget::default()
    });
    let request = ChatRequest::new("m").user("hello").max_tokens(10);
    let err = ledger.reserve(Estimate::of(&request, None)).unwrap_err();
    assert!(err.to_string().contains("no known price"), "{err}");
    let price = Price {
        input_per_mtok: 1.0,
        output_per_mtok: 1.0,
        cache_read_per_mtok: None,
        cache_write_per_mtok: None,
    };
    let estimate = Estimate::of(&request, Some(&price));
    // "hello" is 2 tokens at 3 bytes a token, plus 4 for the message, plus 10 output.
    assert_eq!(estimate.tokens, 16);
    assert!(ledger.reserve(estimate).is_ok());
}

/// A reply reporting far more output than its cap is counted as reported, and from then on
/// every node with a token or cost limit on its path refuses new calls, naming the provider;
/// a node limiting only calls, or nothing, goes on.
#[test]
fn an_overrun_stops_the_budgets_on_its_path() {
    let price = Price {
        input_per_mtok: 1.0,
        output_per_mtok: 1.0,
        cache_read_per_mtok: None,
        cache_write_per_mtok: None,
    };
    let root = Ledger::with_budget(Budget {
        max_cost_usd: Some(100.0),
        ..Budget::default()
    });
    let run = Ledger::child(&root, Budget::default());
    let sibling = Ledger::child(&root, Budget::default());
    let unlimited = Ledger::new();
    let request = ChatRequest::new("openai:gpt-4o")
        .user("hello")
        .max_tokens(1_024);
    let estimate = Estimate::of(&request, Some(&price));
    let first = run.reserve(estimate).unwrap();
    let in_flight = sibling.reserve(estimate).unwrap();
    let mut lying = reply(usage(10, 20_000), Some(0.02));
    lying.model = "openai:gpt-4o".to_owned();
    first.settle("openai:gpt-4o", &lying);

    assert_eq!(
        root.total().usage.output_tokens,
        20_000,
        "counted as reported"
    );
    assert_eq!(root.total().overrun_calls, 1);
    assert_eq!(run.report().models["openai:gpt-4o"].overrun_calls, 1);
    let refused = sibling.reserve(estimate).unwrap_err();
    assert!(
        matches!(
            refused,
            Error::BudgetExhausted {
                limit: Exhausted::Cost,
                ..
            }
        ),
        "{refused}"
    );
    assert_eq!(
        refused.to_string(),
        "cost budget exhausted: openai reported 20,000 output tokens for a call to `gpt-4o` \
         capped at 1,024; no further calls are sent under this budget"
    );
    assert_eq!(run.exhausted(), Some(Exhausted::Cost));
    // A call already in flight is still settled and counted.
    in_flight.settle("openai:gpt-4o", &lying);
    assert_eq!(root.total().overrun_calls, 2);
    assert_eq!(root.reserved(), Reserved::default());

    // Without a token or cost limit nothing is refused; the overrun is still counted.
    let elsewhere = unlimited.reserve(estimate).unwrap();
    elsewhere.settle("openai:gpt-4o", &lying);
    assert_eq!(unlimited.total().overrun_calls, 1);
    assert!(unlimited.reserve(estimate).is_ok());
    assert_eq!(unlimited.exhausted(), None);
}

/// An honest reply, up to its cap and with input within its prompt's bytes, changes nothing.
#[test]
fn replies_within_their_reservation_stop_nothing() {
    let root = Ledger::with_budget(Budget {
        max_tokens: Some(100_000),
        ..Budget::default()
    });
    let request = ChatRequest::new("p:m")
        .user("x".repeat(3_000))
        .max_tokens(500);
    let estimate = Estimate::of(&request, None);
    for _ in 0..3 {
        // 3,000 bytes of rare symbols may be up to 3,000 tokens, plus framing.
        root.reserve(estimate)
            .unwrap()
            .settle("p:m", &reply(usage(3_500, 500), None));
    }
    assert_eq!(root.total().overrun_calls, 0);
    assert!(root.reserve(estimate).is_ok());
}

/// What is left: each limit's room after spending and what calls in flight hold, the
/// smallest along the path; nothing once a reply over-reports.
#[test]
fn remaining_is_the_least_room_on_the_path() {
    let root = Ledger::with_budget(Budget {
        max_tokens: Some(1_000),
        max_cost_usd: Some(1.0),
        ..Budget::default()
    });
    let run = Ledger::child(
        &root,
        Budget {
            max_tokens: Some(5_000),
            max_calls: Some(10),
            ..Budget::default()
        },
    );
    assert_eq!(
        run.remaining(),
        Remaining {
            tokens: Some(1_000),
            cost_usd: Some(1.0),
            calls: Some(10),
            stopped: None
        }
    );
    run.record("provider:model", &reply(usage(200, 100), Some(0.25)));
    let estimate = Estimate {
        tokens: 100,
        cost_usd: Some(0.1),
        input_tokens: 50,
        output_cap: Some(50),
    };
    let in_flight = run.reserve(estimate).unwrap();
    let left = run.remaining();
    assert_eq!((left.tokens, left.calls), (Some(600), Some(8)));
    assert!((left.cost_usd.unwrap() - 0.65).abs() < 1e-9, "{left:?}");
    assert_eq!(Ledger::new().remaining(), Remaining::default());
    // A reply far over its cap stops the budget: nothing left, and why.
    in_flight.settle("provider:model", &reply(usage(50, 20_000), Some(0.0)));
    let left = run.remaining();
    assert_eq!((left.tokens, left.cost_usd), (Some(0), Some(0.0)));
    assert!(
        left.stopped
            .as_deref()
            .is_some_and(|why| why.contains("reported 20,000 output tokens")),
        "{left:?}"
    );
}
