//! A run's page: the header (status, models, totals, limits, question, answer, contexts), the
//! timeline, and every turn with its new prompt messages, reply, code blocks, host calls,
//! sub-calls and the child runs they started.
//!
//! Written with maud's `html!` (every spliced value escaped; see [`super::parts`]). The page
//! loads nothing: a Content-Security-Policy allows no source at all but the page's own inline
//! style and its one script (by a nonce), so even a mistake here could not make it fetch
//! anything or run injected script.

use maud::{Markup, html};
use rlm_types::{Role, thousands};

use super::format::{chars, dollars, seconds, seconds_shown, size_label};
use super::load::{ChildRun, RunView, TurnView};
use super::markdown::{self, code_block};
use super::parts::{
    FOLD_CHARS, badge, controls, cut_note, document, facts, plural, preview, preview_block,
    text_block,
};
use crate::schema::{CodeBlock, Status, Subcall};

/// Timeline rows come in groups of this many, which the browser lays out only when scrolled
/// to (a table of a thousand rows took most of a page's load time).
const ROWS_PER_GROUP: usize = 50;

/// Renders the whole page for a run (its child runs included).
pub fn page(run: &RunView, nonce: &str) -> String {
    let title = format!(
        "rlm run {} — {}",
        run.metadata.run_id,
        preview(&run.metadata.query, 80)
    );
    let body = html! {
        (header(run))
        (controls("turns"))
        (timeline(run))
        main id="turns" {
            @for turn in &run.turns {
                (turn_section(turn, "t"))
            }
        }
    };
    document(&title, nonce, &body)
}

/// The run's summary: status, models, totals, limits, question, answer, contexts.
fn header(run: &RunView) -> Markup {
    let metadata = &run.metadata;
    let unknown: Vec<String> = run
        .unknown_records
        .iter()
        .map(|(kind, n)| format!("{kind} ×{n}"))
        .collect();
    html! {
        header {
            h1 { "rlm run " code { (metadata.run_id) } }
            (status(run))
            (facts(&run_facts(run)))
            section id="question" {
                h2 { "Question" }
                (text_block("question", &metadata.query, true))
            }
            @if let Some(outcome) = &run.outcome {
                section id="answer" {
                    h2 { "Answer" }
                    @match (&outcome.answer, &outcome.partial_answer) {
                        (Some(answer), _) => { (text_block("answer", answer, true)) }
                        (None, Some(partial)) => {
                            p class="muted" { "No answer; the partial `answer` variable:" }
                            (text_block("partial answer", partial, true))
                        }
                        (None, None) => { p class="muted" { "No answer." } }
                    }
                }
            }
            (contexts(run))
            @if !unknown.is_empty() {
                p class="banner" {
                    "Records of types this version does not show: " (unknown.join(", "))
                }
            }
        }
    }
}

/// The status badge and the banners under it (budget, error, a log still being written).
fn status(run: &RunView) -> Markup {
    let Some(outcome) = &run.outcome else {
        return html! {
            p id="status" class="status running" { "no result yet" }
            p id="incomplete" class="banner" {
                "This log has no result line: the run is still going, or it was stopped before \
                 it finished. Shown: the " (run.turns.len()) " turns logged so far."
                (cut_note(run.cut_line))
            }
        };
    };
    // An answer forced at the iteration limit is partial, one no code looked behind is
    // unchecked: `rlm run` exits 1 for both.
    let (class, prefix) = match outcome.status {
        Status::ForcedAnswer => ("partial", "partial: "),
        Status::NoEvidence => ("partial", "unchecked: "),
        status if status.is_answered() => ("ok", ""),
        _ => ("stopped", ""),
    };
    html! {
        p id="status" class={ "status " (class) } { (prefix) (outcome.status.to_string()) }
        @if let Some(limit) = budget_limit(run) {
            p class="banner budget" {
                "Budget event: the run stopped because its limit of " (limit) " was reached."
            }
        }
        @if let Some(error) = &outcome.error {
            p class="banner error" { (error) }
        }
    }
}

