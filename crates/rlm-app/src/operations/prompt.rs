//! `prompt build|plan`: read the history and the material, build one turn's prompt with
//! `rlm_assemble::prompt`, and give it with its plan.

use std::path::PathBuf;

use anyhow::Context as _;
use rlm_assemble::prompt::{
    BuiltPrompt, ChatMessage, ItemKind, PromptAssembler, PromptInputs, PromptPlan, Stage,
    Summarizer, SummaryProgress, load_items, parse_history,
};

use crate::error::{AppError, input_error};
use crate::requests::{PromptAction, PromptBuildRequest, PromptFormat, PromptRequest};
use crate::settings::{PromptSettings, Sources};
use crate::{Context, Outcome, Runtime};

/// What `rlm prompt build --json` prints: the prompt (unless `--output` takes it), then its
/// plan; `plan` gives the plan alone.
#[derive(Debug, serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PromptRecord {
    /// The chat messages.
    Prompt {
        messages: Vec<ChatMessage>,
        /// The prompt in the format asked for (`--format`; for stdout, not in JSON).
        #[serde(skip)]
        rendered: String,
    },
    /// What went in, what was summarized or cut, and what it cost.
    Plan(Box<PromptPlan>),
}

/// Builds the prompt (`build`) or only its plan (`plan`: no model is called), writes the
/// files the request names, and gives the records: the prompt unless a file took it, then the
/// plan. Warnings are the outcome's notes.
pub fn prompt(
    sources: &Sources,
    request: &PromptRequest,
    context: &Context,
) -> anyhow::Result<Outcome<PromptRecord>> {
    let (dry_run, args) = match &request.action {
        PromptAction::Build(args) => (false, args),
        PromptAction::Plan(args) => (true, args),
    };
    let mut settings = PromptSettings::resolve(args, sources)?;
    let (stage, stage_warning) = Stage::parse_or_coding(&args.stage);
    let inputs = read_inputs(args, stage, sources)?;
    let model = settings.options.history.model.clone();
    let summarizing = match model {
        Some(model) if !dry_run => Some(summarizer(context, &mut settings, model)?),
        _ => None,
    };
    let mut assembler = PromptAssembler::new(settings.options).map_err(prompt_error)?;
    let mut built = if dry_run {
        assembler.plan(&inputs).map_err(prompt_error)?
    } else if let Some((summarizer, runtime)) = summarizing {
        runtime
            .until_stopped(&context.stop, assembler.build(&inputs, Some(&summarizer)))?
            .map_err(prompt_error)?
    } else {
        assembler.build_offline(&inputs).map_err(prompt_error)?
    };
    if let Err(error) = assembler.save_cache() {
        built
            .plan
            .warnings
            .push(format!("warning: could not save token counts: {error}"));
    }
    if let Some(warning) = stage_warning {
        built.plan.warnings.insert(0, warning);
    }
    price_estimate(
        &mut built.plan,
        &settings.llm,
        assembler.options().history.model.as_deref(),
    );
    if let Some(path) = &args.plan_output {
        let text = serde_json::to_string_pretty(&built.plan)? + "\n";
        std::fs::write(path, text)
            .with_context(|| format!("cannot write the plan to {}", path.display()))?;
    }
    let mut records = Vec::new();
    if !dry_run {
        let rendered = render(&built, args.format)?;
        match &args.output {
            Some(path) => write_prompt(path, &rendered)?,
            None => records.push(PromptRecord::Prompt {
                messages: built.messages.clone(),
                rendered,
            }),
        }
    }
    let notes = std::mem::take(&mut built.plan.warnings);
    let mut plan = built.plan;
    plan.warnings.clone_from(&notes);
    records.push(PromptRecord::Plan(Box::new(plan)));
    Ok(Outcome {
        notes,
        ..Outcome::success(records)
    })
}

fn write_prompt(path: &PathBuf, prompt: &str) -> anyhow::Result<()> {
    std::fs::write(path, prompt)
        .with_context(|| format!("cannot write the prompt to {}", path.display()))
}

