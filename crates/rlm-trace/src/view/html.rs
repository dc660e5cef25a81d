//! The page: one HTML file with its style and script inline.
//!
//! Every text from a log goes through [`escape`] (or the Markdown renderer, which escapes);
//! the only markup is written here. The page loads nothing: a Content-Security-Policy allows no
//! source at all but the page's own inline style and its one script (by a nonce), so even a
//! mistake here could not make it fetch anything or run injected script.

use std::fmt::Write as _;

use rlm_types::{Role, thousands};

use super::format::{chars, dollars, seconds, seconds_shown, size_label};
use super::load::{ChildRun, RunView, TurnView};
use super::markdown::{self, escape};

use crate::schema::{CodeBlock, Status, Subcall};

const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");

/// Texts longer than this (in chars) or than [`FOLD_LINES`] are folded.
const FOLD_CHARS: usize = 2_000;
const FOLD_LINES: usize = 30;

/// Renders the whole page for a run (its child runs included).
pub fn page(run: &RunView, nonce: &str) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let title = format!(
        "rlm run {} — {}",
        run.metadata.run_id,
        preview(&run.metadata.query, 80)
    );
    page_start(&mut out, &title, nonce);
    header(&mut out, run);
    controls(&mut out, "turns");
    timeline(&mut out, run);
    out.push_str("<main id=\"turns\">");
    for turn in &run.turns {
        turn_section(&mut out, turn, "t");
    }
    out.push_str("</main>");
    page_end(&mut out, nonce);
    out
}

/// The document's head: the policy that lets nothing load, the title and the style.
pub(super) fn page_start(out: &mut String, title: &str, nonce: &str) {
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; script-src 'nonce-{nonce}'; img-src data:; \
         form-action 'none'; base-uri 'none'\">\
         <title>{}</title><style>{STYLE}</style></head><body>",
        escape(title),
    );
}

/// The search box and expand/collapse buttons; the script filters the `.turn` sections of
/// `#turns`, which it calls `items` (`turns`, `calls`).
pub(super) fn controls(out: &mut String, items: &str) {
    let _ = write!(
        out,
        "<nav id=\"controls\"><input id=\"search\" type=\"search\" \
         placeholder=\"Filter {items} (text anywhere in one)\" aria-label=\"Filter {items}\">\
         <span id=\"match-count\"></span><button type=\"button\" id=\"expand-all\">Expand all\
         </button><button type=\"button\" id=\"collapse-all\">Collapse all</button></nav>",
    );
}

/// The page's one script and the end of the document.
pub(super) fn page_end(out: &mut String, nonce: &str) {
    let _ = writeln!(
        out,
        "<script nonce=\"{nonce}\">{SCRIPT}</script></body></html>"
    );
}

