//! `rlm run --session NAME`: before the run, the session's contexts (warning about any that
//! changed on disk) and what the run resumes from; after it, the question saved into the
//! session (`rlm_trace::SessionStore` writes each file atomically, `session.json` last).

use std::path::Path;

use anyhow::Context as _;
use rlm_engine::{ContextPart, Resume, RunResult};
use rlm_trace::{
    ContextState, Question, SESSION_VERSION, SessionContext, SessionFile, SessionStore,
    VariablesSnapshot,
};

use crate::error::AppError;
use crate::settings::{ContextSource, SessionTarget};

/// Chars of an answer kept in `session.json` (the whole answer is in the run's log).
const ANSWER_PREVIEW_CHARS: usize = 2_000;

/// A session as the run found it.
#[derive(Debug)]
pub struct Continuing {
    /// The session so far; `None` when this question starts it.
    pub existing: Option<SessionFile>,
    /// What the run resumes from.
    pub resume: Resume,
    /// The contexts are the session's own (none were given on the command line).
    pub reused_contexts: bool,
}

/// Loads the session and, when the command line gives no contexts, takes the session's
/// (`contexts` is filled in), warning about each file that changed since (a warning, shown
/// even with `--quiet`: the answer may rest on changed data).
pub fn prepare(
    target: &SessionTarget,
    contexts: &mut Vec<ContextSource>,
    uses_store: bool,
    operation: &crate::Context,
) -> anyhow::Result<Continuing> {
    let existing = target
        .store
        .load(&target.name)
        .map_err(|err| session_error(err, &target.name))?;
    let Some(session) = existing else {
        if contexts.is_empty() && !uses_store {
            return Err(AppError::input(anyhow::anyhow!(
                "session `{}` does not exist yet and no context is given",
                target.name
            ))
            .with_hint(
                "the first question of a session names its contexts: --context-file FILE, \
                 --context TEXT or --context -",
            )
            .into());
        }
        return Ok(Continuing {
            existing: None,
            resume: Resume::default(),
            reused_contexts: false,
        });
    };
    let reused_contexts = contexts.is_empty() && !uses_store;
    if reused_contexts {
        for context in &session.contexts {
            match context
                .state()
                .map_err(|err| session_error(err, &target.name))?
            {
                ContextState::Unchanged => {}
                ContextState::Changed => operation.warn(&format!(
                    "context {} changed on disk since session `{}` last used it; this \
                         question reads it as it is now, and the restored variables may \
                         describe the old contents",
                    context.path.display(),
                    target.name
                )),
                ContextState::Missing => {
                    return Err(AppError::input(anyhow::anyhow!(
                        "context {} of session `{}` is gone",
                        context.path.display(),
                        target.name
                    ))
                    .with_hint("give the contexts again with --context-file or --context")
                    .into());
                }
            }
            contexts.push(ContextSource::File(context.path.clone()));
        }
    }
    let variables = target
        .store
        .last_variables(&session)
        .map_err(|err| session_error(err, &target.name))?;
    let histories = target
        .store
        .histories(&session)
        .map_err(|err| session_error(err, &target.name))?;
    let restorable = variables.restorable().count();
    operation.info(&format!(
        "session {}: question {} · {} to restore · {} earlier conversation{}",
        target.name,
        session.questions.len() + 1,
        crate::text::count(restorable as u64, "variable"),
        histories.len(),
        if histories.len() == 1 { "" } else { "s" },
    ));
    Ok(Continuing {
        existing: Some(session),
        resume: Resume {
            variables: variables.variables,
            histories,
        },
        reused_contexts,
    })
}

/// What the question was, for [`save`].
#[expect(
    missing_debug_implementations,
    reason = "holds trait objects and borrowed parts"
)]
pub struct Asked<'a> {
    pub query: &'a str,
    pub model: &'a str,
    /// When it was asked (RFC 3339).
    pub asked: String,
    /// Where each context came from on the command line (empty when reused).
    pub sources: &'a [ContextSource],
    /// The contexts as the run read them (standard input's spool file still exists).
    pub parts: &'a [ContextPart],
}

