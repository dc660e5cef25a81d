//! Running one tool call: its operation on a thread of its own, with its events as progress
//! notifications and the client's cancellation as its stop, turned into an MCP tool result.
//!
//! A thread per call keeps calls apart: an operation builds its own async runtime (which
//! cannot start on a runtime's thread), and a panic ends that thread only, so the session goes
//! on.

use std::path::PathBuf;

use rlm_app::settings::{ModelBackend, Sources};
use rlm_app::{Context, Outcome, ReplyLimit, Shown, StopHandle};
use rlm_context::root::FileRoot;
use rmcp::model::{CallToolResult, ContentBlock, Resource};
use tokio_util::sync::CancellationToken;

use super::progress::{CallEvents, Reporter};
use super::tools::Job;

/// What a finished operation left: its outcome, and the problems it reported on the way.
type Finished = (anyhow::Result<Outcome<serde_json::Value>>, Vec<String>);

/// The operation a tool call stands for, and where it runs.
pub struct Call {
    pub job: Job,
    /// The server's `--config`.
    pub config: Option<PathBuf>,
    /// Where the operation may read and write files (`Root::fence`).
    pub root: FileRoot,
    /// The server's store, if it was started with one.
    pub store: Option<PathBuf>,
    /// The most the result carries (`--max-reply-bytes`).
    pub reply: ReplyLimit,
}

/// Runs the call's operation in this process, confined to the call's root, and returns its
/// result for the client; with a `reporter`, its progress goes to the client as it runs;
/// `backends` are model providers offered to it besides the configured ones; `cancel` (the
/// client cancelled the request) stops it as Ctrl-C stops the command line.
pub async fn command(
    call: Call,
    reporter: Option<Reporter>,
    backends: Vec<ModelBackend>,
    cancel: CancellationToken,
) -> CallToolResult {
    let Call {
        job,
        config,
        root,
        store,
        reply,
    } = call;
    let mut sources = backends.into_iter().fold(
        Sources::from_process(config).with_root(root),
        Sources::with_model_backend,
    );
    if let Some(store) = store {
        sources = sources.with_store(store);
    }
    let (events, updates) = match reporter {
        Some(_) => {
            let (events, updates) = CallEvents::reporting();
            (events, Some(updates))
        }
        None => (CallEvents::silent(), None),
    };
    let stop = StopHandle::new();
    let context = Context::new(events.clone(), stop.clone()).with_reply_limit(reply);
    let operation = isolated(move || {
        let outcome = job(&sources, &context);
        (outcome, events.problems())
    });
    tokio::pin!(operation);
    let mut updates = updates;
    loop {
        tokio::select! {
            Some(update) = async { updates.as_mut()?.recv().await } => {
                if let Some(reporter) = &reporter {
                    reporter.send(update).await;
                }
            }
            () = cancel.cancelled(), if !stop.is_stopped() => stop.stop(),
            result = &mut operation => {
                // Every update before the result: the client forgets the token with it.
                if let (Some(reporter), Some(updates)) = (&reporter, updates.as_mut()) {
                    while let Ok(update) = updates.try_recv() {
                        reporter.send(update).await;
                    }
                }
                return result;
            }
        }
    }
}

