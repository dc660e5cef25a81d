//! Keys and budgets at the edge with providers: a provider echoing the configured key (whole,
//! in part, without any `sk-` prefix) shows none of it on stderr, in the run's or the query's
//! log, or in an MCP tool error; a provider reporting far more tokens than a call's cap stops
//! a budget after its first such reply.

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use assert_cmd::Command;
use rlm_fake::{FakeReply, FakeServer};
use rlm_llm::Usage;

use crate::support::{output as run, rlm_in, rlm_process, rlm_with_fake, text, with_fake, write};

/// A key no heuristic would take for one: no known prefix.
const PLAIN_KEY: &str = "Zx8Qw3Er7Ty2Ui6Op1As5Df9";

/// Fails when `text` holds any 8 characters in a row of [`PLAIN_KEY`].
#[track_caller]
fn assert_no_part_of_the_key(text: &str, what: &str) {
    for start in 0..=PLAIN_KEY.len() - 8 {
        let part = &PLAIN_KEY[start..start + 8];
        assert!(
            !text.contains(part),
            "`{part}` of the key is in {what}:\n{text}"
        );
    }
}

/// Error messages the way providers and proxies echo a key.
fn echo(status: u16) -> FakeReply {
    FakeReply::status(
        status,
        format!(
            "bad key={PLAIN_KEY}; {{\"api_key\":\"{PLAIN_KEY}\"}} (ending {})",
            &PLAIN_KEY[PLAIN_KEY.len() - 12..]
        ),
    )
}

/// `rlm` with the fake provider and [`PLAIN_KEY`] as the OpenAI key.
fn rlm(dir: &Path, server: &FakeServer) -> Command {
    let mut command = rlm_with_fake(dir, server);
    command.env("OPENAI_API_KEY", PLAIN_KEY);
    command
}

/// Every file under `dir`, read whole and joined.
fn logs(dir: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path: PathBuf = entry.unwrap().path();
        text.push_str(&std::fs::read_to_string(path).unwrap());
    }
    text
}

/// A model that repeats the key, a sub-call answered with the key in a 400 body, then a 401
/// echoing it: the run fails as an input error, and neither its stderr nor its log holds any
/// part of the key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rlm_run_shows_and_logs_no_part_of_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    server.script(
        "root",
        [
            FakeReply::text(format!(
                "The .env said {PLAIN_KEY}.\n```repl\nprint(llm_query('check'))\n"
            )),
            echo(401),
        ],
    );
    server.script("sub", [echo(400)]);
    let mut command = rlm(dir.path(), &server);
    command.args([
        "-v",
        "run",
        "--model",
        "openai:root",
        "--subcall-model",
        "openai:sub",
        "--log",
        "logs",
        "--context",
        "x",
        "q",
    ]);
    let output = run(command).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("HTTP 401"), "{stderr}");
    assert!(stderr.contains("key=<redacted>"), "{stderr}");
    assert_no_part_of_the_key(&stderr, "stderr");
    let log = logs(&dir.path().join("logs"));
    assert!(
        log.contains("HTTP 400"),
        "the sub-call's error is logged: {log}"
    );
    assert_no_part_of_the_key(&log, "the trajectory");
}

/// `rlm query` whose extractors and report get the echo: stderr and the query log hold no
/// part of the key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rlm_query_shows_and_logs_no_part_of_the_key() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "notes.md",
        "# Notes\nThe token refresh fails.\n",
    );
    rlm_in(dir.path())
        .args(["load", "notes.md"])
        .assert()
        .success();
    let server = FakeServer::start().await.unwrap();
    server.respond_with(|_| echo(400));
    let mut command = rlm(dir.path(), &server);
    command.args([
        "query",
        "--model",
        "openai:root",
        "--subcall-model",
        "openai:sub",
        "--skip-plan",
        "--log",
        "logs",
        "Why does the token refresh fail?",
    ]);
    let output = run(command).await;
    let stderr = text(&output.stderr);
    assert!(server.request_count() > 0, "{stderr}");
    assert!(stderr.contains("<redacted>"), "{stderr}");
    assert_no_part_of_the_key(&stderr, "stderr");
    assert_no_part_of_the_key(&text(&output.stdout), "stdout");
    let log = logs(&dir.path().join("logs"));
    assert!(log.contains("HTTP 400"), "{log}");
    assert_no_part_of_the_key(&log, "the query log");
}