/// The run's summary: status, models, totals, limits, question, answer, contexts.
fn header(out: &mut String, run: &RunView) {
    let metadata = &run.metadata;
    let _ = write!(
        out,
        "<header><h1>rlm run <code>{}</code></h1>",
        escape(&metadata.run_id)
    );
    match &run.outcome {
        Some(outcome) => {
            // An answer forced at the iteration limit is partial: `rlm run` exits 1 for it.
            let (class, prefix) = match outcome.status {
                Status::ForcedAnswer => ("partial", "partial: "),
                status if status.is_answered() => ("ok", ""),
                _ => ("stopped", ""),
            };
            let _ = write!(
                out,
                "<p id=\"status\" class=\"status {class}\">{prefix}{}</p>",
                escape(&outcome.status.to_string())
            );
            if let Some(limit) = budget_limit(run) {
                let _ = write!(
                    out,
                    "<p class=\"banner budget\">Budget event: the run stopped because its \
                     limit of {} was reached.</p>",
                    escape(&limit)
                );
            }
            if let Some(error) = &outcome.error {
                let _ = write!(out, "<p class=\"banner error\">{}</p>", escape(error));
            }
        }
        None => {
            let _ = write!(
                out,
                "<p id=\"status\" class=\"status running\">no result yet</p>\
                 <p id=\"incomplete\" class=\"banner\">This log has no result line: the run is \
                 still going, or it was stopped before it finished. Shown: the {} turns logged \
                 so far.{}</p>",
                run.turns.len(),
                cut_note(run.cut_line),
            );
        }
    }
    out.push_str("<dl class=\"facts\">");
    let mut fact = |name: &str, value: &str| {
        let _ = write!(out, "<dt>{name}</dt><dd>{}</dd>", escape(value));
    };
    fact("root model", &metadata.root_model);
    fact("sub-call model", &metadata.subcall_model);
    fact("REPL", &metadata.environment_type);
    fact("turns", &run.turns.len().to_string());
    if let Some(outcome) = &run.outcome {
        let total = &outcome.usage.total;
        fact("sub-calls", &thousands(outcome.subcalls));
        fact(
            "tokens",
            &format!(
                "{} in, {} out",
                thousands(total.usage.input_tokens),
                thousands(total.usage.output_tokens)
            ),
        );
        fact("cost", &dollars(total.cost_usd, total.unpriced_calls));
        fact("time", &seconds(outcome.seconds));
        if total.retries > 0 || total.failures > 0 {
            fact(
                "retries",
                &format!("{} retried, {} failed", total.retries, total.failures),
            );
        }
    }
    fact("limits", &limits(run));
    fact("log", &run.path.display().to_string());
    out.push_str("</dl>");

    out.push_str("<section id=\"question\"><h2>Question</h2>");
    text_block(out, "question", &metadata.query, true);
    out.push_str("</section>");
    if let Some(outcome) = &run.outcome {
        out.push_str("<section id=\"answer\"><h2>Answer</h2>");
        match (&outcome.answer, &outcome.partial_answer) {
            (Some(answer), _) => text_block(out, "answer", answer, true),
            (None, Some(partial)) => {
                out.push_str("<p class=\"muted\">No answer; the partial `answer` variable:</p>");
                text_block(out, "partial answer", partial, true);
            }
            (None, None) => out.push_str("<p class=\"muted\">No answer.</p>"),
        }
        out.push_str("</section>");
    }
    contexts(out, run);
    if !run.unknown_records.is_empty() {
        let kinds: Vec<String> = run
            .unknown_records
            .iter()
            .map(|(kind, n)| format!("{kind} ×{n}"))
            .collect();
        let _ = write!(
            out,
            "<p class=\"banner\">Records of types this version does not show: {}</p>",
            escape(&kinds.join(", "))
        );
    }
    out.push_str("</header>");
}

