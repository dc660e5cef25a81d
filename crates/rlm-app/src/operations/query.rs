//! `query`: plan → search → concurrent extractors → synthesis, over the store.

use rlm_query::{Query, QueryResult, QueryStatus};
use rlm_store::SearchMode;

use crate::error::{AppError, llm_error, store_error};
use crate::requests::QueryRequest;
use crate::settings::{QuerySettings, Sources};
use crate::{Context, ExitStatus, Outcome, Runtime};

/// What `rlm query --json` prints: one record with the report.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum QueryRecord {
    /// The report and how it was made.
    Result(QueryResult),
}

/// Runs the query as `request` says and gives its record: success with a report, failed
/// without one (the record says why).
pub fn query(
    sources: &Sources,
    request: &QueryRequest,
    context: &Context,
) -> anyhow::Result<Outcome<QueryRecord>> {
    let result = complete(sources, request, context)?;
    let status = if result.status == QueryStatus::Answered {
        ExitStatus::Success
    } else {
        ExitStatus::Failed
    };
    Ok(Outcome::ended(vec![QueryRecord::Result(result)], status))
}

/// The query run to its end.
fn complete(
    sources: &Sources,
    args: &QueryRequest,
    context: &Context,
) -> anyhow::Result<QueryResult> {
    let mut settings = QuerySettings::resolve(args, sources)?;
    let store = settings.store.open_existing()?;
    // Loading a model takes a second or two: only when vectors exist and may be searched.
    let vectors = store.embedding_status().map_err(store_error)?;
    let embedder = if settings.options.mode != Some(SearchMode::Bm25) && vectors.embedded_chunks > 0
    {
        super::embed::stored_model_embedder(None, vectors.model.as_deref(), sources)?
    } else {
        None
    };
    let client = settings.llm.build_client()?;
    let runtime = Runtime::new()?;
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
    query = query.events(context.query_events());

    let question = settings.question;
    // The query's log is closed (`interrupted`) as its future is dropped.
    runtime
        .until_stopped(&context.stop, query.run(&question))?
        .map_err(query_error)
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
