#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::*;
use crate::query::{QueryCall, QueryMetadata, QueryOutcome, QueryStage};
use crate::{Error, TrajectoryWriter};
use rlm_types::{ModelTotals, Usage, UsageReport};

const XSS: &str = "<script>alert('x')</script>";

fn totals(input: u64, output: u64, cost: f64) -> ModelTotals {
    ModelTotals {
        calls: 1,
        usage: Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        },
        cost_usd: cost,
        ..ModelTotals::default()
    }
}

fn call(stage: &str, batch: Option<&str>, attempt: u32, chunks: &[i64], reply: &str) -> QueryCall {
    QueryCall {
        run_id: "q1".to_owned(),
        stage: stage.to_owned(),
        batch: batch.map(str::to_owned),
        attempt,
        chunk_ids: chunks.to_vec(),
        model: if stage == "extract" {
            "openai:sub"
        } else {
            "openai:root"
        }
        .to_owned(),
        prompt: format!("prompt of {stage} {}", batch.unwrap_or("")),
        prompt_chars: 9_000,
        response: reply.to_owned(),
        response_chars: reply.chars().count() as u64,
        usage: totals(100, 10, 0.001),
        tool_rounds: 0,
        seconds: 0.5,
        error: None,
    }
}

/// Every record a query writes: a plan from the model, three hits in two batches (the second
/// re-asked, then split, one half failing), findings, a report, and a record type this
/// version does not know.
pub(super) fn query_log(dir: &Path, finished: bool) -> PathBuf {
    let log = TrajectoryWriter::create(dir, "query_2026-11-23_10-00-00_q1").unwrap();
    log.write(&QueryMetadata {
        run_id: "q1".to_owned(),
        question: format!("Why does refresh fail? {XSS}"),
        model: "openai:root".to_owned(),
        subcall_model: "openai:sub".to_owned(),
        store: PathBuf::from(".rlm"),
        options: json!({"mode": null}),
    })
    .unwrap();
    log.write(&call("plan", None, 1, &[], "{\"queries\": [\"refresh\"]}"))
        .unwrap();
    log.write(&QueryStage {
        run_id: "q1".to_owned(),
        stage: "plan".to_owned(),
        seconds: 0.6,
        detail: json!({
            "plan": {"mode": "bm25", "queries": ["token refresh", "AuthError"], "top_k": 20,
                     "batch_size": 2, "buffers": []},
            "source": {"source": "model", "notes": ["dropped unknown buffer `nope.rs`"]},
            "fixed_by_caller": ["batch_size"],
        }),
    })
    .unwrap();
    log.write(&QueryStage {
        run_id: "q1".to_owned(),
        stage: "search".to_owned(),
        seconds: 0.01,
        detail: json!({
            "scan": "search", "mode": "bm25", "notes": ["semantic search unavailable"],
            "chunk_ids": [11, 12, 13],
            "hits": [
                {"id": 11, "buffer": "auth.rs", "start_line": 1, "end_line": 40, "bytes": 900},
                {"id": 12, "buffer": "server.log", "start_line": 3, "end_line": 9, "bytes": 300},
                {"id": 13, "buffer": "notes.md", "start_line": 1, "end_line": 2, "bytes": 50},
            ],
        }),
    })
    .unwrap();
    log.write(&call(
        "extract",
        Some("0"),
        1,
        &[11, 12],
        "{\"results\": []}",
    ))
    .unwrap();
    log.write(&call("extract", Some("1"), 1, &[13, 14], "not json"))
        .unwrap();
    log.write(&call("extract", Some("1"), 2, &[13, 14], "still not json"))
        .unwrap();
    log.write(&call("extract", Some("1.1"), 1, &[13], "{\"results\": []}"))
        .unwrap();
    let mut failed = call("extract", Some("1.2"), 1, &[14], "");
    failed.error = Some("model call failed: HTTP 500".to_owned());
    failed.usage = ModelTotals {
        failures: 1,
        ..ModelTotals::default()
    };
    log.write(&failed).unwrap();
    // A record a newer writer adds (e.g. a synthesizer's tool call).
    log.write(&Unknown(json!({
        "type": "query_tool_call", "timestamp": "t", "version": crate::VERSION,
        "run_id": "q1", "tool": "peek_chunk", "arguments": {"chunk_id": 11},
        "result": format!("fn refresh() {XSS}"),
    })))
    .unwrap();
    log.write(&call("synthesize", None, 1, &[], "## Summary\nExpired."))
        .unwrap();
    if finished {
        write_outcome(&log);
    }
    log.path().to_path_buf()
}

