//! Size caps on what crosses from model code, context windows, and large values in the log.

use std::sync::Arc;

use rlm_llm::ContextWindows;
use rlm_trace::{LargeValue, Status, Trajectory};

use crate::testing::{FakeRepl, ScriptedModel};
use crate::{ContextPart, Rlm, RunLimits};

fn model(root_replies: &[&str]) -> Arc<ScriptedModel> {
    Arc::new(
        ScriptedModel::default()
            .replies("root", root_replies)
            .responder(|model, _| (model == "sub").then(|| "ok".to_owned())),
    )
}

fn rlm(model: &Arc<ScriptedModel>, limits: RunLimits, windows: ContextWindows) -> Rlm {
    Rlm::builder()
        .client(Arc::clone(model) as _)
        .repl(Arc::new(FakeRepl))
        .model("root")
        .subcall_model("sub")
        .limits(limits)
        .context_windows(windows)
        .build()
        .unwrap()
}

/// The user message the root model got on its `turn`-th call (0-based).
fn feedback(model: &ScriptedModel, turn: usize) -> String {
    let roots: Vec<_> = model
        .calls()
        .into_iter()
        .filter(|(name, _)| name == "root")
        .collect();
    roots[turn].1.last().unwrap().content.clone()
}

fn sub_calls(model: &ScriptedModel) -> usize {
    model
        .calls()
        .iter()
        .filter(|(name, _)| name == "sub")
        .count()
}

#[tokio::test]
async fn a_prompt_over_the_cap_is_refused_before_anything_is_spent() {
    let big = "a".repeat(2_500);
    let code = format!("```repl\nx = llm_query(\"{big}\")\nprint(x)\n```");
    let model = model(&[&code, "FINAL(done)"]);
    let limits = RunLimits {
        max_prompt_bytes: 1_000,
        ..RunLimits::default()
    };
    let result = rlm(&model, limits, ContextWindows::empty())
        .completion("q", vec![ContextPart::new("data")])
        .await
        .unwrap();
    assert_eq!(result.outcome.answer.as_deref(), Some("done"));
    assert_eq!(sub_calls(&model), 0);
    assert_eq!(
        result.outcome.subcalls, 0,
        "a refused prompt is not a sub-call"
    );
    let seen = feedback(&model, 1);
    assert!(
        seen.contains(
            "llm_query prompt is 2.5 KB; the limit is 1.0 KB — pass a slice or summarize first"
        ),
        "{seen}"
    );
}

#[tokio::test]
async fn a_prompt_over_the_model_window_is_refused_and_unknown_windows_are_not_checked() {
    let prompt = "b".repeat(400);
    let code = format!("```repl\nx = llm_query(\"{prompt}\")\nprint(x)\n```");
    let mut windows = ContextWindows::empty();
    windows.insert("sub", 50);
    let small = model(&[&code, "FINAL(done)"]);
    rlm(&small, RunLimits::default(), windows)
        .completion("q", vec![ContextPart::new("data")])
        .await
        .unwrap();
    assert_eq!(sub_calls(&small), 0);
    let seen = feedback(&small, 1);
    assert!(
        seen.contains("the prompt is about 100 tokens; sub reads at most 50"),
        "{seen}"
    );

    let unknown = model(&[&code, "FINAL(done)"]);
    rlm(&unknown, RunLimits::default(), ContextWindows::empty())
        .completion("q", vec![ContextPart::new("data")])
        .await
        .unwrap();
    assert_eq!(sub_calls(&unknown), 1);
}

#[tokio::test]
async fn a_root_conversation_over_the_window_is_not_sent() {
    let mut windows = ContextWindows::empty();
    windows.insert("root", 10);
    let model = model(&["FINAL(done)"]);
    let result = rlm(&model, RunLimits::default(), windows)
        .completion("q", vec![ContextPart::new("data")])
        .await
        .unwrap();
    assert_eq!(result.outcome.status, Status::ModelError);
    assert!(model.calls().is_empty());
    let error = result.outcome.error.clone().unwrap();
    assert!(error.contains("context window of 10"), "{error}");
}

#[tokio::test]
async fn an_answer_over_the_cap_is_refused_and_the_model_answers_again() {
    let long = "c".repeat(300);
    let tag = format!("FINAL({long})");
    let code = format!("```repl\nbig = \"{long}\"\nFINAL_VAR(big)\n```");
    let model = model(&[&code, &tag, "FINAL_VAR(big)", "FINAL(short)"]);
    let limits = RunLimits {
        max_answer_bytes: 100,
        ..RunLimits::default()
    };
    let result = rlm(&model, limits, ContextWindows::empty())
        .completion("q", vec![ContextPart::new("data")])
        .await
        .unwrap();
    assert_eq!(result.outcome.answer.as_deref(), Some("short"));
    assert_eq!(result.outcome.iterations, 4);
    for turn in 1..=3 {
        let seen = feedback(&model, turn);
        assert!(
            seen.contains("it is 300 bytes; the limit is 100 bytes"),
            "turn {turn}: {seen}"
        );
    }
}

/// A 1 MB answer, given in the reply, by the code and in the result, is in the log once as a
/// preview; every other mention is its size and hash.
#[tokio::test]
async fn a_large_answer_is_logged_once_as_a_preview_with_size_and_hash() {
    let answer = "d".repeat(1_000_000);
    let code = format!("```repl\nbig = \"{answer}\"\nFINAL_VAR(big)\n```");
    let model = model(&[&code]);
    let dir = tempfile::tempdir().unwrap();
    let result = Rlm::builder()
        .client(Arc::clone(&model) as _)
        .repl(Arc::new(FakeRepl))
        .model("root")
        .log_dir(dir.path().to_path_buf())
        .build()
        .unwrap()
        .completion("q", vec![ContextPart::new("data")])
        .await
        .unwrap();
    assert_eq!(result.outcome.answer.as_deref(), Some(answer.as_str()));
    let path = result.trajectory.unwrap();
    let size = std::fs::metadata(&path).unwrap().len();
    // The reply, its code block and the answer are three different large values: three
    // previews; the answer's second and third mentions add only their markers.
    assert!(
        size < 4 * rlm_trace::LARGE_VALUE_BYTES as u64,
        "log is {size} bytes"
    );
    let log = Trajectory::read(&path).unwrap();
    let outcome = LargeValue::parse(log.outcome().unwrap().answer.as_deref().unwrap()).unwrap();
    assert!(outcome.repeat, "the result only refers to the answer");
    assert_eq!(outcome.bytes, 1_000_000);
    let turn = log.iterations().next().unwrap();
    let logged = LargeValue::parse(turn.final_answer.as_deref().unwrap()).unwrap();
    let in_block = turn.code_blocks[0].result.final_answer.as_deref().unwrap();
    let in_block = LargeValue::parse(in_block).unwrap();
    // The first mention has the preview; the other is a reference to it.
    assert_ne!(logged.repeat, in_block.repeat);
    assert_eq!(logged.sha256, outcome.sha256);
    assert_eq!(in_block.sha256, outcome.sha256);
}
