//! Every way a run can end with an answer (docs/answers.md), through the real binary and
//! sandbox, and the loop on models that refuse stop sequences.

use std::path::Path;

use rlm_fake::{FakeReply, FakeServer};

use crate::support::{KEY, output as run, rlm_with_fake, text};

/// Runs `rlm run` against `server` with root model `model`; returns (exit code, stdout, stderr).
async fn rlm_run(
    dir: &Path,
    server: &FakeServer,
    model: &str,
    extra: &[&str],
) -> (i32, String, String) {
    let mut command = rlm_with_fake(dir, server);
    command.args([
        "run",
        "--no-log",
        "--model",
        &format!("openai:{model}"),
        "--context",
        "abc",
    ]);
    command.args(extra);
    command.arg("What is it?");
    let output = run(command).await;
    (
        output.status.code().unwrap_or(-1),
        text(&output.stdout),
        text(&output.stderr),
    )
}

/// The reply of each form, and the answer it must give.
const FORMS: [(&str, &str); 8] = [
    // The reference RLM's form: `answer` is bound before the first turn and filled in place;
    // any str()-able content is the answer text.
    (
        "```repl\nanswer[\"content\"] = [6, 7]\nanswer[\"ready\"] = True\n```",
        "[6, 7]",
    ),
    (
        "```repl\nanswer[\"content\"] = 6 * 7\nanswer[\"ready\"] = True\n```",
        "42",
    ),
    (
        "```repl\nanswer = {\"content\": \"whole dict\", \"ready\": True}\n```",
        "whole dict",
    ),
    ("FINAL(said in prose)", "said in prose"),
    (
        // A tag after the code block would be cut by the stop sequence; in code it is a call.
        "```repl\nfound = 'from a variable'\nFINAL_VAR('found')\n```",
        "from a variable",
    ),
    ("```repl\nFINAL('called in code')\n```", "called in code"),
    // The tag written on the fence's first line (Qwen2.5-Coder-1.5B), and next() over a
    // generator expression, which Monty builds as a list.
    (
        "```\nrepl\nFINAL(next((w for w in ['a', 'b'] if w > 'a'), None))\n```",
        "b",
    ),
    // An answer tag alone in an untagged fence.
    ("```\nFINAL(fenced alone)\n```", "fenced alone"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_form_ends_the_run_with_its_text() {
    for (reply, expected) in FORMS {
        let dir = tempfile::tempdir().unwrap();
        let server = FakeServer::start().await.unwrap();
        server.script("root", [FakeReply::text(reply)]);
        let (code, stdout, stderr) = rlm_run(dir.path(), &server, "root", &[]).await;
        assert_eq!(code, 0, "{reply}: {stderr}");
        assert_eq!(stdout, format!("{expected}\n"), "{reply}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_not_marked_ready_is_only_a_partial_answer() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    server.script(
        "root",
        [
            FakeReply::text("```repl\nanswer[\"content\"] = 'a draft'\n```"),
            FakeReply::text(""),
        ],
    );
    let (code, stdout, stderr) = rlm_run(
        dir.path(),
        &server,
        "root",
        &["--max-iterations", "1", "--json"],
    )
    .await;
    assert_eq!(code, 1, "{stderr}");
    let result: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(result["answer"], serde_json::Value::Null);
    assert_eq!(result["partial_answer"], "a draft");
}

/// An answer given before any code looked at data larger than the prompt showed, and again
/// when sent back, is printed but unchecked: exit 1, status `no_evidence`, never `answered`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_without_code_over_unseen_data_exits_1_as_unchecked() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("big.log");
    let lines: String = (0..2_000)
        .map(|n| format!("2024-03-09 INFO routine check {n} passed\n"))
        .collect();
    std::fs::write(&log, lines).unwrap();
    let server = FakeServer::start().await.unwrap();
    server.script(
        "root",
        [
            FakeReply::text("FINAL(Paris, since 2019)"),
            FakeReply::text("FINAL(Paris, since 2019)"),
        ],
    );
    let mut command = rlm_with_fake(dir.path(), &server);
    command.args([
        "run",
        "--no-log",
        "--model",
        "openai:root",
        "--context-file",
    ]);
    command.arg(&log);
    command.arg("What is the deploy code?");
    let output = run(command).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(text(&output.stdout), "Paris, since 2019\n");
    assert!(stderr.contains("the answer above is unchecked"), "{stderr}");
    assert!(stderr.contains("answered without evidence"), "{stderr}");
    let seen = server.requests_for("root");
    assert!(
        seen[1].last_user_message().contains("no code has run yet"),
        "{}",
        seen[1].last_user_message()
    );
}

/// A model that refuses `stop` (as OpenAI's reasoning models do), not in the built-in table:
/// the first request is refused, the loop goes on without server-side stop sequences, the
/// client cuts each reply after its code block, and the run answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_loop_answers_on_a_model_that_refuses_stop_sequences() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    server.reasoning_model("house-reasoner");
    server.script(
        "house-reasoner",
        [
            // Without the stop applied, the invented output and the FINAL after the block
            // would end the run with a wrong answer.
            FakeReply::text("```repl\nx = 6 * 7\nprint(x)\n```\nOutput: 41\nFINAL(41)"),
            FakeReply::text("FINAL_VAR(x)"),
        ],
    );
    let (code, stdout, stderr) = rlm_run(dir.path(), &server, "house-reasoner", &["-v"]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "42\n");
    let seen = server.requests_for("house-reasoner");
    assert!(seen[0].body.get("stop").is_some(), "{}", seen[0].body);
    assert!(seen.iter().skip(1).all(|r| r.body.get("stop").is_none()));
    assert!(!stderr.contains(KEY));
}

/// `o3-pro` is served only by OpenAI's Responses API: every turn of the loop goes to
/// `/v1/responses` (which knows no `stop`), the client cuts each reply after its code block,
/// and the run answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_loop_answers_on_a_responses_only_model() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    server.script(
        "o3-pro",
        [
            FakeReply::text("```repl\nx = 6 * 7\nprint(x)\n```\nOutput: 41\nFINAL(41)"),
            FakeReply::text("FINAL_VAR(x)"),
        ],
    );
    let (code, stdout, stderr) = rlm_run(dir.path(), &server, "o3-pro", &[]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "42\n");
    let seen = server.requests_for("o3-pro");
    assert_eq!(seen.len(), 2);
    for request in &seen {
        assert_eq!(request.endpoint, "/v1/responses");
        assert!(request.body.get("stop").is_none());
        assert!(
            request.body["instructions"].is_string(),
            "the system prompt"
        );
    }
    assert!(!stderr.contains(KEY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_answer_is_printed_but_exits_1_as_partial() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    server.script(
        "root",
        [
            FakeReply::text("```repl\nprint(len(context))\n```"),
            FakeReply::text("FINAL(a late guess)"),
            FakeReply::text("```repl\nprint(len(context))\n```"),
            FakeReply::text("FINAL(a late guess)"),
        ],
    );
    let (code, stdout, stderr) =
        rlm_run(dir.path(), &server, "root", &["--max-iterations", "1"]).await;
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(stdout, "a late guess\n");
    assert!(stderr.contains("partial"), "{stderr}");
    let (code, stdout, _) = rlm_run(
        dir.path(),
        &server,
        "root",
        &["--max-iterations", "1", "--json"],
    )
    .await;
    assert_eq!(code, 1);
    let result: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(result["status"], "forced_answer");
    assert_eq!(result["answer"], "a late guess");
}

/// Asked for its final answer, a small model writes more code: that code is not printed as
/// the answer (it used to be, with exit 0).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_at_the_iteration_limit_is_not_an_answer() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    server.script(
        "root",
        [
            FakeReply::text("```repl\nprint(len(context))\n```"),
            FakeReply::text("```repl\nprint(context[:10])\n```"),
        ],
    );
    let (code, stdout, stderr) =
        rlm_run(dir.path(), &server, "root", &["--max-iterations", "1"]).await;
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(stdout, "");
    assert!(stderr.contains("iteration limit"), "{stderr}");

    // Only an answer call, written as code: run for its answer, in the real sandbox.
    server.script(
        "root",
        [
            FakeReply::text("```repl\ncount = len(context)\n```"),
            FakeReply::text("```repl\nFinal(count * 2)\n```"),
        ],
    );
    let (code, stdout, stderr) =
        rlm_run(dir.path(), &server, "root", &["--max-iterations", "1"]).await;
    assert_eq!(code, 1, "a forced answer: {stderr}");
    assert_eq!(stdout, "6\n", "{stderr}");
}

