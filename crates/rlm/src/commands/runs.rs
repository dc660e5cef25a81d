//! `rlm runs list` and `rlm runs show`: past runs from their trajectory logs — the contexts,
//! each turn's code, output, sub-calls and usage, the result, and the REPL's variables at the
//! end (the log's `variables` line).

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use rlm_trace::{RunSummary, Trajectory, TurnSummary, VariableInfo};
use serde::Serialize;

use super::view::{find_log, trace_error};
use crate::cli::{GlobalArgs, RunsAction, RunsRequest, RunsListRequest, RunsShowRequest};
use crate::error::AppError;
use crate::output::{self, count, for_stdout, human_bytes, usd};
use crate::settings::{RunsSettings, Sources, ViewTarget};

pub fn run(global: &GlobalArgs, sources: &Sources, args: RunsRequest) -> anyhow::Result<ExitCode> {
    match args.action {
        RunsAction::List(args) => list(global, sources, &args),
        RunsAction::Show(args) => show(global, sources, &args),
    }
}

fn list(global: &GlobalArgs, sources: &Sources, args: &RunsListRequest) -> anyhow::Result<ExitCode> {
    let settings = RunsSettings::resolve(args.log.as_ref(), sources)?;
    let runs = match rlm_trace::list_runs(&settings.log_dir) {
        Ok(runs) => runs,
        // No directory yet: no runs yet.
        Err(rlm_trace::Error::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            Vec::new()
        }
        Err(err) => return Err(trace_error(err, &settings.log_dir)),
    };
    let runs: Vec<RunSummary> = runs.into_iter().take(args.limit).collect();
    if runs.is_empty() {
        output::terminal_note(
            global.quiet,
            &format!("no run logs in {}", settings.log_dir.display()),
        );
    }
    if global.json {
        for summary in &runs {
            output::print_json(&ListedRecord::Run(summary))?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = output::stdout();
    for summary in &runs {
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
        )?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn show(global: &GlobalArgs, sources: &Sources, args: &RunsShowRequest) -> anyhow::Result<ExitCode> {
    let settings = RunsSettings::resolve(args.log.as_ref(), sources)?;
    let target = match args.run.as_str() {
        "last" => ViewTarget::Last,
        run => crate::settings::view::target(run),
    };
    let path = find_log(&target, Some(&settings.log_dir))?;
    let log = Trajectory::read(&path).map_err(|err| trace_error(err, &path))?;
    let Some(metadata) = log.metadata() else {
        return Err(AppError::input(anyhow::anyhow!(
            "{} is not the log of an `rlm run`",
            path.display()
        ))
        .with_hint("`rlm view` shows `rlm query` logs")
        .into());
    };
    let turns: Vec<TurnSummary> = log
        .iterations()
        .filter(|turn| args.turn.is_none_or(|wanted| turn.iteration == wanted))
        .map(TurnSummary::of)
        .collect();
    if let Some(wanted) = args.turn
        && turns.is_empty()
    {
        return Err(AppError::input(anyhow::anyhow!(
            "run {} has no turn {wanted} (it logged {})",
            metadata.run_id,
            count(log.iterations().count() as u64, "turn")
        ))
        .into());
    }
    let outcome = log.outcome();
    let variables = log.variables();
    if args.vars && variables.is_none() {
        output::terminal_note(
            global.quiet,
            "this log has no `variables` line (the run was stopped, is still going, is a \
             child run, or was logged by an older rlm)",
        );
    }
    if global.json {
        let contexts = metadata
            .contexts
            .parts
            .iter()
            .map(ShownContext::of)
            .collect();
        output::print_json(&ShownRecord::Run {
            run_id: &metadata.run_id,
            log: &path,
            model: &metadata.root_model,
            subcall_model: &metadata.subcall_model,
            question: &metadata.query,
            contexts,
            status: outcome.map(|o| o.status),
            answer: outcome.and_then(|o| o.answer.as_deref()),
            turns: outcome.map(|o| o.iterations),
            usage: outcome.map(|o| &o.usage.total),
            cost_usd: outcome.map(|o| o.usage.total.cost_usd),
            seconds: outcome.map(|o| o.seconds),
        })?;
        for turn in &turns {
            output::print_json(&ShownRecord::Turn(turn))?;
        }
        if args.vars {
            for variable in variables
                .map(|v| v.variables.as_slice())
                .unwrap_or_default()
            {
                output::print_json(&VariableRecord::of(variable))?;
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = output::stdout();
    writeln!(
        out,
        "run {} · {} · {}",
        for_stdout(&metadata.run_id),
        for_stdout(&metadata.root_model),
        path.display()
    )?;
    writeln!(out, "question: {}", for_stdout(&metadata.query))?;
    for part in &metadata.contexts.parts {
        writeln!(
            out,
            "{}: {} · {} chars · {}",
            part.variable,
            for_stdout(part.name.as_deref().unwrap_or("(unnamed)")),
            rlm_context::thousands(part.chars),
            count(part.lines, "line"),
        )?;
    }
    match outcome {
        Some(outcome) => {
            let total = &outcome.usage.total;
            writeln!(
                out,
                "result: {} · {} · {} · {} tokens · {} · {:.1}s",
                outcome.status,
                count(u64::from(outcome.iterations), "turn"),
                count(total.calls, "model call"),
                rlm_context::thousands(total.usage.total()),
                output::totals_cost(total),
                outcome.seconds
            )?;
            if let Some(answer) = &outcome.answer {
                writeln!(out, "answer: {}", for_stdout(answer))?;
            }
        }
        None => writeln!(out, "result: none yet (the run is going, or was stopped)")?,
    }
    for turn in &turns {
        print_turn(&mut out, turn)?;
    }
    if args.vars
        && let Some(snapshot) = variables
    {
        print_variables(&mut out, snapshot)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
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

/// What `rlm runs list --json` prints: a record per run, newest first.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ListedRecord<'a> {
    Run(&'a RunSummary),
}

/// What `rlm runs show --json` prints: the run, its turns, then its variables with `--vars`.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ShownRecord<'a> {
    /// The run: its models, question, contexts and how it ended (`null`s while unfinished).
    Run {
        run_id: &'a str,
        log: &'a Path,
        model: &'a str,
        subcall_model: &'a str,
        question: &'a str,
        contexts: Vec<ShownContext<'a>>,
        status: Option<rlm_trace::Status>,
        answer: Option<&'a str>,
        turns: Option<u32>,
        usage: Option<&'a rlm_llm::ModelTotals>,
        cost_usd: Option<f64>,
        seconds: Option<f64>,
    },
    /// One turn: its code, output, sub-calls and usage.
    Turn(&'a TurnSummary),
}

/// A context of a run as `runs show --json` gives it.
#[derive(Serialize)]
struct ShownContext<'a> {
    variable: &'a str,
    name: Option<&'a str>,
    chars: u64,
    lines: u64,
    /// The detected format, as `rlm inspect` names it.
    format: Option<&'a serde_json::Value>,
}

impl<'a> ShownContext<'a> {
    fn of(part: &'a rlm_trace::ContextInfo) -> Self {
        Self {
            variable: &part.variable,
            name: part.name.as_deref(),
            chars: part.chars,
            lines: part.lines,
            format: part.metadata.as_ref().and_then(|m| m.get("format")),
        }
    }
}

/// A REPL variable as `--json` prints it: without its literal (the whole value).
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum VariableRecord<'a> {
    Variable {
        name: &'a str,
        python_type: &'a str,
        length: Option<u64>,
        repr_bytes: Option<u64>,
        preview: &'a str,
        /// Whether a later run can restore it (its literal was kept).
        restorable: bool,
        /// Why it cannot be restored, when it cannot.
        not_restorable: Option<&'a str>,
    },
}

impl<'a> VariableRecord<'a> {
    pub(super) fn of(variable: &'a VariableInfo) -> Self {
        Self::Variable {
            name: &variable.name,
            python_type: &variable.type_name,
            length: variable.length,
            repr_bytes: variable.repr_bytes,
            preview: &variable.preview,
            restorable: variable.literal.is_some(),
            not_restorable: variable.not_restorable.as_deref(),
        }
    }
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
