//! Running one tool call: the `rlm` command it stands for, on a thread of its own with its
//! stdout collected, turned into an MCP tool result.
//!
//! A thread per call keeps calls apart: a command builds its own async runtime (which cannot
//! start on a runtime's thread), its stdout goes to its own buffer, and a panic ends that
//! thread only, so the session goes on.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser as _;
use rlm_context::root::FileRoot;
use rmcp::model::{CallToolResult, ContentBlock};

use super::progress::Reporter;
use crate::cli::Cli;
use crate::error::Shown;
use crate::observers::observe;
use crate::output::capture::{self, Captured};
use crate::settings::{ModelBackend, Sources};

/// What a finished command left: its result, what it printed and the errors it reported.
type Finished = (anyhow::Result<ExitCode>, Captured);

/// The command a tool call stands for.
pub struct Call {
    /// The global flags (`--json`, …).
    pub global: Vec<OsString>,
    /// The subcommand and its arguments.
    pub arguments: Vec<OsString>,
    /// Where the command may read and write files (`Root::fence`).
    pub root: FileRoot,
}

/// Runs `rlm GLOBAL… ARGUMENTS…` in this process, confined to the call's root, and returns
/// its result for the client; with a `reporter`, the command's progress goes to the client as
/// it runs; `backends` are model providers offered to it besides the configured ones.
pub async fn command(
    call: Call,
    reporter: Option<Reporter>,
    backends: Vec<ModelBackend>,
) -> CallToolResult {
    let Call {
        global,
        arguments,
        root,
    } = call;
    let mut argv = vec![OsString::from("rlm")];
    argv.extend(global);
    argv.extend(arguments);
    let cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(err) => return refusal(err.render().to_string().trim_end()),
    };
    let dispatch = move || {
        let sources = backends.into_iter().fold(
            Sources::from_process(cli.global.config.clone()).with_root(root),
            Sources::with_model_backend,
        );
        crate::commands::dispatch_with(cli, sources)
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
    command: impl FnOnce() -> anyhow::Result<ExitCode> + Send + 'static,
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

/// The records a command printed (`--json` lines) as structured content, its text and the
/// errors it reported as text, and an error when it failed.
fn finished(result: anyhow::Result<ExitCode>, captured: &Captured) -> CallToolResult {
    let Captured { printed, reported } = captured;
    let code = match result {
        Ok(code) => code,
        Err(err) => {
            let mut errors = reported.clone();
            errors.push(Shown::of(&err).plain());
            return refusal(&errors.join("\n"));
        }
    };
    let mut text = String::from_utf8_lossy(printed);
    let records: Vec<serde_json::Value> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| serde_json::Value::from(line)))
        .collect();
    // Errors the command reported and went on after (a path `load` could not read) follow
    // the records in the text, as a terminal shows them beside the output.
    if !reported.is_empty() {
        let text = text.to_mut();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&reported.join("\n"));
    }
    let mut result = if code == ExitCode::SUCCESS {
        CallToolResult::success(vec![ContentBlock::text(text.into_owned())])
    } else {
        // The command ran and said why it failed in its records (e.g. a run without an
        // answer within its budget).
        CallToolResult::error(vec![ContentBlock::text(
            rlm_llm::secrets::mask(&text).into_owned(),
        )])
    };
    result.structured_content = Some(serde_json::json!({ "records": records }));
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(result: &CallToolResult) -> String {
        let value = serde_json::to_value(&result.content).unwrap();
        value[0]["text"].as_str().unwrap().to_owned()
    }

    #[tokio::test]
    async fn a_panicking_call_is_a_tool_error_and_the_next_call_works() {
        let panicked = isolated(|| panic!("a bug")).await;
        assert_eq!(panicked.is_error, Some(true));
        assert!(text(&panicked).contains("panicked"), "{}", text(&panicked));

        let next = isolated(|| {
            crate::output::print_record("hit", &serde_json::json!({ "rank": 1 }))?;
            Ok(ExitCode::SUCCESS)
        })
        .await;
        assert_eq!(next.is_error, Some(false));
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
            Ok(crate::error::report(&unreadable))
        })
        .await;
        assert_eq!(failed.is_error, Some(true));
        assert_eq!(
            text(&failed),
            "error: cannot read /root/~\nhint: check the path"
        );

        // Beside records, and before the error that ended the command.
        let both = isolated(|| {
            crate::output::print_record("load", &serde_json::json!({ "loaded": [] }))?;
            crate::error::report(&crate::error::input_error("cannot read a").into());
            Err(crate::error::input_error("cannot read b").into())
        })
        .await;
        assert_eq!(text(&both), "error: cannot read a\nerror: cannot read b");
        let partial = isolated(|| {
            crate::output::print_record("load", &serde_json::json!({ "loaded": [] }))?;
            Ok(crate::error::report(
                &crate::error::input_error("cannot read a").into(),
            ))
        })
        .await;
        assert_eq!(
            text(&partial),
            "{\"type\":\"load\",\"loaded\":[]}\nerror: cannot read a"
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