/// The record a finished query ends with: an answer, two failed batches, two findings.
fn write_outcome(log: &TrajectoryWriter) {
    let mut usage = BTreeMap::new();
    for (stage, calls) in [("plan", 1), ("extract", 5), ("synthesize", 1), ("total", 7)] {
        let mut totals = totals(100 * calls, 10 * calls, 0.001 * calls as f64);
        totals.calls = calls;
        usage.insert(
            stage.to_owned(),
            UsageReport {
                models: BTreeMap::new(),
                total: totals,
            },
        );
    }
    log.write(&QueryOutcome {
        run_id: "q1".to_owned(),
        status: "answered".to_owned(),
        report: format!("## Summary\nRefresh fails with **AuthError::Expired** {XSS}"),
        chunks_selected: 3,
        chunks_analyzed: 3,
        batches_failed: vec![
            json!({"batch": "1", "chunk_ids": [13, 14], "reason": "reply is not JSON"}),
            json!({"batch": "1.2", "chunk_ids": [14], "reason": "model call failed: HTTP 500"}),
        ],
        chunk_failures: vec![json!({"chunk_id": 14, "reason": "model call failed: HTTP 500"})],
        chunks_skipped: Vec::new(),
        findings: vec![
            json!({"chunk_id": 11, "source": "auth.rs:1-40", "relevance": "high",
                   "findings": ["refresh returns AuthError::Expired"], "also_in": [12],
                   "summary": "the refresh path", "follow_up": ["who calls refresh?"]}),
            json!({"chunk_id": 13, "source": "notes.md:1-2", "relevance": "low",
                   "findings": [format!("a note {XSS}")], "also_in": [],
                   "summary": null, "follow_up": []}),
        ],
        citations_unknown: Vec::new(),
        error: None,
        usage,
        seconds: 3.5,
    })
    .unwrap();
}

/// A record of a type this crate does not know, written as is.
struct Unknown(serde_json::Value);

impl serde::Serialize for Unknown {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut fields = self.0.as_object().unwrap().clone();
        for common in ["type", "timestamp", "version"] {
            fields.remove(common);
        }
        fields.serialize(serializer)
    }
}

impl crate::RecordType for Unknown {
    const TYPE: &'static str = "query_tool_call";
}

fn between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let from = text
        .find(start)
        .unwrap_or_else(|| panic!("{start} not in the page"));
    let rest = &text[from..];
    &rest[..rest.find(end).map_or(rest.len(), |n| n + end.len())]
}

