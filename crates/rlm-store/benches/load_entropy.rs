//! Loading high-entropy text (base64, hex digests, UUIDs: nearly every long token unique)
//! against ordinary delimited text of the same size, at two sizes so growth is visible.
//!
//! Also searches UUIDs of the high-entropy file, whole and by a part, and checks each is found.
//! A third file is base64 lines alone (76 characters a line, as a MIME attachment or a PEM
//! body): blobs with no words and no sentences; pieces of some of its lines are searched and
//! must be found. CPU time (all threads) and peak RSS of each load are printed as ratios to the
//! delimited peer's, loaded in the same run.
//!
//! Prints figures; asserts nothing about time. Run with
//! `cargo bench -p rlm-store --bench load_entropy`. `RLM_BENCH_MB` (default `10,40`): sizes in
//! MB of each file; `RLM_BENCH_ONLY` (`delimited`, `entropy`, `base64`, comma-separated): load
//! only those, to profile one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::fmt::Write as _;
use std::ops::ControlFlow;
use std::time::Instant;

use rlm_context::chunk::ChunkOptions;
use rlm_store::{SearchRequest, Source, Store};

mod common;
use common::{ResidentSampler, Rng, cpu_seconds, peak_rss_mb, reset_peak_rss};

const BASE64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Log lines full of unique tokens: a 64-character hex digest, a UUID and 76 base64 characters.
fn high_entropy(bytes: usize) -> String {
    let mut rng = Rng(0xE27);
    let mut out = String::with_capacity(bytes + 256);
    while out.len() < bytes {
        let _ = write!(
            out,
            "{:016x}{:016x}{:016x}{:016x} {:08x}-{:04x}-{:04x}-{:04x}-{:012x} ",
            rng.next(),
            rng.next(),
            rng.next(),
            rng.next(),
            rng.next() as u32,
            rng.next() as u16,
            rng.next() as u16,
            rng.next() as u16,
            rng.next() >> 16
        );
        for _ in 0..76 {
            out.push(BASE64[(rng.next() % 64) as usize] as char);
        }
        out.push('\n');
    }
    out
}

/// Base64 lines of 76 characters, nothing else.
fn base64_lines(bytes: usize) -> String {
    let mut rng = Rng(0xB64);
    let mut out = String::with_capacity(bytes + 256);
    while out.len() < bytes {
        for _ in 0..76 {
            out.push(BASE64[(rng.next() % 64) as usize] as char);
        }
        out.push('\n');
    }
    out
}

/// Tab-separated rows over a small vocabulary, as a metrics export.
fn delimited(bytes: usize) -> String {
    const WORDS: &[&str] = &[
        "alpha", "bravo", "charlie", "delta", "echo", "error", "timeout", "retry", "worker",
        "queue", "index", "cache", "parser", "socket", "buffer", "token",
    ];
    let mut rng = Rng(0x75F);
    let mut out = String::with_capacity(bytes + 256);
    while out.len() < bytes {
        let _ = writeln!(
            out,
            "{}\t{}\t{}\t{}\t{}",
            WORDS[(rng.next() % 16) as usize],
            WORDS[(rng.next() % 16) as usize],
            rng.next() % 10_000,
            WORDS[(rng.next() % 16) as usize],
            rng.next() % 100
        );
    }
    out
}

/// What one load cost: CPU seconds (all threads) and peak RSS in MB.
#[derive(Clone, Copy)]
struct Cost {
    cpu: f64,
    peak_mb: f64,
}

/// Loads `text` and prints the figures; returns the store (and its directory) for searches
/// and what the load cost.
fn load(label: &str, name: &str, text: String) -> (tempfile::TempDir, Store, Cost) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    let size = text.len();
    std::fs::write(&path, text).unwrap();
    reset_peak_rss();
    let sampler = ResidentSampler::start();
    let started = Instant::now();
    let cpu_before = cpu_seconds();
    let mut store = Store::open(dir.path().join("store")).unwrap();
    let sources = vec![Source::File {
        path,
        name: name.to_owned(),
    }];
    store
        .load(sources, &ChunkOptions::default(), &mut |_| {
            ControlFlow::Continue(())
        })
        .unwrap();
    let seconds = started.elapsed().as_secs_f64();
    let cost = Cost {
        cpu: cpu_seconds() - cpu_before,
        peak_mb: peak_rss_mb(),
    };
    let (anonymous, mapped) = sampler.finish();
    let status = store.status().unwrap();
    println!(
        "{label} {:.0} MB: {seconds:.2} s ({:.1} MB/s), CPU {:.2} s, peak RSS {:.0} MB (heap \
         {anonymous:.0}, mapped files {mapped:.0}), index {:.1} MB, {} chunks",
        size as f64 / 1e6,
        size as f64 / 1e6 / seconds,
        cost.cpu,
        cost.peak_mb,
        status.index_bytes as f64 / 1e6,
        status.chunks
    );
    (dir, store, cost)
}

