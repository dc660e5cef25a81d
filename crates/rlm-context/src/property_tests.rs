//! Properties over input nobody checked first: whatever bytes a file holds and whatever its
//! name says, inspect's scanners describe it, the chunkers split it into ranges of the text
//! (streamed or whole, the same ranges), and the prompt fences quote it — without a panic.
//! The generators lean on the bytes each format gives meaning to.

use std::io::Read;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use crate::chunk::{ChunkOptions, SizeUnit, Strategy as ChunkStrategy, StreamChunker, chunk};
use crate::{AnalyzeOptions, analyze_bytes, analyze_reader, fence, render_hint, words};

/// Cases per property: enough to reach the formats' branches, few enough for CI.
const CASES: u32 = 256;

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    })
}

/// What JSON, NDJSON, CSV/TSV, Markdown, XML and logs are made of, and bytes that are none.
const PIECES: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b",",
    b":",
    b"\\",
    b"\\u00",
    b"\n",
    b"\r\n",
    b"\r",
    b"\t",
    b";",
    b"|",
    b" ",
    b"#",
    b"## ",
    b"```",
    b"<",
    b">",
    b"</",
    b"<?xml",
    b"/>",
    b"=",
    b"a",
    b"key",
    b"1",
    b"-2.5e3",
    b"true",
    b"null",
    b"\xef\xbb\xbf",
    b"\xff\xfe",
    b"\0",
    b"\xc3\xa9",
    b"\xe2\x80\xae",
    b"\xf0\x9f\x98",
    b"\x80",
    b"...",
    b"ERROR",
];

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..600),
        proptest::collection::vec(proptest::sample::select(PIECES), 0..200)
            .prop_map(|pieces| pieces.concat()),
    ]
}

fn name() -> impl Strategy<Value = Option<&'static str>> {
    proptest::sample::select(vec![
        None,
        Some("data.json"),
        Some("feed.ndjson"),
        Some("rows.csv"),
        Some("rows.tsv"),
        Some("notes.md"),
        Some("doc.xml"),
        Some("app.log"),
        Some("main.rs"),
        Some("x.py"),
        Some("noext"),
    ])
}

/// Small windows and field limits, so sampling and truncation run on small inputs.
fn options() -> impl Strategy<Value = AnalyzeOptions> {
    (
        0_usize..40,
        0_u64..5,
        0_u64..4,
        1_u64..4,
        0_usize..6,
        0_usize..4,
    )
        .prop_map(
            |(
                sample_chars,
                field_records,
                field_windows,
                window_records,
                max_fields,
                max_outline,
            )| {
                AnalyzeOptions {
                    sample_chars,
                    field_records,
                    field_windows,
                    window_records,
                    max_fields,
                    max_outline,
                }
            },
        )
}

/// A reader handing out its bytes a few at a time.
struct Trickle<'a> {
    bytes: &'a [u8],
    step: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = self.step.min(out.len()).min(self.bytes.len());
        out[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

#[test]
fn inspect_describes_any_bytes_under_any_name() {
    runner()
        .run(
            &(bytes(), name(), options(), 1_usize..8),
            |(bytes, name, options, step)| {
                let whole = analyze_bytes(&bytes, name, &options);
                prop_assert_eq!(whole.bytes, bytes.len() as u64);
                let _ = render_hint(&whole, "context");
                let read = Trickle {
                    bytes: &bytes,
                    step,
                };
                let streamed = analyze_reader(read, name, &options).unwrap();
                prop_assert_eq!(streamed.bytes, whole.bytes);
                prop_assert_eq!(streamed.lines, whole.lines);
                prop_assert_eq!(streamed.chars, whole.chars);
                prop_assert_eq!(streamed.format, whole.format);
                Ok(())
            },
        )
        .unwrap();
}

fn chunk_options() -> impl Strategy<Value = ChunkOptions> {
    let strategy = proptest::sample::select(vec![
        ChunkStrategy::Auto,
        ChunkStrategy::Fixed,
        ChunkStrategy::Structure,
        ChunkStrategy::Records,
        ChunkStrategy::Code,
    ]);
    (strategy, 0_usize..40, 0_usize..10, any::<bool>()).prop_map(
        |(strategy, size, overlap, tokens)| ChunkOptions {
            strategy,
            size,
            overlap,
            unit: if tokens {
                SizeUnit::Tokens
            } else {
                SizeUnit::Chars
            },
        },
    )
}

#[test]
fn chunkers_split_any_text_into_ranges_of_it_streamed_or_whole() {
    let cases = (bytes(), name(), chunk_options(), 1_usize..64);
    runner()
        .run(&cases, |(bytes, name, options, piece)| {
            let text = String::from_utf8_lossy(&bytes);
            let Ok(whole) = chunk(&text, name, &options) else {
                prop_assert!(options.validate().is_err());
                return Ok(());
            };
            for found in &whole.chunks {
                prop_assert!(found.range.start <= found.range.end);
                prop_assert!(text.get(found.range.clone()).is_some(), "{:?}", found);
                let _ = found.text(&text);
            }
            if !StreamChunker::supports(&options) {
                return Ok(());
            }
            let mut stream = StreamChunker::new(name, &options).unwrap();
            let mut streamed = Vec::new();
            let mut rest: &str = &text;
            while !rest.is_empty() {
                let mut end = piece.min(rest.len());
                while !rest.is_char_boundary(end) {
                    end += 1;
                }
                let (head, tail) = rest.split_at(end);
                stream
                    .push(head, |found, _| {
                        streamed.push(found);
                        Ok::<_, ()>(())
                    })
                    .unwrap();
                rest = tail;
            }
            stream
                .finish(|found, _| {
                    streamed.push(found);
                    Ok::<_, ()>(())
                })
                .unwrap();
            prop_assert_eq!(&streamed, &whole.chunks);
            Ok(())
        })
        .unwrap();
}

#[test]
fn fences_names_and_words_take_any_text() {
    let text = prop_oneof![
        any::<String>(),
        bytes().prop_map(|bytes| String::from_utf8_lossy(&bytes).into_owned()),
    ];
    runner()
        .run(&text, |text| {
            let _ = fence::neutralize(&text, &fence::PROMPT_TAGS);
            let fenced = fence::backtick_fence(&text);
            prop_assert!(fenced.len() > fence::longest_backtick_run(&text));
            let _ = fence::attribute(&text);
            prop_assert!(!crate::one_line(&text).contains('\n'));
            let _ = words::terms(&text).count();
            let _ = words::index_terms(&text).count();
            Ok(())
        })
        .unwrap();
}