#[test]
fn a_query_log_renders_its_stages_findings_and_report() {
    let dir = tempfile::tempdir().unwrap();
    let log = LogView::load(&query_log(dir.path(), true)).unwrap();
    let LogView::Query(query) = &log else {
        panic!("read as a run: {log:?}")
    };
    assert!(log.is_complete());
    assert_eq!(query.calls.len(), 7);
    assert_eq!(query.batches().len(), 2);
    let html = render(&log);
    super::tests::assert_self_contained(&html);
    assert!(!html.contains(XSS), "unescaped log text");

    assert!(html.contains("rlm query <code>q1</code>"));
    assert!(html.contains("<p id=\"status\" class=\"status ok\">answered</p>"));
    assert!(html.contains("Why does refresh fail? &lt;script&gt;"));
    let report = between(&html, "<section id=\"report\">", "</section>");
    assert!(
        report.contains("<h2>Summary</h2>") || report.contains("Summary</h"),
        "{report}"
    );
    assert!(
        report.contains("<strong>AuthError::Expired</strong>"),
        "{report}"
    );

    let plan = between(&html, "<section id=\"plan\">", "</section>");
    assert!(
        plan.contains("the model&#39;s plan") || plan.contains("the model's plan"),
        "{plan}"
    );
    assert!(plan.contains("<code>token refresh</code>") && plan.contains("<code>AuthError</code>"));
    assert!(plan.contains("dropped unknown buffer `nope.rs`"), "{plan}");
    assert!(
        plan.contains("<dt>set by the caller</dt><dd>batch_size</dd>"),
        "{plan}"
    );

    let search = between(&html, "<section id=\"search\">", "</section>");
    assert!(search.contains("3 chunks by bm25 search"), "{search}");
    assert!(search.contains("semantic search unavailable"));
    assert!(search.contains("<tr id=\"chunk-12\"><td>2</td><td>12</td><td>server.log:3-9</td>"));

    let batches = between(&html, "<section id=\"batches\">", "</section>");
    assert!(
        batches.contains("<span class=\"meta\">2 batches</span>"),
        "{batches}"
    );
    let second = between(batches, "<tr><td>1</td>", "</tr>");
    assert!(second.contains("re-asked 1×"), "{second}");
    assert!(second.contains("split (2 calls)"), "{second}");
    assert!(second.contains("1 failed call"), "{second}");
    assert!(second.contains("1 chunk without a report"), "{second}");
    let first = between(batches, "<tr><td>0</td>", "</tr>");
    assert!(first.contains("badge ok"), "{first}");
    assert!(batches.contains("batch 1.2 (chunks <a class=\"chunk\" href=\"#chunk-14\">chunk 14</a>): model call failed: HTTP 500"));

    let findings = between(&html, "<section id=\"findings\">", "</section>");
    let high = findings.find("high relevance").unwrap();
    let low = findings.find("low relevance").unwrap();
    assert!(high < low, "most relevant first");
    assert!(findings.contains("href=\"#chunk-11\">chunk 11</a> <code>auth.rs:1-40</code>"));
    assert!(findings.contains("Also in <a class=\"chunk\" href=\"#chunk-12\">chunk 12</a>"));
    assert!(findings.contains("Follow up: who calls refresh?"));

    let usage = between(&html, "<section id=\"usage\">", "</section>");
    assert!(usage.contains("<td>extract</td><td>5</td>"), "{usage}");
    assert!(
        usage.contains("<tr class=\"total\"><td>total</td><td>7</td>"),
        "{usage}"
    );

    let other = between(&html, "<section id=\"other-records\">", "</section>");
    assert!(
        other.contains("<code>query_tool_call</code> · line 10"),
        "{other}"
    );
    assert!(
        other.contains("<dt>tool</dt><dd>peek_chunk</dd>"),
        "{other}"
    );
    assert!(
        other.contains("{&quot;chunk_id&quot;:11}") || other.contains("chunk_id"),
        "{other}"
    );

    let calls = between(&html, "<main id=\"turns\" data-item=\"call\">", "</main>");
    assert_eq!(calls.matches("<section class=\"turn call\"").count(), 7);
    assert!(calls.contains("Call 5 · extract batch 1.1"), "{calls}");
    assert!(calls.contains(" of 9.0 K chars)"), "{calls}");
    assert!(calls.contains("<pre class=\"error\">model call failed: HTTP 500</pre>"));
}

#[test]
fn a_query_in_progress_renders_what_is_there() {
    let dir = tempfile::tempdir().unwrap();
    let path = query_log(dir.path(), false);
    // The writer halfway through the next line.
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("{\"type\":\"query_call\",\"run_id\":\"q1\",\"sta");
    std::fs::write(&path, &text).unwrap();
    let log = LogView::load(&path).unwrap();
    assert!(!log.is_complete());
    assert_eq!(log.cut_line(), Some(12));
    let html = render(&log);
    assert!(html.contains("<p id=\"status\" class=\"status running\">no result yet</p>"));
    assert!(
        html.contains("Shown: the 7 model calls logged so far. Line 12, the last, is cut short")
    );
    assert!(html.contains("No report yet."));
    assert!(!html.contains("id=\"findings\""));
    // Usage so far, from the calls.
    let usage = between(&html, "<section id=\"usage\">", "</section>");
    assert!(
        usage.contains("<td>extract</td><td>4</td><td>1</td>"),
        "{usage}"
    );
    assert!(
        usage.contains("<td>total so far</td><td>6</td><td>1</td>"),
        "{usage}"
    );
}

/// A query that stopped on an error closes its log with `failed` and the error: the page
/// says both, and the log counts as complete (not "still going").
#[test]
fn a_failed_query_shows_why_it_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let path = query_log(dir.path(), false);
    // `create` appends to the file the unfinished log is in.
    let log = TrajectoryWriter::create(dir.path(), "query_2026-11-23_10-00-00_q1").unwrap();
    log.write(&QueryOutcome {
        run_id: "q1".to_owned(),
        status: "failed".to_owned(),
        report: String::new(),
        chunks_selected: 0,
        chunks_analyzed: 0,
        batches_failed: Vec::new(),
        chunk_failures: Vec::new(),
        chunks_skipped: Vec::new(),
        findings: Vec::new(),
        citations_unknown: Vec::new(),
        error: Some(format!("the extractor model was refused {XSS}")),
        usage: BTreeMap::new(),
        seconds: 1.0,
    })
    .unwrap();
    let view = LogView::load(&path).unwrap();
    assert!(view.is_complete());
    let html = render(&view);
    assert!(html.contains("<p id=\"status\" class=\"status stopped\">failed</p>"));
    assert!(html.contains("The query stopped: the extractor model was refused"));
    assert!(!html.contains(XSS));
}

