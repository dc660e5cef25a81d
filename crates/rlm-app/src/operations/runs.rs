//! `runs list` and `runs show`: past runs from their trajectory logs — the contexts, each
//! turn's code, output, sub-calls and usage, the result, and the REPL's variables at the end
//! (the log's `variables` line).

use std::path::PathBuf;

use rlm_trace::{ContextInfo, RunSummary, Trajectory, TurnSummary, VariableInfo};
use serde::Serialize;

use super::view::{find_log, trace_error};
use crate::error::AppError;
use crate::requests::{RunsAction, RunsListRequest, RunsRequest, RunsShowRequest};
use crate::settings::{RunsSettings, Sources, ViewTarget};
use crate::text::count;
use crate::{Context, Outcome};

/// What `rlm runs list|show --json` prints, each record with its `type`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum RunsRecord {
    /// `list`: a run, newest first.
    Listed(ListedRun),
    /// `show`: the run, then its turns.
    Shown(ShownRecord),
    /// `show --vars`: a REPL variable at the end of the run.
    Variable(VariableRecord),
}

/// What `rlm runs show --json` prints before the variables.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ShownRecord {
    /// The run: its models, question, contexts and how it ended (`null`s while unfinished).
    Run(Box<ShownRun>),
    /// One turn: its code, output, sub-calls and usage.
    Turn(Box<TurnSummary>),
}

/// A run in the list, as `rlm runs list --json` prints it.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ListedRun {
    Run(RunSummary),
}

/// The run `rlm runs show` shows.
#[derive(Debug, Serialize)]
pub struct ShownRun {
    pub run_id: String,
    pub log: PathBuf,
    pub model: String,
    pub subcall_model: String,
    pub question: String,
    pub contexts: Vec<ShownContext>,
    pub status: Option<rlm_trace::Status>,
    pub answer: Option<String>,
    pub turns: Option<u32>,
    pub usage: Option<rlm_llm::ModelTotals>,
    pub cost_usd: Option<f64>,
    pub seconds: Option<f64>,
    /// The contexts as the log describes them (for a person; not in JSON).
    #[serde(skip)]
    pub context_parts: Vec<ContextInfo>,
    /// The REPL's variables at the end, with `vars` (for a person; in JSON they follow as
    /// records of their own).
    #[serde(skip)]
    pub variables: Option<rlm_trace::VariablesSnapshot>,
}

/// A context of a run as `runs show --json` gives it.
#[derive(Debug, Serialize)]
pub struct ShownContext {
    pub variable: String,
    pub name: Option<String>,
    pub chars: u64,
    pub lines: u64,
    /// The detected format, as `rlm inspect` names it.
    pub format: Option<serde_json::Value>,
}

impl ShownContext {
    fn of(part: &ContextInfo) -> Self {
        Self {
            variable: part.variable.clone(),
            name: part.name.clone(),
            chars: part.chars,
            lines: part.lines,
            format: part
                .metadata
                .as_ref()
                .and_then(|m| m.get("format"))
                .cloned(),
        }
    }
}

/// A REPL variable as `--json` prints it: without its literal (the whole value).
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum VariableRecord {
    Variable {
        name: String,
        python_type: String,
        length: Option<u64>,
        repr_bytes: Option<u64>,
        preview: String,
        /// Whether a later run can restore it (its literal was kept).
        restorable: bool,
        /// Why it cannot be restored, when it cannot.
        not_restorable: Option<String>,
    },
}

impl VariableRecord {
    pub fn of(variable: &VariableInfo) -> Self {
        Self::Variable {
            name: variable.name.clone(),
            python_type: variable.type_name.clone(),
            length: variable.length,
            repr_bytes: variable.repr_bytes,
            preview: variable.preview.clone(),
            restorable: variable.literal.is_some(),
            not_restorable: variable.not_restorable.clone(),
        }
    }
}

pub fn runs(
    sources: &Sources,
    request: &RunsRequest,
    context: &Context,
) -> anyhow::Result<Outcome<RunsRecord>> {
    match &request.action {
        RunsAction::List(list_request) => list(sources, list_request, context),
        RunsAction::Show(show_request) => show(sources, show_request, context),
    }
}

fn list(
    sources: &Sources,
    request: &RunsListRequest,
    _context: &Context,
) -> anyhow::Result<Outcome<RunsRecord>> {
    let settings = RunsSettings::resolve(request.log.as_ref(), sources)?;
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
    let mut outcome = Outcome::success(
        runs.into_iter()
            .take(request.limit)
            .map(|run| RunsRecord::Listed(ListedRun::Run(run)))
            .collect(),
    );
    if outcome.records.is_empty() {
        outcome
            .notes
            .push(format!("no run logs in {}", settings.log_dir.display()));
    }
    Ok(outcome)
}

fn show(
    sources: &Sources,
    request: &RunsShowRequest,
    _context: &Context,
) -> anyhow::Result<Outcome<RunsRecord>> {
    let settings = RunsSettings::resolve(request.log.as_ref(), sources)?;
    let target = match request.run.as_str() {
        "last" => ViewTarget::Last,
        run => crate::settings::view::target(run),
    };
    let path = find_log(
        &target,
        Some(&settings.log_dir),
        "`last` (`rlm runs show last`)",
    )?;
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
        .filter(|turn| request.turn.is_none_or(|wanted| turn.iteration == wanted))
        .map(TurnSummary::of)
        .collect();
    if let Some(wanted) = request.turn
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
    let mut shown = Outcome::success(Vec::new());
    if request.vars && variables.is_none() {
        shown.notes.push(
            "this log has no `variables` line (the run was stopped, is still going, is a \
             child run, or was logged by an older rlm)"
                .to_owned(),
        );
    }
    shown
        .records
        .push(RunsRecord::Shown(ShownRecord::Run(Box::new(ShownRun {
            run_id: metadata.run_id.clone(),
            log: path.clone(),
            model: metadata.root_model.clone(),
            subcall_model: metadata.subcall_model.clone(),
            question: metadata.query.clone(),
            contexts: metadata
                .contexts
                .parts
                .iter()
                .map(ShownContext::of)
                .collect(),
            status: outcome.map(|o| o.status),
            answer: outcome.and_then(|o| o.answer.clone()),
            turns: outcome.map(|o| o.iterations),
            usage: outcome.map(|o| o.usage.total.clone()),
            cost_usd: outcome.map(|o| o.usage.total.cost_usd),
            seconds: outcome.map(|o| o.seconds),
            context_parts: metadata.contexts.parts.clone(),
            variables: variables.filter(|_| request.vars).cloned(),
        }))));
    shown.records.extend(
        turns
            .into_iter()
            .map(|turn| RunsRecord::Shown(ShownRecord::Turn(Box::new(turn)))),
    );
    if request.vars {
        shown.records.extend(
            variables
                .map(|v| v.variables.as_slice())
                .unwrap_or_default()
                .iter()
                .map(|variable| RunsRecord::Variable(VariableRecord::of(variable))),
        );
    }
    Ok(shown)
}
