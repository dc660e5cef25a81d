//! `rlm run`: the recursive language model loop over one or more contexts.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use rlm_engine::{RunResult, Status};

use serde::Serialize;

use super::Outcome;
use super::embed::stored_model_embedder;
use crate::cli::{GlobalArgs, RunArgs};
use crate::error::{self, CliError, llm_error, store_error};
use crate::output::count;
use crate::progress::StderrProgress;
use crate::settings::{RunSettings, Sources, StoreSettings};
use crate::store_functions::StoreFunctions;

pub fn run(global: &GlobalArgs, sources: &Sources, args: RunArgs) -> anyhow::Result<ExitCode> {
    let result = complete(global, sources, &args)?;
    report(global, result)
}

/// Runs the loop as `args` say and returns its record as `--json` gives it: exit code 0 for
/// an answer the model reached within its turns, 1 otherwise; a failed root model is an error.
#[cfg_attr(
    not(feature = "mcp"),
    expect(dead_code, reason = "only `rlm mcp` calls it")
)]
pub fn execute(
    global: &GlobalArgs,
    sources: &Sources,
    args: &RunArgs,
) -> anyhow::Result<Outcome<RunRecord>> {
    let mut result = complete(global, sources, args)?;
    let code = json_exit_code(&mut result)?;
    Ok(Outcome {
        code,
        ..Outcome::success(vec![RunRecord::Result(RunSummary::of(&result))])
    })
}

/// The run's exit code in `--json` mode, or its model error.
fn json_exit_code(result: &mut RunResult) -> anyhow::Result<ExitCode> {
    let status = result.outcome.status;
    if status == Status::Answered {
        return Ok(ExitCode::SUCCESS);
    }
    // The model layer's error keeps its kind: a missing key or a replay miss is the user's to
    // fix (exit 2), in JSON mode too, with the same hint `rlm chat` gives.
    if !status.is_answered()
        && let Some(model_error) = result.error.take()
    {
        return Err(llm_error(model_error).context(format!("no answer: {status}")));
    }
    Ok(ExitCode::from(error::EXIT_FAILED))
}

/// The loop run to its end as `args` say, its session saved.
fn complete(global: &GlobalArgs, sources: &Sources, args: &RunArgs) -> anyhow::Result<RunResult> {
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
            global.quiet,
        )?),
        None => None,
    };
    let crate::contexts::Contexts { parts, spool } = crate::contexts::read(&settings.contexts)?;
    // The session records the contexts as the run read them (stdin's spool is copied).
    let session_parts = continuing.as_ref().map(|_| parts.clone());
    let model = settings.engine.model.clone();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    // A local server's own window, for models whose window nothing else gives.
    let engine = &mut settings.engine;
    let probe = engine.llm.build_client()?;
    let models = [engine.model.clone(), engine.subcall_model.clone()];
    let models: Vec<&str> = models.iter().map(String::as_str).collect();
    runtime.block_on(crate::engine::add_reported_windows(
        &probe,
        &mut engine.context_windows,
        &models,
    ));

    let mut builder = crate::engine::builder(settings.engine)?;
    if let Some(functions) = functions {
        builder = builder.functions(functions);
    }
    if let Some(observer) = crate::observers::run_events() {
        builder = builder.events(observer);
    } else if !global.quiet {
        builder = builder.events(Arc::new(StderrProgress::new(global.verbose > 0)));
    }
    let rlm = builder.build().map_err(error::engine_error)?;

    let query = settings.query;
    let asked = rlm_trace::timestamp_now();
    let resume = continuing
        .as_ref()
        .map(|continuing| continuing.resume.clone())
        .unwrap_or_default();
    let outcome = runtime.block_on(async {
        tokio::select! {
            result = rlm.completion_resuming(&query, parts, &resume) => Ok(result),
            signal = crate::signals::stop_requested() => Err(signal),
        }
    });
    // In-flight model calls and sandbox workers are dropped with the runtime; the run's log
    // gets its `interrupted` result as its future goes.
    runtime.shutdown_timeout(Duration::from_secs(2));
    // An interrupted question is not added to its session: it stays as it was.
    let result = outcome.map_err(CliError::stopped)?;
    let result = result.context("the run could not continue")?;
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
            eprintln!(
                "warning: {}",
                crate::output::neutralize(&format!("{err:#}"))
            );
        }
    }
    // The sandbox workers that read standard input's copy are gone now.
    drop(spool);
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
        stored_model_embedder(None, vectors.model.as_deref(), sources)
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
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RunRecord {
    /// How the run ended and what it cost.
    Result(RunSummary),
}

