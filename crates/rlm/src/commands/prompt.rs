//! `rlm prompt build|plan`: read the history and the material, build one turn's prompt with
//! `rlm_assemble::prompt`, print it and its plan.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Context as _;
use rlm_assemble::prompt::{
    BuiltPrompt, ChatMessage, HistoryAction, ItemKind, ItemStatus, PromptAssembler, PromptInputs,
    PromptPlan, Stage, Summarizer, SummaryProgress, load_items, parse_history,
};

use crate::cli::{GlobalArgs, PromptAction, PromptRequest, PromptBuildRequest, PromptFormat};
use crate::error::{AppError, input_error};
use crate::settings::{PromptSettings, Sources};

pub fn run(global: &GlobalArgs, sources: &Sources, args: PromptRequest) -> anyhow::Result<ExitCode> {
    let (dry_run, args) = match args.action {
        PromptAction::Build(args) => (false, args),
        PromptAction::Plan(args) => (true, args),
    };
    let mut settings = PromptSettings::resolve(&args, sources)?;
    let (stage, stage_warning) = Stage::parse_or_coding(&args.stage);
    let inputs = read_inputs(&args, stage)?;
    let model = settings.options.history.model.clone();
    let summarizing = match model {
        Some(model) if !dry_run => Some(summarizer(global, &mut settings, model)?),
        _ => None,
    };
    let mut assembler = PromptAssembler::new(settings.options).map_err(to_cli_error)?;
    let mut built = if dry_run {
        assembler.plan(&inputs).map_err(to_cli_error)?
    } else if let Some((summarizer, runtime)) = summarizing {
        let outcome = runtime.block_on(async {
            tokio::select! {
                built = assembler.build(&inputs, Some(&summarizer)) => Ok(built),
                signal = crate::signals::stop_requested() => Err(signal),
            }
        });
        outcome.map_err(AppError::stopped)?.map_err(to_cli_error)?
    } else {
        assembler.build_offline(&inputs).map_err(to_cli_error)?
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
    if !global.quiet {
        for warning in &built.plan.warnings {
            eprintln!("{}", crate::output::neutralize(warning));
        }
    }
    if let Some(path) = &args.plan_output {
        let text = serde_json::to_string_pretty(&built.plan)? + "\n";
        std::fs::write(path, text)
            .with_context(|| format!("cannot write the plan to {}", path.display()))?;
    }
    if dry_run {
        if global.json {
            crate::output::print_json(&PromptRecord::Plan(&built.plan))?;
        } else {
            print_stdout(&plan_text(&built.plan, ItemLines::Each))?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let prompt = render(&built, args.format)?;
    match &args.output {
        Some(path) => std::fs::write(path, &prompt)
            .with_context(|| format!("cannot write the prompt to {}", path.display()))?,
        None if global.json => crate::output::print_json(&PromptRecord::Prompt {
            messages: &built.messages,
        })?,
        None => print_stdout(&prompt)?,
    }
    if global.json {
        crate::output::print_json(&PromptRecord::Plan(&built.plan))?;
    } else if !global.quiet {
        // On stderr beside the prompt the plan is progress, not data: one line per kind of
        // item unless -v asks for each (2,000 files would be 2,000 lines).
        let lines = if global.verbose > 0 {
            ItemLines::Each
        } else {
            ItemLines::PerKind
        };
        eprint!(
            "{}",
            crate::output::neutralize(&plan_text(&built.plan, lines))
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn print_stdout(text: &str) -> anyhow::Result<()> {
    let mut out = crate::output::raw_stdout();
    out.write_all(crate::output::for_stdout(text).as_bytes())?;
    out.flush()?;
    Ok(())
}

/// Reads the history file and every material flag, in the order of the flags.
fn read_inputs(args: &PromptBuildRequest, stage: Stage) -> anyhow::Result<PromptInputs> {
    let history = match &args.history {
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
    let base = std::env::current_dir().context("cannot read the current directory")?;
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
            items.extend(load_items(kind, spec, &base).map_err(to_cli_error)?);
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
/// server requests it refuses. Says on stderr that summarizing may take a while.
fn summarizer(
    global: &GlobalArgs,
    settings: &mut PromptSettings,
    model: String,
) -> anyhow::Result<(Summarizer, tokio::runtime::Runtime)> {
    let client = settings.llm.build_client()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let history = &mut settings.options.history;
    let mut source = "configured";
    if !settings.window_tokens_set {
        source = "default";
        if let Some(window) = runtime
            .block_on(client.server_props(&model))
            .and_then(|props| props.context_window)
        {
            history.window_tokens = window;
            source = "reported by the server";
        }
    }
    if !global.quiet {
        eprintln!(
            "{}",
            crate::output::neutralize(&format!(
                "summary: {model} summarizes older messages when the history needs it (window {} tokens, {source}{})",
                history.window_tokens,
                if history.refresh {
                    "; cached summary refreshed"
                } else {
                    ""
                }
            ))
        );
    }
    let mut summarizer = Summarizer::new(client, model);
    if !global.quiet {
        summarizer = summarizer.on_progress(|event| eprintln!("{}", summary_progress(event)));
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
            crate::output::human_bytes(*input_chars as u64)
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

/// How [`plan_text`] shows the plan's items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ItemLines {
    /// One line per item, with its reason.
    Each,
    /// One line per kind: how many items are in, cut to a tail, skipped, and their tokens.
    PerKind,
}

/// The plan for a person.
fn plan_text(plan: &PromptPlan, lines: ItemLines) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "prompt for stage {}: {} of {} tokens ({})",
        plan.stage.name(),
        plan.tokens_total,
        plan.budget_total,
        plan.tokenizer
    );
    for section in &plan.sections {
        let _ = write!(
            text,
            "  {:<8} {:>7} / {:<7}",
            section.name, section.tokens, section.budget
        );
        if section.name == "history" {
            let _ = write!(text, "  {}", history_line(plan));
        }
        text.push('\n');
    }
    if lines == ItemLines::PerKind {
        item_summary(plan, &mut text);
    }
    for item in plan.items.iter().filter(|_| lines == ItemLines::Each) {
        let status = match item.status {
            ItemStatus::Included => "in",
            ItemStatus::Tail => "tail",
            ItemStatus::Skipped => "skipped",
        };
        let _ = write!(
            text,
            "  {status:<7} {:<12} {:>4} {:>7}  {}",
            item.kind.key(),
            item.priority,
            item.used_tokens
                .max(item.tokens * u64::from(item.status == ItemStatus::Skipped)),
            item.name
        );
        if let Some(reason) = &item.reason {
            let _ = write!(text, " ({reason})");
        }
        text.push('\n');
    }
    if !plan.model_calls.is_empty() {
        let cost = plan
            .cost_usd
            .map_or_else(|| "cost unknown".to_owned(), crate::output::usd);
        let _ = writeln!(text, "  model calls: {} ({cost})", plan.model_calls.len());
    }
    let _ = writeln!(text, "  digest {}", plan.digest);
    text
}

/// One line per kind of item, in the order the kinds first appear:
/// `  source_files  1843 in, 157 skipped  (201533 tokens used, 98312 skipped)`.
fn item_summary(plan: &PromptPlan, text: &mut String) {
    #[derive(Default)]
    struct Counts {
        included: usize,
        tail: usize,
        skipped: usize,
        used_tokens: u64,
        skipped_tokens: u64,
    }
    let mut kinds: Vec<(ItemKind, Counts)> = Vec::new();
    for item in &plan.items {
        let position = match kinds.iter().position(|(kind, _)| *kind == item.kind) {
            Some(position) => position,
            None => {
                kinds.push((item.kind, Counts::default()));
                kinds.len() - 1
            }
        };
        let counts = &mut kinds[position].1;
        match item.status {
            ItemStatus::Included => counts.included += 1,
            ItemStatus::Tail => counts.tail += 1,
            ItemStatus::Skipped => {
                counts.skipped += 1;
                counts.skipped_tokens += item.tokens;
            }
        }
        counts.used_tokens += item.used_tokens;
    }
    for (kind, counts) in &kinds {
        let mut parts = Vec::new();
        for (count, label) in [
            (counts.included, "in"),
            (counts.tail, "tail"),
            (counts.skipped, "skipped"),
        ] {
            if count > 0 {
                parts.push(format!("{count} {label}"));
            }
        }
        let _ = write!(
            text,
            "  {:<20} {}  ({} tokens used",
            kind.key(),
            parts.join(", "),
            counts.used_tokens
        );
        if counts.skipped > 0 {
            let _ = write!(text, ", {} skipped", counts.skipped_tokens);
        }
        text.push_str(")\n");
    }
    if kinds
        .iter()
        .any(|(_, counts)| counts.skipped > 0 || counts.tail > 0)
    {
        text.push_str("  (each item with its reason: -v, or `rlm prompt plan`)\n");
    }
}

fn history_line(plan: &PromptPlan) -> String {
    let report = &plan.history;
    let mut line = match report.action {
        HistoryAction::Empty => "no history".to_owned(),
        HistoryAction::Verbatim => format!("{} messages verbatim", report.messages),
        HistoryAction::Summarized => format!(
            "{} messages summarized{}, {} verbatim",
            report.summarized_messages,
            if report.cache_hit { " (cached)" } else { "" },
            report.verbatim_messages
        ),
        HistoryAction::Fallback => format!(
            "not summarized: {} most recent of {} messages",
            report.verbatim_messages, report.messages
        ),
        HistoryAction::WouldSummarize => format!(
            "a build would summarize {} of {} messages and keep {} verbatim",
            report.summarized_messages,
            report.messages,
            report.messages - report.summarized_messages
        ),
    };
    if let Some(estimate) = &report.estimate {
        let cost = estimate
            .cost_usd
            .map_or_else(|| "price unknown".to_owned(), crate::output::usd);
        // An estimate of what a build would spend: a plan itself calls no model.
        let calls = match estimate.calls {
            1 => "1 model call".to_owned(),
            n => format!("{n} model calls"),
        };
        let _ = write!(
            line,
            " [it would take {calls}, ~{} input tokens, at most {} output tokens, {cost}]",
            estimate.input_tokens, estimate.max_output_tokens
        );
    }
    line
}

fn to_cli_error(error: rlm_assemble::Error) -> AppError {
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

/// What `rlm prompt build --json` prints: the prompt (unless `--output` takes it), then its
/// plan; with `--dry-run` the plan alone.
#[derive(serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum PromptRecord<'a> {
    Prompt { messages: &'a [ChatMessage] },
    Plan(&'a PromptPlan),
}

/// The prompt as `--format json` writes it: the chat API's `messages`.
#[derive(serde::Serialize)]
struct Messages<'a> {
    messages: &'a [ChatMessage],
}
