//! The page of an `rlm query` log: the question, status and report first, then the stages in
//! the order they ran (plan, search, extractor batches, findings), the usage per stage, records
//! this version has no view for, and every model call.
//!
//! As on a run's page, every text from the log is escaped (or rendered by the escaping
//! Markdown renderer) and the only markup is written here.

use std::fmt::Write as _;

use rlm_types::{ModelTotals, thousands};
use serde_json::Value;

use super::format::{dollars, seconds};
use super::html::{
    controls, cut_note, page_end, page_start, plural, preview, preview_block, text_block,
};
use super::markdown::{self, escape};
use super::query::QueryView;
use crate::query::QueryCall;

/// The stages whose usage the result reports, in the order they run.
const STAGES: [&str; 3] = ["plan", "extract", "synthesize"];

/// Renders the whole page for a query.
pub fn page(query: &QueryView, nonce: &str) -> String {
    let mut out = String::with_capacity(32 * 1024);
    let title = format!(
        "rlm query {} — {}",
        query.metadata.run_id,
        preview(&query.metadata.question, 80)
    );
    page_start(&mut out, &title, nonce);
    header(&mut out, query);
    plan(&mut out, query);
    search(&mut out, query);
    batches(&mut out, query);
    findings(&mut out, query);
    usage(&mut out, query);
    other_records(&mut out, query);
    controls(&mut out, "calls");
    out.push_str("<main id=\"turns\" data-item=\"call\"><h2>Model calls</h2>");
    for (index, call) in query.calls.iter().enumerate() {
        call_section(&mut out, index + 1, call);
    }
    out.push_str("</main>");
    page_end(&mut out, nonce);
    out
}

fn header(out: &mut String, query: &QueryView) {
    let metadata = &query.metadata;
    let _ = write!(
        out,
        "<header><h1>rlm query <code>{}</code></h1>",
        escape(&metadata.run_id)
    );
    match &query.outcome {
        Some(outcome) => {
            let class = if outcome.status == "answered" {
                "ok"
            } else {
                "stopped"
            };
            let _ = write!(
                out,
                "<p id=\"status\" class=\"status {class}\">{}</p>",
                escape(&outcome.status.replace('_', " "))
            );
            if let Some(error) = &outcome.error {
                let _ = write!(
                    out,
                    "<p id=\"error\" class=\"banner\">The query stopped: {}</p>",
                    escape(error)
                );
            }
        }
        None => {
            let _ = write!(
                out,
                "<p id=\"status\" class=\"status running\">no result yet</p>\
                 <p id=\"incomplete\" class=\"banner\">This log has no result line: the query \
                 is still going, or it was stopped before it finished. Shown: the {} logged \
                 so far.{}</p>",
                plural(query.calls.len(), "model call"),
                cut_note(query.cut_line),
            );
        }
    }
    out.push_str("<dl class=\"facts\">");
    let mut fact = |name: &str, value: &str| {
        let _ = write!(out, "<dt>{name}</dt><dd>{}</dd>", escape(value));
    };
    fact("model", &metadata.model);
    fact("extractor model", &metadata.subcall_model);
    fact("store", &metadata.store.display().to_string());
    fact("model calls", &thousands(query.calls.len() as u64));
    if let Some(outcome) = &query.outcome {
        fact(
            "chunks",
            &format!(
                "{} selected, {} analysed",
                thousands(outcome.chunks_selected as u64),
                thousands(outcome.chunks_analyzed as u64)
            ),
        );
        if let Some(total) = outcome.usage.get("total") {
            let total = &total.total;
            fact(
                "tokens",
                &format!(
                    "{} in, {} out",
                    thousands(total.usage.input_tokens),
                    thousands(total.usage.output_tokens)
                ),
            );
            fact("cost", &dollars(total.cost_usd, total.unpriced_calls));
        }
        fact("time", &seconds(outcome.seconds));
    }
    fact("log", &query.path.display().to_string());
    out.push_str("</dl><section id=\"question\"><h2>Question</h2>");
    text_block(out, "question", &metadata.question, true);
    out.push_str("</section><section id=\"report\"><h2>Report</h2>");
    match &query.outcome {
        Some(outcome) if !outcome.report.is_empty() => {
            let _ = write!(
                out,
                "<div class=\"md\">{}</div>",
                link_citations(&markdown::render(&outcome.report))
            );
        }
        Some(_) => out.push_str("<p class=\"muted\">No report.</p>"),
        None => out.push_str("<p class=\"muted\">No report yet.</p>"),
    }
    let synthesis: Vec<&QueryCall> = query
        .calls
        .iter()
        .filter(|call| call.stage == "synthesize" || call.stage == "reduce")
        .collect();
    if !synthesis.is_empty() {
        let reduce = synthesis.iter().filter(|c| c.stage == "reduce").count();
        let failed: Vec<&str> = synthesis
            .iter()
            .filter_map(|call| call.error.as_deref())
            .collect();
        let _ = write!(
            out,
            "<p class=\"muted\">Written by {} ({}{}); see the model calls below.</p>",
            plural(synthesis.len(), "call"),
            totals_label(&sum(synthesis.iter().copied())),
            if reduce > 0 {
                format!(", {reduce} of them reducing findings group by group")
            } else {
                String::new()
            },
        );
        for error in failed {
            let _ = write!(out, "<pre class=\"error\">{}</pre>", escape(error));
        }
    }
    out.push_str("</section></header>");
}