/// `rlm mcp`: a `run` whose provider echoes the key, and one naming a file after the key
/// (an error no provider wrote), are tool errors without any part of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tool_errors_hold_no_part_of_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    server.respond_with(|_| echo(401));
    let mut process = rlm_process(dir.path());
    with_fake(&mut process, &server);
    let mut child = process
        .env("OPENAI_API_KEY", PLAIN_KEY)
        .args(["mcp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let results = tokio::task::spawn_blocking(move || {
        let mut stdout = BufReader::new(stdout);
        let mut send = |message: &str, answered: bool| {
            use std::io::{BufRead as _, Write as _};
            writeln!(stdin, "{message}").unwrap();
            stdin.flush().unwrap();
            if !answered {
                return serde_json::Value::Null;
            }
            let mut line = String::new();
            stdout.read_line(&mut line).unwrap();
            serde_json::from_str::<serde_json::Value>(&line).unwrap()
        };
        send(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#,
            true,
        );
        send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, false);
        let run = |id: u32, arguments: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"run","arguments":{arguments}}}}}"#
            )
        };
        let provider = send(
            &run(2, r#"{"query":"q","context":"x","model":"openai:root"}"#),
            true,
        );
        let file = send(
            &run(
                3,
                &format!(
                    r#"{{"query":"q","context_files":["notes-{PLAIN_KEY}.txt"],"model":"openai:root"}}"#
                ),
            ),
            true,
        );
        (provider, file)
    })
    .await
    .unwrap();
    let _ = child.kill();
    let stderr = {
        use std::io::Read as _;
        let mut stderr = String::new();
        let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
        stderr
    };
    let _ = child.wait();
    for (reply, what) in [(results.0, "HTTP 401"), (results.1, "notes-")] {
        let shown = reply.to_string();
        assert_eq!(reply["result"]["isError"], true, "{reply}");
        assert!(shown.contains(what), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
        assert_no_part_of_the_key(&shown, "the tool error");
    }
    assert_no_part_of_the_key(&stderr, "the server's stderr");
}

/// Sub-calls reporting 100,000 output tokens for a cap of 64: the first is counted as
/// reported, the budget ($10, of which that reply used $0.10) sends nothing more, and the
/// warning names the provider. An honest provider under the same settings answers every
/// sub-call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_over_its_cap_stops_the_budget_after_it() {
    const LOOP: &str = "```repl\nfor i in range(8):\n    print(llm_query('item ' + str(i))[:60])\n";
    let run_with = |reported_output: u64| async move {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("rlm.toml"),
            "[llm.prices.root]\ninput_per_mtok = 0.0\noutput_per_mtok = 0.0\n\
             [llm.prices.sub]\ninput_per_mtok = 1.0\noutput_per_mtok = 1.0\n",
        )
        .unwrap();
        let server = FakeServer::start().await.unwrap();
        server.script(
            "root",
            [FakeReply::text(LOOP), FakeReply::text("FINAL(done)")],
        );
        server.respond_with(move |_| {
            FakeReply::text("fine").with_usage(Usage {
                input_tokens: 10,
                output_tokens: reported_output,
                ..Usage::default()
            })
        });
        let mut command = rlm(dir.path(), &server);
        command.args([
            "--json",
            "run",
            "--no-log",
            "--model",
            "openai:root",
            "--subcall-model",
            "openai:sub",
            "--max-output-tokens",
            "64",
            "--max-cost",
            "10",
            "--context",
            "x",
            "q",
        ]);
        let output = run(command).await;
        let sent = server.requests_for("sub").len();
        (output, sent)
    };

    let (output, sent) = run_with(100_000).await;
    let stderr = text(&output.stderr);
    assert_eq!(sent, 1, "sub-calls sent after the first overrun: {stderr}");
    assert!(
        stderr.contains(
            "openai reported 100,000 output tokens for a call to `sub` capped at 64; its usage \
             is counted as reported, and no further calls are sent under this budget"
        ),
        "{stderr}"
    );
    let result: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["status"], "cost_budget", "{result}");
    let cost = result["cost_usd"].as_f64().unwrap();
    assert!(
        (cost - 0.10001).abs() < 1e-6,
        "the reply is counted as reported: {cost}"
    );

    let (output, sent) = run_with(40).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(sent, 8, "an honest provider is not stopped");
}
