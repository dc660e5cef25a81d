//! The hidden `rlm __sandbox-worker` mode serves sandbox sessions and stays out of `--help`.

use std::sync::Arc;

use rlm_sandbox::{Host, Sandbox, Session, WORKER_ARG, WorkerCommand};

struct Upper;

#[async_trait::async_trait]
impl Host for Upper {
    async fn llm_query(&self, prompt: String, _model: Option<String>) -> Result<String, String> {
        Ok(prompt.to_uppercase())
    }
    async fn rlm_query(&self, prompt: String, model: Option<String>) -> Result<String, String> {
        self.llm_query(prompt, model).await
    }
}

#[tokio::test]
async fn rlm_binary_serves_as_the_sandbox_worker() {
    let worker = WorkerCommand::new(env!("CARGO_BIN_EXE_rlm"), [WORKER_ARG]);
    let sandbox = Sandbox::builder().worker_command(worker).build().unwrap();
    // Reduced protection was not allowed, so the `rlm` worker locked itself down.
    let protection = sandbox.protection().unwrap_or_default();
    assert!(
        protection.contains("Landlock") && protection.contains("seccomp"),
        "{protection}"
    );
    let mut session = Session::start(&sandbox, vec!["two words".into()], None, Arc::new(Upper))
        .await
        .unwrap();
    let result = session
        .execute("print(llm_query(context.split()[1]))")
        .await
        .unwrap();
    assert_eq!(result.stdout, "WORDS\n", "{result:?}");
}

#[test]
fn worker_mode_is_hidden_from_help() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_rlm"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(output.status.success());
    assert!(!String::from_utf8_lossy(&output.stdout).contains("sandbox-worker"));
}

#[test]
fn run_offers_reduced_protection_as_an_explicit_choice() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_rlm"))
        .args(["run", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(help.contains("--allow-reduced-protection"), "{help}");
    assert!(help.contains("RLM_ALLOW_REDUCED_PROTECTION"), "{help}");
}

#[test]
fn the_reduced_protection_switch_is_read_strictly() {
    let dir = tempfile::tempdir().unwrap();
    let run = ["run", "--model", "openai:x", "--context", "x", "q"];
    let output = crate::support::rlm_in(dir.path())
        .args(run)
        .env("OPENAI_API_KEY", "k")
        .env("RLM_ALLOW_REDUCED_PROTECTION", "maybe")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("RLM_ALLOW_REDUCED_PROTECTION=maybe"),
        "{stderr}"
    );
    crate::support::write(
        dir.path(),
        "rlm.toml",
        "[sandbox]\nallow_reduced_protection = 'yes'\n",
    );
    let output = crate::support::rlm_in(dir.path())
        .args(run)
        .env("OPENAI_API_KEY", "k")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("invalid [sandbox] section"), "{stderr}");
}

/// A descriptor the worker's parent left open without close-on-exec (here fd 7, opened by a
/// shell) is closed before any model code runs.
#[tokio::test]
async fn the_worker_closes_descriptors_it_inherits() {
    let marker = format!("fd-test-{}", std::process::id());
    let script = "exec 7</etc/hostname; exec \"$0\" __sandbox-worker \"$1\"";
    let worker = WorkerCommand::new(
        "/bin/sh",
        ["-c", script, env!("CARGO_BIN_EXE_rlm"), marker.as_str()],
    );
    let sandbox = Sandbox::builder().worker_command(worker).build().unwrap();
    let mut session = Session::start(&sandbox, vec!["x".into()], None, Arc::new(Upper))
        .await
        .unwrap();
    let result = session.execute("print(1)").await.unwrap();
    assert_eq!(result.stdout, "1\n", "{result:?}");
    let workers: Vec<std::path::PathBuf> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .filter(|dir| {
            std::fs::read(dir.join("cmdline"))
                .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains(&marker))
        })
        .collect();
    assert_eq!(workers.len(), 1, "{workers:?}");
    let open: Vec<(String, std::path::PathBuf)> = std::fs::read_dir(workers[0].join("fd"))
        .unwrap()
        .flatten()
        .map(|entry| {
            let target = std::fs::read_link(entry.path()).unwrap_or_default();
            (entry.file_name().to_string_lossy().into_owned(), target)
        })
        .collect();
    assert!(!open.is_empty(), "the worker's descriptors are readable");
    // Besides stdio, only what the worker opened itself after closing the rest: the context
    // file it maps for the helpers (`context_0` in the session's private directory).
    assert!(
        open.iter()
            .all(|(fd, target)| ["0", "1", "2"].contains(&fd.as_str())
                || target.file_name().is_some_and(|name| name == "context_0")),
        "the worker keeps {open:?}"
    );
    assert!(
        !open.iter().any(|(_, target)| target.ends_with("hostname")),
        "the worker keeps the inherited descriptor: {open:?}"
    );
}
