//! Answers that rest on nothing: given before any code ran over data larger than the prompt
//! showed, or copied from the question or our instructions.

use std::fmt::Write as _;

use rlm_engine::{RunLimits, Status};

use super::{Harness, answered, status_line};

/// ~48 KB of log lines with the needle in the middle: far more than the first message shows.
fn log_with_needle() -> String {
    let mut text = String::new();
    for line in 0..1_000 {
        if line == 500 {
            text.push_str("2024-03-09T11:11:00Z WARN deploy code ORCHID-7291\n");
        }
        let _ = writeln!(
            text,
            "2024-03-09T10:{:02}:00Z INFO routine check {line} passed",
            line % 60
        );
    }
    text
}

/// The model answers on turn 1 with nothing looked at: sent back with the reason, it looks,
/// and its answer after code is the run's answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_before_any_code_is_sent_back_once() {
    let harness = Harness::start().await;
    harness.root(&[
        "FINAL(ORCHID-1234)",
        "```repl\nprint([l for l in context.splitlines() if 'deploy' in l])\n```",
        "FINAL(ORCHID-7291)",
    ]);
    let result = harness
        .run(RunLimits::default(), 1, &log_with_needle())
        .await;
    assert_eq!(answered(&result), "ORCHID-7291");
    assert_eq!(result.outcome.iterations, 3);
    let sent_back = harness.user_message("root", 1);
    assert!(sent_back.contains("no code has run yet"), "{sent_back}");
}

/// Given again without code, the answer ends the run, as `no_evidence`, not `answered`; so
/// does one given to the last request of a run whose code never ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_given_again_without_code_ends_the_run_without_evidence() {
    let harness = Harness::start().await;
    harness.root(&["FINAL(ORCHID-1234)", "I am sure.\nFINAL(ORCHID-1234)"]);
    let result = harness
        .run(RunLimits::default(), 1, &log_with_needle())
        .await;
    assert_eq!(
        result.outcome.status,
        Status::NoEvidence,
        "{}",
        status_line(&result)
    );
    assert_eq!(result.outcome.answer.as_deref(), Some("ORCHID-1234"));
    assert_eq!(result.outcome.iterations, 2);
    let log = std::fs::read_to_string(result.trajectory.as_ref().unwrap()).unwrap();
    assert!(log.contains("\"status\":\"no_evidence\""), "{log}");

    let harness = Harness::start().await;
    harness.root(&["FINAL(ORCHID-1234)", "FINAL(ORCHID-1234)"]);
    let limits = RunLimits {
        max_iterations: 1,
        ..RunLimits::default()
    };
    let result = harness.run(limits, 1, &log_with_needle()).await;
    assert_eq!(
        result.outcome.status,
        Status::NoEvidence,
        "{}",
        status_line(&result)
    );
}

/// Copying the question or a line of our instructions is not an answer: the run goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_repeating_the_question_or_the_instructions_is_no_answer() {
    let harness = Harness::start().await;
    harness.root(&[
        "```repl\nprint(len(context))\n```",
        "FINAL(What is asked?)",
        "FINAL(the word FINAL, then the answer you found in parentheses)",
        "FINAL(ORCHID-7291)",
    ]);
    let result = harness
        .run(RunLimits::default(), 1, &log_with_needle())
        .await;
    assert_eq!(answered(&result), "ORCHID-7291");
    assert_eq!(result.outcome.iterations, 4);
    let question = harness.user_message("root", 2);
    assert!(question.contains("repeats the question"), "{question}");
    let instructions = harness.user_message("root", 3);
    assert!(
        instructions.contains("repeats a piece of the instructions"),
        "{instructions}"
    );
}

/// Small models write ```python by habit: those blocks run as ```repl ones do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_blocks_run_like_repl_blocks() {
    let harness = Harness::start().await;
    harness.root(&[
        "```python\nprint(len(context.splitlines()))\n```",
        "FINAL(1001 lines)",
    ]);
    let result = harness
        .run(RunLimits::default(), 1, &log_with_needle())
        .await;
    assert_eq!(answered(&result), "1001 lines");
    let output = harness.user_message("root", 1);
    assert!(
        output.contains("Output of block 1:\n```\n1001\n```"),
        "{output}"
    );
}
