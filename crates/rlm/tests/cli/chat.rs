//! `rlm chat` against the fake provider, through the real binary.

use std::time::Duration;

use rlm_fake::{FakeReply, FakeServer};

use crate::support::{
    KEY, interrupt, output, rlm_with_fake, scripted, spawn_with_fake, text, wait_until,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_streams_the_answer_and_reports_usage_on_stderr() {
    let (dir, server) = scripted("gpt-4o-mini", [FakeReply::text("Paris is the capital.")]).await;
    let mut command = rlm_with_fake(dir.path(), &server);
    command.args([
        "-vv",
        "chat",
        "Capital of France?",
        "--model",
        "openai:gpt-4o-mini",
        "--system",
        "Be terse.",
    ]);
    let out = output(command).await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(text(&out.stdout), "Paris is the capital.\n");
    assert!(stderr.contains("openai:gpt-4o-mini"), "{stderr}");
    assert!(stderr.contains("tokens"), "{stderr}");
    assert!(!stderr.contains(KEY), "the key leaked into the log");
    let seen = &server.requests()[0];
    assert!(seen.stream, "rlm chat should stream");
    assert_eq!(seen.system.as_deref(), Some("Be terse."));
    assert_eq!(
        seen.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_json_prints_answer_and_usage_and_records_then_replays() {
    let (dir, server) = scripted("gpt-4o", [FakeReply::text("{\"answer\": 4}")]).await;
    let recording = dir.path().join("chat.jsonl");

    let mut command = rlm_with_fake(dir.path(), &server);
    command
        .env("RLM_MODEL", "openai:gpt-4o")
        .args(["--json", "chat", "2+2", "--json-mode", "--record"])
        .arg(&recording);
    let out = output(command).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(line["type"], "answer");
    assert_eq!(line["text"], "{\"answer\": 4}");
    assert_eq!(line["model"], "openai:gpt-4o");
    assert!(line["usage"]["output_tokens"].as_u64().unwrap() > 0);
    assert!(
        line["cost_usd"].as_f64().unwrap() > 0.0,
        "gpt-4o has a built-in price"
    );
    assert_eq!(
        server.requests()[0].body["response_format"]["type"],
        "json_object"
    );
    assert!(!std::fs::read_to_string(&recording).unwrap().contains(KEY));

    // Replay: no key, and the server must not be asked again.
    let mut command = rlm_with_fake(dir.path(), &server);
    command
        .env_remove("OPENAI_API_KEY")
        .env("RLM_MODEL", "openai:gpt-4o")
        .args(["--json", "chat", "2+2", "--json-mode", "--replay"])
        .arg(&recording);
    let out = output(command).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(line["text"], "{\"answer\": 4}");
    assert_eq!(line["replayed"], true);
    assert_eq!(server.request_count(), 1);

    // A different prompt is a miss: input error with a hint.
    let mut command = rlm_with_fake(dir.path(), &server);
    command
        .env("RLM_MODEL", "openai:gpt-4o")
        .args(["chat", "3+3", "--replay"])
        .arg(&recording);
    let out = output(command).await;
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("no recorded response"), "{stderr}");
    assert!(stderr.contains("hint:"), "{stderr}");
}

/// `rlm --json chat` shows the answer whole but streams it from the provider, so a server that
/// stops sending mid-answer is given up on after `--idle-timeout`, not the request timeout (an
/// hour here), and not asked again; `RLM_STREAM=0` asks for a whole body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_json_streams_so_a_stall_ends_on_the_idle_timeout() {
    let (dir, server) = scripted(
        "gpt-4o",
        [FakeReply::stall("It began"), FakeReply::text("again")],
    )
    .await;
    let mut command = rlm_with_fake(dir.path(), &server);
    command
        .args(["--json", "chat", "hi", "--model", "openai:gpt-4o"])
        .args(["--request-timeout", "3600", "--idle-timeout", "0.5"])
        .timeout(Duration::from_secs(60));
    let out = output(command).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("stalled"), "{stderr}");
    assert_eq!(server.request_count(), 1, "a stall was retried");
    assert!(server.requests()[0].stream);

    let mut command = rlm_with_fake(dir.path(), &server);
    command
        .env("RLM_STREAM", "0")
        .args(["--json", "chat", "hi", "--model", "openai:gpt-4o"]);
    let out = output(command).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(line["text"], "again");
    assert!(!server.requests()[1].stream);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_errors_name_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();

    let mut command = rlm_with_fake(dir.path(), &server);
    command
        .env_remove("OPENAI_API_KEY")
        .args(["chat", "hi", "--model", "openai:gpt-4o"]);
    let out = output(command).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("OPENAI_API_KEY"),
        "{}",
        text(&out.stderr)
    );

    let mut command = rlm_with_fake(dir.path(), &server);
    command.args(["chat", "hi"]);
    let out = output(command).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--model"),
        "{}",
        text(&out.stderr)
    );

    server.script("gpt-4o", std::iter::repeat_n(FakeReply::server_error(), 3));
    let mut command = rlm_with_fake(dir.path(), &server);
    command.args([
        "chat",
        "hi",
        "--model",
        "openai:gpt-4o",
        "--max-retries",
        "1",
    ]);
    let out = output(command).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("HTTP 500"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(server.request_count(), 2);

    let mut command = rlm_with_fake(dir.path(), &server);
    command.args([
        "chat",
        "hi",
        "--model",
        "openai:gpt-4o",
        "--record",
        "a",
        "--replay",
        "b",
    ]);
    assert_eq!(output(command).await.status.code(), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_the_call_and_exits_130() {
    let (dir, server) = scripted("gpt-4o", [FakeReply::hang()]).await;
    let child = spawn_with_fake(
        dir.path(),
        &server,
        &["chat", "hi", "--model", "openai:gpt-4o"],
    );
    let limit = Duration::from_secs(20);
    wait_until(limit, "the request never arrived", || {
        server.in_flight() != 0
    })
    .await;
    assert_eq!(interrupt(child).await, Some(130));
    // The connection was closed, so the server is no longer answering it.
    let limit = Duration::from_secs(5);
    wait_until(limit, "request still open", || server.in_flight() == 0).await;
}

/// `rlm chat` caps the answer by default (a model that never stops ends there instead of at
/// the request timeout); `--max-output-tokens`, its variable and `--max-tokens` set the cap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_caps_the_answer_length_by_default() {
    // (flags, an environment variable, the max_tokens the provider must see)
    type Case<'a> = (&'a [&'a str], Option<(&'a str, &'a str)>, u64);
    let cases: [Case; 4] = [
        (&[], None, 8192),
        (&["--max-output-tokens", "64"], None, 64),
        (&[], Some(("RLM_MAX_OUTPUT_TOKENS", "32")), 32),
        (
            &["--max-output-tokens", "64", "--max-tokens", "16"],
            None,
            16,
        ),
    ];
    for (flags, variable, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let server = FakeServer::start().await.unwrap();
        server.script("m", [FakeReply::text("ok")]);
        let mut command = rlm_with_fake(dir.path(), &server);
        command
            .args(["--json", "chat", "hi", "--model", "openai:m"])
            .args(flags);
        if let Some((name, value)) = variable {
            command.env(name, value);
        }
        let out = output(command).await;
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(
            server.requests()[0].body["max_tokens"],
            expected,
            "{flags:?}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    let mut command = rlm_with_fake(dir.path(), &server);
    command.args([
        "chat",
        "hi",
        "--model",
        "openai:m",
        "--max-output-tokens",
        "0",
    ]);
    let out = output(command).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

/// An answer cut by the output cap (finish reason `length`) says so on stderr, even with
/// `--quiet`; a whole answer does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_says_when_the_output_cap_cut_the_answer() {
    let server = FakeServer::start().await.unwrap();
    server.script(
        "m",
        [
            FakeReply::text("The first half of").with_finish_reason("length"),
            FakeReply::text("All of it."),
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let run = |quiet: bool| {
        let mut command = rlm_with_fake(dir.path(), &server);
        if quiet {
            command.arg("--quiet");
        }
        command.args(["chat", "hi", "--model", "openai:m", "--max-tokens", "16"]);
        output(command)
    };
    let cut = run(true).await;
    let stderr = text(&cut.stderr);
    assert!(cut.status.success(), "{stderr}");
    assert_eq!(text(&cut.stdout), "The first half of\n");
    assert!(
        stderr.contains("warning: the answer was cut at the output limit (16 tokens)"),
        "{stderr}"
    );
    let whole = run(false).await;
    let stderr = text(&whole.stderr);
    assert!(whole.status.success(), "{stderr}");
    assert!(!stderr.contains("cut"), "{stderr}");
}
