//! `rlm sessions list|show|rm`: the sessions `rlm run --session NAME` continues.

use std::io::Write as _;
use std::process::ExitCode;

use rlm_trace::{ContextState, SessionFile};

use crate::cli::{GlobalArgs, SessionsAction, SessionsArgs};
use crate::error::CliError;
use crate::output::{self, count, for_stdout, human_bytes};
use crate::session::session_error;
use crate::settings::Sources;
use crate::settings::inspection::{check_session_name, session_store};

pub fn run(global: &GlobalArgs, sources: &Sources, args: SessionsArgs) -> anyhow::Result<ExitCode> {
    let store = session_store(sources)?;
    match args.action {
        SessionsAction::List => {
            let sessions = store.list().map_err(|err| session_error(err, "*"))?;
            if sessions.is_empty() {
                output::terminal_note(
                    global.quiet,
                    "no sessions yet (`rlm run --session NAME …` starts one)",
                );
            }
            if global.json {
                for session in &sessions {
                    output::print_json(&summary(session))?;
                }
                return Ok(ExitCode::SUCCESS);
            }
            let mut out = output::stdout();
            for session in &sessions {
                writeln!(
                    out,
                    "{}  {}  {}  {}",
                    for_stdout(&session.name),
                    count(session.questions.len() as u64, "question"),
                    session
                        .updated
                        .replace('T', " ")
                        .chars()
                        .take(19)
                        .collect::<String>(),
                    for_stdout(&session.model),
                )?;
            }
            out.flush()?;
        }
        SessionsAction::Show(args) => {
            check_session_name(&args.name)?;
            let Some(session) = store
                .load(&args.name)
                .map_err(|err| session_error(err, &args.name))?
            else {
                return Err(missing(&args.name));
            };
            let variables = store
                .last_variables(&session)
                .map_err(|err| session_error(err, &args.name))?;
            let states: Vec<&str> = session
                .contexts
                .iter()
                .map(|context| match context.state() {
                    Ok(ContextState::Unchanged) => "unchanged",
                    Ok(ContextState::Changed) => "changed",
                    Ok(ContextState::Missing) => "missing",
                    Err(_) => "unreadable",
                })
                .collect();
            if global.json {
                let mut record = summary(&session);
                record["type"] = "session".into();
                record["dir"] = serde_json::to_value(store.dir().join(&session.name))?;
                record["contexts"] = session
                    .contexts
                    .iter()
                    .zip(&states)
                    .map(|(context, state)| {
                        let mut value = serde_json::to_value(context).unwrap_or_default();
                        value["state"] = (*state).into();
                        value
                    })
                    .collect();
                record["questions"] = serde_json::to_value(&session.questions)?;
                output::print_json(&record)?;
                for variable in &variables.variables {
                    output::print_json(&super::runs::variable_json(variable))?;
                }
                return Ok(ExitCode::SUCCESS);
            }
            let mut out = output::stdout();
            writeln!(
                out,
                "session {} · {} · {} · created {}",
                for_stdout(&session.name),
                count(session.questions.len() as u64, "question"),
                for_stdout(&session.model),
                session.created
            )?;
            for ((index, context), state) in session.contexts.iter().enumerate().zip(&states) {
                writeln!(
                    out,
                    "context_{index}: {} · {} · {state}",
                    for_stdout(&context.name),
                    human_bytes(context.bytes),
                )?;
            }
            for (index, question) in session.questions.iter().enumerate() {
                writeln!(
                    out,
                    "{}. [{}] {} · {}",
                    index + 1,
                    for_stdout(&question.run_id),
                    for_stdout(&super::runs::one_line(&question.question, 80)),
                    question.status
                )?;
                if let Some(answer) = &question.answer {
                    writeln!(
                        out,
                        "   → {}",
                        for_stdout(&super::runs::one_line(answer, 100))
                    )?;
                }
            }
            if !variables.variables.is_empty() {
                writeln!(out, "variables for the next question:")?;
            }
            for variable in &variables.variables {
                let restorable = match &variable.not_restorable {
                    None => String::from("restored"),
                    Some(why) => format!("not restorable: {why}"),
                };
                writeln!(
                    out,
                    "  {} · {} · {} · {restorable}",
                    for_stdout(&variable.name),
                    variable.type_name,
                    for_stdout(&super::runs::one_line(&variable.preview, 60)),
                )?;
            }
            out.flush()?;
        }
        SessionsAction::Rm(args) => {
            check_session_name(&args.name)?;
            if !store
                .remove(&args.name)
                .map_err(|err| session_error(err, &args.name))?
            {
                return Err(missing(&args.name));
            }
            if global.json {
                output::print_json(&serde_json::json!({
                    "type": "removed",
                    "session": args.name,
                }))?;
            } else if !global.quiet {
                eprintln!("removed session {}", for_stdout(&args.name));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn summary(session: &SessionFile) -> serde_json::Value {
    serde_json::json!({
        "type": "session",
        "name": session.name,
        "questions": session.questions.len(),
        "created": session.created,
        "updated": session.updated,
        "model": session.model,
        "last_run_id": session.questions.last().map(|q| &q.run_id),
    })
}

fn missing(name: &str) -> anyhow::Error {
    CliError::input(anyhow::anyhow!("no session `{name}`"))
        .with_hint("`rlm sessions list` lists them; `rlm run --session NAME …` starts one")
        .into()
}