fn plan(out: &mut String, query: &QueryView) {
    let Some(stage) = query.stage("plan") else {
        return;
    };
    let detail = &stage.detail;
    let _ = write!(
        out,
        "<section id=\"plan\"><h2>Plan <span class=\"meta\">{}</span></h2>",
        seconds(stage.seconds)
    );
    let source = &detail["source"];
    let source_text = match source["source"].as_str() {
        Some("model") => "the model's plan".to_owned(),
        Some("skipped") => "the default plan (planning skipped)".to_owned(),
        Some("fallback") => "the default plan (fallback)".to_owned(),
        Some(other) => other.to_owned(),
        None => "?".to_owned(),
    };
    let plan = &detail["plan"];
    out.push_str("<dl class=\"facts\">");
    let mut fact = |name: &str, value: &str| {
        let _ = write!(out, "<dt>{name}</dt><dd>{}</dd>", escape(value));
    };
    fact("plan", &source_text);
    fact("mode", &scalar(&plan["mode"]));
    fact("top k", &scalar(&plan["top_k"]));
    fact("batch size", &scalar(&plan["batch_size"]));
    let buffers = strings(&plan["buffers"]);
    fact(
        "buffers",
        &if buffers.is_empty() {
            "all".to_owned()
        } else {
            buffers.join(", ")
        },
    );
    let fixed = strings(&detail["fixed_by_caller"]);
    if !fixed.is_empty() {
        fact("set by the caller", &fixed.join(", "));
    }
    out.push_str("</dl>");
    if let Some(reason) = source["reason"].as_str() {
        let _ = write!(out, "<p class=\"banner\">Fallback: {}</p>", escape(reason));
    }
    for note in strings(&source["notes"]) {
        let _ = write!(out, "<p class=\"banner\">{}</p>", escape(&note));
    }
    out.push_str("<h4>Search queries</h4><ol class=\"queries\">");
    for text in strings(&plan["queries"]) {
        let _ = write!(out, "<li><code>{}</code></li>", escape(&text));
    }
    out.push_str("</ol></section>");
}

