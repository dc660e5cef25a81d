//! Running one tool call: its command's entry point on a thread of its own, with anything it
//! prints and the errors it reports collected, turned into an MCP tool result.
//!
//! A thread per call keeps calls apart: a command builds its own async runtime (which cannot
//! start on a runtime's thread), its output goes to its own buffer, and a panic ends that
//! thread only, so the session goes on.

use std::path::PathBuf;
use std::process::ExitCode;

use rlm_context::root::FileRoot;
use rmcp::model::{CallToolResult, ContentBlock};

use super::progress::Reporter;
use super::tools::Job;
use crate::cli::{ColorChoice, GlobalArgs};
use crate::commands::Outcome;
use crate::error::Shown;
use crate::observers::observe;
use crate::output::capture::{self, Captured};
use crate::settings::{ModelBackend, Sources};

/// What a finished command left: its outcome, and what it printed and reported.
type Finished = (anyhow::Result<Outcome<serde_json::Value>>, Captured);

/// The command a tool call stands for.
pub struct Call {
    pub job: Job,
    /// The server's `--config`.
    pub config: Option<PathBuf>,
    /// Where the command may read and write files (`Root::fence`).
    pub root: FileRoot,
}

/// Runs the call's command in this process, confined to the call's root, and returns its
/// result for the client; with a `reporter`, the command's progress goes to the client as
/// it runs; `backends` are model providers offered to it besides the configured ones.
pub async fn command(
    call: Call,
    reporter: Option<Reporter>,
    backends: Vec<ModelBackend>,
) -> CallToolResult {
    let Call { job, config, root } = call;
    let dispatch = move || {
        let sources = backends.into_iter().fold(
            Sources::from_process(config.clone()).with_root(root),
            Sources::with_model_backend,
        );
        // As `rlm --json --quiet --color never`: records, no progress on stderr, no colour.
        let global = GlobalArgs {
            verbose: 0,
            quiet: true,
            json: true,
            color: ColorChoice::Never,
            config,
        };
        job(&global, &sources)
    };
    let Some(reporter) = reporter else {
        return isolated(dispatch).await;
    };
    let (observers, mut updates) = super::progress::observers();
    let call = isolated(move || observe(observers, dispatch));
    tokio::pin!(call);
    loop {
        tokio::select! {
            Some(update) = updates.recv() => reporter.send(update).await,
            result = &mut call => {
                // Every update before the result: the client forgets the token with it.
                while let Ok(update) = updates.try_recv() {
                    reporter.send(update).await;
                }
                return result;
            }
        }
    }
}

/// Runs `command` on a thread of its own with its stdout collected; a panic becomes a tool
/// error and ends only that thread.
async fn isolated(
    command: impl FnOnce() -> anyhow::Result<Outcome<serde_json::Value>> + Send + 'static,
) -> CallToolResult {
    let (sender, receiver) = tokio::sync::oneshot::channel::<Finished>();
    let started = std::thread::Builder::new()
        .name("rlm-mcp-call".to_owned())
        .spawn(move || {
            let finished = capture::run(command);
            // The client may have gone; then nobody waits for the result.
            let _ = sender.send(finished);
        });
    if let Err(err) = started {
        return refusal(&format!("error: cannot start a thread for the call: {err}"));
    }
    match receiver.await {
        Ok((result, captured)) => finished(result, &captured),
        // The sender is dropped without a result only when the command panicked.
        Err(_) => refusal(
            "error: the call failed inside rlm (a bug: it panicked; the message is on the \
             server's stderr). The session goes on.",
        ),
    }
}

/// A tool error with `message` as its text, configured API keys masked (`rlm_llm::secrets`).
pub fn refusal(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(rlm_llm::secrets::mask(message))])
}