/// Models, totals, limits and the log's path, as the header's facts.
fn run_facts(run: &RunView) -> Vec<(&'static str, String)> {
    let metadata = &run.metadata;
    let mut facts = vec![
        ("root model", metadata.root_model.clone()),
        ("sub-call model", metadata.subcall_model.clone()),
        ("REPL", metadata.environment_type.clone()),
        ("turns", run.turns.len().to_string()),
    ];
    if let Some(outcome) = &run.outcome {
        let total = &outcome.usage.total;
        facts.push(("sub-calls", thousands(outcome.subcalls)));
        facts.push((
            "tokens",
            format!(
                "{} in, {} out",
                thousands(total.usage.input_tokens),
                thousands(total.usage.output_tokens)
            ),
        ));
        facts.push(("cost", dollars(total.cost_usd, total.unpriced_calls)));
        facts.push(("time", seconds(outcome.seconds)));
        if total.retries > 0 || total.failures > 0 {
            facts.push((
                "retries",
                format!("{} retried, {} failed", total.retries, total.failures),
            ));
        }
    }
    facts.push(("limits", limits(run)));
    facts.push(("log", run.path.display().to_string()));
    facts
}

fn contexts(run: &RunView) -> Markup {
    let parts = &run.metadata.contexts.parts;
    html! {
        @if !parts.is_empty() {
            section id="contexts" {
                h2 { "Contexts" }
                ul {
                    @for part in parts {
                        li {
                            code { (part.variable) } " "
                            (part.name.as_deref().unwrap_or("(inline text)")) " — "
                            (chars(part.chars)) ", " (thousands(part.lines)) " lines"
                        }
                    }
                }
            }
        }
    }
}

/// The limit a budget-stopped run hit, described.
fn budget_limit(run: &RunView) -> Option<String> {
    let budget = &run.metadata.budget;
    let status = run.outcome.as_ref()?.status;
    let limit = match status {
        Status::TokenBudget => format!("{} tokens", thousands(budget.max_tokens?)),
        Status::CostBudget => format!("${}", budget.max_cost_usd?),
        Status::CallBudget => format!("{} model calls", thousands(budget.max_calls?)),
        Status::Timeout => seconds(budget.timeout_seconds?),
        Status::SubcallBudget => format!("{} sub-calls", thousands(budget.max_subcalls?)),
        Status::ErrorLimit => format!(
            "{} turns in a row with code errors",
            budget.max_consecutive_errors
        ),
        _ => return None,
    };
    Some(limit)
}

fn limits(run: &RunView) -> String {
    let metadata = &run.metadata;
    let budget = &metadata.budget;
    let mut parts = vec![
        format!("{} turns", metadata.max_iterations),
        format!("depth {}", metadata.max_depth),
    ];
    if let Some(tokens) = budget.max_tokens {
        parts.push(format!("{} tokens", thousands(tokens)));
    }
    if let Some(cost) = budget.max_cost_usd {
        parts.push(format!("${cost}"));
    }
    if let Some(calls) = budget.max_calls {
        parts.push(format!("{} calls", thousands(calls)));
    }
    if let Some(timeout) = budget.timeout_seconds {
        parts.push(seconds(timeout));
    }
    if let Some(subcalls) = budget.max_subcalls {
        parts.push(format!("{} sub-calls", thousands(subcalls)));
    }
    parts.join(", ")
}

/// One row per turn: time, tokens, cost and what happened, linked to the turn, in groups of
/// [`ROWS_PER_GROUP`].
fn timeline(run: &RunView) -> Markup {
    // Bars follow the times as shown, so equal labels get equal bars.
    let longest = run
        .turns
        .iter()
        .map(|turn| seconds_shown(turn.iteration.seconds).0)
        .fold(0.0_f64, f64::max);
    html! {
        section id="timeline" {
            h2 { "Timeline" }
            div class="row head" {
                span { "turn" } span { "time" } span { "tokens in" } span { "tokens out" }
                span { "cost" } span { "events" }
            }
            div class="scroll" {
                @for group in run.turns.chunks(ROWS_PER_GROUP) {
                    div class="rows" {
                        @for turn in group {
                            (timeline_row(turn, longest))
                        }
                    }
                }
            }
        }
    }
}

