//! The sandbox `rlm run` uses: Monty in a worker process, which is this binary started in its
//! hidden worker mode (`main.rs` hands that mode to `rlm_sandbox::worker_main`).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use rlm_engine::RunLimits;
use rlm_engine::{ReplFactory, SANDBOX_HELPERS_DOC, SandboxRepl};
use rlm_sandbox::{Limits, Sandbox, WorkerCommand};

use crate::error::AppError;
use crate::settings::env;

/// The worker a program embedding rlm starts instead of this executable (the Python package
/// starts its interpreter on the extension's worker entry point).
static WORKER: std::sync::OnceLock<WorkerCommand> = std::sync::OnceLock::new();

/// Sets [`WORKER`]; the first setting stays.
pub fn set_worker_command(command: WorkerCommand) {
    let _ = WORKER.set(command);
}

/// A REPL factory with what the engine should say about it.
#[expect(
    missing_debug_implementations,
    reason = "holds trait objects and borrowed parts"
)]
pub struct Repl {
    pub factory: Arc<dyn ReplFactory>,
    pub helpers_doc: String,
    pub name: String,
}

/// The Monty sandbox with default limits but `block_timeout` of interpreter time per code
/// block, running in a worker process that confines itself with Landlock and seccomp; where
/// the kernel lacks them it refuses unless `allow_reduced_protection`.
///
/// `limits` bound what crosses from the worker: prompts and answers over them stay in the worker
/// and the code gets a `ValueError` saying so.
pub fn repl(
    allow_reduced_protection: bool,
    block_timeout: Duration,
    limits: &RunLimits,
) -> anyhow::Result<Repl> {
    let worker = match WORKER.get() {
        Some(command) => command.clone(),
        None => WorkerCommand::current_exe()
            .context("cannot locate the rlm binary for the sandbox worker")?,
    };
    let sandbox = Sandbox::builder()
        .worker_command(worker)
        .limits(
            Limits::default()
                .timeout(block_timeout)
                .max_prompt_bytes(limits.max_prompt_bytes)
                .max_answer_bytes(limits.max_answer_bytes),
        )
        .allow_reduced_protection(allow_reduced_protection)
        .build()
        .map_err(|error| match error {
            rlm_sandbox::Error::Unavailable(_) => AppError::failed(error).with_hint(format!(
                "pass --allow-reduced-protection (or set {}=1) to run model code with only the \
                 interpreter's own isolation, an empty environment and resource limits",
                env::RLM_ALLOW_REDUCED_PROTECTION
            )),
            other => {
                AppError::failed(anyhow::Error::new(other).context("cannot set up the sandbox"))
            }
        })?;
    Ok(Repl {
        factory: Arc::new(SandboxRepl::new(sandbox)),
        helpers_doc: SANDBOX_HELPERS_DOC.to_owned(),
        name: "monty".to_owned(),
    })
}