fn contexts(out: &mut String, run: &RunView) {
    let parts = &run.metadata.contexts.parts;
    if parts.is_empty() {
        return;
    }
    out.push_str("<section id=\"contexts\"><h2>Contexts</h2><ul>");
    for part in parts {
        let _ = write!(
            out,
            "<li><code>{}</code> {} — {}, {} lines</li>",
            escape(&part.variable),
            escape(part.name.as_deref().unwrap_or("(inline text)")),
            chars(part.chars),
            thousands(part.lines)
        );
    }
    out.push_str("</ul></section>");
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

/// One row per turn: time, tokens, cost and what happened, linked to the turn. Rows come in
/// groups of [`ROWS_PER_GROUP`] that the browser lays out only when scrolled to (a table of a
/// thousand rows took most of a page's load time).
fn timeline(out: &mut String, run: &RunView) {
    // Bars follow the times as shown, so equal labels get equal bars.
    let longest = run
        .turns
        .iter()
        .map(|turn| seconds_shown(turn.iteration.seconds).0)
        .fold(0.0_f64, f64::max);
    out.push_str(
        "<section id=\"timeline\"><h2>Timeline</h2><div class=\"row head\"><span>turn</span>\
         <span>time</span><span>tokens in</span><span>tokens out</span><span>cost</span>\
         <span>events</span></div><div class=\"scroll\">",
    );
    for group in run.turns.chunks(ROWS_PER_GROUP) {
        out.push_str("<div class=\"rows\">");
        for turn in group {
            let iteration = &turn.iteration;
            let (shown, label) = seconds_shown(iteration.seconds);
            let width = if longest > 0.0 {
                (shown / longest * 60.0).clamp(1.0, 60.0)
            } else {
                1.0
            };
            let usage = &iteration.usage;
            let _ = write!(
                out,
                "<div class=\"row\"><a href=\"#t{n}\">{n}</a><span><span class=\"bar\" \
                 style=\"width:{width:.0}px\"></span> {}</span><span>{}</span><span>{}</span>\
                 <span>{}</span><span>{}</span></div>",
                label,
                thousands(usage.usage.input_tokens),
                thousands(usage.usage.output_tokens),
                dollars(usage.cost_usd, usage.unpriced_calls),
                badges(turn),
                n = iteration.iteration,
            );
        }
        out.push_str("</div>");
    }
    out.push_str("</div></section>");
}

const ROWS_PER_GROUP: usize = 50;

/// Short labels for what happened in a turn.
fn badges(turn: &TurnView) -> String {
    let iteration = &turn.iteration;
    let usage = &iteration.usage;
    let mut out = String::new();
    let mut badge = |class: &str, text: &str| {
        let _ = write!(out, "<span class=\"badge {class}\">{}</span>", escape(text));
    };
    let blocks = iteration.code_blocks.len();
    if blocks > 0 {
        badge("", &plural(blocks, "block"));
    }
    let errors = iteration
        .code_blocks
        .iter()
        .filter(|block| block.result.error.is_some())
        .count();
    if errors > 0 {
        badge("bad", &plural(errors, "error"));
    }
    let calls: usize = iteration
        .code_blocks
        .iter()
        .map(|block| block.result.subcalls.len())
        .sum();
    if calls > 0 {
        badge("", &plural(calls, "sub-call"));
    }
    let host_calls = || {
        iteration
            .code_blocks
            .iter()
            .flat_map(|block| &block.result.host_calls)
    };
    let host_count = host_calls().count();
    if host_count > 0 {
        badge("", &plural(host_count, "host call"));
    }
    let failed_host_calls = host_calls().filter(|call| call.error.is_some()).count();
    if failed_host_calls > 0 {
        badge("bad", &plural(failed_host_calls, "failed host call"));
    }
    if !turn.children.is_empty() {
        badge("child", &plural(turn.children.len(), "child run"));
    }
    if usage.calls > 1 {
        badge("warn", "re-asked");
    }
    let failed_calls = iteration
        .code_blocks
        .iter()
        .flat_map(|block| &block.result.subcalls)
        .filter(|call| call.error.is_some())
        .count();
    if failed_calls > 0 {
        badge("bad", &plural(failed_calls, "failed sub-call"));
    }
    if usage.retries > 0 {
        badge("warn", &plural(usage.retries as usize, "retry"));
    }
    if usage.failures > 0 {
        badge("bad", &plural(usage.failures as usize, "failed call"));
    }
    if iteration.final_answer.is_some() {
        badge("ok", "answer");
    }
    out
}

fn turn_section(out: &mut String, turn: &TurnView, prefix: &str) {
    let iteration = &turn.iteration;
    let n = iteration.iteration;
    let usage = &iteration.usage;
    let _ = write!(
        out,
        "<section class=\"turn\" id=\"{}{n}\"><h3>Turn {n} <span class=\"meta\">{} · {} in / \
         {} out tokens · {}</span> {}</h3>",
        escape(prefix),
        seconds(iteration.seconds),
        thousands(usage.usage.input_tokens),
        thousands(usage.usage.output_tokens),
        dollars(usage.cost_usd, usage.unpriced_calls),
        badges(turn),
    );
    prompt_messages(out, turn);
    let reply = &iteration.response;
    let label = format!("Reply — {}", size_label(reply));
    let open = reply.chars().count() <= FOLD_CHARS * 2;
    let _ = write!(
        out,
        "<details class=\"reply\"{}><summary>{}</summary><div class=\"md\">{}</div></details>",
        if open { " open" } else { "" },
        escape(&label),
        markdown::render(reply)
    );
    for (index, block) in iteration.code_blocks.iter().enumerate() {
        code_block(out, turn, index, block);
    }
    if !iteration.notes.is_empty() {
        out.push_str("<ul class=\"notes\">");
        for note in &iteration.notes {
            let _ = write!(out, "<li>{}</li>", escape(note));
        }
        out.push_str("</ul>");
    }
    if let Some(answer) = &iteration.final_answer {
        out.push_str("<div class=\"final\"><h4>Answer given this turn</h4>");
        text_block(out, "answer", answer, true);
        out.push_str("</div>");
    }
    out.push_str("</section>");
}

fn prompt_messages(out: &mut String, turn: &TurnView) {
    let messages = &turn.new_messages;
    if messages.is_empty() {
        return;
    }
    let total: usize = messages.iter().map(|m| m.content.chars().count()).sum();
    let _ = write!(
        out,
        "<details class=\"prompt\"><summary>Sent to the model: {} new of {} ({})</summary>",
        plural(messages.len(), "message"),
        turn.prompt_messages,
        chars(total as u64),
    );
    for message in messages {
        let role = match message.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        };
        let _ = write!(
            out,
            "<div class=\"message {role}\"><span class=\"role\">{role}</span><pre>{}</pre></div>",
            escape(&message.content)
        );
    }
    out.push_str("</details>");
}