/// Runs `operation` on a thread of its own; a panic becomes a tool error and ends only that
/// thread.
async fn isolated(operation: impl FnOnce() -> Finished + Send + 'static) -> CallToolResult {
    let (sender, receiver) = tokio::sync::oneshot::channel::<Finished>();
    let started = std::thread::Builder::new()
        .name("rlm-mcp-call".to_owned())
        .spawn(move || {
            // The client may have gone; then nobody waits for the result.
            let _ = sender.send(operation());
        });
    if let Err(err) = started {
        return refusal(&format!("error: cannot start a thread for the call: {err}"));
    }
    match receiver.await {
        Ok((result, problems)) => finished(result, &problems),
        // The sender is dropped without a result only when the operation panicked.
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

/// The operation's records as structured content and, one JSON line each, as text, followed
/// by its notes and the problems it reported and went on after; a link to a run's trajectory;
/// an error when it failed (its records kept when it had some).
fn finished(
    result: anyhow::Result<Outcome<serde_json::Value>>,
    problems: &[String],
) -> CallToolResult {
    let mut outcome = match result {
        Ok(outcome) => outcome,
        Err(err) => {
            let mut errors = problems.to_vec();
            errors.push(Shown::of(&err).plain());
            return refusal(&errors.join("\n"));
        }
    };
    let mut lines: Vec<String> = outcome.records.iter().map(ToString::to_string).collect();
    lines.extend(outcome.notes.iter().cloned());
    // Errors the operation reported and went on after (a path `load` could not read) follow
    // the records, as a terminal shows them beside the output.
    lines.extend(problems.iter().cloned());
    let failed = !outcome.status.is_success() || outcome.error.is_some();
    if let Some(err) = outcome.error.take() {
        lines.push(Shown::of(&err).plain());
    }
    let text = rlm_llm::secrets::mask(&lines.join("\n")).into_owned();
    let mut content = vec![ContentBlock::text(text)];
    content.extend(outcome.records.iter().filter_map(trajectory_link));
    let mut result = if failed {
        // The operation ran and said why it failed in its records (a run without an answer
        // within its budget).
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    let mut structured = serde_json::json!({ "records": outcome.records });
    if let Some(cursor) = outcome.next_cursor {
        structured["next_cursor"] = cursor.into();
    }
    result.structured_content = Some(structured);
    result
}

/// A link to the trajectory log a run's or query's record names (`log`), as a `file://`
/// resource: the client can show the run turn by turn (`rlm view` renders it).
fn trajectory_link(record: &serde_json::Value) -> Option<ContentBlock> {
    let log = record.get("log")?.as_str()?;
    let path = std::path::absolute(log).ok()?;
    let id = record
        .get("run_id")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("run");
    let resource = Resource::new(
        format!("file://{}", path.display()),
        format!("trajectory {id}"),
    )
    .with_mime_type("application/x-ndjson")
    .with_description("the run's trajectory log (JSON Lines); `rlm view` renders it as a page");
    Some(ContentBlock::resource_link(resource))
}

#[cfg(test)]
mod tests {
    use rlm_app::ExitStatus;
    use rlm_app::error::input_error;

    use super::*;

    fn text(result: &CallToolResult) -> String {
        let value = serde_json::to_value(&result.content).unwrap();
        value[0]["text"].as_str().unwrap().to_owned()
    }

    fn plain(err: anyhow::Error) -> String {
        Shown::of(&err).plain()
    }

    #[tokio::test]
    async fn a_panicking_call_is_a_tool_error_and_the_next_call_works() {
        let panicked = isolated(|| panic!("a bug")).await;
        assert_eq!(panicked.is_error, Some(true));
        assert!(text(&panicked).contains("panicked"), "{}", text(&panicked));

        let next = isolated(|| {
            let hit = serde_json::json!({ "type": "hit", "rank": 1 });
            (Ok(Outcome::success(vec![hit])), Vec::new())
        })
        .await;
        assert_eq!(next.is_error, Some(false));
        assert_eq!(text(&next), r#"{"type":"hit","rank":1}"#);
        let records = &next.structured_content.unwrap()["records"];
        assert_eq!(records[0]["type"], "hit");
        assert_eq!(records[0]["rank"], 1);
    }

    #[tokio::test]
    async fn errors_an_operation_reported_and_went_on_after_are_in_the_result() {
        let unreadable = plain(
            input_error("cannot read /root/~")
                .with_hint("check the path")
                .into(),
        );
        let failed = isolated(move || {
            (
                Ok(Outcome::ended(Vec::new(), ExitStatus::InputError)),
                vec![unreadable],
            )
        })
        .await;
        assert_eq!(failed.is_error, Some(true));
        assert_eq!(
            text(&failed),
            "error: cannot read /root/~\nhint: check the path"
        );

        // Before the error that ended the operation.
        let both = isolated(|| {
            (
                Err(input_error("cannot read b").into()),
                vec![plain(input_error("cannot read a").into())],
            )
        })
        .await;
        assert_eq!(text(&both), "error: cannot read a\nerror: cannot read b");
        // After the records and the notes.
        let partial = isolated(|| {
            let mut partial = Outcome::ended(
                vec![serde_json::json!({ "type": "load" })],
                ExitStatus::InputError,
            );
            partial.notes.push("note: skipped 2 files".to_owned());
            (
                Ok(partial),
                vec![plain(input_error("cannot read a").into())],
            )
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
    async fn a_failed_operation_gives_the_cli_message_and_hint() {
        let failed = isolated(|| {
            (
                Err(input_error("no buffer named `x`")
                    .with_hint("list them with `rlm list`")
                    .into()),
                Vec::new(),
            )
        })
        .await;
        assert_eq!(failed.is_error, Some(true));
        assert_eq!(
            text(&failed),
            "error: no buffer named `x`\nhint: list them with `rlm list`"
        );
    }

    #[tokio::test]
    async fn a_run_links_its_trajectory_and_an_ending_error_keeps_the_record() {
        let run = isolated(|| {
            let record = serde_json::json!({
                "type": "result", "status": "model_error", "log": "/logs/rlm_x.jsonl",
                "run_id": "r1"
            });
            let mut outcome = Outcome::ended(vec![record], ExitStatus::Failed);
            outcome.error = Some(input_error("the key is missing").into());
            (Ok(outcome), Vec::new())
        })
        .await;
        assert_eq!(run.is_error, Some(true));
        assert!(
            text(&run).ends_with("error: the key is missing"),
            "{}",
            text(&run)
        );
        let content = serde_json::to_value(&run.content).unwrap();
        assert_eq!(content[1]["type"], "resource_link");
        assert_eq!(content[1]["uri"], "file:///logs/rlm_x.jsonl");
        assert_eq!(
            run.structured_content.unwrap()["records"][0]["run_id"],
            "r1"
        );
    }
}
