//! The sandbox `rlm run` uses: Monty in a worker process, which is this binary started in its
//! hidden worker mode (`main.rs` hands that mode to `rlm_sandbox::worker_main`).

use std::sync::Arc;

use anyhow::Context as _;
use rlm_engine::{ReplFactory, SANDBOX_HELPERS_DOC, SandboxRepl};
use rlm_sandbox::{Limits, Sandbox, WorkerCommand};

/// A REPL factory with what the engine should say about it.
pub struct Repl {
    pub factory: Arc<dyn ReplFactory>,
    pub helpers_doc: String,
    pub name: String,
}

/// The Monty sandbox with default limits, running in a worker process.
pub fn repl() -> anyhow::Result<Repl> {
    let worker = WorkerCommand::current_exe()
        .context("cannot locate the rlm binary for the sandbox worker")?;
    let sandbox = Sandbox::builder()
        .worker_command(worker)
        .limits(Limits::default())
        .build()
        .context("cannot set up the sandbox")?;
    Ok(Repl {
        factory: Arc::new(SandboxRepl::new(sandbox)),
        helpers_doc: SANDBOX_HELPERS_DOC.to_owned(),
        name: "monty".to_owned(),
    })
}