fn code_block(out: &mut String, turn: &TurnView, index: usize, block: &CodeBlock) {
    let result = &block.result;
    // The reply usually holds the code already, just above: it is not shown twice.
    let code = block.code.trim();
    let in_reply = !code.is_empty() && turn.iteration.response.contains(code);
    let _ = write!(
        out,
        "<div class=\"block{}\"><div class=\"block-head\">Code block {} · ran {}{}</div>{}",
        if result.error.is_some() {
            " failed"
        } else {
            ""
        },
        index + 1,
        seconds(result.seconds),
        if in_reply {
            " · the code is in the reply above"
        } else {
            ""
        },
        if in_reply {
            String::new()
        } else {
            markdown::code_block(&block.code, "python")
        },
    );
    if !result.stdout.is_empty() {
        text_block(out, "output", &result.stdout, false);
    } else {
        out.push_str("<p class=\"muted\">(no output)</p>");
    }
    if !result.stderr.is_empty() {
        text_block(out, "stderr", &result.stderr, false);
    }
    if let Some(error) = &result.error {
        let _ = write!(out, "<pre class=\"error\">{}</pre>", escape(error));
    }
    if let Some(answer) = &result.final_answer {
        text_block(out, "FINAL", answer, false);
    }
    super::host_calls::render(out, &result.host_calls);
    for (call_index, call) in result.subcalls.iter().enumerate() {
        subcall(out, call, turn.children.get(&(index, call_index)));
    }
    out.push_str("</div>");
}

