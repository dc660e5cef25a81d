//! `rlm sessions list|show|rm`: the sessions `rlm run --session NAME` continues.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use rlm_trace::{ContextState, Question, SessionContext, SessionFile};
use serde::Serialize;

use crate::cli::{GlobalArgs, SessionsAction, SessionsRequest};
use crate::error::AppError;
use crate::output::{self, count, for_stdout, human_bytes};
use crate::session::session_error;
use crate::settings::Sources;
use crate::settings::inspection::{check_session_name, session_store};

pub fn run(global: &GlobalArgs, sources: &Sources, args: SessionsRequest) -> anyhow::Result<ExitCode> {
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
                    output::print_json(&ListedRecord::Session(Summary::of(session)))?;
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
                let summary = Summary::of(&session);
                output::print_json(&ShownRecord::Session {
                    name: summary.name,
                    questions: &session.questions,
                    created: summary.created,
                    updated: summary.updated,
                    model: summary.model,
                    last_run_id: summary.last_run_id,
                    dir: store.dir().join(&session.name),
                    contexts: session
                        .contexts
                        .iter()
                        .zip(&states)
                        .map(|(context, state)| ShownContext { context, state })
                        .collect(),
                })?;
                for variable in &variables.variables {
                    output::print_json(&super::runs::VariableRecord::of(variable))?;
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
                output::print_json(&ListedRecord::Removed {
                    session: &args.name,
                })?;
            } else if !global.quiet {
                eprintln!("removed session {}", for_stdout(&args.name));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What `rlm sessions list|rm --json` prints.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ListedRecord<'a> {
    /// A session in the list.
    Session(Summary<'a>),
    /// A session `rm` removed.
    Removed { session: &'a str },
}

/// A session in one line.
#[derive(Serialize)]
struct Summary<'a> {
    name: &'a str,
    /// How many questions it has answered.
    questions: usize,
    created: &'a str,
    updated: &'a str,
    model: &'a str,
    last_run_id: Option<&'a str>,
}

impl<'a> Summary<'a> {
    fn of(session: &'a SessionFile) -> Self {
        Self {
            name: &session.name,
            questions: session.questions.len(),
            created: &session.created,
            updated: &session.updated,
            model: &session.model,
            last_run_id: session.questions.last().map(|q| q.run_id.as_str()),
        }
    }
}

/// What `rlm sessions show --json` prints first (its variables follow).
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ShownRecord<'a> {
    /// The session whole: its questions and its contexts with their state on disk.
    Session {
        name: &'a str,
        questions: &'a [Question],
        created: &'a str,
        updated: &'a str,
        model: &'a str,
        last_run_id: Option<&'a str>,
        /// Where it is kept.
        dir: PathBuf,
        contexts: Vec<ShownContext<'a>>,
    },
}

/// A session's context and whether its file changed since (`unchanged`, `changed`,
/// `missing` or `unreadable`).
#[derive(Serialize)]
struct ShownContext<'a> {
    #[serde(flatten)]
    context: &'a SessionContext,
    state: &'a str,
}

fn missing(name: &str) -> anyhow::Error {
    AppError::input(anyhow::anyhow!("no session `{name}`"))
        .with_hint("`rlm sessions list` lists them; `rlm run --session NAME …` starts one")
        .into()
}