fn search(out: &mut String, query: &QueryView) {
    let Some(stage) = query.stage("search") else {
        return;
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
    let _ = write!(
        out,
        "<section id=\"search\"><h2>Search <span class=\"meta\">{}</span></h2><p>{} by {}</p>",
        seconds(stage.seconds),
        plural(selected, "chunk"),
        escape(&how)
    );
    for note in strings(&detail["notes"]) {
        let _ = write!(out, "<p class=\"banner\">{}</p>", escape(&note));
    }
    if listed < selected {
        let _ = write!(
            out,
            "<p>The log lists the first {} of them.</p>",
            thousands(listed as u64)
        );
    }
    if !hits.is_empty() {
        out.push_str(
            "<table class=\"hits\"><thead><tr><th>rank</th><th>chunk</th><th>source</th>\
             <th>bytes</th></tr></thead><tbody>",
        );
        for (rank, hit) in hits.iter().enumerate() {
            let _ = write!(
                out,
                "<tr id=\"chunk-{id}\"><td>{}</td><td>{id}</td><td>{}:{}-{}</td><td>{}</td></tr>",
                rank + 1,
                escape(&scalar(&hit["buffer"])),
                scalar(&hit["start_line"]),
                scalar(&hit["end_line"]),
                thousands(hit["bytes"].as_u64().unwrap_or(0)),
                id = escape(&scalar(&hit["id"])),
            );
        }
        out.push_str("</tbody></table>");
    } else if !ids.is_empty() {
        let ids: Vec<String> = ids.iter().map(scalar).collect();
        let _ = write!(out, "<p>Chunks: {}</p>", escape(&ids.join(", ")));
    }
    out.push_str("</section>");
}

fn batches(out: &mut String, query: &QueryView) {
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
        return;
    }
    let _ = write!(
        out,
        "<section id=\"batches\"><h2>Extractor batches <span class=\"meta\">{}</span></h2>\
         <table><thead><tr><th>batch</th><th>chunks</th><th>calls</th><th>status</th>\
         <th>tokens in / out</th><th>cost</th></tr></thead><tbody>",
        plural(batches.len(), "batch")
    );
    for (name, calls) in &batches {
        let mut chunks: Vec<i64> = Vec::new();
        for id in calls.iter().flat_map(|call| &call.chunk_ids) {
            if !chunks.contains(id) {
                chunks.push(*id);
            }
        }
        let mut status = String::new();
        let badge = |status: &mut String, class: &str, text: &str| {
            let _ = write!(
                status,
                "<span class=\"badge {class}\">{}</span>",
                escape(text)
            );
        };
        let asked_again = calls.iter().filter(|call| call.attempt > 1).count();
        if asked_again > 0 {
            badge(&mut status, "warn", &format!("re-asked {asked_again}×"));
        }
        let halves = calls.iter().filter(|call| is_half(call)).count();
        if halves > 0 {
            badge(
                &mut status,
                "warn",
                &format!("split ({})", plural(halves, "call")),
            );
        }
        let failed_calls = calls.iter().filter(|call| call.error.is_some()).count();
        if failed_calls > 0 {
            badge(&mut status, "bad", &plural(failed_calls, "failed call"));
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
            badge(
                &mut status,
                "bad",
                &format!("{} without a report", plural(lost, "chunk")),
            );
        }
        if status.is_empty() {
            badge(&mut status, "ok", "ok");
        }
        let totals = sum(calls.iter().copied());
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{status}</td><td>{} / {}</td><td>{}</td></tr>",
            escape(name),
            chunk_links(&chunks),
            calls.len(),
            thousands(totals.usage.input_tokens),
            thousands(totals.usage.output_tokens),
            dollars(totals.cost_usd, totals.unpriced_calls),
        );
    }
    out.push_str("</tbody></table>");
    if !failures.is_empty() {
        out.push_str("<h4>Rejected replies and failed calls</h4><ul class=\"failures\">");
        for failure in failures {
            let ids: Vec<i64> = failure["chunk_ids"]
                .as_array()
                .map(|ids| ids.iter().filter_map(Value::as_i64).collect())
                .unwrap_or_default();
            let _ = write!(
                out,
                "<li>batch {} (chunks {}): {}</li>",
                escape(&scalar(&failure["batch"])),
                chunk_links(&ids),
                escape(&scalar(&failure["reason"]))
            );
        }
        out.push_str("</ul>");
    }
    if !chunk_failures.is_empty() {
        out.push_str("<h4>Chunks without a report</h4><ul class=\"failures\">");
        for failure in chunk_failures {
            let id = failure["chunk_id"].as_i64().unwrap_or_default();
            let _ = write!(
                out,
                "<li>{}: {}</li>",
                chunk_links(&[id]),
                escape(&scalar(&failure["reason"]))
            );
        }
        out.push_str("</ul>");
    }
    out.push_str("</section>");
}