/// The command's records as structured content and, one JSON line each, as text, followed by
/// its notes, anything it printed and the errors it reported and went on after; an error when
/// it failed.
fn finished(
    result: anyhow::Result<Outcome<serde_json::Value>>,
    captured: &Captured,
) -> CallToolResult {
    let Captured { printed, reported } = captured;
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(err) => {
            let mut errors = reported.clone();
            errors.push(Shown::of(&err).plain());
            return refusal(&errors.join("\n"));
        }
    };
    let mut lines: Vec<String> = outcome.records.iter().map(ToString::to_string).collect();
    lines.extend(outcome.notes.iter().cloned());
    let printed = String::from_utf8_lossy(printed);
    lines.extend(printed.lines().map(str::to_owned));
    // Errors the command reported and went on after (a path `load` could not read) follow
    // the records, as a terminal shows them beside the output.
    lines.extend(reported.iter().cloned());
    let text = rlm_llm::secrets::mask(&lines.join("\n")).into_owned();
    let mut result = if outcome.code == ExitCode::SUCCESS {
        CallToolResult::success(vec![ContentBlock::text(text)])
    } else {
        // The command ran and said why it failed in its records (e.g. a run without an
        // answer within its budget).
        CallToolResult::error(vec![ContentBlock::text(text)])
    };
    result.structured_content = Some(serde_json::json!({ "records": outcome.records }));
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(result: &CallToolResult) -> String {
        let value = serde_json::to_value(&result.content).unwrap();
        value[0]["text"].as_str().unwrap().to_owned()
    }

    /// An outcome with `records`, ending with `code`.
    fn outcome(records: Vec<serde_json::Value>, code: ExitCode) -> Outcome<serde_json::Value> {
        Outcome {
            code,
            ..Outcome::success(records)
        }
    }

    #[tokio::test]
    async fn a_panicking_call_is_a_tool_error_and_the_next_call_works() {
        let panicked = isolated(|| panic!("a bug")).await;
        assert_eq!(panicked.is_error, Some(true));
        assert!(text(&panicked).contains("panicked"), "{}", text(&panicked));

        let next = isolated(|| {
            let hit = serde_json::json!({ "type": "hit", "rank": 1 });
            Ok(outcome(vec![hit], ExitCode::SUCCESS))
        })
        .await;
        assert_eq!(next.is_error, Some(false));
        assert_eq!(text(&next), r#"{"type":"hit","rank":1}"#);
        let records = &next.structured_content.unwrap()["records"];
        assert_eq!(records[0]["type"], "hit");
        assert_eq!(records[0]["rank"], 1);
    }

    #[tokio::test]
    async fn errors_a_command_reported_and_went_on_after_are_in_the_result() {
        let failed = isolated(|| {
            let unreadable = crate::error::input_error("cannot read /root/~")
                .with_hint("check the path")
                .into();
            Ok(outcome(Vec::new(), crate::error::report(&unreadable)))
        })
        .await;
        assert_eq!(failed.is_error, Some(true));
        assert_eq!(
            text(&failed),
            "error: cannot read /root/~\nhint: check the path"
        );

        // Before the error that ended the command.
        let both = isolated(|| {
            crate::error::report(&crate::error::input_error("cannot read a").into());
            Err(crate::error::input_error("cannot read b").into())
        })
        .await;
        assert_eq!(text(&both), "error: cannot read a\nerror: cannot read b");
        // After the records and the notes.
        let partial = isolated(|| {
            let code = crate::error::report(&crate::error::input_error("cannot read a").into());
            let mut partial = outcome(vec![serde_json::json!({ "type": "load" })], code);
            partial.notes.push("note: skipped 2 files".to_owned());
            Ok(partial)
        })
        .await;
        assert_eq!(partial.is_error, Some(true));
        assert_eq!(
            text(&partial),
            "{\"type\":\"load\"}\nnote: skipped 2 files\nerror: cannot read a"
        );
        assert_eq!(
            partial.structured_content.unwrap()["records"][0]["type"],
            "load"
        );
    }

    #[tokio::test]
    async fn a_failed_command_gives_the_cli_message_and_hint() {
        let failed = isolated(|| {
            Err(crate::error::input_error("no buffer named `x`")
                .with_hint("list them with `rlm list`")
                .into())
        })
        .await;
        assert_eq!(failed.is_error, Some(true));
        assert_eq!(
            text(&failed),
            "error: no buffer named `x`\nhint: list them with `rlm list`"
        );
    }
}
