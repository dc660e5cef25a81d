//! Properties over what reaches the client from outside: a recording (`--replay`) someone
//! edited, and a provider's replies, whole or streamed, with any value replaced (a huge
//! number, a negative one, text where a number goes, an object where text goes), cut short,
//! or split anywhere. Each is read or refused with an error — never a panic.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};

use crate::cassette::Replayer;
use crate::sse::SseParser;
use crate::wire::{self, StreamDecoder, Wire};

/// Cases per property: each reads a few KiB.
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
        prop_oneof![Just(1e300), Just(-1.5), Just(0.0)].prop_map(|number| json!(number)),
        proptest::sample::select(vec![
            "",
            "x",
            "\u{202e}",
            "{",
            "[DONE]",
            "stop",
            "tool_use",
            "text",
            "message_stop",
            "response.completed",
            "length",
            "assistant",
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
fn pointers(value: &Value, at: &str, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                let key = key.replace('~', "~0").replace('/', "~1");
                pointers(inner, &format!("{at}/{key}"), out);
            }
        }
        Value::Array(items) => {
            for (index, inner) in items.iter().enumerate() {
                pointers(inner, &format!("{at}/{index}"), out);
            }
        }
        _ => {}
    }
    out.push(at.to_owned());
}

/// `text` (a JSON document) with its `node`th value replaced by `value`, or cut after `cut`
/// bytes when given.
fn changed(text: &str, node: usize, value: &Value, cut: Option<usize>) -> String {
    let mut changed = match serde_json::from_str::<Value>(text) {
        Ok(mut document) => {
            let mut all = Vec::new();
            pointers(&document, "", &mut all);
            let pointer = &all[node % all.len()];
            match document.pointer_mut(pointer) {
                Some(slot) => *slot = value.clone(),
                None => document = value.clone(),
            }
            document.to_string()
        }
        Err(_) => text.to_owned(),
    };
    if let Some(cut) = cut {
        let mut at = cut % (changed.len() + 1);
        while !changed.is_char_boundary(at) {
            at -= 1;
        }
        changed.truncate(at);
    }
    changed
}

fn change() -> impl Strategy<Value = (usize, usize, Value, Option<usize>)> {
    (
        any::<usize>(),
        any::<usize>(),
        value(),
        proptest::option::weighted(0.2, any::<usize>()),
    )
}

#[test]
fn an_edited_recording_is_loaded_or_refused() {
    let base = include_str!("../../../examples/needle.replay.jsonl");
    let lines: Vec<&str> = base.lines().take(3).collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("edited.jsonl");
    runner()
        .run(&proptest::collection::vec(change(), 1..4), |changes| {
            let mut edited: Vec<String> = lines.iter().map(|&line| line.to_owned()).collect();
            for (line, node, value, cut) in &changes {
                let line = line % edited.len();
                edited[line] = changed(&edited[line], *node, value, *cut);
            }
            std::fs::write(&path, edited.join("\n")).unwrap();
            if let Ok(replayer) = Replayer::load(&path) {
                for line in &edited {
                    let Ok(entry) = serde_json::from_str::<crate::cassette::CassetteEntry>(line)
                    else {
                        continue;
                    };
                    let _ = replayer.answer(&entry.request);
                }
            }
            Ok(())
        })
        .unwrap();
}

/// A whole reply of each wire: text, a tool call, usage with cache counts.
const BODIES: [(Wire, &str); 3] = [
    (
        Wire::Chat,
        r#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi","tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":4}}}"#,
    ),
    (
        Wire::Responses,
        r#"{"id":"r","object":"response","status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hi"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}],"usage":{"input_tokens":10,"output_tokens":2,"input_tokens_details":{"cached_tokens":4}}}"#,
    ),
    (
        Wire::Anthropic,
        r#"{"id":"m","type":"message","role":"assistant","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t","name":"answer","input":{"a":1}}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":2,"cache_read_input_tokens":3,"cache_creation_input_tokens":1}}"#,
    ),
];

#[test]
fn any_whole_reply_is_parsed_or_refused() {
    let cases = (
        0..BODIES.len(),
        change(),
        proptest::collection::vec(any::<u8>(), 0..64),
    );
    runner()
        .run(&cases, |(which, (_, node, value, cut), noise)| {
            let (wire, body) = BODIES[which];
            let body = changed(body, node, &value, cut);
            let _ = wire::parse_response(wire, body.as_bytes(), Some("answer"));
            let _ = wire::parse_response(wire, &noise, None);
            let _ = wire::error_message(body.as_bytes());
            let _ = crate::server_props::parse(body.as_bytes());
            let _ = crate::server_props::parse_concurrency(body.as_bytes());
            Ok(())
        })
        .unwrap();
}

/// A streamed reply of each wire, event by event (`event` name, `data`).
const STREAMS: [(Wire, &[(&str, &str)]); 3] = [
    (
        Wire::Chat,
        &[
            (
                "",
                r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"he"},"finish_reason":null}]}"#,
            ),
            (
                "",
                r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"t","type":"function","function":{"name":"f","arguments":"{\"a\""}}]},"finish_reason":null}]}"#,
            ),
            (
                "",
                r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2}}"#,
            ),
            ("", "[DONE]"),
        ],
    ),
    (
        Wire::Responses,
        &[
            (
                "response.output_text.delta",
                r#"{"type":"response.output_text.delta","delta":"he"}"#,
            ),
            (
                "response.completed",
                r#"{"type":"response.completed","response":{"status":"completed","output":[],"usage":{"input_tokens":10,"output_tokens":2}}}"#,
            ),
        ],
    ),
    (
        Wire::Anthropic,
        &[
            (
                "message_start",
                r#"{"type":"message_start","message":{"id":"m","usage":{"input_tokens":10,"output_tokens":1,"cache_read_input_tokens":2}}}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"he"}}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"answer","input":{}}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}"#,
            ),
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}"#,
            ),
            ("message_stop", r#"{"type":"message_stop"}"#),
        ],
    ),
];

#[test]
fn any_streamed_reply_is_decoded_or_refused() {
    let cases = (
        0..STREAMS.len(),
        proptest::collection::vec(change(), 0..3),
        proptest::collection::vec(1_usize..40, 1..8),
    );
    runner()
        .run(&cases, |(which, changes, pieces)| {
            let (wire, events) = STREAMS[which];
            let mut events: Vec<(&str, String)> = events
                .iter()
                .map(|&(name, data)| (name, data.to_owned()))
                .collect();
            for (event, node, value, cut) in &changes {
                let event = event % events.len();
                events[event].1 = changed(&events[event].1, *node, value, *cut);
            }
            let mut body = String::new();
            for (name, data) in &events {
                if !name.is_empty() {
                    body.push_str(&format!("event: {name}\n"));
                }
                body.push_str(&format!("data: {data}\n\n"));
            }
            let mut parser = SseParser::default();
            let mut decoder = StreamDecoder::new(wire, Some("answer"));
            let mut rest = body.as_bytes();
            let mut sizes = pieces.iter().cycle();
            while !rest.is_empty() && !decoder.is_done() {
                let size = (*sizes.next().unwrap_or(&1)).min(rest.len());
                let (piece, tail) = rest.split_at(size);
                rest = tail;
                for event in parser.push(piece) {
                    if decoder.on_event(&event).is_err() {
                        return Ok(());
                    }
                }
            }
            let _ = decoder.started();
            let _ = decoder.finish();
            Ok(())
        })
        .unwrap();
}
