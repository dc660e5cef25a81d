//! The sandbox `rlm run` uses: Monty in a worker process (this binary in its hidden worker mode).

use std::sync::Arc;

use anyhow::Context as _;
use rlm_engine::{ReplFactory, SANDBOX_HELPERS_DOC, SandboxRepl};
use rlm_sandbox::{Limits, Sandbox, WorkerCommand};

use crate::config::LoadedConfig;

/// A REPL factory with what the engine should say about it.
pub struct Repl {
    pub factory: Arc<dyn ReplFactory>,
    pub helpers_doc: String,
    pub name: String,
}

pub fn factory(_config: &LoadedConfig) -> anyhow::Result<Repl> {
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