/// Every root turn and sub-call carries an output cap by default, so a model that never stops
/// ends at the cap instead of at the request timeout; `--max-output-tokens` sets it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn root_turns_and_subcalls_carry_an_output_cap() {
    for (extra, expected) in [(&[][..], 8192), (&["--max-output-tokens", "300"][..], 300)] {
        let dir = tempfile::tempdir().unwrap();
        let server = FakeServer::start().await.unwrap();
        server.script(
            "root",
            [
                FakeReply::text("```repl\nx = llm_query('hi')\n```"),
                FakeReply::text("FINAL_VAR(x)"),
            ],
        );
        server.script("sub", [FakeReply::text("hello")]);
        let mut args = vec!["--subcall-model", "openai:sub"];
        args.extend_from_slice(extra);
        let (code, stdout, stderr) = rlm_run(dir.path(), &server, "root", &args).await;
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(stdout, "hello\n");
        for seen in server.requests() {
            assert_eq!(seen.body["max_tokens"], expected, "{}", seen.body);
        }
    }
}

/// A local server that reports a 4k window (llama.cpp `/props`) gets a quarter of it as the
/// default cap: one long first answer does not fill the window the next turns need. A cap
/// that is set holds whatever the window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reported_small_window_lowers_the_default_output_cap() {
    for (extra, expected) in [
        (&[][..], 1024),
        (&["--max-output-tokens", "3000"][..], 3000),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let server = FakeServer::start().await.unwrap();
        server.set_props(serde_json::json!({"default_generation_settings": {"n_ctx": 4096}}));
        server.script("root", [FakeReply::text("FINAL(done)")]);
        let (code, stdout, stderr) = rlm_run(dir.path(), &server, "root", extra).await;
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(stdout, "done\n");
        let seen = server.requests_for("root");
        assert_eq!(seen[0].body["max_tokens"], expected, "{}", seen[0].body);
    }
}

/// A server that refuses a request over its window (llama.cpp's words) gets a hint that names
/// what fixes it, not only the server's message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_overflow_refusal_says_what_to_change() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    server.script(
        "root",
        [FakeReply::status(
            400,
            "request (4193 tokens) exceeds the available context size (4096 tokens), try increasing it",
        )],
    );
    let (code, stdout, stderr) = rlm_run(dir.path(), &server, "root", &[]).await;
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(stdout, "");
    assert!(
        stderr.contains("exceeds the available context size"),
        "{stderr}"
    );
    assert!(stderr.contains("hint:"), "{stderr}");
    for flag in ["--max-output-tokens", "--ctx-size", "[run.context_windows]"] {
        assert!(stderr.contains(flag), "{flag}: {stderr}");
    }
}
