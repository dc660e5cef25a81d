//! `rlm mcp` offers its long calls (`run`, `query`) as tasks to a client that declares the
//! tasks extension: the call answers at once with a task handle, `tasks/get` shows the call's
//! progress and then its result, `tasks/cancel` stops it. A client without the extension, and
//! every short tool, gets the direct answer. Driven over stdio with raw JSON-RPC lines.

use std::time::{Duration, Instant};

use rlm_fake::FakeReply;
use serde_json::json;

use crate::mcp_session::Session;
use crate::support::{KEY, rlm_store_process, scripted, with_fake};

/// How long a task gets to reach the status a test waits for (a guard, not a measure).
const PATIENCE: Duration = Duration::from_secs(120);

fn with_tasks() -> serde_json::Value {
    json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } })
}

/// Polls `tasks/get` until the task's status is not `working`; returns the last answer.
fn settled(session: &mut Session, task: &str) -> serde_json::Value {
    let started = Instant::now();
    loop {
        let answer = session.request("tasks/get", json!({ "taskId": task }));
        if answer["result"]["status"] != "working" {
            return answer["result"].clone();
        }
        assert!(
            started.elapsed() < PATIENCE,
            "the task never settled: {answer}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A root model that answers with the context's last word, through code.
fn answering_from_the_context() -> [FakeReply; 2] {
    [
        FakeReply::text("```repl\nanswer = context.split()[-1]\nprint(answer)\n"),
        FakeReply::text("FINAL_VAR(answer)"),
    ]
}

fn run_call(model: &str) -> serde_json::Value {
    json!({
        "name": "run",
        "arguments": { "query": "What is the code?", "context": "the code is 7", "model": model },
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_a_task_the_client_polls_and_can_cancel() {
    let (dir, server) = scripted("root", answering_from_the_context()).await;
    server.script("slow", [FakeReply::hang()]);
    let mut command = rlm_store_process(dir.path());
    with_fake(&mut command, &server);
    command.arg("mcp");
    tokio::task::spawn_blocking(move || {
        let mut session = Session::start_with(&mut command, with_tasks());

        // The call answers at once with a task; polling gives the result a direct call gives.
        let created = session.request("tools/call", run_call("openai:root"));
        let handle = &created["result"];
        assert_eq!(handle["resultType"], "task", "{created}");
        assert_eq!(handle["status"], "working", "{created}");
        assert!(handle["pollIntervalMs"].as_u64().is_some(), "{created}");
        let task = handle["taskId"].as_str().unwrap().to_owned();
        let done = settled(&mut session, &task);
        assert_eq!(done["status"], "completed", "{done}");
        let result = &done["result"];
        assert_eq!(result["isError"], false, "{done}");
        let record = &result["structuredContent"]["records"][0];
        assert_eq!(record["type"], "result", "{done}");
        assert_eq!(record["answer"], "7", "{done}");
        // The status message followed the run's turns.
        let message = done["statusMessage"].as_str().unwrap_or_default();
        assert!(message.contains("turn 2"), "{done}");
        assert!(!done.to_string().contains(KEY));

        // A run whose model never answers: cancelled, it stops and ends `cancelled`.
        let created = session.request("tools/call", run_call("openai:slow"));
        let task = created["result"]["taskId"].as_str().unwrap().to_owned();
        let started = Instant::now();
        while server.requests_for("slow").is_empty() {
            assert!(
                started.elapsed() < PATIENCE,
                "the run never called its model"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let cancelled = session.request("tasks/cancel", json!({ "taskId": task }));
        assert!(cancelled.get("error").is_none(), "{cancelled}");
        let done = settled(&mut session, &task);
        assert_eq!(done["status"], "cancelled", "{done}");

        // An unknown task is an error naming it; a short tool answers directly.
        let unknown = session.request("tasks/get", json!({ "taskId": "no-such-task" }));
        assert!(unknown["error"]["message"].as_str().is_some(), "{unknown}");
        let inspected = session.call("inspect", json!({ "text": "a,b\n1,2\n" }));
        assert_eq!(inspected["isError"], false, "{inspected}");
        assert!(
            inspected
                .get("resultType")
                .is_none_or(|kind| kind != "task")
        );
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_the_tasks_extension_gets_the_run_directly() {
    let (dir, server) = scripted("root", answering_from_the_context()).await;
    let mut command = rlm_store_process(dir.path());
    with_fake(&mut command, &server);
    command.arg("mcp");
    tokio::task::spawn_blocking(move || {
        let mut session = Session::start(&mut command);
        let answer = session.request("tools/call", run_call("openai:root"));
        let result = &answer["result"];
        assert!(result.get("taskId").is_none(), "{answer}");
        assert_eq!(result["structuredContent"]["records"][0]["answer"], "7");
        // Without the extension, the task methods are refused.
        let refused = session.request("tasks/get", json!({ "taskId": "any" }));
        assert!(refused.get("error").is_some(), "{refused}");
    })
    .await
    .unwrap();
}