fn timeline_row(turn: &TurnView, longest: f64) -> Markup {
    let iteration = &turn.iteration;
    let (shown, label) = seconds_shown(iteration.seconds);
    let width = if longest > 0.0 {
        (shown / longest * 60.0).clamp(1.0, 60.0)
    } else {
        1.0
    };
    let usage = &iteration.usage;
    let n = iteration.iteration;
    html! {
        div class="row" {
            a href={ "#t" (n) } { (n) }
            span { span class="bar" style=(format!("width:{width:.0}px")) {} " " (label) }
            span { (thousands(usage.usage.input_tokens)) }
            span { (thousands(usage.usage.output_tokens)) }
            span { (dollars(usage.cost_usd, usage.unpriced_calls)) }
            span { (badges(turn)) }
        }
    }
}

/// Short labels for what happened in a turn.
fn badges(turn: &TurnView) -> Markup {
    let iteration = &turn.iteration;
    let usage = &iteration.usage;
    let blocks = &iteration.code_blocks;
    let errors = blocks.iter().filter(|b| b.result.error.is_some()).count();
    let calls: usize = blocks.iter().map(|b| b.result.subcalls.len()).sum();
    let host_calls = || blocks.iter().flat_map(|b| &b.result.host_calls);
    let failed_host_calls = host_calls().filter(|call| call.error.is_some()).count();
    let failed_calls = blocks
        .iter()
        .flat_map(|b| &b.result.subcalls)
        .filter(|call| call.error.is_some())
        .count();
    let counted = [
        ("", blocks.len(), "block"),
        ("bad", errors, "error"),
        ("", calls, "sub-call"),
        ("", host_calls().count(), "host call"),
        ("bad", failed_host_calls, "failed host call"),
        ("child", turn.children.len(), "child run"),
    ];
    let counted_calls = [
        ("bad", failed_calls, "failed sub-call"),
        ("warn", usage.retries as usize, "retry"),
        ("bad", usage.failures as usize, "failed call"),
    ];
    html! {
        @for (class, n, word) in counted {
            @if n > 0 { (badge(class, &plural(n, word))) }
        }
        @if usage.calls > 1 { (badge("warn", "re-asked")) }
        @for (class, n, word) in counted_calls {
            @if n > 0 { (badge(class, &plural(n, word))) }
        }
        @if iteration.final_answer.is_some() { (badge("ok", "answer")) }
    }
}

fn turn_section(turn: &TurnView, prefix: &str) -> Markup {
    let iteration = &turn.iteration;
    let n = iteration.iteration;
    let usage = &iteration.usage;
    let reply = &iteration.response;
    let open = reply.chars().count() <= FOLD_CHARS * 2;
    html! {
        section class="turn" id={ (prefix) (n) } {
            h3 {
                "Turn " (n) " "
                span class="meta" {
                    (seconds(iteration.seconds)) " · "
                    (thousands(usage.usage.input_tokens)) " in / "
                    (thousands(usage.usage.output_tokens)) " out tokens · "
                    (dollars(usage.cost_usd, usage.unpriced_calls))
                }
                " " (badges(turn))
            }
            (prompt_messages(turn))
            details class="reply" open[open] {
                summary { "Reply — " (size_label(reply)) }
                div class="md" { (markdown::render(reply)) }
            }
            @for (index, block) in iteration.code_blocks.iter().enumerate() {
                (code_block_section(turn, index, block))
            }
            @if !iteration.notes.is_empty() {
                ul class="notes" {
                    @for note in &iteration.notes { li { (note) } }
                }
            }
            @if let Some(answer) = &iteration.final_answer {
                div class="final" {
                    h4 { "Answer given this turn" }
                    (text_block("answer", answer, true))
                }
            }
        }
    }
}

