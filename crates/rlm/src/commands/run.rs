//! `rlm run`: the recursive language model loop over one or more contexts.

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use rlm_engine::{Rlm, RunResult};

use crate::cli::{GlobalArgs, RunArgs};
use crate::error::{self, CliError};
use crate::progress::StderrProgress;
use crate::settings::{RunSettings, Sources};

pub fn run(global: &GlobalArgs, sources: &Sources, args: RunArgs) -> anyhow::Result<ExitCode> {
    let settings = RunSettings::resolve(&args, sources)?;
    let contexts = crate::contexts::read(&settings.contexts)?;

    let client = settings.llm.build_client()?;
    let repl = crate::sandbox::repl()?;
    let mut builder = Rlm::builder()
        .client(Arc::new(client))
        .repl(repl.factory)
        .helpers_doc(repl.helpers_doc)
        .environment_name(repl.name)
        .model(settings.model)
        .subcall_model(settings.subcall_model)
        .max_depth(settings.max_depth)
        .budget(settings.budget)
        .prompts(settings.prompts);
    if let Some(dir) = settings.log_dir {
        builder = builder.log_dir(dir);
    }
    if !global.quiet {
        builder = builder.events(Arc::new(StderrProgress::new(global.verbose > 0)));
    }
    let rlm = builder.build().map_err(CliError::input)?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let query = settings.query;
    let outcome = runtime.block_on(async {
        tokio::select! {
            result = rlm.completion(&query, contexts) => Some(result),
            _ = tokio::signal::ctrl_c() => None,
        }
    });
    // In-flight model calls and sandbox workers are dropped with the runtime.
    runtime.shutdown_timeout(Duration::from_secs(2));
    let Some(result) = outcome else {
        return Err(CliError::interrupted().into());
    };
    let result = result.context("the run could not continue")?;
    report(global, &result)
}

/// Prints the answer (or the JSON result) and picks the exit code.
fn report(global: &GlobalArgs, result: &RunResult) -> anyhow::Result<ExitCode> {
    if global.json {
        crate::output::print_json(&serde_json::json!({
            "type": "result",
            "status": result.status,
            "answer": result.answer,
            "partial_answer": result.partial_answer,
            "iterations": result.iterations,
            "usage": result.usage,
            "tokens": result.usage.total_tokens(),
            "cost_usd": result.usage.cost_usd(),
            "cost_is_partial": result.usage.cost_is_partial(),
            "seconds": result.seconds,
            "log": result.trajectory,
            "run_id": result.run_id,
            "error": result.error,
        }))?;
    } else if let Some(answer) = &result.answer {
        let mut out = crate::output::stdout();
        writeln!(out, "{answer}")?;
        out.flush()?;
    }
    if !global.quiet {
        let cost = if result.usage.cost_is_partial() {
            format!("≥ ${:.4} (some prices unknown)", result.usage.cost_usd())
        } else {
            format!("${:.4}", result.usage.cost_usd())
        };
        eprintln!(
            "{} · {} turns · {} model calls · {} tokens · {cost} · {:.1}s",
            result.status,
            result.iterations,
            result.usage.calls(),
            rlm_engine::group_digits(result.usage.total_tokens() as usize),
            result.seconds
        );
        if let Some(path) = &result.trajectory {
            eprintln!("trajectory: {}", path.display());
        }
    }
    if result.status.is_answered() {
        return Ok(ExitCode::SUCCESS);
    }
    if global.json {
        return Ok(ExitCode::from(error::EXIT_FAILED));
    }
    let mut message = format!("no answer: {}", result.status);
    if let Some(detail) = &result.error {
        message.push_str(&format!(" ({detail})"));
    }
    let mut err = CliError::failed(anyhow::anyhow!(message));
    if let Some(partial) = &result.partial_answer {
        err = err.with_hint(format!("best partial answer: {partial}"));
    } else {
        err = err.with_hint(
            "raise --max-iterations, --max-tokens, --max-cost or --timeout, or narrow the query",
        );
    }
    Err(err.into())
}
