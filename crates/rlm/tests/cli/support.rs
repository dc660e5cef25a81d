//! Helpers every CLI test uses: a hermetic `rlm` command (alone, with the fake provider, or
//! over a store), a scripted fake provider, interrupting a running command, files, output text.

use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use rlm_fake::{FakeReply, FakeServer};

/// The OpenAI key of every fake-provider command; no output may ever contain it.
pub const KEY: &str = "sk-test-do-not-log-4242";

/// The real binary as a plain process, run in `dir`, without colour and without anything from
/// the caller's environment that rlm reads (`RLM_*`, provider keys and URLs); configuration,
/// state and data directories point inside `dir`.
pub fn rlm_process(dir: &Path) -> std::process::Command {
    let mut command =
        std::process::Command::new(assert_cmd::cargo::cargo_bin(env!("CARGO_PKG_NAME")));
    command
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("XDG_CONFIG_HOME", dir.join("xdg"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("XDG_DATA_HOME", dir.join("data"));
    for (name, _) in std::env::vars_os() {
        let Some(text) = name.to_str() else { continue };
        if text.starts_with("RLM_") || text.ends_with("_API_KEY") || text.ends_with("_BASE_URL") {
            command.env_remove(&name);
        }
    }
    command
}

/// Points the `openai` and `anthropic` providers at `server`, with the OpenAI key [`KEY`].
pub fn with_fake(command: &mut std::process::Command, server: &FakeServer) {
    command
        .env("OPENAI_BASE_URL", server.openai_base_url())
        .env("OPENAI_API_KEY", KEY)
        .env("ANTHROPIC_BASE_URL", server.anthropic_base_url());
}

/// The real binary, run in `dir`, hermetic (see `rlm_process`).
pub fn rlm_in(dir: &Path) -> Command {
    Command::from_std(rlm_process(dir))
}

/// `rlm_in(dir)` with the providers pointed at `server` and the OpenAI key [`KEY`].
pub fn rlm_with_fake(dir: &Path, server: &FakeServer) -> Command {
    let mut command = rlm_process(dir);
    with_fake(&mut command, server);
    Command::from_std(command)
}

/// `rlm_process(dir)` over the store `dir/store`, with an empty configuration file (so the
/// user's own settings never leak in) and the models directory `dir/models`.
pub fn rlm_store_process(dir: &Path) -> std::process::Command {
    let config = dir.join("rlm.toml");
    if !config.exists() {
        std::fs::write(&config, "").unwrap();
    }
    let mut command = rlm_process(dir);
    command
        .env("RLM_STORE", dir.join("store"))
        .env("RLM_CONFIG", config)
        .env("RLM_MODELS_DIR", dir.join("models"));
    command
}

/// `rlm_store_process(dir)` with the providers pointed at `server` (`rlm run --store`).
pub fn rlm_with_fake_store(dir: &Path, server: &FakeServer) -> Command {
    let mut command = rlm_store_process(dir);
    with_fake(&mut command, server);
    Command::from_std(command)
}

/// `rlm_store_process(dir)` as an assertable command.
pub fn rlm_with_store(dir: &Path) -> Command {
    Command::from_std(rlm_store_process(dir))
}

/// A scratch directory and a fake provider whose `model` gives `replies` in order.
pub async fn scripted(
    model: &str,
    replies: impl IntoIterator<Item = FakeReply>,
) -> (tempfile::TempDir, FakeServer) {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    server.script(model, replies);
    (dir, server)
}

/// `rlm ARGS` started with the fake provider and its output discarded, for a test that
/// interrupts it.
pub fn spawn_with_fake(dir: &Path, server: &FakeServer, args: &[&str]) -> Child {
    let mut command = rlm_process(dir);
    with_fake(&mut command, server);
    command
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Polls `ready` until it holds; fails the test after `limit`, saying `what` never happened.
pub async fn wait_until(limit: Duration, what: &str, ready: impl Fn() -> bool) {
    let started = Instant::now();
    while !ready() {
        assert!(started.elapsed() < limit, "{what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Sends Ctrl-C (SIGINT) to `child` and returns its exit code.
pub async fn interrupt(child: Child) -> Option<i32> {
    send_signal(child, "INT").await
}

/// Sends the signal `name` (`INT`, `TERM`) to `child` and returns its exit code.
pub async fn send_signal(mut child: Child, name: &str) -> Option<i32> {
    let status = std::process::Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap()
        .code()
}

/// Runs a command on a blocking thread, so an in-process fake server keeps serving meanwhile.
pub async fn output(mut command: Command) -> Output {
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}

/// Runs a command and returns (exit code, stdout, stderr).
pub fn outcome(command: &mut Command) -> (Option<i32>, String, String) {
    let output = command.output().unwrap();
    (
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr),
    )
}

/// Bytes as text (lossy: a test failure should show the bytes, not a second panic).
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Each line of `text` as JSON.
pub fn json_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Writes `content` to `dir/name` and returns the path.
pub fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path
}

/// The standard output of a finished assertion.
pub fn stdout_of(assert: assert_cmd::assert::Assert) -> String {
    String::from_utf8(assert.get_output().stdout.clone()).unwrap()
}

/// The static embedding model's wheel, when `scripts/test` has set `RLM_TEST_WHEELS`; `None`
/// (and a note) otherwise, so the test skips.
pub fn static_model_wheel() -> Option<PathBuf> {
    test_wheel("tokenlearn_static_model-0.1.1")
}

/// The wheel in `RLM_TEST_WHEELS` whose file name starts with `prefix`, when `scripts/test` has
/// set it; `None` (and a note) otherwise, so the test skips. Set but missing the wheel: a failure.
pub fn test_wheel(prefix: &str) -> Option<PathBuf> {
    let Some(dir) = std::env::var_os("RLM_TEST_WHEELS").filter(|v| !v.is_empty()) else {
        eprintln!("skipped: RLM_TEST_WHEELS is not set (scripts/test downloads the wheels)");
        return None;
    };
    let found = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with(prefix))
        });
    assert!(
        found.is_some(),
        "RLM_TEST_WHEELS is set but has no wheel named {prefix}*"
    );
    found
}

/// Asserts that `result`, a tool result as the MCP test clients report it (`is_error`,
/// `text`), is a tool error whose text contains `expected`.
pub fn assert_tool_error(result: &serde_json::Value, expected: &str) {
    assert_eq!(result["is_error"], true, "{result}");
    let text = result["text"].as_str().unwrap_or_default();
    assert!(text.contains(expected), "{expected:?} not in {result}");
}

/// The models `rlm query` asks, over any store: the plan searches `words` (BM25, a chunk a
/// batch), each extractor reports every chunk it is shown as `"{finding} {id}"`, and the report
/// says `summary` with the number of findings it was given.
pub fn answer_query_about(
    seen: &rlm_fake::SeenRequest,
    words: &str,
    finding: &str,
    summary: &str,
) -> FakeReply {
    let system = seen.system.as_deref().unwrap_or_default();
    if system.starts_with("You plan a search") {
        return FakeReply::text(format!(
            r#"{{"queries": ["{words}"], "mode": "bm25", "top_k": 4, "batch_size": 1, "buffers": []}}"#
        ));
    }
    let message = seen.last_user_message();
    if system.starts_with("You are an extractor") {
        let entries: Vec<String> = message
            .match_indices("<chunk id=\"")
            .filter_map(|(at, tag)| {
                let rest = &message[at + tag.len()..];
                rest[..rest.find('"')?].parse::<i64>().ok()
            })
            .map(|id| format!(r#"{{"chunk_id": {id}, "relevance": "high", "findings": ["{finding} {id}"], "summary": null, "follow_up": []}}"#))
            .collect();
        return FakeReply::text(format!(r#"{{"results": [{}]}}"#, entries.join(",")));
    }
    FakeReply::text(format!(
        "## Summary\n{summary} ({} findings).",
        message.matches(finding).count()
    ))
}
