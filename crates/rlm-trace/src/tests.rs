use std::collections::BTreeMap;
use std::io::Cursor;

use rlm_types::{Message, ModelTotals, UsageReport};
use serde_json::{Value, json};

use crate::writer::encode;
use crate::*;

fn metadata() -> RunMetadata {
    RunMetadata {
        run_id: "a1".to_owned(),
        parent_run_id: None,
        depth: 0,
        root_model: "openai:root".to_owned(),
        subcall_model: "openai:sub".to_owned(),
        max_depth: 1,
        max_iterations: 30,
        backend: "rlm".to_owned(),
        backend_kwargs: BackendArguments {
            model_name: "openai:root".to_owned(),
        },
        environment_type: "monty".to_owned(),
        environment_kwargs: serde_json::Map::new(),
        other_backends: vec!["openai:sub".to_owned()],
        query: "q".to_owned(),
        contexts: Contexts {
            count: 1,
            parts: vec![ContextInfo {
                variable: "context_0".to_owned(),
                name: Some("a.log".to_owned()),
                chars: 5,
                lines: 1,
                ascii: true,
                hint: None,
                metadata: Some(json!({"format": "text"})),
            }],
        },
        budget: Budget {
            max_tokens: Some(1000),
            max_cost_usd: None,
            max_calls: None,
            timeout_seconds: Some(2.5),
            max_subcalls: None,
            max_consecutive_errors: 5,
        },
    }
}

