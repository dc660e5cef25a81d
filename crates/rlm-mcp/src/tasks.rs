//! Long calls as MCP tasks (the tasks extension, `io.modelcontextprotocol/tasks`): when the
//! client declared the extension, a `run` or `query` call answers at once with a task handle
//! and goes on in the background. The client polls `tasks/get` (its status message follows the
//! call's progress: a run's turns, a query's batches) until the task is `completed` with the
//! tool result a direct call would have given, and `tasks/cancel` stops it as Ctrl-C stops the
//! command line (the task ends `cancelled`). A client without the extension gets the direct
//! call, as before.

use std::time::Duration;

use rmcp::model::{CallToolResult, CreateTaskResult, Task};
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};
use tokio_util::sync::CancellationToken;

use crate::call::{self, Call};
use crate::progress::Reporter;
use rlm_app::settings::ModelBackend;

/// The tools whose calls become tasks: the ones that call models and may take minutes.
pub const LONG_TOOLS: [&str; 2] = ["run", "query"];

/// How long a task is kept from its creation; a call still running then is ended as failed.
/// Generous, as a run's own limits (`--timeout`, budgets) are what should end it first.
const TIME_TO_LIVE: Duration = Duration::from_secs(6 * 60 * 60);

/// How often a client is asked to poll.
const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// Starts `call` as a task of `tasks` and returns its handle for the client.
pub fn start(
    tasks: &TaskManager,
    call: Call,
    backends: Vec<ModelBackend>,
    tool: &str,
) -> CreateTaskResult {
    let options = TaskOptions::new()
        .with_ttl_ms(u64::try_from(TIME_TO_LIVE.as_millis()).ok())
        .with_poll_interval_ms(u64::try_from(POLL_INTERVAL.as_millis()).unwrap_or(1_000))
        .with_status_message(format!("{tool}: started"));
    let task: Task = tasks.spawn(options, move |context| {
        Box::pin(async move { run(context, call, backends).await })
    });
    CreateTaskResult::new(task)
}

/// Runs the call, its progress in the task's status message; a `tasks/cancel` stops it.
async fn run(
    context: TaskContext,
    call: Call,
    backends: Vec<ModelBackend>,
) -> Result<CallToolResult, TaskExit> {
    let cancel = CancellationToken::new();
    let watcher = {
        let context = context.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            context.cancelled().await;
            cancel.cancel();
        })
    };
    let reporter = Reporter::for_task(context.clone());
    let result = call::command(call, Some(reporter), backends, cancel).await;
    watcher.abort();
    if context.is_cancel_requested() {
        return Err(TaskExit::Cancelled);
    }
    Ok(result)
}
