//! `rlm query` on a small local server: one slot, slow calls, the time limit and what a
//! stopped query keeps.

use std::path::Path;
use std::time::Duration;

use rlm_fake::{FakeReply, FakeServer, SeenRequest};

use crate::support::{output as run, rlm_in, rlm_with_fake, text, write};

/// A store of `files` small logs, one chunk each.
fn logs(files: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = (1..=files).map(|n| format!("app{n}.log")).collect();
    for (n, name) in names.iter().enumerate() {
        write(
            dir.path(),
            name,
            &format!("ERROR token refresh failed for user {n}\n"),
        );
    }
    rlm_in(dir.path())
        .arg("load")
        .args(&names)
        .assert()
        .success();
    dir
}

/// Extractors find one finding per chunk; the report cites the first chunk it was given.
fn answer(seen: &SeenRequest) -> FakeReply {
    let message = seen.last_user_message();
    let ids: Vec<i64> = message
        .match_indices("<chunk id=\"")
        .filter_map(|(at, tag)| {
            let rest = &message[at + tag.len()..];
            rest[..rest.find('"')?].parse::<i64>().ok()
        })
        .collect();
    if seen.model == "sub" {
        let entries: Vec<String> = ids
            .iter()
            .map(|id| format!(r#"{{"chunk_id": {id}, "relevance": "high", "findings": ["refresh failed in chunk {id}"], "summary": null, "follow_up": []}}"#))
            .collect();
        return FakeReply::text(format!(r#"{{"results": [{}]}}"#, entries.join(",")));
    }
    FakeReply::text("## Summary\nToken refresh fails [chunk 1].")
}

/// `rlm query ARGS` on `dir`'s store, both models served by `server` as a llama.cpp server.
fn query(dir: &Path, server: &FakeServer, args: &[&str]) -> assert_cmd::Command {
    let mut command = rlm_with_fake(dir, server);
    command.env("LLAMACPP_BASE_URL", server.openai_base_url());
    command.args([
        "query",
        "--model",
        "llamacpp:root",
        "--subcall-model",
        "llamacpp:sub",
        "--scan",
        "all",
        "--batch-size",
        "1",
        "--max-tool-rounds",
        "0",
    ]);
    command.args(args);
    command.arg("How does token refresh fail?");
    command
}

/// Every "N in flight" the progress printed.
fn in_flight_counts(stderr: &str) -> Vec<usize> {
    stderr
        .split(" in flight")
        .filter_map(|before| before.rsplit(' ').next()?.parse().ok())
        .collect()
}

/// A server with one slot and slow calls, and a time limit that cannot cover every batch:
/// batches go out one at a time (what the server serves), progress never counts a batch
/// waiting in rlm's own queue as in flight, the batches left at the time limit are "not sent"
/// rather than failed calls, and the report is written from what was found within the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_slot_server_gets_batches_one_at_a_time_and_unsent_ones_are_not_failures() {
    let dir = logs(8);
    let server = FakeServer::start().await.unwrap();
    server.set_props(serde_json::json!({"total_slots": 1}));
    server.set_slots(1);
    server.respond_with(|seen| match seen.model.as_str() {
        "sub" => answer(seen).with_delay(Duration::from_millis(700)),
        _ => answer(seen),
    });
    let command = query(
        dir.path(),
        &server,
        &["--skip-plan", "--timeout", "4", "--json"],
    );
    let output = run(command).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let result: serde_json::Value = serde_json::from_str(&text(&output.stdout)).unwrap();
    assert_eq!(result["status"], "answered", "{result}");
    assert!(result["report"].as_str().unwrap().contains("[chunk 1]"));
    let analysed = result["chunks_analyzed"].as_u64().unwrap();
    let failures = result["chunk_failures"].as_array().unwrap();
    assert_eq!(analysed as usize + failures.len(), 8, "{result}");
    let not_sent = failures
        .iter()
        .filter(|failure| failure["reason"].as_str().unwrap().starts_with("not sent"))
        .count();
    assert!(not_sent >= 1, "{result}");
    // Every call counted went to the server: none for a batch that only waited.
    let total = &result["usage"]["total"]["total"];
    let counted = total["calls"].as_u64().unwrap() + total["failures"].as_u64().unwrap();
    assert_eq!(counted as usize, server.requests().len(), "{total}");
    assert_eq!(server.requests_for("sub").len() + not_sent, 8, "{result}");
    let counts = in_flight_counts(&stderr);
    assert!(
        counts.iter().all(|count| *count <= 1),
        "{counts:?}\n{stderr}"
    );
}

/// The default time limit counts rounds of what the server answers at once: a fan-out of 4
/// asked of a one-slot server fills its queue, and 8 batches take 8 rounds, not 2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_time_limit_counts_the_slots_the_server_reported() {
    let dir = logs(8);
    let server = FakeServer::start().await.unwrap();
    server.set_props(serde_json::json!({"total_slots": 1}));
    server.respond_with(answer);
    let command = query(
        dir.path(),
        &server,
        &["--skip-plan", "--max-concurrency", "4"],
    );
    let output = run(command).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("time limit: 24m 0s (default for 8 batches"),
        "{stderr}"
    );
}

/// `--timeout` bounds the report too: a report call that never answers ends at the limit,
/// and the findings are returned as they are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeout_bounds_the_report_and_keeps_the_findings() {
    let dir = logs(3);
    let server = FakeServer::start().await.unwrap();
    server.respond_with(|seen| match seen.model.as_str() {
        "sub" => answer(seen),
        _ => FakeReply::hang(),
    });
    let mut command = query(
        dir.path(),
        &server,
        &["--skip-plan", "--timeout", "3", "--json"],
    );
    // A report past the timeout is killed here, and fails the test below.
    command.timeout(Duration::from_secs(60));
    let output = run(command).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let result: serde_json::Value = serde_json::from_str(&text(&output.stdout)).unwrap();
    assert_eq!(result["status"], "synthesis_failed", "{result}");
    // The report call was cut at the limit: counted, as cut off.
    let report = &result["usage"]["synthesize"]["total"];
    assert_eq!(report["cut_off_calls"], 1, "{result}");
    assert_eq!(result["findings"].as_array().unwrap().len(), 3, "{result}");
    assert!(
        result["report"]
            .as_str()
            .unwrap()
            .contains("refresh failed in chunk"),
        "{result}"
    );
}