#[test]
fn bad_query_logs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = query_log(dir.path(), true);
    let whole = std::fs::read_to_string(&path).unwrap();
    let newer = dir.path().join("newer.jsonl");
    std::fs::write(
        &newer,
        whole.replacen(
            &format!("\"version\":{}", crate::VERSION),
            "\"version\":99",
            1,
        ),
    )
    .unwrap();
    assert!(matches!(
        LogView::load(&newer),
        Err(Error::NewerVersion {
            version: 99,
            line: 1,
            ..
        })
    ));
    let cut = dir.path().join("cut.jsonl");
    std::fs::write(&cut, format!("{whole}{{\"type\":\"query_ca")).unwrap();
    assert!(matches!(
        LogView::load(&cut),
        Err(Error::Truncated { line: 13, .. })
    ));
    let doubled = dir.path().join("doubled.jsonl");
    let first = whole.lines().next().unwrap();
    std::fs::write(&doubled, format!("{whole}{first}\n")).unwrap();
    let err = LogView::load(&doubled).unwrap_err();
    assert!(err.to_string().contains("second `query_metadata`"), "{err}");
}

#[test]
fn records_the_query_page_has_no_view_for_show_with_their_fields() {
    let dir = tempfile::tempdir().unwrap();
    let path = query_log(dir.path(), false);
    // A typed record of the other kind of log, after the query's records.
    let other = TrajectoryWriter::create(dir.path(), "other").unwrap();
    other
        .write(&super::tests::metadata("r1", 0, "the run question"))
        .unwrap();
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&std::fs::read_to_string(other.path()).unwrap());
    std::fs::write(&path, text).unwrap();
    let html = render(&LogView::load(&path).unwrap());
    let records = between(&html, "<section id=\"other-records\">", "</section>");
    assert!(
        records.contains("<code>query_tool_call</code> · line 10"),
        "{records}"
    );
    assert!(
        records.contains("<code>metadata</code> · line 12"),
        "{records}"
    );
    assert!(
        records.contains("<dt>query</dt><dd>the run question</dd>"),
        "{records}"
    );
    assert!(!records.contains("<dt>type</dt>"), "{records}");
}

#[test]
fn a_scan_logged_in_part_shows_its_full_count() {
    let dir = tempfile::tempdir().unwrap();
    let path = query_log(dir.path(), true);
    let text = std::fs::read_to_string(&path).unwrap().replacen(
        "\"scan\":\"search\"",
        "\"scan\":\"all\",\"selected\":250000",
        1,
    );
    assert!(
        text.contains("\"selected\":250000"),
        "the search record changed"
    );
    std::fs::write(&path, text).unwrap();
    let html = render(&LogView::load(&path).unwrap());
    let search = between(&html, "<section id=\"search\">", "</section>");
    assert!(search.contains("250,000 chunks"), "{search}");
    assert!(search.contains("the first 3 of them"), "{search}");
}

/// The report's citations link to their chunks; an unread one stays text.
#[test]
fn report_citations_link_to_their_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let path = query_log(dir.path(), false);
    let log = TrajectoryWriter::create(dir.path(), "query_2026-11-23_10-00-00_q1").unwrap();
    log.write(&QueryOutcome {
        run_id: "q1".to_owned(),
        status: "answered".to_owned(),
        report: "Refresh fails [chunk 11]; see [chunks 12, 13] and [chunk 999 (not read)]. \
                 [chunky 4] [chunk <b>]"
            .to_owned(),
        chunks_selected: 3,
        chunks_analyzed: 3,
        batches_failed: Vec::new(),
        chunk_failures: Vec::new(),
        chunks_skipped: Vec::new(),
        findings: Vec::new(),
        citations_unknown: vec![999],
        error: None,
        usage: BTreeMap::new(),
        seconds: 1.0,
    })
    .unwrap();
    let html = render(&LogView::load(&path).unwrap());
    let report = between(&html, "<section id=\"report\">", "</section>");
    assert!(
        report.contains("[chunk <a class=\"chunk\" href=\"#chunk-11\">11</a>]"),
        "{report}"
    );
    assert!(
        report.contains(
            "[chunks <a class=\"chunk\" href=\"#chunk-12\">12</a>, \
             <a class=\"chunk\" href=\"#chunk-13\">13</a>]"
        ),
        "{report}"
    );
    assert!(report.contains("[chunk 999 (not read)]"), "{report}");
    assert!(report.contains("[chunky 4]"), "{report}");
    assert!(report.contains("[chunk &lt;b&gt;]"), "{report}");
}
