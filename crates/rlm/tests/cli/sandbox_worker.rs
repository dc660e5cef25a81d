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
