//! `sessions list|show|rm`: the sessions `rlm run --session NAME` continues.

use std::path::PathBuf;

use rlm_trace::{ContextState, Question, SessionContext, SessionFile, VariableInfo};
use serde::Serialize;

use super::runs::VariableRecord;
use crate::error::AppError;
use crate::requests::{SessionsAction, SessionsRequest};
use crate::session::session_error;
use crate::settings::Sources;
use crate::settings::inspection::{check_session_name, session_store};
use crate::{Context, Outcome};

/// What `rlm sessions list|show|rm --json` prints, each record with its `type`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum SessionsRecord {
    /// `list` and `rm`.
    Listed(ListedRecord),
    /// `show`, first.
    Shown(Box<ShownRecord>),
    /// `show`: the variables the next question starts with.
    Variable(VariableRecord),
}

/// What `rlm sessions list|rm --json` prints.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ListedRecord {
    /// A session in the list.
    Session(Summary),
    /// A session `rm` removed.
    Removed { session: String },
}

/// A session in one line.
#[derive(Debug, Serialize)]
pub struct Summary {
    pub name: String,
    /// How many questions it has answered.
    pub questions: usize,
    pub created: String,
    pub updated: String,
    pub model: String,
    pub last_run_id: Option<String>,
}

impl Summary {
    fn of(session: &SessionFile) -> Self {
        Self {
            name: session.name.clone(),
            questions: session.questions.len(),
            created: session.created.clone(),
            updated: session.updated.clone(),
            model: session.model.clone(),
            last_run_id: session.questions.last().map(|q| q.run_id.clone()),
        }
    }
}

/// What `rlm sessions show --json` prints first (its variables follow).
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ShownRecord {
    /// The session whole: its questions and its contexts with their state on disk.
    Session {
        name: String,
        questions: Vec<Question>,
        created: String,
        updated: String,
        model: String,
        last_run_id: Option<String>,
        /// Where it is kept.
        dir: PathBuf,
        contexts: Vec<ShownContext>,
        /// The variables the next question starts with (a person's view; in JSON they
        /// follow as records of their own).
        #[serde(skip)]
        variables: Vec<VariableInfo>,
    },
}

/// A session's context and whether its file changed since (`unchanged`, `changed`,
/// `missing` or `unreadable`).
#[derive(Debug, Serialize)]
pub struct ShownContext {
    #[serde(flatten)]
    pub context: SessionContext,
    pub state: &'static str,
}

pub fn sessions(
    sources: &Sources,
    request: &SessionsRequest,
    _context: &Context,
) -> anyhow::Result<Outcome<SessionsRecord>> {
    let store = session_store(sources)?;
    match &request.action {
        SessionsAction::List => {
            let sessions = store.list().map_err(|err| session_error(err, "*"))?;
            let mut outcome = Outcome::success(
                sessions
                    .iter()
                    .map(|session| {
                        SessionsRecord::Listed(ListedRecord::Session(Summary::of(session)))
                    })
                    .collect(),
            );
            if outcome.records.is_empty() {
                outcome
                    .notes
                    .push("no sessions yet (`rlm run --session NAME …` starts one)".to_owned());
            }
            Ok(outcome)
        }
        SessionsAction::Show(named) => {
            check_session_name(&named.name)?;
            let Some(session) = store
                .load(&named.name)
                .map_err(|err| session_error(err, &named.name))?
            else {
                return Err(missing(&named.name));
            };
            let variables = store
                .last_variables(&session)
                .map_err(|err| session_error(err, &named.name))?;
            let summary = Summary::of(&session);
            let contexts = session
                .contexts
                .iter()
                .map(|context| ShownContext {
                    state: match context.state() {
                        Ok(ContextState::Unchanged) => "unchanged",
                        Ok(ContextState::Changed) => "changed",
                        Ok(ContextState::Missing) => "missing",
                        Err(_) => "unreadable",
                    },
                    context: context.clone(),
                })
                .collect();
            let mut records = vec![SessionsRecord::Shown(Box::new(ShownRecord::Session {
                name: summary.name,
                questions: session.questions.clone(),
                created: summary.created,
                updated: summary.updated,
                model: summary.model,
                last_run_id: summary.last_run_id,
                dir: store.dir().join(&session.name),
                contexts,
                variables: variables.variables.clone(),
            }))];
            records.extend(
                variables
                    .variables
                    .iter()
                    .map(|variable| SessionsRecord::Variable(VariableRecord::of(variable))),
            );
            Ok(Outcome::success(records))
        }
        SessionsAction::Rm(named) => {
            check_session_name(&named.name)?;
            if !store
                .remove(&named.name)
                .map_err(|err| session_error(err, &named.name))?
            {
                return Err(missing(&named.name));
            }
            Ok(Outcome::success(vec![SessionsRecord::Listed(
                ListedRecord::Removed {
                    session: named.name.clone(),
                },
            )]))
        }
    }
}

fn missing(name: &str) -> anyhow::Error {
    AppError::input(anyhow::anyhow!("no session `{name}`"))
        .with_hint("`rlm sessions list` lists them; `rlm run --session NAME …` starts one")
        .into()
}
