//! Properties over what an MCP client sends: every tool's `prepare` answers any JSON value —
//! objects of its own arguments and others, wrong types, huge numbers, deep nesting, odd
//! strings, values that are not objects at all — with a prepared call or a refusal that says
//! why, never a panic (issue 45: "no panic reaches the user" for MCP arguments).

use std::cell::Cell;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Map, Value};

use crate::root::Root;
use crate::tools::{self, Place, ToolSpec};

/// Cases per tool: enough to mix every argument with every kind of value, few enough for CI.
const CASES: u32 = 256;

/// Deepest nesting tried: `serde_json` refuses text nested past 128 levels, so no deeper
/// value reaches a tool.
const MOST_NESTING: usize = 127;

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    })
}

/// Strings with meaning to paths, globs, models, cursors and numbers, and some with none.
const ODD_STRINGS: &[&str] = &[
    "",
    " ",
    "-",
    ".",
    "..",
    "../..",
    "/",
    "/etc/passwd",
    "~",
    "a/../../b",
    "\u{0}",
    "a\u{0}b",
    "\u{202e}txt.exe",
    "é\u{301}",
    "\u{FEFF}",
    "*",
    "**/{a,b}",
    "{{{{{{{{",
    "[",
    "(?i",
    "\\",
    "mcp",
    "sampling",
    "openai:gpt-4o",
    "anthropic:",
    "llamacpp:http://10.0.0.1:8080",
    ":",
    "bm25",
    "hybrid",
    "json",
    "true",
    "null",
    "-1",
    "18446744073709551616",
    "1e999",
    "NaN",
    "0.1ab2c3d4",
    "5.ffffffff",
    "lines",
    "bytes",
];

/// Names that are no tool's argument, beside each tool's own.
const UNKNOWN_KEYS: &[&str] = &[
    "",
    "\u{0}",
    "Paths",
    "pattern ",
    "max_reply_bytes",
    "root",
    "api_key",
    "__proto__",
    "é",
];

fn odd_string() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => proptest::sample::select(ODD_STRINGS).prop_map(str::to_owned),
        2 => any::<String>(),
        1 => (1usize..5000, proptest::sample::select(ODD_STRINGS))
            .prop_map(|(times, piece)| piece.repeat(times)),
    ]
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        proptest::sample::select(
            &[
                0.0,
                -0.0,
                0.5,
                -1.5,
                1e300,
                -1e300,
                f64::MAX,
                f64::MIN_POSITIVE
            ][..]
        )
        .prop_map(Value::from),
        proptest::sample::select(&[0i64, 1, -1, i64::MAX, i64::MIN, 1 << 53][..])
            .prop_map(Value::from),
        Just(Value::from(u64::MAX)),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        odd_string().prop_map(Value::String),
    ]
}

/// Any JSON value, nested a few levels, with `keys` as the objects' names.
fn value(keys: Vec<String>) -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map(proptest::sample::select(keys.clone()), inner, 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

/// `inner` inside `depth` arrays or one-key objects.
fn nested(inner: Value, depth: usize, key: &str) -> Value {
    (0..depth).fold(inner, |value, level| {
        if level % 2 == 0 {
            Value::Array(vec![value])
        } else {
            Value::Object(Map::from_iter([(key.to_owned(), value)]))
        }
    })
}

/// A value of the kind `schema` asks for (its `type`, `enum`, `const`, a branch of its
/// `anyOf`/`oneOf`, its `$ref` in `defs`), with edge values of that kind; anything when the
/// schema says nothing this knows.
fn typed(schema: &Value, defs: &Map<String, Value>, depth: usize) -> BoxedStrategy<Value> {
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str)
        && let Some(target) = reference.rsplit('/').next().and_then(|name| defs.get(name))
        && depth < 4
    {
        return typed(target, defs, depth + 1);
    }
    let choices = schema.get("enum").and_then(Value::as_array).cloned();
    if let Some(choices) = choices.filter(|choices| !choices.is_empty()) {
        return proptest::sample::select(choices).boxed();
    }
    if let Some(constant) = schema.get("const") {
        return Just(constant.clone()).boxed();
    }
    let branches = ["anyOf", "oneOf"]
        .iter()
        .find_map(|key| schema.get(*key).and_then(Value::as_array));
    if let Some(branches) = branches.filter(|branches| !branches.is_empty())
        && depth < 4
    {
        let strategies: Vec<BoxedStrategy<Value>> = branches
            .iter()
            .map(|branch| typed(branch, defs, depth + 1))
            .collect();
        return proptest::strategy::Union::new(strategies).boxed();
    }
    let kind = match schema.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        Some(Value::Array(kinds)) => kinds
            .iter()
            .filter_map(Value::as_str)
            .find(|kind| *kind != "null")
            .unwrap_or("null"),
        _ => "",
    };
    match kind {
        "string" => odd_string().prop_map(Value::String).boxed(),
        "integer" => prop_oneof![3 => (0u64..1000).prop_map(Value::from), 1 => number()].boxed(),
        "number" => prop_oneof![
            3 => (0.0f64..1000.0).prop_map(Value::from),
            1 => number()
        ]
        .boxed(),
        "boolean" => any::<bool>().prop_map(Value::Bool).boxed(),
        "null" => Just(Value::Null).boxed(),
        "array" if depth < 4 => {
            let item = schema.get("items").cloned().unwrap_or(Value::Null);
            proptest::collection::vec(typed(&item, defs, depth + 1), 0..5)
                .prop_map(Value::Array)
                .boxed()
        }
        _ => leaf().boxed(),
    }
}

