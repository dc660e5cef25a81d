//! Reading a little text far into one large buffer: the last 100 bytes, the last two lines, the
//! last chunk, and 100 bytes in the middle, as `rlm peek` and a search hit's snippet read them,
//! at two buffer sizes so growth is visible. Prints each read's first and median time and how
//! much the process's resident memory grew over all of them (pages of the database that stay
//! mapped count here).
//!
//! Prints figures; asserts only that each read returns what was written. Run with
//! `cargo bench -p rlm-store --bench read_deep`; `RLM_BENCH_MB` (default `32,256`): buffer sizes
//! in MB; `RLM_BENCH_RUNS` (default 21).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::fmt::Write as _;
use std::ops::ControlFlow;
use std::time::Instant;

use rlm_context::chunk::ChunkOptions;
use rlm_store::{Source, Store};

mod common;
use common::{Rng, rss_mb};

/// About `bytes` of log lines, each numbered so any read can be checked.
fn log(bytes: usize) -> String {
    const LEVELS: &[&str] = &["INFO", "INFO", "DEBUG", "WARN", "ERROR"];
    let mut rng = Rng(0xdee9);
    let mut text = String::with_capacity(bytes + 200);
    let mut line = 0u64;
    while text.len() < bytes {
        line += 1;
        let _ = writeln!(
            text,
            "2026-11-28 12:{:02}:{:02} {} worker {} handled request {} in {} ms (line {line})",
            line / 60 % 60,
            line % 60,
            rng.pick(LEVELS),
            rng.below(64),
            rng.next() % 1_000_000,
            rng.below(900)
        );
    }
    text
}

/// A read and what it reads.
type Labelled<'a> = (&'static str, Box<dyn Fn() + 'a>);

/// Runs `read` `runs` times; returns the first and the median time in ms.
fn time(runs: usize, mut read: impl FnMut()) -> (f64, f64) {
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            read();
            started.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    let first = times[0];
    times.sort_by(f64::total_cmp);
    (first, times[times.len() / 2])
}

fn main() {
    let sizes: Vec<usize> = std::env::var("RLM_BENCH_MB")
        .unwrap_or_else(|_| "32,256".to_owned())
        .split(',')
        .filter_map(|size| size.trim().parse().ok())
        .collect();
    let runs: usize = std::env::var("RLM_BENCH_RUNS")
        .ok()
        .and_then(|runs| runs.parse().ok())
        .unwrap_or(21)
        .max(1);
    for megabytes in sizes {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("deep.log");
        let text = log(megabytes * 1_000_000);
        std::fs::write(&path, &text).unwrap();
        let lines = text.lines().count() as u64;
        let last_lines = text
            .get(text[..text.len() - 1].rfind('\n').map_or(0, |at| at + 1)..)
            .unwrap()
            .to_owned();
        let middle = text.len() as u64 / 2;
        let middle_text = text[middle as usize..middle as usize + 100].to_owned();
        let end = text[text.len() - 100..].to_owned();
        drop(text);
        {
            let mut store = Store::open(dir.path().join("store")).unwrap();
            let source = Source::File {
                path: path.clone(),
                name: "deep.log".into(),
            };
            store
                .load(vec![source], &ChunkOptions::default(), &mut |_| {
                    ControlFlow::Continue(())
                })
                .unwrap();
        }
        // Read by a process that has only opened the store, as `rlm peek` is.
        let store = Store::open(dir.path().join("store")).unwrap();
        let buffer = store.buffer("deep.log").unwrap();
        let last_chunk = store.chunks_of(&buffer).unwrap().last().unwrap().id;
        let before = rss_mb();
        let bytes = buffer.bytes;
        let reads: [Labelled<'_>; 4] = [
            (
                "last 100 bytes",
                Box::new(|| {
                    assert_eq!(store.read_bytes(&buffer, bytes - 100..bytes).unwrap(), end)
                }),
            ),
            (
                "last line",
                Box::new(|| {
                    assert!(
                        last_lines.ends_with(&store.read_lines(&buffer, lines, lines).unwrap())
                    );
                }),
            ),
            (
                "last chunk",
                Box::new(|| assert!(store.chunk_text(last_chunk).unwrap().ends_with(&end))),
            ),
            (
                "100 bytes in the middle",
                Box::new(|| {
                    assert_eq!(
                        store.read_bytes(&buffer, middle..middle + 100).unwrap(),
                        middle_text
                    );
                }),
            ),
        ];
        println!("one buffer of {megabytes} MB ({lines} lines), {runs} reads each:");
        for (label, read) in &reads {
            let (first, median) = time(runs, read);
            println!("  {label:<24} first {first:8.3} ms   median {median:8.3} ms");
        }
        println!(
            "  resident memory grew by {:.1} MB over these reads",
            rss_mb() - before
        );
    }
}
