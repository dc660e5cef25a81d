//! The page of an `rlm query` log: the question, status and report first, then the stages in
//! the order they ran (plan, search, extractor batches, findings), the usage per stage, records
//! this version has no view for, and every model call.
//!
//! As on a run's page, the page is written with maud's `html!` (every value from the log
//! escaped) and the report by the Markdown renderer, which shows HTML as text.

use maud::{Markup, html};
use rlm_types::{ModelTotals, thousands};
use serde_json::Value;

use super::format::{dollars, seconds};
use super::markdown;
use super::parts::{
    badge, controls, cut_note, document, facts, plural, preview, preview_block, text_block,
};
use super::query::QueryView;
use crate::query::QueryCall;

/// The stages whose usage the result reports, in the order they run.
const STAGES: [&str; 3] = ["plan", "extract", "synthesize"];

/// Renders the whole page for a query.
pub fn page(query: &QueryView, nonce: &str) -> String {
    let title = format!(
        "rlm query {} — {}",
        query.metadata.run_id,
        preview(&query.metadata.question, 80)
    );
    let body = html! {
        header {
            h1 { "rlm query " code { (query.metadata.run_id) } }
            (status(query))
            (facts(&query_facts(query)))
            section id="question" {
                h2 { "Question" }
                (text_block("question", &query.metadata.question, true))
            }
            (report(query))
        }
        (plan(query))
        (search(query))
        (batches(query))
        (findings(query))
        (usage(query))
        (other_records(query))
        (controls("calls"))
        main id="turns" data-item="call" {
            h2 { "Model calls" }
            @for (index, call) in query.calls.iter().enumerate() {
                (call_section(index + 1, call))
            }
        }
    };
    document(&title, nonce, &body)
}

/// The status badge and the banner under it (why the query stopped, a log still being
/// written).
fn status(query: &QueryView) -> Markup {
    html! {
        @match &query.outcome {
            Some(outcome) => {
                @let class = if outcome.status == "answered" { "ok" } else { "stopped" };
                p id="status" class={ "status " (class) } { (outcome.status.replace('_', " ")) }
                @if let Some(error) = &outcome.error {
                    p id="error" class="banner" { "The query stopped: " (error) }
                }
            }
            None => {
                p id="status" class="status running" { "no result yet" }
                p id="incomplete" class="banner" {
                    "This log has no result line: the query is still going, or it was stopped \
                     before it finished. Shown: the " (plural(query.calls.len(), "model call"))
                    " logged so far." (cut_note(query.cut_line))
                }
            }
        }
    }
}

fn query_facts(query: &QueryView) -> Vec<(&'static str, String)> {
    let metadata = &query.metadata;
    let mut facts = vec![
        ("model", metadata.model.clone()),
        ("extractor model", metadata.subcall_model.clone()),
        ("store", metadata.store.display().to_string()),
        ("model calls", thousands(query.calls.len() as u64)),
    ];
    if let Some(outcome) = &query.outcome {
        facts.push((
            "chunks",
            format!(
                "{} selected, {} analysed",
                thousands(outcome.chunks_selected as u64),
                thousands(outcome.chunks_analyzed as u64)
            ),
        ));
        if let Some(total) = outcome.usage.get("total") {
            let total = &total.total;
            facts.push((
                "tokens",
                format!(
                    "{} in, {} out",
                    thousands(total.usage.input_tokens),
                    thousands(total.usage.output_tokens)
                ),
            ));
            facts.push(("cost", dollars(total.cost_usd, total.unpriced_calls)));
        }
        facts.push(("time", seconds(outcome.seconds)));
    }
    facts.push(("log", query.path.display().to_string()));
    facts
}

