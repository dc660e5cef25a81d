//! `run`: the recursive language model loop over one or more contexts, or over the store.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use rlm_engine::{RunResult, Status};
use serde::Serialize;

use crate::error::{self, llm_error, store_error};
use crate::requests::RunRequest;
use crate::settings::{RunSettings, Sources, StoreSettings};
use crate::store_functions::StoreFunctions;
use crate::{Context, ExitStatus, Outcome, Runtime};

/// Runs the loop as `request` says and gives its result record: success for an answer the
/// model reached within its turns, failed otherwise (the record says why); when the root
/// model failed, the outcome's error is the model's, with its kind and hint.
pub fn run(
    sources: &Sources,
    request: &RunRequest,
    context: &Context,
) -> anyhow::Result<Outcome<RunRecord>> {
    let mut result = complete(sources, request, context)?;
    let status = result.outcome.status;
    let mut outcome = Outcome::success(vec![RunRecord::Result(RunSummary::of(&result))]);
    if status == Status::Answered {
        return Ok(outcome);
    }
    outcome.status = ExitStatus::Failed;
    // The model layer's error keeps its kind: a missing key or a replay miss is the user's to
    // fix (exit 2), with the same hint `rlm chat` gives.
    if !status.is_answered()
        && let Some(model_error) = result.error.take()
    {
        outcome.error = Some(llm_error(model_error).context(format!("no answer: {status}")));
    }
    Ok(outcome)
}

/// The loop run to its end as `args` say, its session saved.
fn complete(sources: &Sources, args: &RunRequest, context: &Context) -> anyhow::Result<RunResult> {
    let mut settings = RunSettings::resolve(args, sources)?;
    // Before any model is asked: a missing or damaged store is the user's to fix.
    let functions = match &settings.store {
        Some(store) => Some(store_functions(store, sources)?),
        None => None,
    };
    let given_contexts = settings.contexts.clone();
    let continuing = match &settings.session {
        Some(target) => Some(crate::session::prepare(
            target,
            &mut settings.contexts,
            settings.store.is_some(),
            context,
        )?),
        None => None,
    };
    let crate::contexts::Contexts { parts, spools } =
        crate::contexts::read(&settings.contexts, args.allow_binary, context)?;
    // The session records the contexts as the run read them (stdin's spool is copied).
    let session_parts = continuing.as_ref().map(|_| parts.clone());
    let model = settings.engine.model.clone();

    let runtime = Runtime::new()?;
    // A local server's own window, for models whose window nothing else gives.
    let client = runtime.block_on(crate::engine::client_with_reported_windows(
        &mut settings.engine,
    ))?;

    let mut builder = crate::engine::builder_with(settings.engine, client)?;
    if let Some(functions) = functions {
        builder = builder.functions(functions);
    }
    builder = builder.events(context.run_events());
    let rlm = builder.build().map_err(error::engine_error)?;

    let query = settings.query;
    let asked = rlm_trace::timestamp_now();
    let resume = continuing
        .as_ref()
        .map(|continuing| continuing.resume.clone())
        .unwrap_or_default();
    // A stopped run's future is dropped with its in-flight model calls and sandbox workers;
    // its log gets its `interrupted` result as the future goes.
    let outcome = runtime.until_stopped(
        &context.stop,
        rlm.completion_resuming(&query, parts, &resume),
    );
    drop(runtime);
    // An interrupted question is not added to its session: it stays as it was.
    let result = outcome?.context("the run could not continue")?;
    if let (Some(target), Some(continuing), Some(parts)) =
        (&settings.session, continuing, &session_parts)
    {
        let asked = crate::session::Asked {
            query: &query,
            model: &model,
            asked,
            sources: &given_contexts,
            parts,
        };
        // Before the spool goes: standard input's text is copied into the session. A session
        // that cannot be saved does not take the answer away: it is said, and the answer
        // printed.
        if let Err(err) = crate::session::save(target, continuing, &asked, &result) {
            context.warn(&format!("{err:#}"));
        }
    }
    // The sandbox workers that read standard input's copy are gone now.
    drop(spools);
    Ok(result)
}

/// The store's host functions for `--store`: the store must exist; its vectors' model is
/// opened when the store has vectors (semantic search), else only BM25 is offered.
fn store_functions(
    store: &StoreSettings,
    sources: &Sources,
) -> anyhow::Result<Arc<dyn rlm_engine::HostFunctions>> {
    let opened = store.open_existing()?;
    let vectors = opened.embedding_status().map_err(store_error)?;
    let embedder = if vectors.embedded_chunks > 0 {
        super::embed::stored_model_embedder(None, vectors.model.as_deref(), sources)
            .ok()
            .flatten()
    } else {
        None
    };
    let functions = StoreFunctions::new(opened, embedder).map_err(|err| {
        store_error(err).context(format!("cannot read the store at {}", store.location))
    })?;
    Ok(Arc::new(functions))
}

/// What `rlm run --json` prints: one record with the outcome (also what the Python package's
/// `completion` returns).
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RunRecord {
    /// How the run ended and what it cost.
    Result(RunSummary),
}

