//! `rlm run`: the answer on stdout, how the run ended on stderr (or the JSON result), and the
//! exit code: 0 for an answer the model reached within its turns after its code looked at the
//! data, 1 otherwise.

use std::io::Write as _;
use std::process::ExitCode;

use rlm_app::error::AppError;
use rlm_app::operations::run::{RunRecord, RunSummary, limit_hint};
use rlm_app::requests::RunRequest;
use rlm_engine::Status;

use super::Run;
use crate::output::count;

pub fn run(run: &Run<'_>, request: RunRequest) -> anyhow::Result<ExitCode> {
    let outcome = rlm_app::operations::run(&run.sources, &request, &run.context)?;
    let global = run.global;
    if global.json {
        run.print_json(&outcome)?;
    }
    let Some(RunRecord::Result(summary)) = outcome.records.first() else {
        return run.exit(outcome);
    };
    if !global.json
        && let Some(answer) = &summary.answer
    {
        // Byte-exact into a pipe or file; control characters neutralised on a terminal.
        let mut out = crate::output::raw_stdout();
        writeln!(out, "{}", crate::output::for_stdout(answer))?;
        out.flush()?;
    }
    if !global.quiet {
        print_ending(summary);
    }
    if global.json || outcome.error.is_some() {
        return run.exit(outcome);
    }
    if summary.status == Status::ForcedAnswer {
        // Printed above, but not an answer the model reached within its turns: a partial
        // result, said so on stderr and by the exit code.
        return Err(AppError::failed(anyhow::anyhow!(
            "the answer above is partial: the model gave it only when its turns ran out"
        ))
        .with_hint("raise --max-iterations for an answer the model reaches on its own")
        .into());
    }
    if summary.status == Status::NoEvidence {
        // Printed above, but nothing backs it: the model answered before any of its code had
        // looked at the data, and again when sent back to look.
        return Err(AppError::failed(anyhow::anyhow!(
            "the answer above is unchecked: the model gave it before any of its code had \
             looked at the data"
        ))
        .with_hint("try a model that writes code (a ```repl block), or ask a narrower question")
        .into());
    }
    if summary.status.is_answered() {
        return Ok(ExitCode::SUCCESS);
    }
    let hint = match &summary.partial_answer {
        Some(partial) => format!("best partial answer: {partial}"),
        None => limit_hint(summary.status).to_owned(),
    };
    Err(
        AppError::failed(anyhow::anyhow!("no answer: {}", summary.status))
            .with_hint(hint)
            .into(),
    )
}

/// How the run ended and what it cost, then where its trajectory is.
fn print_ending(summary: &RunSummary) {
    let total = &summary.usage.total;
    eprintln!(
        "{} · {} · {} · {} tokens{} · {} · {:.1}s",
        summary.status,
        count(u64::from(summary.iterations), "turn"),
        count(total.calls, "model call"),
        rlm_context::thousands(total.usage.total()),
        crate::output::cache_note(&total.usage),
        crate::output::totals_cost(total),
        summary.seconds
    );
    if let Some(path) = &summary.log {
        eprintln!(
            "trajectory: {}",
            crate::output::neutralize(&path.display().to_string())
        );
    }
}
