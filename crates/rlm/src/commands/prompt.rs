//! `rlm prompt build|plan`: the prompt on stdout (or its file), its plan on stderr as progress
//! (or on stdout for `plan`), or both as JSON.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;

use rlm_app::operations::prompt::PromptRecord;
use rlm_app::requests::{PromptAction, PromptRequest};
use rlm_assemble::prompt::{HistoryAction, ItemKind, ItemStatus, PromptPlan};

use super::Run;

pub fn run(run: &Run<'_>, request: PromptRequest) -> anyhow::Result<ExitCode> {
    let dry_run = matches!(request.action, PromptAction::Plan(_));
    let outcome = rlm_app::operations::prompt(&run.sources, &request, &run.context)?;
    let global = run.global;
    run.print_notes(&outcome);
    if global.json {
        run.print_json(&outcome)?;
        return run.exit(outcome);
    }
    for record in &outcome.records {
        match record {
            PromptRecord::Prompt { rendered, .. } => print_stdout(rendered)?,
            PromptRecord::Plan(plan) if dry_run => {
                print_stdout(&plan_text(plan, ItemLines::Each))?;
            }
            PromptRecord::Plan(plan) if !global.quiet => {
                // On stderr beside the prompt the plan is progress, not data: one line per
                // kind of item unless -v asks for each (2,000 files would be 2,000 lines).
                let lines = if global.verbose > 0 {
                    ItemLines::Each
                } else {
                    ItemLines::PerKind
                };
                eprint!("{}", crate::output::neutralize(&plan_text(plan, lines)));
            }
            PromptRecord::Plan(_) => {}
        }
    }
    run.exit(outcome)
}

fn print_stdout(text: &str) -> anyhow::Result<()> {
    let mut out = crate::output::raw_stdout();
    out.write_all(crate::output::for_stdout(text).as_bytes())?;
    out.flush()?;
    Ok(())
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