fn findings(out: &mut String, query: &QueryView) {
    let Some(outcome) = &query.outcome else {
        return;
    };
    let _ = write!(
        out,
        "<section id=\"findings\"><h2>Findings <span class=\"meta\">{}, most relevant first\
         </span></h2>",
        plural(outcome.findings.len(), "chunk")
    );
    if outcome.findings.is_empty() {
        out.push_str("<p class=\"muted\">No chunk passed the relevance threshold.</p>");
    }
    let mut relevance_shown = "";
    for finding in &outcome.findings {
        let relevance = finding["relevance"].as_str().unwrap_or("?");
        if relevance != relevance_shown {
            let _ = write!(
                out,
                "<h3 class=\"relevance\">{} relevance</h3>",
                escape(relevance)
            );
            relevance_shown = relevance;
        }
        let id = finding["chunk_id"].as_i64().unwrap_or_default();
        let _ = write!(
            out,
            "<div class=\"finding {}\"><div class=\"finding-head\">{} <code>{}</code></div><ul>",
            escape(relevance),
            chunk_links(&[id]),
            escape(&scalar(&finding["source"])),
        );
        for text in strings(&finding["findings"]) {
            let _ = write!(out, "<li>{}</li>", escape(&text));
        }
        out.push_str("</ul>");
        let also: Vec<i64> = finding["also_in"]
            .as_array()
            .map(|ids| ids.iter().filter_map(Value::as_i64).collect())
            .unwrap_or_default();
        if !also.is_empty() {
            let _ = write!(out, "<p class=\"muted\">Also in {}</p>", chunk_links(&also));
        }
        if let Some(summary) = finding["summary"].as_str() {
            let _ = write!(out, "<p class=\"summary\">{}</p>", escape(summary));
        }
        let leads = strings(&finding["follow_up"]);
        if !leads.is_empty() {
            let _ = write!(
                out,
                "<p class=\"muted\">Follow up: {}</p>",
                escape(&leads.join("; "))
            );
        }
        out.push_str("</div>");
    }
    out.push_str("</section>");
}

/// Usage per stage and in total: the result's figures, or (while the query runs) the sums of
/// the calls logged so far.
fn usage(out: &mut String, query: &QueryView) {
    let rows: Vec<(String, ModelTotals)> = match &query.outcome {
        Some(outcome) => {
            let mut rows: Vec<(String, ModelTotals)> = STAGES
                .iter()
                .filter_map(|stage| {
                    Some((stage.to_string(), outcome.usage.get(*stage)?.total.clone()))
                })
                .collect();
            rows.extend(
                outcome
                    .usage
                    .iter()
                    .filter(|(stage, _)| !STAGES.contains(&stage.as_str()) && *stage != "total")
                    .map(|(stage, report)| (stage.clone(), report.total.clone())),
            );
            rows.extend(
                outcome
                    .usage
                    .get("total")
                    .map(|report| ("total".to_owned(), report.total.clone())),
            );
            rows
        }
        None => {
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
            let total = sum(query.calls.iter());
            rows.push(("total so far".to_owned(), total));
            rows
        }
    };
    if rows.is_empty() {
        return;
    }
    out.push_str(
        "<section id=\"usage\"><h2>Usage</h2><table><thead><tr><th>stage</th><th>calls</th>\
         <th>failed</th><th>retries</th><th>tokens in</th><th>tokens out</th><th>cost</th>\
         <th>model time</th></tr></thead><tbody>",
    );
    for (stage, totals) in rows {
        let _ = write!(
            out,
            "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td></tr>",
            if stage.starts_with("total") {
                "total"
            } else {
                ""
            },
            escape(&stage),
            thousands(totals.calls),
            thousands(totals.failures),
            thousands(totals.retries),
            thousands(totals.usage.input_tokens),
            thousands(totals.usage.output_tokens),
            dollars(totals.cost_usd, totals.unpriced_calls),
            seconds(totals.latency.as_secs_f64()),
        );
    }
    out.push_str("</tbody></table></section>");
}

/// Records this version has no view for, by name with their fields, so a newer writer's
/// records still show.
fn other_records(out: &mut String, query: &QueryView) {
    if query.other_records.is_empty() {
        return;
    }
    out.push_str("<section id=\"other-records\"><h2>Other records</h2>");
    for record in &query.other_records {
        let _ = write!(
            out,
            "<div class=\"record\"><div class=\"record-head\"><code>{}</code> · line {}</div>\
             <dl class=\"facts\">",
            escape(&record.kind),
            record.line
        );
        for (name, value) in &record.fields {
            let _ = write!(out, "<dt>{}</dt><dd>", escape(name));
            match value {
                Value::String(text) if text.contains('\n') || text.chars().count() > 120 => {
                    text_block(out, name, text, false);
                }
                Value::String(text) => escape_into(out, text),
                other => {
                    let json = serde_json::to_string_pretty(other).unwrap_or_default();
                    if json.contains('\n') {
                        text_block(out, name, &json, false);
                    } else {
                        escape_into(out, &json);
                    }
                }
            }
            out.push_str("</dd>");
        }
        out.push_str("</dl></div>");
    }
    out.push_str("</section>");
}

