//! End-to-end runs: the real sandbox, `rlm-llm` against its fake provider server, replies routed
//! by model name (`root` writes code, `sub` answers sub-calls and runs child RLMs).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use rlm_engine::{
    ContextPart, Rlm, RunLimits, RunResult, SANDBOX_HELPERS_DOC, SandboxRepl, Status,
};
use rlm_fake::{FakeReply, FakeServer, SeenRequest};
use rlm_sandbox::{Isolation, Limits, Sandbox};

mod budgets;
mod caching;
mod cases;
mod evidence;

/// The fake server plus a builder wired to it and to the sandbox.
struct Harness {
    server: FakeServer,
    log: tempfile::TempDir,
}

impl Harness {
    async fn start() -> Self {
        Self {
            server: FakeServer::start().await.unwrap(),
            log: tempfile::tempdir().unwrap(),
        }
    }

    fn root(&self, replies: &[&str]) {
        self.server
            .script("root", replies.iter().map(|r| FakeReply::text(*r)));
    }

    fn sub(&self, answer: impl Fn(&SeenRequest) -> String + Send + Sync + 'static) {
        self.server
            .respond_with(move |seen| FakeReply::text(answer(seen)));
    }

    fn rlm(&self, limits: RunLimits, max_depth: u32) -> Rlm {
        let client = rlm_llm::testing::client_builder(self.server.address())
            .build()
            .unwrap();
        self.rlm_builder(client, limits, max_depth).build().unwrap()
    }

    /// The builder [`Harness::rlm`] builds, for `client`.
    fn rlm_builder(
        &self,
        client: rlm_llm::LlmClient,
        limits: RunLimits,
        max_depth: u32,
    ) -> rlm_engine::RlmBuilder {
        Rlm::builder()
            .client(Arc::new(client))
            .repl(Arc::new(SandboxRepl::new(sandbox())))
            .helpers_doc(SANDBOX_HELPERS_DOC.to_owned())
            .model("root")
            .subcall_model("sub")
            .max_depth(max_depth)
            .limits(limits)
            .log_dir(self.log.path().to_path_buf())
    }

    async fn run(&self, limits: RunLimits, max_depth: u32, context: &str) -> RunResult {
        let rlm = self.rlm(limits, max_depth);
        let run = rlm.completion("What is asked?", vec![ContextPart::new(context)]);
        tokio::time::timeout(Duration::from_secs(120), run)
            .await
            .expect("run finished in time")
            .unwrap()
    }

    /// The last user message of the `n`th request to `model`.
    fn user_message(&self, model: &str, n: usize) -> String {
        self.server.requests_for(model)[n]
            .last_user_message()
            .to_owned()
    }
}

/// In-process Monty: the worker binary is the `rlm` crate's, not built for these tests.
fn sandbox() -> Sandbox {
    Sandbox::builder()
        .isolation(Isolation::InProcess)
        .limits(Limits::default().timeout(Duration::from_secs(60)))
        .build()
        .unwrap()
}

fn status_line(result: &RunResult) -> String {
    format!(
        "{:?} answer={:?} partial={:?} error={:?}",
        result.outcome.status, result.outcome.answer, result.outcome.partial_answer, result.error
    )
}

fn answered(result: &RunResult) -> &str {
    assert_eq!(
        result.outcome.status,
        Status::Answered,
        "{}",
        status_line(result)
    );
    result.outcome.answer.as_deref().unwrap()
}