fn subcall(out: &mut String, call: &Subcall, child: Option<&ChildRun>) {
    let tokens: (u64, u64) = call
        .usage_summary
        .model_usage_summaries
        .values()
        .fold((0, 0), |(i, o), m| {
            (i + m.total_input_tokens, o + m.total_output_tokens)
        });
    let _ = write!(
        out,
        "<div class=\"subcall{}\"><div class=\"subcall-head\"><code>{}</code> {} · {} · {} in / \
         {} out tokens · {}</div>",
        if call.error.is_some() { " failed" } else { "" },
        call.kind.name(),
        escape(&call.model),
        seconds(call.seconds),
        thousands(tokens.0),
        thousands(tokens.1),
        dollars(call.cost_usd, 0),
    );
    preview_block(out, "prompt", &call.prompt, call.prompt_chars);
    preview_block(out, "response", &call.response, call.response_chars);
    if let Some(error) = &call.error {
        let _ = write!(out, "<pre class=\"error\">{}</pre>", escape(error));
    }
    match child {
        Some(ChildRun::Loaded(run)) => child_run(out, run),
        Some(ChildRun::Missing(why)) => {
            let _ = write!(
                out,
                "<p class=\"muted child-missing\">Child run {}: {}</p>",
                escape(call.child_run_id.as_deref().unwrap_or("?")),
                escape(why)
            );
        }
        None => {}
    }
    out.push_str("</div>");
}

/// A child run, folded, with its own turns inside (their ids start with the child's run id,
/// which is unique in the tree).
fn child_run(out: &mut String, run: &RunView) {
    let status = run
        .outcome
        .as_ref()
        .map_or("no result yet".to_owned(), |o| o.status.to_string());
    let _ = write!(
        out,
        "<details class=\"child\"><summary>Child run <code>{}</code> — {}, {}, {}</summary>\
         <div class=\"child-body\">",
        escape(&run.metadata.run_id),
        plural(run.turns.len(), "turn"),
        escape(&status),
        escape(&run.metadata.root_model),
    );
    if let Some(answer) = run.outcome.as_ref().and_then(|o| o.answer.as_ref()) {
        text_block(out, "child answer", answer, false);
    }
    let prefix = format!("{}-t", run.metadata.run_id);
    for turn in &run.turns {
        turn_section(out, turn, &prefix);
    }
    out.push_str("</div></details>");
}

/// A text in a `<pre>`, folded with its size when long.
pub(super) fn text_block(out: &mut String, label: &str, text: &str, open: bool) {
    let long = text.chars().count() > FOLD_CHARS || text.lines().count() > FOLD_LINES;
    let class = escape(
        &label
            .split('(')
            .next()
            .unwrap_or("")
            .trim()
            .replace(' ', "-"),
    );
    if long {
        let _ = write!(
            out,
            "<details class=\"text {class}\"{}><summary>{} — {}</summary><pre>{}</pre></details>",
            if open { " open" } else { "" },
            escape(label),
            escape(&size_label(text)),
            escape(text)
        );
    } else {
        let _ = write!(
            out,
            "<div class=\"text {class}\"><span class=\"label\">{}</span><pre>{}</pre></div>",
            escape(label),
            escape(text)
        );
    }
}

/// A logged preview with the full length it was cut from.
pub(super) fn preview_block(out: &mut String, label: &str, preview: &str, full_chars: u64) {
    let shown = preview.chars().count() as u64;
    let label = if full_chars > shown {
        format!(
            "{label} (first {} of {})",
            thousands(shown),
            chars(full_chars)
        )
    } else {
        label.to_owned()
    };
    text_block(out, &label, preview, false);
}

/// What the page says about a cut last line it left out.
pub(super) fn cut_note(cut_line: Option<usize>) -> String {
    cut_line.map_or_else(String::new, |line| {
        format!(" Line {line}, the last, is cut short (still being written) and is not shown.")
    })
}

pub(super) fn plural(n: usize, word: &str) -> String {
    let shown = thousands(n as u64);
    match (n, word) {
        (1, _) => format!("1 {word}"),
        (_, "retry") => format!("{shown} retries"),
        (_, "batch") => format!("{shown} batches"),
        _ => format!("{shown} {word}s"),
    }
}

pub(super) fn preview(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() > max || text.lines().nth(1).is_some() {
        let cut: String = line.chars().take(max).collect();
        format!("{cut}…")
    } else {
        line.to_owned()
    }
}