/// The report (Markdown, its citations linked to the chunks) and the calls that wrote it.
fn report(query: &QueryView) -> Markup {
    let synthesis: Vec<&QueryCall> = query
        .calls
        .iter()
        .filter(|call| call.stage == "synthesize" || call.stage == "reduce")
        .collect();
    let reduce = synthesis.iter().filter(|c| c.stage == "reduce").count();
    html! {
        section id="report" {
            h2 { "Report" }
            @match &query.outcome {
                Some(outcome) if !outcome.report.is_empty() => {
                    div class="md" { (markdown::render_report(&outcome.report)) }
                }
                Some(_) => { p class="muted" { "No report." } }
                None => { p class="muted" { "No report yet." } }
            }
            @if !synthesis.is_empty() {
                p class="muted" {
                    "Written by " (plural(synthesis.len(), "call")) " ("
                    (totals_label(&sum(synthesis.iter().copied())))
                    @if reduce > 0 { ", " (reduce) " of them reducing findings group by group" }
                    "); see the model calls below."
                }
                @for error in synthesis.iter().filter_map(|call| call.error.as_deref()) {
                    pre class="error" { (error) }
                }
            }
        }
    }
}

fn plan(query: &QueryView) -> Markup {
    let Some(stage) = query.stage("plan") else {
        return html! {};
    };
    let detail = &stage.detail;
    let source = &detail["source"];
    let source_text = match source["source"].as_str() {
        Some("model") => "the model's plan".to_owned(),
        Some("skipped") => "the default plan (planning skipped)".to_owned(),
        Some("fallback") => "the default plan (fallback)".to_owned(),
        Some(other) => other.to_owned(),
        None => "?".to_owned(),
    };
    let plan = &detail["plan"];
    let buffers = strings(&plan["buffers"]);
    let mut plan_facts = vec![
        ("plan", source_text),
        ("mode", scalar(&plan["mode"])),
        ("top k", scalar(&plan["top_k"])),
        ("batch size", scalar(&plan["batch_size"])),
        (
            "buffers",
            if buffers.is_empty() {
                "all".to_owned()
            } else {
                buffers.join(", ")
            },
        ),
    ];
    let fixed = strings(&detail["fixed_by_caller"]);
    if !fixed.is_empty() {
        plan_facts.push(("set by the caller", fixed.join(", ")));
    }
    html! {
        section id="plan" {
            h2 { "Plan " span class="meta" { (seconds(stage.seconds)) } }
            (facts(&plan_facts))
            @if let Some(reason) = source["reason"].as_str() {
                p class="banner" { "Fallback: " (reason) }
            }
            @for note in strings(&source["notes"]) {
                p class="banner" { (note) }
            }
            h4 { "Search queries" }
            ol class="queries" {
                @for text in strings(&plan["queries"]) {
                    li { code { (text) } }
                }
            }
        }
    }
}