/// Prints a load's CPU time and peak RSS as ratios to the peer's.
fn against_peer(label: &str, cost: Cost, peer: Option<Cost>) {
    let Some(peer) = peer else {
        return;
    };
    println!(
        "  {label} / delimited peer: CPU {:.2}x, peak RSS {:.2}x",
        cost.cpu / peer.cpu,
        cost.peak_mb / peer.peak_mb
    );
}

/// The longest piece (between `+` and `/`) of 50 lines spread over the base64 file.
fn some_pieces(text: &str) -> Vec<String> {
    text.lines()
        .step_by((text.len() / 77 / 50).max(1))
        .filter_map(|line| line.split(['+', '/']).max_by_key(|piece| piece.len()))
        .take(50)
        .map(str::to_owned)
        .collect()
}

/// Searches each of `pieces` of the base64 file; each must be found.
fn search_base64(store: &Store, pieces: &[String]) {
    let mut times: Vec<f64> = pieces
        .iter()
        .map(|piece| {
            let started = Instant::now();
            let found = store.search(&SearchRequest::new(piece)).unwrap();
            let seconds = started.elapsed().as_secs_f64();
            assert!(
                found
                    .hits
                    .iter()
                    .any(|hit| hit.snippet.contains(piece.as_str())),
                "{piece} not found"
            );
            seconds
        })
        .collect();
    times.sort_by(f64::total_cmp);
    println!(
        "  search a piece of a base64 line, {} queries: p50 {:.2} ms",
        times.len(),
        times[times.len() / 2] * 1e3
    );
}

/// 200 UUIDs spread over the high-entropy file.
fn some_uuids(text: &str) -> Vec<String> {
    text.lines()
        .step_by((text.len() / 180 / 200).max(1))
        .filter_map(|line| line.split(' ').nth(1))
        .take(200)
        .map(str::to_owned)
        .collect()
}

/// Searches UUIDs of the file (whole, then by their first group) and prints the median
/// time; every one must be found.
fn search_tokens(store: &Store, uuids: &[String]) {
    for (label, part) in [("whole", false), ("first group", true)] {
        let mut times: Vec<f64> = uuids
            .iter()
            .map(|uuid| {
                let query = if part { &uuid[..8] } else { uuid.as_str() };
                let started = Instant::now();
                let found = store.search(&SearchRequest::new(query)).unwrap();
                let seconds = started.elapsed().as_secs_f64();
                assert!(
                    found.hits.iter().any(|hit| hit.snippet.contains(query)),
                    "{query} not found"
                );
                seconds
            })
            .collect();
        times.sort_by(f64::total_cmp);
        println!(
            "  search a UUID ({label}), {} queries incl. snippets: p50 {:.2} ms, p95 {:.2} ms",
            times.len(),
            times[times.len() / 2] * 1e3,
            times[times.len() * 95 / 100] * 1e3
        );
    }
}

fn main() {
    rlm_store::release_freed_memory_promptly();
    let sizes: Vec<usize> = std::env::var("RLM_BENCH_MB")
        .unwrap_or_else(|_| "10,40".to_owned())
        .split(',')
        .filter_map(|size| size.trim().parse().ok())
        .collect();
    // For profiling one kind of file: `RLM_BENCH_ONLY=base64` (or `delimited`, `entropy`).
    let only = std::env::var("RLM_BENCH_ONLY").unwrap_or_default();
    let wanted = |kind: &str| only.is_empty() || only.contains(kind);
    for megabytes in sizes {
        let peer = wanted("delimited").then(|| {
            load(
                "delimited (peer)",
                "metrics.tsv",
                delimited(megabytes * 1_000_000),
            )
            .2
        });
        if wanted("entropy") {
            let text = high_entropy(megabytes * 1_000_000);
            let uuids = some_uuids(&text);
            let (_dir, store, cost) = load("high-entropy log", "tokens.log", text);
            against_peer("high-entropy log", cost, peer);
            search_tokens(&store, &uuids);
        }
        if wanted("base64") {
            let text = base64_lines(megabytes * 1_000_000);
            let pieces = some_pieces(&text);
            let (_dir, store, cost) = load("base64 lines", "attachment.b64", text);
            against_peer("base64 lines", cost, peer);
            search_base64(&store, &pieces);
        }
    }
}
