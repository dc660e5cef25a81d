//! Helpers every CLI test uses: a hermetic `rlm` command, files, output text.

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;
use rlm_llm::fake::FakeServer;

/// The real binary, run in `dir`, without colour and without anything from the caller's
/// environment that rlm reads (`RLM_*`, provider keys and URLs); configuration, state and data
/// directories point inside `dir`.
pub fn rlm_in(dir: &Path) -> Command {
    let mut command = Command::cargo_bin("rlm").unwrap();
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

/// `rlm_in(dir)` with the `openai` and `anthropic` providers pointed at `server`, and an
/// OpenAI key (`key`) that must never appear in any output.
pub fn rlm_with_fake(dir: &Path, server: &FakeServer, key: &str) -> Command {
    let mut command = rlm_in(dir);
    command
        .env("OPENAI_BASE_URL", server.openai_base_url())
        .env("OPENAI_API_KEY", key)
        .env("ANTHROPIC_BASE_URL", server.anthropic_base_url());
    command
}

/// Runs a command on a blocking thread, so an in-process fake server keeps serving meanwhile.
pub async fn output(mut command: Command) -> Output {
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}

/// Bytes as text (lossy: a test failure should show the bytes, not a second panic).
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
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