fn iteration() -> Iteration {
    let mut usage = ModelTotals {
        calls: 1,
        cost_usd: 0.25,
        ..ModelTotals::default()
    };
    usage.usage.input_tokens = 120;
    usage.usage.output_tokens = 30;
    let models = UsageReport {
        models: BTreeMap::from([("openai:sub".to_owned(), usage.clone())]),
        total: usage.clone(),
    };
    Iteration {
        iteration: 1,
        run_id: "a1".to_owned(),
        prompt: vec![Message::system("s"), Message::user("u")],
        response: "```repl\nprint(1)\n".to_owned(),
        code_blocks: vec![CodeBlock {
            code: "print(1)".to_owned(),
            result: CodeResult {
                stdout: "1\n".to_owned(),
                stderr: String::new(),
                error: None,
                final_answer: None,
                seconds: 0.01,
                subcalls: vec![Subcall {
                    kind: SubcallKind::LlmQuery,
                    model: "openai:sub".to_owned(),
                    prompt: "p".to_owned(),
                    prompt_chars: 1,
                    response: "r".to_owned(),
                    response_chars: 1,
                    usage_summary: UsageSummary::of(&models),
                    cost_usd: 0.25,
                    seconds: 0.2,
                    error: None,
                    child_run_id: None,
                    child_log: None,
                }],
                host_calls: vec![HostCall {
                    name: "search".to_owned(),
                    arguments: r#"{"query":"disk","k":3}"#.to_owned(),
                    result_bytes: 120,
                    result_items: 2,
                    result: Some(r#"[{"chunk_id":1},{"chunk_id":2}]"#.to_owned()),
                    seconds: 0.01,
                    error: None,
                }],
            },
        }],
        final_answer: None,
        seconds: 0.3,
        usage,
        notes: vec!["a note".to_owned()],
    }
}

fn outcome() -> RunOutcome {
    RunOutcome {
        run_id: "a1".to_owned(),
        status: Status::Answered,
        answer: Some("42".to_owned()),
        partial_answer: None,
        iterations: 2,
        usage: UsageReport::default(),
        subcalls: 1,
        usage_summary: UsageSummary::default(),
        seconds: 1.5,
        error: None,
    }
}

#[test]
fn written_records_read_back_as_the_same_values() {
    let dir = tempfile::tempdir().unwrap();
    let log = TrajectoryWriter::create(&dir.path().join("nested"), "run").unwrap();
    log.write(&metadata()).unwrap();
    log.write(&iteration()).unwrap();
    log.write(&outcome()).unwrap();
    let read = Trajectory::read(log.path()).unwrap();
    assert_eq!(read.entries.len(), 3);
    assert_eq!(read.metadata(), Some(&metadata()));
    assert_eq!(read.iterations().collect::<Vec<_>>(), [&iteration()]);
    assert_eq!(read.outcome(), Some(&outcome()));
    for (index, entry) in read.entries.iter().enumerate() {
        assert_eq!(entry.line, index + 1);
        assert_eq!(entry.version, VERSION);
        assert!(entry.timestamp.as_deref().unwrap().ends_with('Z'));
    }
}

/// A key the process holds never reaches the log, whole or in part, wherever a record
/// quotes it (a prompt quoting a file, an error a provider wrote).
#[test]
fn configured_keys_are_masked_in_every_line() {
    const KEY: &str = "trace-key-Vb7Nq2Wx9Lm4Kp8";
    rlm_types::ApiKey::new(KEY);
    let dir = tempfile::tempdir().unwrap();
    let log = TrajectoryWriter::create(dir.path(), "run").unwrap();
    let mut turn = iteration();
    turn.prompt = vec![Message::user(format!("the .env holds KEY={KEY}"))];
    turn.response = format!("it ends in {}", &KEY[KEY.len() - 10..]);
    log.write(&turn).unwrap();
    let mut end = outcome();
    end.error = Some(format!("provider said: key {KEY} revoked"));
    log.write(&end).unwrap();
    let text = std::fs::read_to_string(log.path()).unwrap();
    assert!(text.contains("KEY=<redacted>"), "{text}");
    for start in 0..=KEY.len() - 8 {
        assert!(!text.contains(&KEY[start..start + 8]), "{text}");
    }
    // Still a log that reads.
    assert_eq!(Trajectory::read(log.path()).unwrap().entries.len(), 2);
}

#[test]
fn lines_start_with_type_timestamp_and_version_and_keep_the_reference_names() {
    let line = encode(&iteration(), "2026-01-01T00:00:00.000Z").unwrap();
    assert!(line.ends_with('\n') && line.matches('\n').count() == 1);
    assert!(
        line.starts_with(
            "{\"type\":\"iteration\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"version\":2,"
        ),
        "{line}"
    );
    let value: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(value["iteration_time"], 0.3);
    let block = &value["code_blocks"][0]["result"];
    assert_eq!(block["execution_time"], 0.01);
    let call = &block["rlm_calls"][0];
    assert_eq!(call["root_model"], "openai:sub");
    assert_eq!(call["kind"], "llm_query");
    assert_eq!(
        call["usage_summary"]["model_usage_summaries"]["openai:sub"]["total_input_tokens"],
        120
    );
    assert_eq!(value["prompt"][0]["role"], "system");
}

/// The log writes rlm-llm's messages and totals as they serialize; these are the bytes the
/// format has always had (docs/trajectory.md), field order included.
#[test]
fn messages_and_usage_keep_their_bytes() {
    let line = encode(&iteration(), "2026-01-01T00:00:00.000Z").unwrap();
    for expected in [
        r#""prompt":[{"role":"system","content":"s"},{"role":"user","content":"u"}]"#,
        r#""usage":{"calls":1,"failures":0,"input_tokens":120,"output_tokens":30,"cache_read_tokens":0,"cache_write_tokens":0,"latency_ms":0,"retries":0,"cost_usd":0.25,"unpriced_calls":0}"#,
    ] {
        assert!(line.contains(expected), "{expected}\n{line}");
    }
    let mut outcome = outcome();
    outcome.usage = iteration_usage_report();
    let line = encode(&outcome, "2026-01-01T00:00:00.000Z").unwrap();
    assert!(
        line.contains(r#""usage":{"models":{"m":{"calls":2,"failures":1,"input_tokens":7,"output_tokens":0,"cache_read_tokens":0,"cache_write_tokens":0,"latency_ms":1500,"retries":0,"cost_usd":0.0,"unpriced_calls":2}},"total":{"calls":0,"#),
        "{line}"
    );
}

fn iteration_usage_report() -> UsageReport {
    let mut totals = ModelTotals {
        calls: 2,
        failures: 1,
        latency: std::time::Duration::from_millis(1500),
        unpriced_calls: 2,
        ..ModelTotals::default()
    };
    totals.usage.input_tokens = 7;
    UsageReport {
        models: BTreeMap::from([("m".to_owned(), totals)]),
        total: ModelTotals::default(),
    }
}

#[test]
fn unknown_line_types_and_values_are_kept() {
    let text = "{\"type\":\"metadata\",\"version\":1}\n\n{\"type\":\"budget_warning\",\"version\":2,\"left\":0.1}\n";
    let mut entries = TrajectoryReader::new(Cursor::new(text));
    // A known type without its fields is an error for that line only.
    assert!(matches!(
        entries.next(),
        Some(Err(Error::InvalidRecord { line: 1, .. }))
    ));
    let entry = entries.next().unwrap().unwrap();
    assert_eq!(entry.line, 3);
    assert_eq!(entry.version, 2);
    assert_eq!(entry.record.kind(), "budget_warning");
    let Record::Unknown { fields, .. } = entry.record else {
        panic!("expected an unknown record");
    };
    assert_eq!(fields["left"], 0.1);
    assert!(entries.next().is_none());

    let mut value = serde_json::to_value(outcome()).unwrap();
    value["type"] = json!("result");
    value["status"] = json!("cancelled_by_user");
    let entry = parse_line(&value.to_string(), 7).unwrap();
    let Record::Result(outcome) = entry.record else {
        panic!("expected a result");
    };
    assert_eq!(outcome.status, Status::Other);
    assert!(!outcome.status.is_answered());
}

#[test]
fn malformed_lines_are_errors_with_their_number() {
    for (text, expect_source) in [
        ("{\"type\":\"iteration\",", true),
        ("[1]", false),
        ("{}", false),
    ] {
        let error = parse_line(text, 4).unwrap_err();
        assert!(
            matches!(&error, Error::MalformedLine { line: 4, source } if source.is_some() == expect_source),
            "{text}: {error:?}"
        );
        assert_eq!(error.to_string(), "line 4 is not a trajectory record");
    }
}

/// Lines as the engine wrote them before the schema had versions: per-call usage with a `null`
/// cost, no `version`, no `subcalls` or `total`.
#[test]
fn unversioned_logs_still_read() {
    let iteration = json!({
        "type": "iteration", "timestamp": "2025-01-01T00:00:00.000Z", "iteration": 1,
        "run_id": "a1", "prompt": [{"role": "user", "content": "q"}], "response": "FINAL(x)",
        "code_blocks": [], "final_answer": "x", "iteration_time": 0.5,
        "usage": {"input_tokens": 10, "output_tokens": 2, "cache_read_tokens": 0,
                  "cache_write_tokens": 0, "cost_usd": null},
        "notes": []
    });
    let entry = parse_line(&iteration.to_string(), 2).unwrap();
    assert_eq!(entry.version, 0);
    let Record::Iteration(iteration) = entry.record else {
        panic!("expected an iteration");
    };
    assert_eq!(iteration.usage.usage.input_tokens, 10);
    assert_eq!(iteration.usage.cost_usd, 0.0);
    let result = json!({
        "type": "result", "run_id": "a1", "status": "answered", "answer": "x",
        "partial_answer": null, "iterations": 1,
        "usage": {"models": {"m": {"calls": 1, "input_tokens": 10, "output_tokens": 2,
                  "cache_read_tokens": 0, "cache_write_tokens": 0, "cost_usd": 0.0,
                  "unpriced_calls": 1}}, "subcalls": 0},
        "usage_summary": {"model_usage_summaries": {}}, "seconds": 1.0, "error": null
    });
    let Record::Result(result) = parse_line(&result.to_string(), 3).unwrap().record else {
        panic!("expected a result");
    };
    assert_eq!(result.usage.models["m"].unpriced_calls, 1);
    assert_eq!(result.usage.total, ModelTotals::default());
}