fn prompt_messages(turn: &TurnView) -> Markup {
    let messages = &turn.new_messages;
    let total: usize = messages.iter().map(|m| m.content.chars().count()).sum();
    html! {
        @if !messages.is_empty() {
            details class="prompt" {
                summary {
                    "Sent to the model: " (plural(messages.len(), "message")) " new of "
                    (turn.prompt_messages) " (" (chars(total as u64)) ")"
                }
                @for message in messages {
                    @let role = role_name(message.role);
                    div class={ "message " (role) } {
                        span class="role" { (role) }
                        pre { (message.content) }
                    }
                }
            }
        }
    }
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

fn code_block_section(turn: &TurnView, index: usize, block: &CodeBlock) -> Markup {
    let result = &block.result;
    // The reply usually holds the code already, just above: it is not shown twice.
    let code = block.code.trim();
    let in_reply = !code.is_empty() && turn.iteration.response.contains(code);
    let class = if result.error.is_some() {
        "block failed"
    } else {
        "block"
    };
    html! {
        div class=(class) {
            div class="block-head" {
                "Code block " (index + 1) " · ran " (seconds(result.seconds))
                @if in_reply { " · the code is in the reply above" }
            }
            @if !in_reply { (code_block(&block.code, "python")) }
            @if result.stdout.is_empty() {
                p class="muted" { "(no output)" }
            } @else {
                (text_block("output", &result.stdout, false))
            }
            @if !result.stderr.is_empty() { (text_block("stderr", &result.stderr, false)) }
            @if let Some(error) = &result.error { pre class="error" { (error) } }
            @if let Some(answer) = &result.final_answer { (text_block("FINAL", answer, false)) }
            (super::host_calls::render(&result.host_calls))
            @for (call_index, call) in result.subcalls.iter().enumerate() {
                (subcall(call, turn.children.get(&(index, call_index))))
            }
        }
    }
}

fn subcall(call: &Subcall, child: Option<&ChildRun>) -> Markup {
    let tokens: (u64, u64) = call
        .usage_summary
        .model_usage_summaries
        .values()
        .fold((0, 0), |(i, o), m| {
            (i + m.total_input_tokens, o + m.total_output_tokens)
        });
    let class = if call.error.is_some() {
        "subcall failed"
    } else {
        "subcall"
    };
    html! {
        div class=(class) {
            div class="subcall-head" {
                code { (call.kind.name()) } " " (call.model) " · " (seconds(call.seconds)) " · "
                (thousands(tokens.0)) " in / " (thousands(tokens.1)) " out tokens · "
                (dollars(call.cost_usd, 0))
            }
            (preview_block("prompt", &call.prompt, call.prompt_chars))
            (preview_block("response", &call.response, call.response_chars))
            @if let Some(error) = &call.error { pre class="error" { (error) } }
            @match child {
                Some(ChildRun::Loaded(run)) => { (child_run(run)) }
                Some(ChildRun::Missing(why)) => {
                    p class="muted child-missing" {
                        "Child run " (call.child_run_id.as_deref().unwrap_or("?")) ": " (why)
                    }
                }
                None => {}
            }
        }
    }
}

/// A child run, folded, with its own turns inside (their ids start with the child's run id,
/// which is unique in the tree).
fn child_run(run: &RunView) -> Markup {
    let status = run
        .outcome
        .as_ref()
        .map_or("no result yet".to_owned(), |o| o.status.to_string());
    let prefix = format!("{}-t", run.metadata.run_id);
    html! {
        details class="child" {
            summary {
                "Child run " code { (run.metadata.run_id) } " — "
                (plural(run.turns.len(), "turn")) ", " (status) ", " (run.metadata.root_model)
            }
            div class="child-body" {
                @if let Some(answer) = run.outcome.as_ref().and_then(|o| o.answer.as_ref()) {
                    (text_block("child answer", answer, false))
                }
                @for turn in &run.turns {
                    (turn_section(turn, &prefix))
                }
            }
        }
    }
}
