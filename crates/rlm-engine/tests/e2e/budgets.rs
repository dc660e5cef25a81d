//! Budgets against a provider that over-reports: it answers every `sub` call claiming
//! 1,000,000 output tokens for a call capped far lower. After the first such reply nothing more
//! may be sent under the run's budget; only calls already on the wire may overshoot it. The
//! provider's limiter is small, so most calls the code asks for wait for a slot after being
//! admitted: the budget must be asked again when their turn comes.

use std::time::Duration;

use rlm_engine::{RunLimits, Status};
use rlm_fake::FakeReply;
use rlm_llm::{Budget, Price, PriceTable, Usage};

use crate::{Harness, status_line};

const OVER_REPORTED: Usage = Usage {
    input_tokens: 10,
    output_tokens: 1_000_000,
    cache_read_tokens: 0,
    cache_write_tokens: 0,
};

/// gpt-4o-mini's list price for both fake models, so `--max-cost` applies.
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

/// A run under `max_cost_usd` whose provider serves `slots` requests at once; `sub` replies
/// over-report.
async fn run_over_reported(
    harness: &Harness,
    slots: usize,
    max_depth: u32,
) -> rlm_engine::RunResult {
    harness.server.set_latency(Duration::from_millis(20));
    harness.server.respond_with(|seen| {
        let reply = if seen.system.is_some() && seen.messages.len() == 1 {
            // A child run's first turn: code that would ask for more.
            "```repl\nx = llm_query('more')\nprint(x)\n```"
        } else {
            "1"
        };
        FakeReply::text(reply).with_usage(OVER_REPORTED)
    });
    let client = rlm_llm::testing::client_builder(harness.server.address())
        .provider(
            rlm_llm::testing::openai_provider(
                rlm_llm::testing::FAKE_OPENAI,
                harness.server.address(),
            )
            .max_concurrency(slots),
        )
        .prices(prices())
        .build()
        .unwrap();
    let limits = RunLimits {
        spend: Budget {
            max_cost_usd: Some(0.5),
            ..Budget::default()
        },
        ..RunLimits::default()
    };
    let rlm = harness
        .rlm_builder(client, limits, max_depth)
        .root_max_output_tokens(1_000)
        .subcall_max_output_tokens(256)
        .build()
        .unwrap();
    let run = rlm.completion(
        "What is asked?",
        vec![rlm_engine::ContextPart::new("unused")],
    );
    tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("run finished in time")
        .unwrap()
}

/// `llm_query_batched` of 100 prompts, 4 slots: the 100 fit the $0.50 budget at their worst
/// case (256 output tokens each), so all are admitted at once; the first reply claims $0.60.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_sends_nothing_more_after_a_reply_over_reports() {
    let harness = Harness::start().await;
    harness.root(&[
        "```repl\nreplies = llm_query_batched(['item %d' % i for i in range(100)])\nprint(replies[-1])\n```",
        "FINAL(done)",
    ]);
    let result = run_over_reported(&harness, 4, 1).await;
    let sent = harness.server.requests_for("sub").len();
    assert!(sent <= 4, "{sent} sub-calls reached the server");
    assert_eq!(
        result.outcome.status,
        Status::CostBudget,
        "{}",
        status_line(&result)
    );
    let spent = &result.outcome.usage.total;
    assert_eq!(
        spent.calls as usize,
        sent + 1,
        "the root turn and the sub-calls"
    );
    assert_eq!(spent.overrun_calls as usize, sent);
    assert_eq!(spent.failures, 0, "refused calls are not failed ones");
}

/// `rlm_query_batched` of 6 prompts at depth 2, one slot: each child's first turn waits for the
/// slot; the first child's reply over-reports, and no other child's turn is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_runs_send_nothing_more_after_a_reply_over_reports() {
    let harness = Harness::start().await;
    harness.root(&[
        "```repl\nreplies = rlm_query_batched(['task %d' % i for i in range(6)])\nprint(replies)\n```",
        "FINAL(done)",
    ]);
    let result = run_over_reported(&harness, 1, 2).await;
    let sent = harness.server.requests_for("sub").len();
    assert_eq!(sent, 1, "sub requests reached the server");
    assert_eq!(
        result.outcome.status,
        Status::CostBudget,
        "{}",
        status_line(&result)
    );
    assert_eq!(result.outcome.usage.total.overrun_calls, 1);
}

/// `budget()` tells model code what is left before it fans out: here $0.50, 20 model calls,
/// 60 seconds, with what the first turn and a sub-call used taken off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budget_says_what_is_left_of_each_limit() {
    let harness = Harness::start().await;
    harness.root(&[
        "```repl\nx = llm_query('hi')\nb = budget()\nprint(sorted(b.items()))\n```",
        "FINAL(done)",
    ]);
    harness.sub(|_| "fine".to_owned());
    let client = rlm_llm::testing::client_builder(harness.server.address())
        .prices(prices())
        .build()
        .unwrap();
    let limits = RunLimits {
        spend: Budget {
            max_cost_usd: Some(0.5),
            max_calls: Some(20),
            ..Budget::default()
        },
        timeout: Some(Duration::from_secs(60)),
        ..RunLimits::default()
    };
    let rlm = harness.rlm_builder(client, limits, 1).build().unwrap();
    let result = rlm
        .completion("What is asked?", vec![rlm_engine::ContextPart::new("x")])
        .await
        .unwrap();
    assert_eq!(
        result.outcome.status,
        Status::Answered,
        "{}",
        status_line(&result)
    );
    let system = harness.server.requests_for("root")[0]
        .system
        .clone()
        .unwrap();
    assert!(system.contains("`budget()`: what is left"), "{system}");
    let printed = harness.user_message("root", 1);
    // The root turn and the sub-call: 2 of 20 calls made, 18 left.
    for expected in [
        "('calls_left', 18)",
        "('calls_made', 2)",
        "('subcalls_made', 1)",
        "('subcalls_left', None)",
        "('tokens_left', None)",
        "('stopped', None)",
    ] {
        assert!(printed.contains(expected), "{expected}: {printed}");
    }
    let value = |key: &str| -> f64 {
        let at = printed.find(&format!("('{key}', ")).unwrap() + key.len() + 5;
        printed[at..].split(')').next().unwrap().parse().unwrap()
    };
    let spent = value("cost_usd_spent");
    assert!(spent > 0.0, "{printed}");
    assert!(
        (value("cost_usd_left") - (0.5 - spent)).abs() < 1e-9,
        "{printed}"
    );
    assert!((0.0..=60.0).contains(&value("seconds_left")), "{printed}");

    // Without any limit the prompt does not mention it (recorded sessions replay as before),
    // and it answers None for every limit.
    let harness = Harness::start().await;
    harness.root(&[
        "```repl\nprint(budget()['cost_usd_left'])\n```",
        "FINAL(done)",
    ]);
    harness.run(RunLimits::default(), 1, "x").await;
    let system = harness.server.requests_for("root")[0]
        .system
        .clone()
        .unwrap();
    assert!(!system.contains("budget()"), "{system}");
    assert!(harness.user_message("root", 1).contains("None"));
}