/// A query stopped by SIGTERM while it writes its report keeps what the extractors found in
/// its closing record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_stopped_while_reporting_keeps_its_findings_in_the_log() {
    use crate::support::{send_signal, spawn_with_fake, wait_until};

    let dir = logs(3);
    let server = FakeServer::start().await.unwrap();
    server.respond_with(|seen| match seen.model.as_str() {
        "sub" => answer(seen),
        _ => FakeReply::hang(),
    });
    let args = [
        "query",
        "--model",
        "openai:root",
        "--subcall-model",
        "openai:sub",
        "--skip-plan",
        "--scan",
        "all",
        "--batch-size",
        "1",
        "--max-tool-rounds",
        "0",
        "--log",
        "logs",
        "How does token refresh fail?",
    ];
    let child = spawn_with_fake(dir.path(), &server, &args);
    wait_until(Duration::from_secs(30), "no report call started", || {
        !server.requests_for("root").is_empty()
    })
    .await;
    assert_eq!(send_signal(child, "TERM").await, Some(143));
    let log = std::fs::read_dir(dir.path().join("logs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(log).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["status"], "interrupted", "{last}");
    assert_eq!(last["chunks_analyzed"], 3, "{last}");
    assert_eq!(last["findings"].as_array().unwrap().len(), 3, "{last}");
    // The report call the signal cut is counted, as cut off.
    assert_eq!(
        last["usage"]["synthesize"]["total"]["cut_off_calls"], 1,
        "{last}"
    );
}

/// A root call cut off by the run's `--timeout` mid-answer is counted: "(+1 cut off)" on the
/// summary line, its estimated tokens in the total, `cut_off_calls` in `--json`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_counts_the_call_its_timeout_cut_off() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    for json in [false, true] {
        server.script(
            "root",
            [FakeReply::slow_stream(
                "thinking ".repeat(200),
                40,
                Duration::from_millis(100),
            )],
        );
        let mut command = rlm_with_fake(dir.path(), &server);
        if json {
            command.arg("--json");
        }
        command.args([
            "run",
            "--no-log",
            "--model",
            "openai:root",
            "--timeout",
            "1.5",
            "--context",
            "abc",
            "What is it?",
        ]);
        let output = run(command).await;
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        if json {
            let result: serde_json::Value = serde_json::from_str(&text(&output.stdout)).unwrap();
            let total = &result["usage"]["total"];
            assert_eq!(total["cut_off_calls"], 1, "{result}");
            assert_eq!(total["failures"], 1, "{result}");
            assert!(total["output_tokens"].as_u64().unwrap() > 0, "{result}");
        } else {
            assert!(stderr.contains("0 model calls (+1 cut off)"), "{stderr}");
            assert!(!stderr.contains(" · 0 tokens"), "{stderr}");
        }
    }
}

/// A run stopped by SIGTERM while its root call streams: exit 143, and its trajectory's closing
/// record counts the cut call (`cut_off_calls`, with the tokens streamed before the cut), so a
/// long call that was killed is not logged as free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_stopped_by_sigterm_counts_the_call_it_cut_off() {
    use crate::support::{send_signal, spawn_with_fake, wait_until};

    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    server.script(
        "root",
        [FakeReply::slow_stream(
            "thinking ".repeat(400),
            40,
            Duration::from_millis(50),
        )],
    );
    let args = [
        "run",
        "--log",
        "logs",
        "--model",
        "openai:root",
        "--context",
        "abc",
        "What is it?",
    ];
    let child = spawn_with_fake(dir.path(), &server, &args);
    wait_until(
        Duration::from_secs(30),
        "the root call never started",
        || server.in_flight() != 0,
    )
    .await;
    // Some pieces stream before the signal.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(send_signal(child, "TERM").await, Some(143));
    let log = std::fs::read_dir(dir.path().join("logs"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .expect("a trajectory");
    let text = std::fs::read_to_string(log).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["status"], "interrupted", "{last}");
    let total = &last["usage"]["total"];
    assert_eq!(total["cut_off_calls"], 1, "{last}");
    assert_eq!(total["calls"], 0, "{last}");
    assert!(total["output_tokens"].as_u64().unwrap() > 0, "{last}");
    assert!(total["input_tokens"].as_u64().unwrap() > 0, "{last}");
}
