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
