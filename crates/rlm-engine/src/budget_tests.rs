//! Budgets against batched sub-calls, and which models code may pick.

use std::sync::Arc;

use rlm_llm::{Budget, Price, Usage};

use crate::testing::{FakeRepl, ScriptedModel};
use crate::{ContextPart, Rlm, RunLimits, RunResult, Status};

/// Every call uses 100 input and 50 output tokens and costs $0.15 ($1,000 per million
/// tokens); a 300-byte sub-call prompt capped at 50 output tokens is estimated at 154 tokens.
fn priced_model(root_replies: &[&str]) -> Arc<ScriptedModel> {
    Arc::new(
        ScriptedModel::default()
            .replies("root", root_replies)
            .responder(|model, _| (model == "sub").then(|| "ok".to_owned()))
            .usage(
                Usage {
                    input_tokens: 100,
                    output_tokens: 50,
                    ..Usage::default()
                },
                Some(0.15),
            )
            .price(Some(Price {
                input_per_mtok: 1_000.0,
                output_per_mtok: 1_000.0,
                cache_read_per_mtok: None,
                cache_write_per_mtok: None,
            })),
    )
}

async fn run_with(model: &Arc<ScriptedModel>, spend: Budget, allowed: &[&str]) -> RunResult {
    Rlm::builder()
        .client(Arc::clone(model) as _)
        .repl(Arc::new(FakeRepl))
        .model("root")
        .subcall_model("sub")
        .subcall_max_output_tokens(50)
        .allowed_models(allowed.iter().map(|m| (*m).to_owned()).collect())
        .limits(RunLimits {
            spend,
            ..RunLimits::default()
        })
        .build()
        .unwrap()
        .completion("q", vec![ContextPart::new("data")])
        .await
        .unwrap()
}

fn batch_code(size: usize) -> String {
    let prompts = vec!["x".repeat(300); size];
    format!(
        "```repl\nr = llm_query_batched({})\nprint(r)\n```",
        serde_json::to_string(&prompts).unwrap()
    )
}

/// The root's feedback after the batch: what the code printed.
fn feedback(model: &ScriptedModel) -> String {
    let calls = model.calls();
    let (_, transcript) = calls.iter().rfind(|(name, _)| name == "root").unwrap();
    transcript.last().unwrap().content.clone()
}

#[tokio::test]
async fn a_batch_spends_within_the_budget_whatever_its_size() {
    let caps = [
        (
            "--max-cost 1",
            Budget {
                max_cost_usd: Some(1.0),
                ..Budget::default()
            },
        ),
        (
            "--max-tokens 1000",
            Budget {
                max_tokens: Some(1_000),
                ..Budget::default()
            },
        ),
    ];
    for (name, cap) in caps {
        for size in [1, 100, 10_000] {
            let code = batch_code(size);
            let model = priced_model(&[&code, "FINAL(done)"]);
            let result = run_with(&model, cap, &[]).await;
            let sub = result.outcome.usage.models["sub"].clone();
            let total = &result.outcome.usage.total;
            eprintln!(
                "batch of {size:>6} under {name}: sub-calls spent ${:.2} / {} tokens, run \
                 ${:.2} / {} tokens ({} sub-calls sent)",
                sub.cost_usd,
                sub.usage.total(),
                total.cost_usd,
                total.usage.total(),
                sub.calls
            );
            // The root's first turn ($0.15, 150 tokens) and the batch fit the cap; the
            // root's last turn is admitted alone while the cap still has room.
            assert!(total.cost_usd <= 1.0 + 0.15 + 1e-9, "{size}: {total:?}");
            assert!(total.usage.total() <= 1_000 + 150, "{size}: {total:?}");
            assert!(
                total.cost_usd - 0.15 <= 1.0 + 1e-9 && total.usage.total() - 150 <= 1_000,
                "everything but the lone last turn fits: {total:?}"
            );
            if size > 5 {
                let seen = feedback(&model);
                let expected = format!("budget exhausted: {} of {size} prompts not sent", size - 5);
                assert!(seen.contains(&expected), "{seen}");
            }
            assert_eq!(result.outcome.status, Status::Answered);
        }
    }
}

#[tokio::test]
async fn code_cannot_pick_a_model_the_user_did_not_allow() {
    let model = priced_model(&[
        "```repl\nr = llm_query(\"hi\", model=\"ollama:x\")\nprint(r)\n```",
        "FINAL(done)",
    ]);
    let result = run_with(&model, Budget::default(), &[]).await;
    let seen = feedback(&model);
    assert!(
        seen.contains("model \"ollama:x\" is not allowed") && seen.contains("--allow-model"),
        "{seen}"
    );
    assert!(model.calls().iter().all(|(name, _)| name != "ollama:x"));
    assert_eq!(result.outcome.status, Status::Answered);

    let model = priced_model(&[
        "```repl\nr = llm_query(\"hi\", model=\"other\")\nprint(r)\n```",
        "FINAL(done)",
    ]);
    run_with(&model, Budget::default(), &["other"]).await;
    assert!(model.calls().iter().any(|(name, _)| name == "other"));
    assert!(!feedback(&model).contains("not allowed"));
}

#[tokio::test]
async fn an_allowed_model_without_a_price_is_refused_under_a_cost_limit() {
    let model = Arc::new(
        ScriptedModel::default()
            .replies(
                "root",
                &[
                    "```repl\nr = llm_query(\"hi\", model=\"unpriced\")\nprint(r)\n```",
                    "FINAL(done)",
                ],
            )
            .responder(|_, _| Some("ok".to_owned())),
    );
    // The scripted client knows one price for every model; this one knows none, so even the
    // root is refused under a cost limit.
    let unpriced = Arc::new(
        ScriptedModel::default()
            .replies("root", &["FINAL(done)"])
            .price(None),
    );
    let result = run_with(
        &unpriced,
        Budget {
            max_cost_usd: Some(1.0),
            ..Budget::default()
        },
        &[],
    )
    .await;
    assert_eq!(result.outcome.status, Status::CostBudget);
    assert!(unpriced.calls().is_empty(), "nothing was sent");
    // Without a cost limit the allowed model answers.
    let result = run_with(&model, Budget::default(), &["unpriced"]).await;
    assert_eq!(result.outcome.status, Status::Answered);
    assert!(model.calls().iter().any(|(name, _)| name == "unpriced"));
}