/// How a run ended and what it cost.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct RunSummary {
    /// `answered`, `forced_answer`, `no_evidence`, `iteration_limit`, `token_budget`, `cost_budget`,
    /// `call_budget`, `timeout`, `subcall_budget`, `error_limit`, `model_error` or
    /// `interrupted`.
    #[schemars(with = "String")]
    pub status: Status,
    /// The answer, or null when the run ended without one.
    pub answer: Option<String>,
    /// What the model had in `answer` when a budget stopped it, if anything.
    pub partial_answer: Option<String>,
    /// Root-model turns taken.
    pub iterations: u32,
    /// Tokens and cost per model and in total, and the sub-calls made.
    pub usage: RunUsage,
    /// Input and output tokens over the whole run.
    pub tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    /// Dollars over priced calls.
    pub cost_usd: f64,
    /// Whether some call's price was unknown (then `cost_usd` is a lower bound).
    pub cost_is_partial: bool,
    pub seconds: f64,
    /// The trajectory file, when logging.
    pub log: Option<PathBuf>,
    pub run_id: String,
    /// Why the root model failed, when it did.
    pub error: Option<String>,
}

/// A run's model usage.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct RunUsage {
    /// Per model reference (`provider:model`): calls, tokens and cost.
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub models: std::collections::BTreeMap<String, rlm_llm::ModelTotals>,
    /// All models together.
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub total: rlm_llm::ModelTotals,
    /// Sub-calls made by the run and below it.
    pub subcalls: u64,
}

impl RunSummary {
    pub fn of(result: &RunResult) -> Self {
        let outcome = &result.outcome;
        let total = &outcome.usage.total;
        Self {
            status: outcome.status,
            answer: outcome.answer.clone(),
            partial_answer: outcome.partial_answer.clone(),
            iterations: outcome.iterations,
            usage: RunUsage {
                models: outcome.usage.models.clone(),
                total: total.clone(),
                subcalls: outcome.subcalls,
            },
            tokens: total.usage.total(),
            cache_read_tokens: total.usage.cache_read_tokens,
            cache_write_tokens: total.usage.cache_write_tokens,
            cost_usd: total.cost_usd,
            cost_is_partial: total.cost_is_partial(),
            seconds: outcome.seconds,
            log: result.trajectory.clone(),
            run_id: outcome.run_id.clone(),
            error: outcome.error.clone(),
        }
    }
}

/// What to change when a run ends without an answer.
pub fn limit_hint(status: Status) -> &'static str {
    match status {
        Status::TokenBudget => "raise --max-tokens, or narrow the query",
        Status::CostBudget => "raise --max-cost, or narrow the query",
        Status::Timeout => "raise --timeout, or narrow the query",
        Status::SubcallBudget => "raise --max-subcalls, or narrow the query",
        Status::ErrorLimit => {
            "the model's code kept failing; narrow the query or try a stronger --model"
        }
        _ => "raise --max-iterations, --max-tokens, --max-cost or --timeout, or narrow the query",
    }
}

/// What a [`completion`] left: the run's outcome, and what the next question of a persistent
/// session continues from.
#[derive(Debug)]
pub struct Completed {
    pub outcome: Outcome<RunRecord>,
    /// The variables this run left and every conversation so far.
    pub resume: rlm_engine::Resume,
}

/// The custom tools a front end gives a completion: the root run's, and those of its
/// `rlm_query` child runs (the root's when `None`).
#[derive(Debug, Default)]
pub struct Tools {
    pub root: Option<rlm_engine::Toolbox>,
    pub children: Option<rlm_engine::Toolbox>,
}

/// One question through the RLM loop built as `run` builds it from `options`, over `parts`
/// (texts and files a front end already holds), with `tools`, continuing from `resume`: the
/// Python package's `RLM.completion`, whose persistent sessions carry the
/// [`Completed::resume`].
pub fn completion(
    sources: &Sources,
    options: &crate::requests::LoopOptions,
    query: &str,
    parts: Vec<rlm_engine::ContextPart>,
    tools: Tools,
    resume: &rlm_engine::Resume,
    context: &Context,
) -> anyhow::Result<Completed> {
    let settings = crate::settings::LoopSettings::resolve(options, sources)?;
    let mut builder = crate::engine::builder(settings)?.events(context.run_events());
    if let Some(root) = tools.root {
        builder = builder.tools(root);
    }
    if let Some(children) = tools.children {
        builder = builder.sub_tools(children);
    }
    let rlm = builder.build().map_err(error::engine_error)?;
    let runtime = Runtime::new()?;
    let outcome =
        runtime.until_stopped(&context.stop, rlm.completion_resuming(query, parts, resume));
    drop(runtime);
    let mut result = outcome?.context("the run could not continue")?;
    let mut histories = resume.histories.clone();
    histories.push(result.conversation.clone());
    let next = rlm_engine::Resume {
        variables: result
            .variables
            .as_ref()
            .map(|snapshot| snapshot.variables.clone())
            .unwrap_or_default(),
        histories,
    };
    let status = result.outcome.status;
    let mut outcome = Outcome::success(vec![RunRecord::Result(RunSummary::of(&result))]);
    if status != Status::Answered {
        outcome.status = ExitStatus::Failed;
        if !status.is_answered()
            && let Some(model_error) = result.error.take()
        {
            outcome.error = Some(llm_error(model_error).context(format!("no answer: {status}")));
        }
    }
    Ok(Completed {
        outcome,
        resume: next,
    })
}
