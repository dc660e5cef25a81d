//! `rlm query`: plan → search → concurrent extractors → synthesis, over the store.

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use rlm_query::{Query, QueryResult, QueryStatus};
use rlm_store::SearchMode;

use super::Outcome;
use super::embed::stored_model_embedder;
use crate::cli::{GlobalArgs, QueryRequest};
use crate::error::{self, AppError, llm_error, store_error};
use crate::output::count;
use crate::query_progress::QueryProgress;
use crate::settings::{QuerySettings, Sources};

/// What `rlm query --json` prints: one record with the report.
#[derive(Debug, serde::Serialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum QueryRecord {
    /// The report and how it was made.
    Result(QueryResult),
}

pub fn run(global: &GlobalArgs, sources: &Sources, args: QueryRequest) -> anyhow::Result<ExitCode> {
    let result = complete(global, sources, &args)?;
    report(global, result)
}

/// Runs the query as `args` say and returns its record as `--json` gives it: exit code 0
/// with a report, 1 without one.
#[cfg_attr(
    not(feature = "mcp"),
    expect(dead_code, reason = "only `rlm mcp` calls it")
)]
pub fn execute(
    global: &GlobalArgs,
    sources: &Sources,
    args: &QueryRequest,
) -> anyhow::Result<Outcome<QueryRecord>> {
    let result = complete(global, sources, args)?;
    let code = json_exit_code(&result);
    Ok(Outcome {
        code,
        ..Outcome::success(vec![QueryRecord::Result(result)])
    })
}

/// The query's exit code in `--json` mode.
fn json_exit_code(result: &QueryResult) -> ExitCode {
    if result.status == QueryStatus::Answered {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(error::EXIT_FAILED)
    }
}

/// The query run to its end.
fn complete(
    global: &GlobalArgs,
    sources: &Sources,
    args: &QueryRequest,
) -> anyhow::Result<QueryResult> {
    let mut settings = QuerySettings::resolve(args, sources)?;
    let store = settings.store.open_existing()?;
    // Loading a model takes a second or two: only when vectors exist and may be searched.
    let vectors = store.embedding_status().map_err(store_error)?;
    let embedder = if settings.options.mode != Some(SearchMode::Bm25) && vectors.embedded_chunks > 0
    {
        stored_model_embedder(None, vectors.model.as_deref(), sources)?
    } else {
        None
    };
    let client = settings.llm.build_client()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    if settings.options.window_tokens.is_none() {
        let configured = crate::settings::run::configured_windows(sources)?;
        let options = &settings.options;
        let models = [options.model.as_str(), options.subcall_model.as_str()];
        settings.options.window_tokens =
            runtime.block_on(smallest_window(&client, &models, &configured));
    }
    let mut query = Query::new(client, store, settings.options)
        .embedder(embedder)
        .prompts(settings.prompts);
    if let Some(dir) = settings.log_dir {
        query = query.log_dir(dir);
    }
    if let Some(observer) = crate::observers::query_events() {
        query = query.events(observer);
    } else if !global.quiet {
        query = query.events(Arc::new(QueryProgress::new()));
    }

    let question = settings.question;
    let outcome = runtime.block_on(async {
        tokio::select! {
            result = query.run(&question) => Ok(result),
            signal = crate::signals::stop_requested() => Err(signal),
        }
    });
    // The query's log is closed (`interrupted`) as its future is dropped with the runtime.
    runtime.shutdown_timeout(Duration::from_secs(2));
    outcome.map_err(AppError::stopped)?.map_err(query_error)
}

/// The smallest window of `models`: `[run.context_windows]`'s (`configured`), else what a
/// local server reports (llama.cpp `/props`), else the built-in table's; `None` when none
/// knows one. Batches and the synthesis input are cut to fit it.
async fn smallest_window(
    client: &rlm_llm::LlmClient,
    models: &[&str],
    configured: &rlm_llm::ContextWindows,
) -> Option<u64> {
    let builtin = rlm_llm::ContextWindows::builtin();
    let mut smallest: Option<u64> = None;
    for &model in models {
        let window = match configured.get(model) {
            Some(window) => Some(window),
            None => client
                .server_props(model)
                .await
                .and_then(|props| props.context_window)
                .or_else(|| builtin.get(model)),
        };
        if let Some(window) = window {
            smallest = Some(smallest.map_or(window, |known| known.min(window)));
        }
    }
    smallest
}

