//! Shared test fixtures: a fake host and sandbox constructors with small limits.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rlm_sandbox::{ContextInput, Host, Isolation, Limits, Sandbox, Session, WorkerCommand};

/// Answers `answer:<prompt>` after `latency`; prompts containing `FAIL` fail.
#[derive(Debug, Default)]
pub struct FakeHost {
    pub latency: Duration,
    pub calls: AtomicUsize,
}

#[async_trait::async_trait]
impl Host for FakeHost {
    async fn llm_query(&self, prompt: String, model: Option<String>) -> Result<String, String> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(self.latency).await;
        if prompt.contains("FAIL") {
            return Err(format!("refused {prompt}"));
        }
        Ok(match model {
            Some(model) => format!("answer[{model}]:{prompt}"),
            None => format!("answer:{prompt}"),
        })
    }

    async fn rlm_query(&self, prompt: String, _model: Option<String>) -> Result<String, String> {
        Ok(format!("sub-run:{prompt}"))
    }
}

pub fn small_limits() -> Limits {
    Limits::default()
        .timeout(Duration::from_secs(1))
        .memory_bytes(256 << 20)
        .recursion_depth(100)
        .output_chars(1000)
}

pub fn worker() -> WorkerCommand {
    WorkerCommand::new(
        env!("CARGO_BIN_EXE_rlm-sandbox-worker"),
        Vec::<String>::new(),
    )
}

pub fn sandbox(isolation: Isolation) -> Sandbox {
    Sandbox::builder()
        .isolation(isolation)
        .limits(small_limits())
        .worker_command(worker())
        .build()
        .unwrap()
}

pub async fn session_with(isolation: Isolation, contexts: Vec<ContextInput>) -> Session {
    Session::start(
        &sandbox(isolation),
        contexts,
        None,
        Arc::new(FakeHost::default()),
    )
    .await
    .unwrap()
}

pub async fn session(context: &str) -> Session {
    session_with(Isolation::Process, vec![ContextInput::from(context)]).await
}