fn call_section(out: &mut String, number: usize, call: &QueryCall) {
    let batch = call
        .batch
        .as_deref()
        .map_or_else(String::new, |batch| format!(" batch {batch}"));
    let mut badges = String::new();
    if call.attempt > 1 {
        let _ = write!(
            badges,
            "<span class=\"badge warn\">attempt {}</span>",
            call.attempt
        );
    }
    if call.error.is_some() {
        badges.push_str("<span class=\"badge bad\">failed</span>");
    }
    let _ = write!(
        out,
        "<section class=\"turn call\" id=\"c{number}\"><h3>Call {number} · {}{} \
         <span class=\"meta\">{} · {} · {}</span> {badges}</h3>",
        escape(&call.stage),
        escape(&batch),
        escape(&call.model),
        seconds(call.seconds),
        totals_label(&call.usage),
    );
    if !call.chunk_ids.is_empty() {
        let _ = write!(
            out,
            "<p class=\"muted\">Chunks {}</p>",
            chunk_links(&call.chunk_ids)
        );
    }
    preview_block(out, "prompt", &call.prompt, call.prompt_chars);
    if !call.response.is_empty() {
        preview_block(out, "reply", &call.response, call.response_chars);
    }
    if let Some(error) = &call.error {
        let _ = write!(out, "<pre class=\"error\">{}</pre>", escape(error));
    }
    out.push_str("</section>");
}

/// Whether the call was for half of a split batch (`3.1`).
fn is_half(call: &QueryCall) -> bool {
    call.batch
        .as_deref()
        .is_some_and(|batch| batch.contains('.'))
}

/// `chunk 3, chunk 7`, each linked to its row in the search hits.
/// The report's rendered citations (`[chunk 12]`, `[chunks 3, 4]`) with each id a link to the
/// chunk's row; an id marked `(not read)` stays text, as there is nothing to point at.
fn link_citations(html: &str) -> String {
    let mut out = String::with_capacity(html.len() + 64);
    let mut rest = html;
    while let Some(at) = rest.find("[chunk") {
        out.push_str(&rest[..at]);
        let citation = &rest[at..];
        let inside_end = citation.find(']').filter(|end| {
            let inside = &citation[1..*end];
            inside
                .strip_prefix("chunks ")
                .or_else(|| inside.strip_prefix("chunk "))
                .is_some_and(|ids| {
                    ids.chars()
                        .all(|c| c.is_ascii_alphanumeric() || " ,-()".contains(c))
                })
        });
        let Some(end) = inside_end else {
            out.push_str("[chunk");
            rest = &citation["[chunk".len()..];
            continue;
        };
        out.push('[');
        let inside = &citation[1..end];
        let mut words = inside.split_inclusive([' ', ',']).peekable();
        while let Some(word) = words.next() {
            let digits = word.trim_end_matches([' ', ',']);
            let unread = words.peek().is_some_and(|next| next.starts_with("(not"));
            match digits.parse::<i64>() {
                Ok(id) if !unread => {
                    let _ = write!(
                        out,
                        "<a class=\"chunk\" href=\"#chunk-{id}\">{id}</a>{}",
                        &word[digits.len()..]
                    );
                }
                _ => out.push_str(word),
            }
        }
        out.push(']');
        rest = &citation[end + 1..];
    }
    out.push_str(rest);
    out
}

fn chunk_links(ids: &[i64]) -> String {
    let links: Vec<String> = ids
        .iter()
        .map(|id| format!("<a class=\"chunk\" href=\"#chunk-{id}\">chunk {id}</a>"))
        .collect();
    links.join(", ")
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

fn escape_into(out: &mut String, text: &str) {
    markdown::escape_into(out, text);
}