/// How a run ended and what it cost.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema))]
pub struct RunSummary {
    /// `answered`, `forced_answer`, `iteration_limit`, `token_budget`, `cost_budget`,
    /// `call_budget`, `timeout`, `subcall_budget`, `error_limit`, `model_error` or
    /// `interrupted`.
    #[cfg_attr(feature = "mcp", schemars(with = "String"))]
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
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema))]
pub struct RunUsage {
    /// Per model reference (`provider:model`): calls, tokens and cost.
    #[cfg_attr(
        feature = "mcp",
        schemars(with = "serde_json::Map<String, serde_json::Value>")
    )]
    pub models: std::collections::BTreeMap<String, rlm_llm::ModelTotals>,
    /// All models together.
    #[cfg_attr(
        feature = "mcp",
        schemars(with = "serde_json::Map<String, serde_json::Value>")
    )]
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

/// Prints the answer (or the JSON result) and picks the exit code.
fn report(global: &GlobalArgs, mut result: RunResult) -> anyhow::Result<ExitCode> {
    if global.json {
        crate::output::print_json(&RunRecord::Result(RunSummary::of(&result)))?;
    } else if let Some(answer) = &result.outcome.answer {
        // Byte-exact into a pipe or file; control characters neutralised on a terminal.
        let mut out = crate::output::raw_stdout();
        writeln!(out, "{}", crate::output::for_stdout(answer))?;
        out.flush()?;
    }
    if !global.quiet {
        let total = &result.outcome.usage.total;
        let cost = crate::output::totals_cost(total);
        eprintln!(
            "{} · {} · {} · {} tokens{} · {cost} · {:.1}s",
            result.outcome.status,
            count(u64::from(result.outcome.iterations), "turn"),
            count(total.calls, "model call"),
            rlm_context::thousands(total.usage.total()),
            crate::output::cache_note(&total.usage),
            result.outcome.seconds
        );
        if let Some(path) = &result.trajectory {
            eprintln!(
                "trajectory: {}",
                crate::output::neutralize(&path.display().to_string())
            );
        }
    }
    if global.json {
        return json_exit_code(&mut result);
    }
    if result.outcome.status == Status::ForcedAnswer {
        // Printed above, but not an answer the model reached within its turns: a partial
        // result, said so on stderr and by the exit code.
        return Err(CliError::failed(anyhow::anyhow!(
            "the answer above is partial: the model gave it only when its turns ran out"
        ))
        .with_hint("raise --max-iterations for an answer the model reaches on its own")
        .into());
    }
    if result.outcome.status.is_answered() {
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(model_error) = result.error.take() {
        let message = format!("no answer: {}", result.outcome.status);
        return Err(llm_error(model_error).context(message));
    }
    let hint = match &result.outcome.partial_answer {
        Some(partial) => format!("best partial answer: {partial}"),
        None => limit_hint(result.outcome.status).to_owned(),
    };
    Err(
        CliError::failed(anyhow::anyhow!("no answer: {}", result.outcome.status))
            .with_hint(hint)
            .into(),
    )
}

/// What to change when a run ends without an answer.
fn limit_hint(status: Status) -> &'static str {
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
