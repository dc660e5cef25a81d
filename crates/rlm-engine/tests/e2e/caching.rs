//! Prompt caching across the turns of a run: Anthropic breakpoints read back turn after turn,
//! OpenAI prefixes kept stable, and cache counts per turn in the trajectory and in the totals.

use std::sync::Arc;

use rlm_engine::{ContextPart, Rlm, RunLimits, RunResult, SANDBOX_HELPERS_DOC, SandboxRepl};
use rlm_fake::{FakeReply, FakeServer};
use rlm_llm::{ModelTotals, Usage};
use serde_json::Value;

use super::{answered, sandbox};

const TURNS: usize = 6;

/// Replies for a run of `TURNS` turns: code that prints, then an answer.
fn script(server: &FakeServer) {
    let mut replies: Vec<FakeReply> = (1..TURNS)
        .map(|turn| FakeReply::text(format!("```repl\nprint('step {turn}: ' + 'x' * 300)\n```")))
        .collect();
    replies.push(FakeReply::text("FINAL(done)"));
    server.script("root", replies);
}

async fn run(server: &FakeServer, model: &str, prompt_cache: bool) -> (RunResult, Vec<Usage>) {
    let log = tempfile::tempdir().unwrap();
    let client = rlm_llm::testing::client_builder(server.address())
        .prompt_cache(prompt_cache)
        .build()
        .unwrap();
    let rlm = Rlm::builder()
        .client(Arc::new(client))
        .repl(Arc::new(SandboxRepl::new(sandbox())))
        .helpers_doc(SANDBOX_HELPERS_DOC.to_owned())
        .model(model)
        .subcall_model("sub")
        .limits(RunLimits::default())
        .log_dir(log.path().to_path_buf())
        .build()
        .unwrap();
    let result = rlm
        .completion("What is asked?", vec![ContextPart::new("some context")])
        .await
        .unwrap();
    let path = result.trajectory.clone().expect("a trajectory was written");
    let trajectory = rlm_trace::Trajectory::read(&path).unwrap();
    let per_turn = trajectory
        .iterations()
        .map(|turn| turn.usage.usage)
        .collect();
    (result, per_turn)
}

fn summed(per_turn: &[Usage]) -> Usage {
    let mut total = Usage::default();
    for usage in per_turn {
        total.add(usage);
    }
    total
}

fn root_totals(result: &RunResult, model: &str) -> ModelTotals {
    result.outcome.usage.models[model].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_turns_read_the_conversation_the_turn_before_wrote() {
    let server = FakeServer::start().await.unwrap();
    script(&server);
    let model = "fake-anthropic:root";
    let (result, turns) = run(&server, model, true).await;
    assert_eq!(answered(&result), "done");
    assert_eq!(turns.len(), TURNS);
    // Turn 1 writes the system prompt (the RLM system prompt is past the 1,024-token minimum).
    assert_eq!(turns[0].cache_read_tokens, 0);
    assert!(turns[0].cache_write_tokens >= 1024, "{:?}", turns[0]);
    // Turn 2 reads it; from turn 3 on each turn reads the whole conversation turn N-1 sent,
    // and writes only what was added since.
    assert_eq!(turns[1].cache_read_tokens, turns[0].cache_write_tokens);
    for turn in 2..TURNS {
        let (now, before) = (turns[turn], turns[turn - 1]);
        assert_eq!(
            now.cache_read_tokens,
            before.input_tokens,
            "turn {}",
            turn + 1
        );
        assert_eq!(
            now.cache_write_tokens,
            now.input_tokens - before.input_tokens,
            "turn {}",
            turn + 1
        );
        assert_eq!(now.uncached_input_tokens(), 0, "turn {}", turn + 1);
    }
    // The run's totals are the turns' sums, in the result and per model.
    let totals = root_totals(&result, model);
    assert_eq!(totals.usage, summed(&turns));
    assert_eq!(result.outcome.usage.total.usage, summed(&turns));
    assert!(totals.usage.cache_read_tokens > totals.usage.cache_write_tokens);

    // Every request kept within the API's four breakpoints.
    for seen in server.requests() {
        let breakpoints = seen.body.to_string().matches("\"cache_control\"").count();
        assert!((1..=4).contains(&breakpoints), "{breakpoints}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_caching_off_anthropic_requests_carry_no_breakpoints_and_read_nothing() {
    let server = FakeServer::start().await.unwrap();
    script(&server);
    let model = "fake-anthropic:root";
    let (result, turns) = run(&server, model, false).await;
    assert_eq!(answered(&result), "done");
    assert!(
        turns
            .iter()
            .all(|usage| usage.cache_read_tokens == 0 && usage.cache_write_tokens == 0),
        "{turns:?}"
    );
    for seen in server.requests() {
        assert!(!seen.body.to_string().contains("cache_control"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_requests_extend_the_previous_turn_so_prefix_caching_applies() {
    let server = FakeServer::start().await.unwrap();
    script(&server);
    let (result, turns) = run(&server, "root", true).await;
    assert_eq!(answered(&result), "done");
    let bodies: Vec<Vec<Value>> = server
        .requests_for("root")
        .iter()
        .map(|seen| seen.body["messages"].as_array().unwrap().clone())
        .collect();
    assert_eq!(bodies.len(), TURNS);
    for pair in bodies.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        assert!(after.len() > before.len());
        assert_eq!(
            &after[..before.len()],
            before.as_slice(),
            "a turn changed what the turn before sent"
        );
    }
    // The provider's automatic caching then reads the earlier turns (from 1,024 tokens on,
    // in 128-token steps), and the totals count it.
    assert_eq!(turns[0].cache_read_tokens, 0);
    for (turn, usage) in turns.iter().enumerate().skip(1) {
        assert!(
            usage.cache_read_tokens >= 1024,
            "turn {}: {usage:?}",
            turn + 1
        );
        assert_eq!(usage.cache_read_tokens % 128, 0);
        assert!(usage.cache_read_tokens <= turns[turn - 1].input_tokens);
        assert_eq!(usage.cache_write_tokens, 0);
    }
    assert_eq!(root_totals(&result, "root").usage, summed(&turns));
}
