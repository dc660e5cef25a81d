//! Properties over logs someone else wrote: a run or query log with any one value replaced
//! (a huge number, a negative one, text where a number goes, an object where text goes) or a
//! line cut anywhere is read back, listed and rendered, or refused with an error — never a
//! panic. The logs start as the ones the other tests write, every record type in them.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};

use super::{LogView, render};
use crate::{RunSummary, Trajectory, TurnSummary};

/// Cases per property: each writes and reads a log of a few KiB.
const CASES: u32 = 192;

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    })
}

/// A value of any JSON type, leaning on what breaks typed readers.
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        prop_oneof![Just(1e300), Just(-1.5), Just(0.0), Just(f64::MIN_POSITIVE)]
            .prop_map(|number| json!(number)),
        proptest::sample::select(vec![
            "",
            "x",
            "\u{202e}evil",
            "<script>",
            "2026-13-45T99:99:99Z",
            "../../etc/passwd",
            "\n\n",
            "answered",
            "result",
            "iteration",
            "metadata",
            "query_metadata",
        ])
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z_]{1,8}", inner, 0..3)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// Every JSON pointer in `value`, the root's included.
fn pointers(value: &Value, at: String, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                pointers(
                    inner,
                    format!("{at}/{}", key.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        Value::Array(items) => {
            for (index, inner) in items.iter().enumerate() {
                pointers(inner, format!("{at}/{index}"), out);
            }
        }
        _ => {}
    }
    out.push(at);
}

/// One change to a log's lines.
#[derive(Debug, Clone)]
enum Mutation {
    /// Line `line`'s value at the `node`th pointer becomes `value`.
    Replace {
        line: usize,
        node: usize,
        value: Value,
    },
    /// Line `line` is cut after `at` bytes.
    Cut { line: usize, at: usize },
    /// Line `line` is dropped.
    Drop { line: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        6 => (any::<usize>(), any::<usize>(), value())
            .prop_map(|(line, node, value)| Mutation::Replace { line, node, value }),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(line, at)| Mutation::Cut { line, at }),
        1 => any::<usize>().prop_map(|line| Mutation::Drop { line }),
    ]
}

fn mutate(lines: &mut Vec<String>, mutation: &Mutation) {
    match *mutation {
        Mutation::Replace {
            line,
            node,
            ref value,
        } => {
            let line = line % lines.len();
            let Ok(mut record) = serde_json::from_str::<Value>(&lines[line]) else {
                return;
            };
            let mut all = Vec::new();
            pointers(&record, String::new(), &mut all);
            let pointer = &all[node % all.len()];
            if pointer.is_empty() {
                record = value.clone();
            } else if let Some(slot) = record.pointer_mut(pointer) {
                *slot = value.clone();
            }
            lines[line] = record.to_string();
        }
        Mutation::Cut { line, at } => {
            let line = line % lines.len();
            let text = &lines[line];
            let mut at = at % (text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            lines[line].truncate(at);
        }
        Mutation::Drop { line } => {
            if lines.len() > 1 {
                lines.remove(line % lines.len());
            }
        }
    }
}

/// Reads `path` every way the CLI does: the viewer (and its page), the reader, the summaries.
fn read_every_way(path: &Path) {
    if let Ok(log) = LogView::load(path) {
        let _ = render(&log);
    }
    if let Ok(trajectory) = Trajectory::read(path) {
        for iteration in trajectory.iterations() {
            let _ = TurnSummary::of(iteration);
        }
    }
    let _ = RunSummary::read(path);
}

fn check(base: &Path, mutations: &[Mutation]) -> Result<(), TestCaseError> {
    let text = std::fs::read_to_string(base).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    for mutation in mutations {
        mutate(&mut lines, mutation);
    }
    // The other logs beside it (a run's children) come along unchanged.
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(base.parent().unwrap()).unwrap() {
        let entry = entry.unwrap().path();
        std::fs::copy(&entry, dir.path().join(entry.file_name().unwrap())).unwrap();
    }
    let path = dir.path().join(base.file_name().unwrap());
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    read_every_way(&path);
    Ok(())
}

#[test]
fn run_logs_changed_anywhere_are_read_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let base = super::tests::run_with_child(dir.path());
    runner()
        .run(&proptest::collection::vec(mutation(), 1..4), |mutations| {
            check(&base, &mutations)
        })
        .unwrap();
}

#[test]
fn query_logs_changed_anywhere_are_read_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let base = super::query_tests::query_log(dir.path(), true);
    runner()
        .run(&proptest::collection::vec(mutation(), 1..4), |mutations| {
            check(&base, &mutations)
        })
        .unwrap();
}
