//! Properties over what users type into the store: a `--path` glob, a grep pattern and a
//! search query get an answer or an error, never a panic, however they are written. The
//! generators lean on the characters each syntax gives meaning to, nesting included.

use std::ops::ControlFlow;
use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use crate::select::{MAX_GLOB_NESTING, compile_glob};
use crate::{GrepOptions, SearchRequest, Source, Store};

/// Cases per property: enough to reach every branch of the syntaxes, few enough for CI.
const CASES: u32 = 256;

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    })
}

/// Text made of `pieces`, up to `most` of them.
fn text_of(pieces: &'static [&'static str], most: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(pieces), 0..most)
        .prop_map(|pieces| pieces.concat())
}

const GLOB_PIECES: &[&str] = &[
    "*", "**", "**/", "/", "?", "[", "]", "[!", "[^", "]", "{", "}", ",", "\\", "-", "a", "b",
    ".rs", "src", "é", "\u{0}", " ", "[a-z]", "{a,b}", "\\{", "\\*",
];

const REGEX_PIECES: &[&str] = &[
    "(",
    ")",
    "(?:",
    "(?i)",
    "(?-u:",
    "(?P<n>",
    "[",
    "]",
    "[^",
    "^",
    "$",
    "\\b",
    "\\B",
    "\\w",
    "\\d",
    "\\p{L}",
    "\\",
    "*",
    "+",
    "?",
    "{",
    "}",
    "{2,3}",
    "{9999}",
    "|",
    ".",
    "-",
    "a",
    "é",
    "\\x",
    "\\u{",
    "\\n",
    "\\z",
    "(?m)",
    "[[:alpha:]]",
    "[a-",
    "&&",
    "~~",
];

/// Nested alternatives, `depth` levels deep, around well-formed text.
fn nested_glob() -> impl Strategy<Value = (usize, String)> {
    const INNER: &[&str] = &["a", "*", "?", "/", ",", ".rs", "[ab]", "**/"];
    (0..300_usize, text_of(INNER, 4)).prop_map(|(depth, inner)| {
        let glob = format!("{}{inner}{}", "{x,".repeat(depth), "}".repeat(depth));
        (depth, glob)
    })
}

/// A store of a few buffers with names and paths, opened once for every case.
fn store() -> &'static (tempfile::TempDir, std::sync::Mutex<Store>) {
    static STORE: OnceLock<(tempfile::TempDir, std::sync::Mutex<Store>)> = OnceLock::new();
    STORE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path().join("store")).unwrap();
        let sources = [
            ("src/main.rs", "fn main() { println!(\"hello\"); }\n"),
            ("src/lib/a b.rs", "pub fn alpha() -> u32 { 1 }\n// é ß\n"),
            ("docs/{x}.md", "# Title\nSome *words* here.\n"),
            ("logs/2026.log", "ERROR a\nWARN b\nERROR c\n"),
        ]
        .iter()
        .map(|(name, text)| Source::Text {
            name: (*name).into(),
            text: (*text).into(),
        })
        .collect();
        store
            .load(
                sources,
                &rlm_context::chunk::ChunkOptions::default(),
                &mut |_| ControlFlow::Continue(()),
            )
            .unwrap();
        (dir, std::sync::Mutex::new(store))
    })
}

#[test]
fn any_glob_compiles_or_is_refused_and_matches_without_panicking() {
    runner()
        .run(&text_of(GLOB_PIECES, 64), |glob| {
            if let Ok(matcher) = compile_glob(&glob) {
                for name in ["src/main.rs", "", "a/b/c", "{x}", "é/ß"] {
                    let _ = matcher.is_match(name);
                }
            }
            let _ = crate::name_filter::BufferGlob::new(&glob);
            Ok(())
        })
        .unwrap();
    runner()
        .run(&nested_glob(), |(depth, glob)| {
            let compiled = compile_glob(&glob);
            prop_assert_eq!(
                compiled.is_ok(),
                depth <= MAX_GLOB_NESTING,
                "depth {}: {:?}",
                depth,
                compiled.err()
            );
            Ok(())
        })
        .unwrap();
}

#[test]
fn any_path_glob_filters_search_and_grep_without_panicking() {
    let (_, store) = store();
    let store = store.lock().unwrap();
    runner()
        .run(&text_of(GLOB_PIECES, 24), |glob| {
            let mut request = SearchRequest::new("fn alpha ERROR");
            request.path_glob = Some(glob.clone());
            let _ = store.search(&request);
            let options = GrepOptions {
                path_glob: Some(glob),
                ..GrepOptions::default()
            };
            let _ = store.grep("a", &options, &mut |_| ControlFlow::Continue(()));
            Ok(())
        })
        .unwrap();
}

#[test]
fn any_grep_pattern_searches_or_is_refused() {
    let (_, store) = store();
    let store = store.lock().unwrap();
    let cases = (
        text_of(REGEX_PIECES, 24),
        any::<(bool, bool, bool)>(),
        0_usize..3,
        proptest::option::of(0_u64..3),
    );
    runner()
        .run(
            &cases,
            |(pattern, (ignore_case, fixed_strings, word), context, max_count)| {
                let options = GrepOptions {
                    ignore_case,
                    fixed_strings,
                    word,
                    before: context,
                    after: context,
                    max_count,
                    ..GrepOptions::default()
                };
                let _ = store.grep(&pattern, &options, &mut |_| ControlFlow::Continue(()));
                Ok(())
            },
        )
        .unwrap();
}

#[test]
fn any_search_query_answers_or_is_refused() {
    let (_, store) = store();
    let store = store.lock().unwrap();
    let pieces: &'static [&'static str] = &[
        "fn", "ERROR", "\"", "+", "-", "*", ":", "(", ")", "[", "]", "AND", "OR", "NOT", "^", "~",
        "é", " ", "\\", "title:", "{", "}", "0", "1e9",
    ];
    runner()
        .run(&(text_of(pieces, 16), 0_usize..50), |(query, limit)| {
            let mut request = SearchRequest::new(query);
            request.limit = limit;
            let _ = store.search(&request);
            Ok(())
        })
        .unwrap();
}
