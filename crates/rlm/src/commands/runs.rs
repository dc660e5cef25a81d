//! `rlm runs list` and `rlm runs show`: past runs from their trajectory logs.

use std::io::Write as _;
use std::process::ExitCode;

use rlm_app::operations::runs::{ListedRun, RunsRecord, ShownRecord, ShownRun};
use rlm_app::requests::{RunsAction, RunsRequest};
use rlm_trace::TurnSummary;

use super::Run;
use crate::output::{self, count, for_stdout, human_bytes, usd};

pub fn run(run: &Run<'_>, request: RunsRequest) -> anyhow::Result<ExitCode> {
    let outcome = rlm_app::operations::runs(&run.sources, &request, &run.context)?;
    for note in &outcome.notes {
        output::terminal_note(run.global.quiet, note);
    }
    if run.global.json {
        run.print_json(&outcome)?;
        return run.exit(outcome);
    }
    let mut out = output::stdout();
    let mut variables = Vec::new();
    for record in &outcome.records {
        match record {
            RunsRecord::Listed(ListedRun::Run(summary)) => print_listed(&mut out, summary)?,
            RunsRecord::Shown(ShownRecord::Run(shown)) => print_run(&mut out, shown)?,
            RunsRecord::Shown(ShownRecord::Turn(turn)) => print_turn(&mut out, turn)?,
            RunsRecord::Variable(variable) => variables.push(variable),
        }
    }
    if let RunsAction::Show(show) = &request.action
        && show.vars
        && let Some(snapshot) = outcome.records.iter().find_map(|record| match record {
            RunsRecord::Shown(ShownRecord::Run(shown)) => shown.variables.as_ref(),
            _ => None,
        })
    {
        print_variables(&mut out, snapshot)?;
    }
    out.flush()?;
    run.exit(outcome)
}

fn print_listed(
    out: &mut impl std::io::Write,
    summary: &rlm_trace::RunSummary,
) -> std::io::Result<()> {
    let status = summary.status.as_deref().unwrap_or("unfinished");
    let started = summary.started.as_deref().map_or_else(String::new, |at| {
        at.replace('T', " ").chars().take(19).collect()
    });
    writeln!(
        out,
        "{}  {:<5}  {started:<19}  {status:<17} {:>5}  {:>9}  {}",
        for_stdout(&summary.run_id),
        summary.kind,
        summary
            .turns
            .map_or_else(|| "-".to_owned(), |turns| turns.to_string()),
        summary.cost_usd.map_or_else(
            || "-".to_owned(),
            |cost| match summary.unpriced_calls {
                Some(unpriced) if unpriced > 0 && cost <= 0.0 => "unknown".to_owned(),
                Some(unpriced) if unpriced > 0 => format!("≥{}", usd(cost)),
                _ => usd(cost),
            }
        ),
        for_stdout(&one_line(&summary.question, 80)),
    )
}

fn print_run(out: &mut impl std::io::Write, shown: &ShownRun) -> std::io::Result<()> {
    writeln!(
        out,
        "run {} · {} · {}",
        for_stdout(&shown.run_id),
        for_stdout(&shown.model),
        shown.log.display()
    )?;
    writeln!(out, "question: {}", for_stdout(&shown.question))?;
    for part in &shown.context_parts {
        writeln!(
            out,
            "{}: {} · {} chars · {}",
            part.variable,
            for_stdout(part.name.as_deref().unwrap_or("(unnamed)")),
            rlm_context::thousands(part.chars),
            count(part.lines, "line"),
        )?;
    }
    match (&shown.status, &shown.usage) {
        (Some(status), Some(total)) => {
            writeln!(
                out,
                "result: {} · {} · {} · {} tokens · {} · {:.1}s",
                status,
                count(u64::from(shown.turns.unwrap_or(0)), "turn"),
                count(total.calls, "model call"),
                rlm_context::thousands(total.usage.total()),
                output::totals_cost(total),
                shown.seconds.unwrap_or(0.0)
            )?;
            if let Some(answer) = &shown.answer {
                writeln!(out, "answer: {}", for_stdout(answer))?;
            }
        }
        _ => writeln!(out, "result: none yet (the run is going, or was stopped)")?,
    }
    Ok(())
}

/// The variables a run left, one line each: type, size, length, a preview, and why one cannot
/// be restored.
fn print_variables(
    out: &mut impl std::io::Write,
    snapshot: &rlm_trace::VariablesSnapshot,
) -> std::io::Result<()> {
    writeln!(
        out,
        "\nvariables ({}, {} restorable):",
        snapshot.variables.len(),
        snapshot.restorable().count()
    )?;
    for variable in &snapshot.variables {
        let size = variable.repr_bytes.map_or_else(String::new, human_bytes);
        let length = variable
            .length
            .map_or_else(String::new, |length| format!(" · len {length}"));
        let restorable = match &variable.not_restorable {
            None => String::new(),
            Some(why) => format!("  (not restorable: {why})"),
        };
        writeln!(
            out,
            "  {} · {} · {size}{length} · {}{restorable}",
            for_stdout(&variable.name),
            variable.type_name,
            for_stdout(&one_line(&variable.preview, 100)),
        )?;
    }
    Ok(())
}

fn print_turn(out: &mut impl std::io::Write, turn: &TurnSummary) -> std::io::Result<()> {
    writeln!(
        out,
        "\n── turn {} · {} · {} tokens · {:.1}s",
        turn.turn,
        count(turn.usage.calls, "call"),
        rlm_context::thousands(turn.usage.usage.total()),
        turn.seconds
    )?;
    if turn.code_blocks.is_empty() {
        writeln!(out, "reply:")?;
        indent(out, &turn.response)?;
    }
    for (index, block) in turn.code_blocks.iter().enumerate() {
        writeln!(out, "block {}:", index + 1)?;
        indent(out, &block.code)?;
        let result = &block.result;
        if !result.stdout.is_empty() {
            writeln!(out, "output:")?;
            indent(out, &result.stdout)?;
        }
        if let Some(error) = &result.error {
            writeln!(out, "error: {}", for_stdout(error))?;
        }
        for call in &result.subcalls {
            writeln!(
                out,
                "sub-call: {} {} · {} → {} chars{}",
                call.kind.name(),
                for_stdout(&call.model),
                call.prompt_chars,
                call.response_chars,
                call.error
                    .as_deref()
                    .map_or_else(String::new, |error| format!(
                        " · error: {}",
                        for_stdout(error)
                    ))
            )?;
        }
    }
    for note in &turn.notes {
        writeln!(out, "note: {}", for_stdout(note))?;
    }
    if let Some(answer) = &turn.final_answer {
        writeln!(out, "answer: {}", for_stdout(answer))?;
    }
    Ok(())
}

fn indent(out: &mut impl std::io::Write, text: &str) -> std::io::Result<()> {
    for line in text.trim_end().lines() {
        writeln!(out, "  │ {}", for_stdout(line))?;
    }
    Ok(())
}

/// The status as one word for the list (`answered`, `iteration_limit`, …).
/// `text` on one line, cut to `chars` with `…`.
pub(super) fn one_line(text: &str, chars: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    match flat.char_indices().nth(chars) {
        None => flat,
        Some((cut, _)) => format!("{}…", &flat[..cut]),
    }
}
