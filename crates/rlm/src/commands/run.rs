//! `rlm run`: the recursive language model loop over one or more contexts.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use rlm_engine::{Budget, ContextPart, Prompts, Rlm, RunResult};

use crate::cli::{GlobalArgs, RunArgs};
use crate::commands::llm_settings::LlmSettings;
use crate::commands::run_progress::StderrProgress;
use crate::config::LoadedConfig;
use crate::env;
use crate::error::{self, CliError, input_error};

pub fn run(global: &GlobalArgs, args: RunArgs) -> anyhow::Result<ExitCode> {
    let config = LoadedConfig::load(global.config.as_deref())?;
    let settings = LlmSettings::load(&args.llm, &config)?;
    let model = settings.require_model()?.to_owned();
    let subcall_model = settings
        .subcall_model
        .clone()
        .unwrap_or_else(|| model.clone());
    if args.query.trim().is_empty() {
        return Err(input_error("the query is empty").into());
    }
    let budget = budget(&args)?;
    let contexts = read_contexts(&args)?;
    let prompts = load_prompts()?;
    let log_dir = if args.no_log {
        None
    } else {
        args.log.clone().or_else(default_log_dir)
    };

    let client = settings.build_client()?;
    let repl = crate::commands::run_sandbox::factory(&config)?;
    let mut builder = Rlm::builder()
        .client(Arc::new(client))
        .repl(repl.factory)
        .helpers_doc(repl.helpers_doc)
        .environment_name(repl.name)
        .model(model)
        .subcall_model(subcall_model)
        .max_depth(args.max_depth)
        .budget(budget)
        .prompts(prompts);
    if let Some(dir) = log_dir {
        builder = builder.log_dir(dir);
    }
    if !global.quiet {
        builder = builder.events(Arc::new(StderrProgress::new(global.verbose > 0)));
    }
    let rlm = builder.build().map_err(CliError::input)?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let query = args.query.clone();
    let outcome = runtime.block_on(async {
        tokio::select! {
            result = rlm.completion(&query, contexts) => Some(result),
            _ = tokio::signal::ctrl_c() => None,
        }
    });
    // In-flight model calls and sandbox workers are dropped with the runtime.
    runtime.shutdown_timeout(Duration::from_secs(2));
    let Some(result) = outcome else {
        return Err(CliError::interrupted().into());
    };
    let result = result.context("the run could not continue")?;
    report(global, &result)
}

/// Prints the answer (or the JSON result) and picks the exit code.
fn report(global: &GlobalArgs, result: &RunResult) -> anyhow::Result<ExitCode> {
    if global.json {
        crate::output::print_json(&serde_json::json!({
            "type": "result",
            "status": result.status,
            "answer": result.answer,
            "partial_answer": result.partial_answer,
            "iterations": result.iterations,
            "usage": result.usage,
            "tokens": result.usage.total_tokens(),
            "cost_usd": result.usage.cost_usd(),
            "cost_is_partial": result.usage.cost_is_partial(),
            "seconds": result.seconds,
            "log": result.trajectory,
            "run_id": result.run_id,
            "error": result.error,
        }))?;
    } else if let Some(answer) = &result.answer {
        let mut out = crate::output::stdout();
        writeln!(out, "{answer}")?;
        out.flush()?;
    }
    if !global.quiet {
        let cost = if result.usage.cost_is_partial() {
            format!("≥ ${:.4} (some prices unknown)", result.usage.cost_usd())
        } else {
            format!("${:.4}", result.usage.cost_usd())
        };
        eprintln!(
            "{} · {} turns · {} model calls · {} tokens · {cost} · {:.1}s",
            result.status,
            result.iterations,
            result.usage.calls(),
            rlm_engine::group_digits(result.usage.total_tokens() as usize),
            result.seconds
        );
        if let Some(path) = &result.trajectory {
            eprintln!("trajectory: {}", path.display());
        }
    }
    if result.status.is_answered() {
        return Ok(ExitCode::SUCCESS);
    }
    if global.json {
        return Ok(ExitCode::from(error::EXIT_FAILED));
    }
    let mut message = format!("no answer: {}", result.status);
    if let Some(detail) = &result.error {
        message.push_str(&format!(" ({detail})"));
    }
    let mut err = CliError::failed(anyhow::anyhow!(message));
    if let Some(partial) = &result.partial_answer {
        err = err.with_hint(format!("best partial answer: {partial}"));
    } else {
        err = err.with_hint(
            "raise --max-iterations, --max-tokens, --max-cost or --timeout, or narrow the query",
        );
    }
    Err(err.into())
}