/// An object of the tool's own arguments, each mostly of its declared kind (so calls get
/// past the types to the checks behind them), sometimes of any kind, and now and then a name
/// the tool does not take.
fn typed_object(tool: &ToolSpec, keys: Vec<String>) -> BoxedStrategy<Value> {
    let schema = Value::Object((tool.schema)());
    let defs = schema
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    // About four optional arguments a call, however many the tool takes.
    let optional = (4.0 / properties.len() as f64).min(0.6);
    let fields: Vec<BoxedStrategy<Option<(String, Value)>>> = properties
        .iter()
        .map(|(name, property)| {
            let kind = prop_oneof![
                12 => typed(property, &defs, 0),
                1 => value(keys.clone()),
            ];
            let given = if required.contains(&name.as_str()) {
                0.95
            } else {
                optional
            };
            let name = name.clone();
            proptest::option::weighted(given, kind)
                .prop_map(move |value| value.map(|value| (name.clone(), value)))
                .boxed()
        })
        .collect();
    let unknown = proptest::option::weighted(0.1, (proptest::sample::select(UNKNOWN_KEYS), leaf()));
    (fields, unknown)
        .prop_map(|(fields, unknown)| {
            let mut object: Map<String, Value> = fields.into_iter().flatten().collect();
            if let Some((key, value)) = unknown {
                object.insert(key.to_owned(), value);
            }
            Value::Object(object)
        })
        .boxed()
}

/// A tool's arguments: mostly an object of its own names of their kinds, or of any names
/// and values, sometimes one value nested deep under one of them, sometimes not an object.
fn arguments(tool: &ToolSpec) -> impl Strategy<Value = Value> + use<> {
    let own: Vec<String> = (tool.schema)()
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default();
    assert!(!own.is_empty(), "{} declares no arguments", tool.name);
    let mut keys = own.clone();
    keys.extend(UNKNOWN_KEYS.iter().map(|key| (*key).to_owned()));
    let object = proptest::collection::btree_map(
        proptest::sample::select(keys.clone()),
        value(keys.clone()),
        0..8,
    )
    .prop_map(|entries| Value::Object(entries.into_iter().collect()));
    let deep = (
        proptest::sample::select(own),
        leaf(),
        0..=MOST_NESTING,
        proptest::sample::select(keys.clone()),
    )
        .prop_map(|(key, inner, depth, inner_key)| {
            Value::Object(Map::from_iter([(key, nested(inner, depth, &inner_key))]))
        });
    prop_oneof![
        8 => typed_object(tool, keys.clone()),
        3 => object,
        2 => deep,
        1 => value(keys),
    ]
}

/// Every tool, on a server with and without a store of its own: each value gets a prepared
/// call or a refusal with text, and no call panics.
#[test]
fn every_tool_prepares_or_refuses_any_json_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(dir.path()).unwrap();
    let store = dir.path().join("store");
    let places = [
        Place {
            root: &root,
            store: None,
        },
        Place {
            root: &root,
            store: Some(&store),
        },
    ];
    for tool in tools::all() {
        let mut runner = runner();
        let strategy = (arguments(&tool), any::<bool>());
        let prepared = Cell::new(0u32);
        let refused = Cell::new(0u32);
        let outcome = runner.run(&strategy, |(arguments, server_store)| {
            let place = &places[usize::from(server_store)];
            match (tool.prepare)(arguments.clone(), place) {
                Ok(_job) => {
                    prepared.set(prepared.get() + 1);
                    Ok(())
                }
                Err(refusal) => {
                    refused.set(refused.get() + 1);
                    prop_assert!(
                        !refusal.trim().is_empty(),
                        "{}: an empty refusal of {arguments}",
                        tool.name
                    );
                    Ok(())
                }
            }
        });
        if let Err(failure) = outcome {
            panic!("{}: {failure}", tool.name);
        }
        // The generator reaches past the argument types to the checks behind them.
        assert!(
            prepared.get() > 0,
            "{}: none of {CASES} calls was prepared",
            tool.name
        );
    }
}