/// Reads the history file and every material flag, in the order of the flags.
fn read_inputs(
    args: &PromptBuildRequest,
    stage: Stage,
    sources: &Sources,
) -> anyhow::Result<PromptInputs> {
    let history = match &args.history {
        None if args.messages.is_some() => args.messages.clone().unwrap_or_default(),
        None => Vec::new(),
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|error| {
                input_error(format!(
                    "cannot read the history {}: {error}",
                    path.display()
                ))
            })?;
            parse_history(&text, &path.display().to_string()).map_err(|error| {
                AppError::input(error).with_hint(
                    "a history is JSON Lines of {\"role\": ..., \"content\": ...} objects, \
                     or a JSON array (or object with `messages`) of them",
                )
            })?
        }
    };
    let base = match sources.cwd() {
        Some(cwd) => cwd.to_path_buf(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let mut items = Vec::new();
    for (kind, specs) in [
        (ItemKind::Notes, &args.notes),
        (ItemKind::Adrs, &args.adr),
        (ItemKind::SourceFiles, &args.source),
        (ItemKind::BuildLogs, &args.build_log),
        (ItemKind::PodLogs, &args.pod_log),
        (ItemKind::TestResults, &args.test_results),
        (ItemKind::Libraries, &args.library),
    ] {
        for spec in specs {
            items.extend(load_items(kind, spec, &base).map_err(prompt_error)?);
        }
    }
    Ok(PromptInputs {
        stage,
        history,
        items,
    })
}

/// The summarizing model's client and the runtime to ask it on. Unless the window was set,
/// a local server's own (llama.cpp `/props`) replaces the default, which would send an 8k
/// server requests it refuses; the server is asked only when a summary is to be made, so a
/// build answered from the cache sends it nothing. Says on stderr that summarizing may take a
/// while.
fn summarizer(
    context: &Context,
    settings: &mut PromptSettings,
    model: String,
) -> anyhow::Result<(Summarizer, Runtime)> {
    let client = settings.llm.build_client()?;
    let runtime = Runtime::new()?;
    let history = &settings.options.history;
    let window = if settings.window_tokens_set {
        format!(" (window {} tokens, configured)", history.window_tokens)
    } else {
        String::new()
    };
    let refreshed = if history.refresh {
        "; cached summary refreshed"
    } else {
        ""
    };
    context.info(&format!(
        "summary: {model} summarizes older messages when the history needs it{window}{refreshed}"
    ));
    let heard = context.clone();
    let mut summarizer = Summarizer::new(client, model)
        .on_progress(move |event| heard.info(&summary_progress(event)));
    if !settings.window_tokens_set {
        summarizer = summarizer.window_from_server();
    }
    Ok((summarizer, runtime))
}

/// One stderr line per summarizing call as it starts and ends: a local model may take minutes
/// over one, and the command should not look stuck meanwhile.
fn summary_progress(event: &SummaryProgress) -> String {
    match event {
        SummaryProgress::Started {
            number,
            purpose,
            input_chars,
        } => format!(
            "summary: call {number} ({purpose}) sent, {} of input",
            crate::text::human_bytes(*input_chars as u64)
        ),
        SummaryProgress::Finished {
            number,
            purpose,
            output_tokens,
            took,
        } => format!(
            "summary: call {number} ({purpose}) answered in {:.1}s, {} tokens out",
            took.as_secs_f64(),
            rlm_context::thousands(*output_tokens)
        ),
        SummaryProgress::Failed {
            number,
            purpose,
            took,
        } => format!(
            "summary: call {number} ({purpose}) failed after {:.1}s",
            took.as_secs_f64()
        ),
        SummaryProgress::Window { tokens, reported } => format!(
            "summary: window {tokens} tokens, {}",
            if *reported {
                "reported by the server"
            } else {
                "default"
            }
        ),
    }
}

/// Prices the estimate of a summary not made, when the model's price is known.
fn price_estimate(plan: &mut PromptPlan, llm: &crate::settings::LlmSettings, model: Option<&str>) {
    let (Some(estimate), Some(model)) = (plan.history.estimate.as_mut(), model) else {
        return;
    };
    // Prices are keyed by the model name without its `provider:` prefix.
    let name = model.split_once(':').map_or(model, |(_, name)| name);
    if let Some(price) = llm.prices.get(name).or_else(|| llm.prices.get(model)) {
        estimate.cost_usd = Some(
            (estimate.input_tokens as f64 * price.input_per_mtok
                + estimate.max_output_tokens as f64 * price.output_per_mtok)
                / 1e6,
        );
    }
}

/// The prompt in the chosen format.
fn render(built: &BuiltPrompt, format: PromptFormat) -> anyhow::Result<String> {
    let content = |role: &str| {
        built
            .messages
            .iter()
            .find(|message: &&ChatMessage| message.role == role)
            .map_or("", |message| message.content.as_str())
    };
    Ok(match format {
        PromptFormat::Json => {
            serde_json::to_string_pretty(&Messages {
                messages: &built.messages,
            })? + "\n"
        }
        PromptFormat::Text => format!("{}{}", content("system"), content("user")),
        PromptFormat::Mdctx => format!(
            "<!-- mdctx prompt v{} stage={} digest={} -->\n# System\n\n{}# User\n\n{}",
            built.plan.version,
            built.plan.stage.name(),
            built.plan.digest,
            content("system"),
            content("user")
        ),
    })
}

fn prompt_error(error: rlm_assemble::Error) -> AppError {
    let hint = match &error {
        rlm_assemble::Error::SectionTooLarge { .. } => {
            Some("raise --budget-total or the section's budget, or shorten the prompt override")
        }
        rlm_assemble::Error::Missing { .. } => Some("paths are relative to the current directory"),
        _ => None,
    };
    let input = error.is_input();
    AppError::classified(error, input, hint)
}

/// The prompt as `--format json` writes it: the chat API's `messages`.
#[derive(serde::Serialize)]
struct Messages<'a> {
    messages: &'a [ChatMessage],
}