fn budget(args: &RunArgs) -> anyhow::Result<Budget> {
    if let Some(cost) = args.max_cost
        && !(cost.is_finite() && cost > 0.0)
    {
        return Err(input_error(format!("--max-cost {cost} is not a positive amount")).into());
    }
    if args.max_tokens == Some(0) {
        return Err(input_error("--max-tokens must be at least 1").into());
    }
    Ok(Budget {
        max_iterations: args.max_iterations,
        max_tokens: args.max_tokens,
        max_cost_usd: args.max_cost,
        timeout: args.max_time.map(Duration::from_secs_f64),
        max_subcalls: args.max_subcalls,
        ..Budget::default()
    })
}

/// Reads every `--context-file` (in order) and `--context`; at most one of them may be `-`.
fn read_contexts(args: &RunArgs) -> anyhow::Result<Vec<ContextPart>> {
    let stdin_uses = args
        .context_files
        .iter()
        .filter(|p| p.as_os_str() == "-")
        .count()
        + usize::from(args.context.as_deref() == Some("-"));
    if stdin_uses > 1 {
        return Err(input_error("stdin (`-`) can be used for one context only").into());
    }
    let mut parts = Vec::new();
    for path in &args.context_files {
        if path.as_os_str() == "-" {
            parts.push(ContextPart::analyzed(read_stdin()?, Some("<stdin>")));
            continue;
        }
        let text = read_file(path)?;
        let name = path.display().to_string();
        let part = ContextPart::analyzed(text, Some(&name));
        // Only a file that was valid UTF-8 holds exactly `text`; the worker may read it directly.
        let exact = part.metadata.as_ref().is_none_or(|m| m.encoding.valid_utf8);
        parts.push(if exact { part.with_path(path) } else { part });
    }
    match args.context.as_deref() {
        Some("-") => parts.push(ContextPart::analyzed(read_stdin()?, Some("<stdin>"))),
        Some(text) => parts.push(ContextPart::analyzed(text, None)),
        None => {}
    }
    if parts.is_empty() {
        return Err(CliError::input(anyhow::anyhow!("no context given"))
            .with_hint(
                "pass --context-file FILE (repeatable), --context TEXT, or --context - for stdin",
            )
            .into());
    }
    Ok(parts)
}

fn read_file(path: &Path) -> anyhow::Result<String> {
    if path.is_dir() {
        return Err(
            CliError::input(anyhow::anyhow!("{} is a directory", path.display()))
                .with_hint("pass the files inside it, each with --context-file")
                .into(),
        );
    }
    let bytes = std::fs::read(path).map_err(|err| {
        let hint = (err.kind() == std::io::ErrorKind::NotFound)
            .then_some("check the path; `--context -` reads stdin");
        let err = CliError::input(
            anyhow::Error::new(err).context(format!("cannot read {}", path.display())),
        );
        match hint {
            Some(hint) => err.with_hint(hint),
            None => err,
        }
    })?;
    Ok(into_text(bytes, &path.display().to_string()))
}

fn read_stdin() -> anyhow::Result<String> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .context("cannot read the context from stdin")?;
    Ok(into_text(bytes, "stdin"))
}

/// The text of a context; invalid UTF-8 is replaced (and said once) rather than refused.
fn into_text(bytes: Vec<u8>, name: &str) -> String {
    match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) => {
            tracing::warn!("{name} is not valid UTF-8; invalid bytes are replaced with U+FFFD");
            String::from_utf8_lossy(err.as_bytes()).into_owned()
        }
    }
}

/// Prompt overrides: `RLM_PROMPT_DIR`, else `$XDG_CONFIG_HOME/rlm/prompts`.
fn load_prompts() -> anyhow::Result<Prompts> {
    let dir = std::env::var_os(env::RLM_PROMPT_DIR)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| user_config_dir().map(|d| d.join("prompts")));
    let Some(dir) = dir else {
        return Ok(Prompts::default());
    };
    let (prompts, used) = Prompts::with_overrides_from(&dir).map_err(CliError::input)?;
    if !used.is_empty() {
        tracing::info!(
            "prompt overrides from {}: {}",
            dir.display(),
            used.join(", ")
        );
    }
    Ok(prompts)
}

/// `$XDG_STATE_HOME/rlm/runs`, else `~/.local/state/rlm/runs`.
fn default_log_dir() -> Option<PathBuf> {
    let base = std::env::var_os(env::XDG_STATE_HOME)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os(env::HOME).map(|h| PathBuf::from(h).join(".local").join("state"))
        })?;
    Some(base.join("rlm").join("runs"))
}

/// `$XDG_CONFIG_HOME/rlm`, else `~/.config/rlm` (where `config.toml` lives too).
fn user_config_dir() -> Option<PathBuf> {
    let base = std::env::var_os(env::XDG_CONFIG_HOME)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os(env::HOME).map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("rlm"))
}