/// Appends the question and its result to the session.
pub fn save(
    target: &SessionTarget,
    continuing: Continuing,
    asked: &Asked<'_>,
    result: &RunResult,
) -> anyhow::Result<()> {
    let store = &target.store;
    let index = continuing
        .existing
        .as_ref()
        .map_or(0, |session| session.questions.len());
    let contexts = match &continuing.existing {
        Some(session) if continuing.reused_contexts || asked.sources.is_empty() => session
            .contexts
            .iter()
            .map(SessionContext::refreshed)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|err| session_error(err, &target.name))?,
        _ => describe_contexts(store, &target.name, index, asked)?,
    };
    let question = Question {
        question: asked.query.to_owned(),
        run_id: result.outcome.run_id.clone(),
        log: result.trajectory.clone(),
        asked: asked.asked.clone(),
        status: result.outcome.status,
        answer: result
            .outcome
            .answer
            .as_deref()
            .map(|answer| rlm_engine::prompt::truncate(answer, ANSWER_PREVIEW_CHARS)),
        model: asked.model.to_owned(),
    };
    let mut session = continuing.existing.unwrap_or_else(|| SessionFile {
        version: SESSION_VERSION,
        name: target.name.clone(),
        created: asked.asked.clone(),
        updated: asked.asked.clone(),
        model: asked.model.to_owned(),
        contexts: Vec::new(),
        questions: Vec::new(),
    });
    session.updated = asked.asked.clone();
    session.model = asked.model.to_owned();
    session.contexts = contexts;
    session.questions.push(question);
    let variables = result
        .variables
        .clone()
        .unwrap_or_else(|| VariablesSnapshot {
            run_id: result.outcome.run_id.clone(),
            variables: Vec::new(),
        });
    store
        .save_question(&session, &variables, &result.conversation)
        .map_err(|err| session_error(err, &target.name))
        .with_context(|| format!("session `{}` was not saved", target.name))
}

/// The contexts given on the command line, as the session records them: files by their
/// absolute path, standard input and inline text as copies in the session's directory.
fn describe_contexts(
    store: &SessionStore,
    name: &str,
    index: usize,
    asked: &Asked<'_>,
) -> anyhow::Result<Vec<SessionContext>> {
    let mut contexts = Vec::new();
    for (part_index, (source, part)) in asked.sources.iter().zip(asked.parts).enumerate() {
        let context = match source {
            ContextSource::File(path) => {
                let absolute = std::path::absolute(path).unwrap_or_else(|_| path.clone());
                SessionContext::describe(&path.display().to_string(), &absolute, false)
            }
            ContextSource::Stdin | ContextSource::Inline(_) => {
                let copy = store
                    .context_copy_path(name, index, part_index)
                    .map_err(|err| session_error(err, name))?;
                copy_part(source, part, &copy)?;
                let label = if *source == ContextSource::Stdin {
                    "<stdin>"
                } else {
                    "<inline>"
                };
                SessionContext::describe(label, &copy, true)
            }
        };
        contexts.push(context.map_err(|err| session_error(err, name))?);
    }
    Ok(contexts)
}

/// Writes a context that is not a file of the user's to `copy`.
fn copy_part(source: &ContextSource, part: &ContextPart, copy: &Path) -> anyhow::Result<()> {
    let written = match (source, part.source()) {
        (ContextSource::Inline(text), _) => std::fs::write(copy, text),
        (_, rlm_engine::ContextSource::File(spool)) => std::fs::copy(spool, copy).map(drop),
        (_, rlm_engine::ContextSource::Inline(text)) => std::fs::write(copy, text.as_bytes()),
        _ => Err(std::io::Error::other(
            "this kind of context cannot be copied",
        )),
    };
    written.with_context(|| format!("cannot keep a copy of the context in {}", copy.display()))
}

/// A session file that cannot be read or written, said with the session's name; a bad name
/// or a damaged file is the user's to fix (exit 2).
pub fn session_error(err: rlm_trace::Error, name: &str) -> anyhow::Error {
    match err {
        rlm_trace::Error::InvalidSessionName { .. } => AppError::input(err).into(),
        rlm_trace::Error::Corrupt { .. } => AppError::input(err)
            .with_hint(format!(
                "the session was written by another rlm version or damaged; `rlm sessions rm \
                 {name}` deletes it"
            ))
            .into(),
        other => anyhow::Error::new(other).context(format!("session `{name}`")),
    }
}