fn search(query: &QueryView) -> Markup {
    let Some(stage) = query.stage("search") else {
        return html! {};
    };
    let detail = &stage.detail;
    let hits = detail["hits"].as_array().map_or(&[][..], Vec::as_slice);
    let ids = detail["chunk_ids"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    let listed = hits.len().max(ids.len());
    let selected = detail["selected"]
        .as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(listed);
    let how = match (detail["scan"].as_str(), detail["mode"].as_str()) {
        (Some("all"), _) => "every chunk of the selected buffers (scan)".to_owned(),
        (_, Some(mode)) => format!("{mode} search"),
        _ => "search".to_owned(),
    };
    html! {
        section id="search" {
            h2 { "Search " span class="meta" { (seconds(stage.seconds)) } }
            p { (plural(selected, "chunk")) " by " (how) }
            @for note in strings(&detail["notes"]) {
                p class="banner" { (note) }
            }
            @if listed < selected {
                p { "The log lists the first " (thousands(listed as u64)) " of them." }
            }
            @if !hits.is_empty() {
                table class="hits" {
                    thead { tr { th { "rank" } th { "chunk" } th { "source" } th { "bytes" } } }
                    tbody {
                        @for (rank, hit) in hits.iter().enumerate() {
                            @let id = scalar(&hit["id"]);
                            tr id={ "chunk-" (id) } {
                                td { (rank + 1) }
                                td { (id) }
                                td {
                                    (scalar(&hit["buffer"])) ":" (scalar(&hit["start_line"]))
                                    "-" (scalar(&hit["end_line"]))
                                }
                                td { (thousands(hit["bytes"].as_u64().unwrap_or(0))) }
                            }
                        }
                    }
                }
            } @else if !ids.is_empty() {
                p { "Chunks: " (ids.iter().map(scalar).collect::<Vec<_>>().join(", ")) }
            }
        }
    }
}

fn batches(query: &QueryView) -> Markup {
    let batches = query.batches();
    let failures: &[Value] = query
        .outcome
        .as_ref()
        .map_or(&[][..], |outcome| outcome.batches_failed.as_slice());
    let chunk_failures: &[Value] = query
        .outcome
        .as_ref()
        .map_or(&[][..], |outcome| outcome.chunk_failures.as_slice());
    if batches.is_empty() && failures.is_empty() && chunk_failures.is_empty() {
        return html! {};
    }
    html! {
        section id="batches" {
            h2 { "Extractor batches " span class="meta" { (plural(batches.len(), "batch")) } }
            table {
                thead {
                    tr {
                        th { "batch" } th { "chunks" } th { "calls" } th { "status" }
                        th { "tokens in / out" } th { "cost" }
                    }
                }
                tbody {
                    @for (name, calls) in &batches {
                        (batch_row(name, calls, chunk_failures))
                    }
                }
            }
            @if !failures.is_empty() {
                h4 { "Rejected replies and failed calls" }
                ul class="failures" {
                    @for failure in failures {
                        li {
                            "batch " (scalar(&failure["batch"])) " (chunks "
                            (chunk_links(&ids_of(&failure["chunk_ids"]))) "): "
                            (scalar(&failure["reason"]))
                        }
                    }
                }
            }
            @if !chunk_failures.is_empty() {
                h4 { "Chunks without a report" }
                ul class="failures" {
                    @for failure in chunk_failures {
                        li {
                            (chunk_links(&[failure["chunk_id"].as_i64().unwrap_or_default()]))
                            ": " (scalar(&failure["reason"]))
                        }
                    }
                }
            }
        }
    }
}

/// One batch: its chunks, calls, what went wrong (re-asks, splits, failures, chunks left
/// without a report) and what it cost.
fn batch_row(name: &str, calls: &[&QueryCall], chunk_failures: &[Value]) -> Markup {
    let mut chunks: Vec<i64> = Vec::new();
    for id in calls.iter().flat_map(|call| &call.chunk_ids) {
        if !chunks.contains(id) {
            chunks.push(*id);
        }
    }
    let mut status: Vec<(&str, String)> = Vec::new();
    let asked_again = calls.iter().filter(|call| call.attempt > 1).count();
    if asked_again > 0 {
        status.push(("warn", format!("re-asked {asked_again}×")));
    }
    let halves = calls.iter().filter(|call| is_half(call)).count();
    if halves > 0 {
        status.push(("warn", format!("split ({})", plural(halves, "call"))));
    }
    let failed_calls = calls.iter().filter(|call| call.error.is_some()).count();
    if failed_calls > 0 {
        status.push(("bad", plural(failed_calls, "failed call")));
    }
    let lost = chunk_failures
        .iter()
        .filter(|failure| {
            failure["chunk_id"]
                .as_i64()
                .is_some_and(|id| chunks.contains(&id))
        })
        .count();
    if lost > 0 {
        status.push(("bad", format!("{} without a report", plural(lost, "chunk"))));
    }
    if status.is_empty() {
        status.push(("ok", "ok".to_owned()));
    }
    let totals = sum(calls.iter().copied());
    html! {
        tr {
            td { (name) }
            td { (chunk_links(&chunks)) }
            td { (calls.len()) }
            td { @for (class, text) in &status { (badge(class, text)) } }
            td {
                (thousands(totals.usage.input_tokens)) " / "
                (thousands(totals.usage.output_tokens))
            }
            td { (dollars(totals.cost_usd, totals.unpriced_calls)) }
        }
    }
}

fn findings(query: &QueryView) -> Markup {
    let Some(outcome) = &query.outcome else {
        return html! {};
    };
    // A heading before each run of findings of one relevance (they come most relevant first).
    let mut shown = "";
    let headed: Vec<(Option<&str>, &Value)> = outcome
        .findings
        .iter()
        .map(|finding| {
            let relevance = finding["relevance"].as_str().unwrap_or("?");
            let heading = (relevance != shown).then_some(relevance);
            shown = relevance;
            (heading, finding)
        })
        .collect();
    html! {
        section id="findings" {
            h2 {
                "Findings "
                span class="meta" { (plural(outcome.findings.len(), "chunk")) ", most relevant first" }
            }
            @if outcome.findings.is_empty() {
                p class="muted" { "No chunk passed the relevance threshold." }
            }
            @for (heading, finding) in headed {
                @if let Some(relevance) = heading {
                    h3 class="relevance" { (relevance) " relevance" }
                }
                (finding_block(finding))
            }
        }
    }
}

fn finding_block(finding: &Value) -> Markup {
    let relevance = finding["relevance"].as_str().unwrap_or("?");
    let id = finding["chunk_id"].as_i64().unwrap_or_default();
    let also = ids_of(&finding["also_in"]);
    let leads = strings(&finding["follow_up"]);
    html! {
        div class={ "finding " (relevance) } {
            div class="finding-head" {
                (chunk_links(&[id])) " " code { (scalar(&finding["source"])) }
            }
            ul {
                @for text in strings(&finding["findings"]) { li { (text) } }
            }
            @if !also.is_empty() {
                p class="muted" { "Also in " (chunk_links(&also)) }
            }
            @if let Some(summary) = finding["summary"].as_str() {
                p class="summary" { (summary) }
            }
            @if !leads.is_empty() {
                p class="muted" { "Follow up: " (leads.join("; ")) }
            }
        }
    }
}

/// Usage per stage and in total: the result's figures, or (while the query runs) the sums of
/// the calls logged so far.
fn usage(query: &QueryView) -> Markup {
    let rows = match &query.outcome {
        Some(outcome) => {
            let report =
                |stage: &str| Some((stage.to_owned(), outcome.usage.get(stage)?.total.clone()));
            let mut rows: Vec<(String, ModelTotals)> =
                STAGES.iter().filter_map(|stage| report(stage)).collect();
            rows.extend(
                outcome
                    .usage
                    .iter()
                    .filter(|(stage, _)| !STAGES.contains(&stage.as_str()) && *stage != "total")
                    .map(|(stage, report)| (stage.clone(), report.total.clone())),
            );
            rows.extend(report("total"));
            rows
        }
        None => usage_so_far(query),
    };
    html! {
        @if !rows.is_empty() {
            section id="usage" {
                h2 { "Usage" }
                table {
                    thead {
                        tr {
                            th { "stage" } th { "calls" } th { "failed" } th { "retries" }
                            th { "tokens in" } th { "tokens out" } th { "cost" } th { "model time" }
                        }
                    }
                    tbody {
                        @for (stage, totals) in &rows {
                            tr class=[stage.starts_with("total").then_some("total")] {
                                td { (stage) }
                                td { (thousands(totals.calls)) }
                                td { (thousands(totals.failures)) }
                                td { (thousands(totals.retries)) }
                                td { (thousands(totals.usage.input_tokens)) }
                                td { (thousands(totals.usage.output_tokens)) }
                                td { (dollars(totals.cost_usd, totals.unpriced_calls)) }
                                td { (seconds(totals.latency.as_secs_f64())) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Usage per stage summed from the calls logged so far (the report's reductions count as its
/// stage), and the total.
fn usage_so_far(query: &QueryView) -> Vec<(String, ModelTotals)> {
    let mut rows: Vec<(String, ModelTotals)> = Vec::new();
    for call in &query.calls {
        let stage = if call.stage == "reduce" {
            "synthesize"
        } else {
            call.stage.as_str()
        };
        match rows.iter_mut().find(|(name, _)| name == stage) {
            Some((_, totals)) => add(totals, &call.usage),
            None => rows.push((stage.to_owned(), call.usage.clone())),
        }
    }
    rows.push(("total so far".to_owned(), sum(query.calls.iter())));
    rows
}

/// Records this version has no view for, by name with their fields, so a newer writer's
/// records still show.
fn other_records(query: &QueryView) -> Markup {
    html! {
        @if !query.other_records.is_empty() {
            section id="other-records" {
                h2 { "Other records" }
                @for record in &query.other_records {
                    div class="record" {
                        div class="record-head" { code { (record.kind) } " · line " (record.line) }
                        dl class="facts" {
                            @for (name, value) in &record.fields {
                                dt { (name) }
                                dd { (field_value(name, value)) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A record's field: short text as is, long text and JSON with lines in a text block.
fn field_value(name: &str, value: &Value) -> Markup {
    let text = match value {
        Value::String(text) => text.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    };
    let long = match value {
        Value::String(text) => text.contains('\n') || text.chars().count() > 120,
        _ => text.contains('\n'),
    };
    html! {
        @if long { (text_block(name, &text, false)) } @else { (text) }
    }
}

fn call_section(number: usize, call: &QueryCall) -> Markup {
    let batch = call
        .batch
        .as_deref()
        .map_or_else(String::new, |batch| format!(" batch {batch}"));
    html! {
        section class="turn call" id={ "c" (number) } {
            h3 {
                "Call " (number) " · " (call.stage) (batch) " "
                span class="meta" {
                    (call.model) " · " (seconds(call.seconds)) " · " (totals_label(&call.usage))
                }
                " "
                @if call.attempt > 1 { (badge("warn", &format!("attempt {}", call.attempt))) }
                @if call.error.is_some() { (badge("bad", "failed")) }
            }
            @if !call.chunk_ids.is_empty() {
                p class="muted" { "Chunks " (chunk_links(&call.chunk_ids)) }
            }
            (preview_block("prompt", &call.prompt, call.prompt_chars))
            @if !call.response.is_empty() {
                (preview_block("reply", &call.response, call.response_chars))
            }
            @if let Some(error) = &call.error { pre class="error" { (error) } }
        }
    }
}

/// Chunk ids from a JSON array (others left out).
fn ids_of(value: &Value) -> Vec<i64> {
    value
        .as_array()
        .map(|ids| ids.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default()
}

/// Whether the call was for half of a split batch (`3.1`).
fn is_half(call: &QueryCall) -> bool {
    call.batch
        .as_deref()
        .is_some_and(|batch| batch.contains('.'))
}

/// `chunk 3, chunk 7`, each linked to its row in the search hits.
fn chunk_links(ids: &[i64]) -> Markup {
    html! {
        @for (index, id) in ids.iter().enumerate() {
            @if index > 0 { ", " }
            a class="chunk" href={ "#chunk-" (id) } { "chunk " (id) }
        }
    }
}

fn totals_label(totals: &ModelTotals) -> String {
    format!(
        "{} in / {} out tokens · {}",
        thousands(totals.usage.input_tokens),
        thousands(totals.usage.output_tokens),
        dollars(totals.cost_usd, totals.unpriced_calls)
    )
}

fn sum<'a>(calls: impl Iterator<Item = &'a QueryCall>) -> ModelTotals {
    let mut totals = ModelTotals::default();
    for call in calls {
        add(&mut totals, &call.usage);
    }
    totals
}

fn add(totals: &mut ModelTotals, more: &ModelTotals) {
    totals.calls += more.calls;
    totals.failures += more.failures;
    totals.usage.add(&more.usage);
    totals.latency += more.latency;
    totals.retries += more.retries;
    totals.cost_usd += more.cost_usd;
    totals.unpriced_calls += more.unpriced_calls;
}

/// A JSON scalar as text (`null` as empty).
fn scalar(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| items.iter().map(scalar).collect())
        .unwrap_or_default()
}
