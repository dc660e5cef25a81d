//! `rlm sessions list|show|rm`: the sessions `rlm run --session NAME` continues.

use std::io::Write as _;
use std::process::ExitCode;

use rlm_app::operations::sessions::{ListedRecord, SessionsRecord, ShownRecord};
use rlm_app::requests::SessionsRequest;

use super::Run;
use super::runs::one_line;
use crate::output::{self, count, for_stdout, human_bytes};

pub fn run(run: &Run<'_>, request: SessionsRequest) -> anyhow::Result<ExitCode> {
    let outcome = rlm_app::operations::sessions(&run.sources, &request, &run.context)?;
    let global = run.global;
    for note in &outcome.notes {
        output::terminal_note(global.quiet, note);
    }
    if global.json {
        run.print_json(&outcome)?;
        return run.exit(outcome);
    }
    let mut out = output::stdout();
    for record in &outcome.records {
        match record {
            SessionsRecord::Listed(ListedRecord::Session(session)) => writeln!(
                out,
                "{}  {}  {}  {}",
                for_stdout(&session.name),
                count(session.questions as u64, "question"),
                session
                    .updated
                    .replace('T', " ")
                    .chars()
                    .take(19)
                    .collect::<String>(),
                for_stdout(&session.model),
            )?,
            SessionsRecord::Listed(ListedRecord::Removed { session }) => {
                if !global.quiet {
                    eprintln!("removed session {}", for_stdout(session));
                }
            }
            SessionsRecord::Shown(shown) => print_session(&mut out, shown)?,
            SessionsRecord::Variable(_) => {}
        }
    }
    out.flush()?;
    run.exit(outcome)
}

fn print_session(out: &mut impl std::io::Write, shown: &ShownRecord) -> std::io::Result<()> {
    let ShownRecord::Session {
        name,
        questions,
        created,
        model,
        contexts,
        variables,
        ..
    } = shown;
    writeln!(
        out,
        "session {} · {} · {} · created {created}",
        for_stdout(name),
        count(questions.len() as u64, "question"),
        for_stdout(model),
    )?;
    for (index, shown) in contexts.iter().enumerate() {
        writeln!(
            out,
            "context_{index}: {} · {} · {}",
            for_stdout(&shown.context.name),
            human_bytes(shown.context.bytes),
            shown.state
        )?;
    }
    for (index, question) in questions.iter().enumerate() {
        writeln!(
            out,
            "{}. [{}] {} · {}",
            index + 1,
            for_stdout(&question.run_id),
            for_stdout(&one_line(&question.question, 80)),
            question.status
        )?;
        if let Some(answer) = &question.answer {
            writeln!(out, "   → {}", for_stdout(&one_line(answer, 100)))?;
        }
    }
    if !variables.is_empty() {
        writeln!(out, "variables for the next question:")?;
    }
    for variable in variables {
        let restorable = match &variable.not_restorable {
            None => String::from("restored"),
            Some(why) => format!("not restorable: {why}"),
        };
        writeln!(
            out,
            "  {} · {} · {} · {restorable}",
            for_stdout(&variable.name),
            variable.type_name,
            for_stdout(&one_line(&variable.preview, 60)),
        )?;
    }
    Ok(())
}