/// Prints the report (or the JSON result) and picks the exit code.
fn report(global: &GlobalArgs, result: QueryResult) -> anyhow::Result<ExitCode> {
    if !global.json {
        let mut out = crate::output::raw_stdout();
        writeln!(
            out,
            "{}",
            crate::output::for_stdout(result.report.trim_end())
        )?;
        out.flush()?;
    }
    if !global.quiet {
        let total = &result.usage.total.total;
        let cost = crate::output::totals_cost(total);
        let mut failed = if result.chunk_failures.is_empty() {
            String::new()
        } else {
            format!(
                " · {} not analysed",
                count(result.chunk_failures.len() as u64, "chunk")
            )
        };
        if !result.chunks_skipped.is_empty() {
            failed.push_str(&format!(
                " · {} skipped to keep the budget for the report",
                count(result.chunks_skipped.len() as u64, "chunk")
            ));
        }
        if result.usage.tools.calls > 0 {
            failed.push_str(&format!(
                " · {} by the report",
                count(result.usage.tools.calls as u64, "tool call")
            ));
        }
        // Every call that ran counts, failed ones (cut at the time limit, refused) included.
        let calls = if total.failures > 0 {
            format!(
                "{} ({} failed)",
                count(total.calls + total.failures, "model call"),
                total.failures
            )
        } else {
            count(total.calls, "model call")
        };
        if let Some(reason) = &result.stopped_early {
            failed.push_str(&format!(" · stopped early: {reason}"));
        }
        eprintln!(
            "{} · {} analysed of {}{failed} · {calls} · {} tokens · {cost} · {:.1}s",
            result.status.name(),
            count(result.chunks_analyzed as u64, "chunk"),
            result.chunks_selected,
            rlm_context::thousands(total.usage.total()),
            result.timings.total
        );
        if let Some(path) = &result.log {
            eprintln!(
                "trajectory: {}",
                crate::output::neutralize(&path.display().to_string())
            );
        }
    }
    if global.json {
        let code = json_exit_code(&result);
        crate::output::print_json(&QueryRecord::Result(result))?;
        return Ok(code);
    }
    let hint = match result.status {
        QueryStatus::Answered => return Ok(ExitCode::SUCCESS),
        QueryStatus::NoEvidence => "try other words, --mode bm25, a wider --path, or --scan all",
        QueryStatus::ExtractionFailed => {
            "every extractor batch failed; see the reasons above (or in --json) and the trajectory"
        }
        _ => "the report call failed; the findings were printed instead",
    };
    Err(
        AppError::failed(anyhow::anyhow!("no report: {}", result.status.name()))
            .with_hint(hint)
            .into(),
    )
}

/// Maps a pipeline error to an exit code and a hint.
fn query_error(err: rlm_query::Error) -> anyhow::Error {
    use rlm_query::Error as E;
    let hint = match &err {
        E::EmptyQuestion => "rlm query \"what do these files say about X?\"",
        E::InvalidOption(_) => "see rlm query --help",
        E::EmptyStore => "load something first with `rlm load PATH`, or pass --store DIR",
        E::EmptySelection(_) => "`rlm list` shows the stored buffers; widen --buffer or --path",
        E::OverBudget { .. } => {
            "raise --max-cost, narrow the selection with --buffer or --path, or use --scan search"
        }
        E::UnknownPrice(_) => {
            "add the model's price under [llm.prices.\"MODEL\"] in rlm.toml, or drop --max-cost"
        }
        E::BudgetTooSmall { .. } => {
            "raise --max-cost or --max-tokens, or make the work smaller: --batch-size, --max-tool-rounds 0"
        }
        _ => "",
    };
    match err {
        E::Store(inner) => store_error(inner),
        E::Model { stage, source } => llm_error(source).context(format!("the {stage} call failed")),
        E::Trace(_) | E::Task(_) => AppError::failed(err).into(),
        other => AppError::input(other).with_hint(hint).into(),
    }
}
