//! The scenarios.

use std::fmt::Write as _;

use rlm_engine::{RunLimits, Status};

use super::{Harness, answered, status_line};

/// ~50 MB of log lines with one needle line somewhere after the middle.
fn haystack(needle: &str) -> String {
    let mut text = String::with_capacity(52 << 20);
    let mut line = 0u64;
    while text.len() < 50 << 20 {
        line += 1;
        if line == 431_337 {
            text.push_str(needle);
            text.push('\n');
        }
        let _ = writeln!(
            text,
            "2024-03-{:02}T{:02}:{:02}:00Z INFO user=u{} msg=\"routine check {} passed\"",
            line % 28 + 1,
            line % 24,
            line % 60,
            line % 997,
            line
        );
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn needle_in_a_50_mb_haystack_is_found_with_code_and_llm_query() {
    let needle = "2024-03-09T11:11:00Z WARN user=u42 msg=\"the secret code is QX-4471\"";
    let context = haystack(needle);
    assert!(context.len() >= 50 << 20);
    let harness = Harness::start().await;
    harness.root(&[
        "Let me look at the data first.\n```repl\nprint(len(context))\nprint(context[:300])\n```",
        "```repl\nlines = context.splitlines()\nhits = [l for l in lines if 'secret' in l]\nprint(len(hits))\n\
         code = llm_query('Extract the secret code from this log line, reply with the code only:\\n' + hits[0])\n\
         print(code)\n```",
        "The sub-model read the line.\nFINAL_VAR(code)",
    ]);
    harness.sub(|seen| {
        // Answer only from what the code sent: the code must have found the needle line.
        let prompt = seen.last_user_message();
        match prompt.split("the secret code is ").nth(1) {
            Some(rest) => rest.trim_end_matches(['"', '\n']).to_owned(),
            None => "NO CODE IN PROMPT".to_owned(),
        }
    });
    let result = harness.run(RunLimits::default(), 1, &context).await;
    assert_eq!(answered(&result), "QX-4471");
    assert_eq!(result.outcome.iterations, 3);
    let sub = harness.server.requests_for("sub");
    assert_eq!(sub.len(), 1);
    assert!(sub[0].last_user_message().contains(needle));
    // The first turn's output reached the model: the exact size of the context.
    let second = harness.user_message("root", 1);
    assert!(
        second.contains(&context.chars().count().to_string()),
        "{second}"
    );
    assert!(second.contains("Turn 2/30"));
    assert_eq!(result.outcome.usage.models["sub"].calls, 1);
    assert_eq!(result.outcome.usage.models["root"].calls, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batched_fan_out_runs_concurrently_and_sums_in_code() {
    let mut context = String::new();
    let mut errors = 0;
    for i in 0..400 {
        let level = if i % 7 == 0 { "ERROR" } else { "INFO" };
        errors += usize::from(level == "ERROR");
        let _ = writeln!(context, "{level} event {i}");
    }
    let harness = Harness::start().await;
    harness
        .server
        .set_latency(std::time::Duration::from_millis(200));
    harness.root(&[
        "```repl\nlines = context.splitlines()\nchunks = ['\\n'.join(lines[i:i + 20]) for i in range(0, len(lines), 20)]\n\
         replies = llm_query_batched(['Count ERROR lines:\\n' + c for c in chunks])\n\
         total = sum(int(r) for r in replies)\nprint(len(chunks), total)\n```",
        "FINAL_VAR(total)",
    ]);
    harness.sub(|seen| {
        seen.last_user_message()
            .matches("ERROR event")
            .count()
            .to_string()
    });
    let started = std::time::Instant::now();
    let result = harness.run(RunLimits::default(), 1, &context).await;
    assert_eq!(answered(&result), errors.to_string());
    assert_eq!(harness.server.requests_for("sub").len(), 20);
    assert!(
        harness.server.peak_in_flight() > 1,
        "sub-calls ran one at a time"
    );
    // 20 calls at 200 ms each would take 4 s one by one.
    assert!(started.elapsed() < std::time::Duration::from_secs(3));
    assert_eq!(result.outcome.subcalls, 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn depth_two_recursion_runs_a_child_rlm() {
    let harness = Harness::start().await;
    harness.root(&[
        "```repl\nresult = rlm_query('How many lines does this text have?\\nalpha\\nbeta\\ngamma')\nprint(result)\n```",
        "FINAL_VAR(result)",
    ]);
    // The child runs on the sub model: it sees the system prompt and answers with code; its own
    // sub-calls would be plain (depth limit), but it needs none.
    harness.sub(|seen| {
        if seen.system.is_none() {
            return "unexpected plain call".to_owned();
        }
        if seen.messages.len() == 1 {
            "```repl\nn = len(context.splitlines()) - 1\nprint(n)\n```".to_owned()
        } else {
            "FINAL(3 lines)".to_owned()
        }
    });
    let result = harness.run(RunLimits::default(), 2, "unused").await;
    assert_eq!(answered(&result), "3 lines");
    let child_first = harness.user_message("sub", 1);
    assert!(child_first.contains("\n3\n"), "{child_first}");
    assert_eq!(result.outcome.usage.models["sub"].calls, 2);
    assert_eq!(result.outcome.subcalls, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_iterations_falls_back_to_one_final_request() {
    let harness = Harness::start().await;
    harness.root(&[
        "```repl\nx = context.count('a')\nprint(x)\n```",
        "```repl\nprint(x * 2)\n```",
        "I ran out of turns; from the counts:\nFINAL(there are 4 a's)",
    ]);
    let limits = RunLimits {
        max_iterations: 2,
        ..RunLimits::default()
    };
    let result = harness.run(limits, 1, "banana a").await;
    assert_eq!(
        result.outcome.status,
        Status::ForcedAnswer,
        "{}",
        status_line(&result)
    );
    assert_eq!(result.outcome.answer.as_deref(), Some("there are 4 a's"));
    let last = harness.user_message("root", 2);
    assert!(last.contains("You have used all 2 turns"), "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_budget_stops_the_run_with_a_status() {
    let harness = Harness::start().await;
    harness.root(&[
        "```repl\nanswer = {'content': 'partial: 2 lines', 'ready': False}\nprint('x')\n```",
        "```repl\nprint('never')\n```",
    ]);
    let limits = RunLimits {
        spend: rlm_llm::Budget {
            max_tokens: Some(50),
            ..rlm_llm::Budget::default()
        },
        ..RunLimits::default()
    };
    let result = harness.run(limits, 1, "a\nb\n").await;
    assert_eq!(
        result.outcome.status,
        Status::TokenBudget,
        "{}",
        status_line(&result)
    );
    assert_eq!(result.outcome.answer, None);
    assert_eq!(
        result.outcome.partial_answer.as_deref(),
        Some("partial: 2 lines")
    );
    assert_eq!(harness.server.requests_for("root").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_errors_are_fed_back_to_the_model() {
    let harness = Harness::start().await;
    harness.root(&[
        "```repl\nratio = 1 / 0\n```",
        // The code-block stop sequence ends a reply at its closing fence, so the answer
        // comes in the next turn.
        "```repl\nratio = 1 / 2\n```\nFINAL_VAR(ratio)",
        "FINAL_VAR(ratio)",
    ]);
    let result = harness.run(RunLimits::default(), 1, "x").await;
    assert_eq!(answered(&result), "0.5");
    let feedback = harness.user_message("root", 1);
    assert!(feedback.contains("ZeroDivisionError"), "{feedback}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn final_var_of_a_missing_variable_is_reported_back() {
    let harness = Harness::start().await;
    harness.root(&[
        "I know it already.\nFINAL_VAR(summary)",
        "```repl\nsummary = 'two words'\n```\nFINAL_VAR(summary)",
        "FINAL_VAR(summary)",
    ]);
    let result = harness.run(RunLimits::default(), 1, "x").await;
    assert_eq!(answered(&result), "two words");
    let feedback = harness.user_message("root", 1);
    assert!(
        feedback.contains("no variable named `summary`"),
        "{feedback}"
    );
}
