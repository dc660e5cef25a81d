//! Search as the store grows: semantic and hybrid queries over many vectors, and `--path` /
//! `--buffer` filters over many buffers, each at two sizes so growth is visible.
//!
//! Prints figures; asserts nothing about time. Run with
//! `cargo bench -p rlm-store --bench search_scale`. Environment:
//! - `RLM_BENCH_VECTORS` (default `100000,1000000`): chunk counts of the vector stores (one
//!   chunk per generated log line, 1,000 lines a buffer, 64-dimension vectors from a hashing
//!   embedder that stands in for a model: the figures are the store's, not a model's).
//! - `RLM_BENCH_BUFFERS` (default `10000,100000`): buffer counts of the filter stores (one
//!   small file on disk each, loaded under a relative name, so each buffer has a name and an
//!   absolute path; a tenth of them under `logs/`, one in 997 in each `dirNNN/`).
//! - `RLM_BENCH_QUERIES` (default 50): queries per measured case.
//! - `RLM_BENCH_TIE_LINES` (default `600000,3000000`: 58 and 290 MB): lines of a generated
//!   service log whose chunks hold the same words the same number of times, so BM25 scores
//!   tie across most of them; queries for words in every chunk, in a fifth of them, and for
//!   one line's number (the peer: one chunk matches).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::io::Write as _;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use rlm_context::chunk::{ChunkOptions, Strategy};
use rlm_embed::{Embedder, ModelId, ModelKind};
use rlm_store::{SearchMode, SearchRequest, Source, Store};

mod common;
use common::{Rng, peak_rss_mb, reset_peak_rss};

const DIMENSION: usize = 64;

const WORDS: &[&str] = &[
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango",
    "uniform", "victor", "whiskey", "xray", "yankee", "zulu", "error", "timeout", "retry",
    "connect", "socket", "parser", "cache", "index", "buffer", "worker", "queue", "token",
];

/// Each word is a fixed pseudo-random direction; a text is the normalised sum of its words.
#[derive(Debug)]
struct HashingEmbedder {
    id: ModelId,
}

impl Embedder for HashingEmbedder {
    fn model_id(&self) -> &ModelId {
        &self.id
    }
    fn kind(&self) -> ModelKind {
        ModelKind::Static
    }
    fn dimension(&self) -> usize {
        DIMENSION
    }
    fn max_tokens(&self) -> usize {
        512
    }
    fn embed(&self, texts: &[&str]) -> rlm_embed::Result<Vec<Vec<f32>>> {
        Ok(texts
            .iter()
            .map(|text| {
                let mut vector = vec![0.0f32; DIMENSION];
                for word in text.split(|c: char| !c.is_alphanumeric()) {
                    if word.is_empty() {
                        continue;
                    }
                    let seed = word.bytes().fold(0x9E37_79B9_7F4A_7C15u64, |h, b| {
                        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01B3)
                    });
                    let mut rng = Rng(seed | 1);
                    for value in &mut vector {
                        *value += (rng.next() % 2001) as f32 / 1000.0 - 1.0;
                    }
                }
                let norm = vector.iter().map(|v| v * v).sum::<f32>().sqrt();
                if norm > 0.0 {
                    vector.iter_mut().for_each(|v| *v /= norm);
                }
                vector
            })
            .collect())
    }
}

fn sentence(rng: &mut Rng, words: usize) -> String {
    let mut out = String::new();
    for index in 0..words {
        if index > 0 {
            out.push(' ');
        }
        out.push_str(WORDS[rng.below(WORDS.len())]);
        if rng.below(4) == 0 {
            out.push_str(&rng.below(1000).to_string());
        }
    }
    out
}

fn sizes(variable: &str, default: &str) -> Vec<usize> {
    std::env::var(variable)
        .unwrap_or_else(|_| default.to_owned())
        .split(',')
        .filter_map(|size| size.trim().parse().ok())
        .collect()
}

fn median_and_p95(mut latencies: Vec<Duration>) -> (f64, f64) {
    latencies.sort();
    let at = |p: f64| {
        latencies[((latencies.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1000.0
    };
    (at(0.5), at(0.95))
}

/// Runs every request once per query, returning p50 / p95 in ms and the mean hit count.
fn measure(
    store: &Store,
    embedder: Option<&dyn Embedder>,
    queries: &[String],
    shape: impl Fn(&mut SearchRequest),
) -> (f64, f64, f64) {
    let mut latencies = Vec::with_capacity(queries.len());
    let mut hits = 0;
    for query in queries {
        let mut request = SearchRequest::new(query.clone());
        shape(&mut request);
        let started = Instant::now();
        let outcome = store.search_with(&request, embedder).unwrap();
        latencies.push(started.elapsed());
        hits += outcome.hits.len();
    }
    let (p50, p95) = median_and_p95(latencies);
    (p50, p95, hits as f64 / queries.len() as f64)
}

fn vectors(chunks: usize, queries: &[String]) {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x5EED ^ chunks as u64);
    let buffers = chunks.div_ceil(1000);
    let sources: Vec<Source> = (0..buffers)
        .map(|buffer| {
            let kind = if buffer % 10 == 0 { "logs" } else { "src" };
            let mut text = String::with_capacity(1000 * 48);
            for _ in 0..1000 {
                text.push_str(&sentence(&mut rng, 5));
                text.push('\n');
            }
            Source::Text {
                name: format!("{kind}/file{buffer:06}.txt"),
                text,
            }
        })
        .collect();
    // One line a chunk: `records` never cuts a record, and each is over this size.
    let options = ChunkOptions {
        strategy: Strategy::Records,
        size: 1,
        ..ChunkOptions::default()
    };
    let embedder = HashingEmbedder {
        id: ModelId::from_stored("bench-hashing@000000000000"),
    };
    let mut store = Store::open(dir.path()).unwrap();
    let started = Instant::now();
    store
        .load(sources, &options, &mut |_| ControlFlow::Continue(()))
        .unwrap();
    let loaded = started.elapsed();
    let started = Instant::now();
    store
        .embed(&embedder, false, &mut |_| ControlFlow::Continue(()))
        .unwrap();
    let embedded = started.elapsed();
    let status = store.embedding_status().unwrap();
    println!(
        "== {} chunks with vectors ({} buffers, {DIMENSION} dimensions): load {:.1} s, embed {:.1} s",
        status.embedded_chunks,
        buffers,
        loaded.as_secs_f64(),
        embedded.as_secs_f64()
    );
    drop(store);
    // A fresh handle, as each `rlm search` process opens one.
    let store = Store::open(dir.path()).unwrap();
    let request = SearchRequest {
        mode: SearchMode::Semantic,
        ..SearchRequest::new(queries[0].clone())
    };
    let started = Instant::now();
    store.search_with(&request, Some(&embedder)).unwrap();
    println!(
        "first semantic query of the process: {:.1} ms",
        started.elapsed().as_secs_f64() * 1000.0
    );
    reset_peak_rss();
    let cases: [(&str, SearchMode, Option<&str>); 4] = [
        ("semantic top-10", SearchMode::Semantic, None),
        (
            "semantic top-10 --path 'logs/*'",
            SearchMode::Semantic,
            Some("logs/*"),
        ),
        ("hybrid top-10", SearchMode::Hybrid, None),
        ("bm25 top-10 (peer: same store)", SearchMode::Bm25, None),
    ];
    for (name, mode, glob) in cases {
        let (p50, p95, hits) = measure(&store, Some(&embedder), queries, |request| {
            request.mode = mode;
            request.path_glob = glob.map(str::to_owned);
        });
        println!("{name}: p50 {p50:.2} ms, p95 {p95:.2} ms, mean hits {hits:.1}");
    }
    println!("peak RSS during the queries: {:.0} MB", peak_rss_mb());
    let _ = std::io::stdout().flush();
}

fn filters(buffers: usize, queries: &[String]) {
    let dir = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let mut rng = Rng(0xF117 ^ buffers as u64);
    let sources: Vec<Source> = (0..buffers)
        .map(|buffer| {
            let kind = if buffer % 10 == 0 { "logs" } else { "src" };
            let mut text = String::new();
            for _ in 0..4 {
                text.push_str(&sentence(&mut rng, 8));
                text.push('\n');
            }
            let name = format!("{kind}/dir{:03}/file{buffer:06}.txt", buffer % 997);
            let path = files.path().join(&name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
            Source::File { path, name }
        })
        .collect();
    let mut store = Store::open(dir.path()).unwrap();
    let started = Instant::now();
    store
        .load(sources, &ChunkOptions::default(), &mut |_| {
            ControlFlow::Continue(())
        })
        .unwrap();
    let status = store.status().unwrap();
    println!(
        "== {} buffers, {} chunks: load {:.1} s",
        status.buffers,
        status.chunks,
        started.elapsed().as_secs_f64()
    );
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    let one = format!("src/dir{:03}/file{:06}.txt", 7, 7);
    let cases: [(&str, Option<&str>, Option<&str>); 8] = [
        ("bm25 top-10, no filter", None, None),
        ("bm25 top-10 --buffer (one)", None, Some(one.as_str())),
        (
            "bm25 top-10 --path 'logs/*' (a tenth)",
            Some("logs/*"),
            None,
        ),
        (
            "bm25 top-10 --path 'src/dir007/*' (a thousandth)",
            Some("src/dir007/*"),
            None,
        ),
        (
            "bm25 top-10 --path '*0.txt' (a tenth, a literal suffix)",
            Some("*0.txt"),
            None,
        ),
        (
            "bm25 top-10 --path '*c/dir*' (nine tenths, neither)",
            Some("*c/dir*"),
            None,
        ),
        (
            "bm25 top-10 --path '*/dir007/*' (a thousandth, neither)",
            Some("*/dir007/*"),
            None,
        ),
        (
            "bm25 top-10 --path '*/dir00*' (a hundredth, neither)",
            Some("*/dir00*"),
            None,
        ),
    ];
    // Each query runs in every case before the next query, so a burst of load on the shared
    // machine falls on all cases alike and the ratios to the unfiltered query hold.
    let mut latencies = vec![Vec::with_capacity(queries.len()); cases.len()];
    let mut hits = vec![0; cases.len()];
    for query in queries {
        for (case, (_, glob, buffer)) in cases.iter().enumerate() {
            let request = SearchRequest {
                path_glob: glob.map(str::to_owned),
                buffers: buffer.map(|name| vec![name.to_owned()]).unwrap_or_default(),
                ..SearchRequest::new(query.clone())
            };
            let started = Instant::now();
            let outcome = store.search(&request).unwrap();
            latencies[case].push(started.elapsed());
            hits[case] += outcome.hits.len();
        }
    }
    let mut unfiltered = f64::NAN;
    for ((name, _, _), (latencies, hits)) in cases.iter().zip(latencies.into_iter().zip(hits)) {
        let (p50, p95) = median_and_p95(latencies);
        if unfiltered.is_nan() {
            unfiltered = p50;
        }
        println!(
            "{name}: p50 {p50:.2} ms ({:.2}x unfiltered), p95 {p95:.2} ms, mean hits {:.1}",
            p50 / unfiltered,
            hits as f64 / queries.len() as f64
        );
    }
    let _ = std::io::stdout().flush();
}

/// BM25 over a log whose chunks tie: one buffer of `lines` lines of one format.
fn ties(lines: usize, runs: usize) {
    let dir = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let path = files.path().join("service.log");
    let mut log = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for line in 0..lines {
        let second = line % 86_400;
        let level = match line % 97 {
            0 => "ERROR",
            _ if line % 20 == 3 => "WARN",
            _ => "INFO",
        };
        writeln!(
            log,
            "2026-11-28T{:02}:{:02}:{:02}.{:03}Z {level} worker-{} request handled \
             status=200 path=/api/v1/items id={line:07}",
            second / 3600,
            second / 60 % 60,
            second % 60,
            line % 1000,
            line % 8,
        )
        .unwrap();
    }
    log.into_inner().unwrap().sync_all().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let started = Instant::now();
    store
        .load(
            vec![Source::File {
                name: "service.log".to_owned(),
                path,
            }],
            &ChunkOptions::default(),
            &mut |_| ControlFlow::Continue(()),
        )
        .unwrap();
    let status = store.status().unwrap();
    println!(
        "== a log of {lines} lines, {} chunks: load {:.1} s",
        status.chunks,
        started.elapsed().as_secs_f64()
    );
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    let number = format!("{:07}", lines / 2);
    let id = format!("id={number}");
    let cases = [
        ("request (every chunk)", "request"),
        ("WARN (every chunk)", "WARN"),
        ("ERROR (a fifth of the chunks)", "ERROR"),
        ("ERROR worker (two words)", "ERROR worker"),
        (
            "id=NNNNNNN (one line's; `id` is in every chunk)",
            id.as_str(),
        ),
        ("NNNNNNN (one line's number; the peer)", number.as_str()),
    ];
    let mut latencies = vec![Vec::with_capacity(runs); cases.len()];
    for _ in 0..runs {
        for (case, (_, query)) in cases.iter().enumerate() {
            let started = Instant::now();
            let outcome = store.search(&SearchRequest::new(*query)).unwrap();
            latencies[case].push(started.elapsed());
            assert!(!outcome.hits.is_empty(), "{query}");
        }
    }
    for ((name, _), latencies) in cases.iter().zip(latencies) {
        let (p50, p95) = median_and_p95(latencies);
        println!("bm25 top-10 {name}: p50 {p50:.2} ms, p95 {p95:.2} ms");
    }
    let _ = std::io::stdout().flush();
}

fn main() {
    rlm_store::release_freed_memory_promptly();
    let count: usize = std::env::var("RLM_BENCH_QUERIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let mut rng = Rng(42);
    let queries: Vec<String> = (0..count)
        .map(|index| sentence(&mut rng, 1 + index % 3))
        .collect();
    for lines in sizes("RLM_BENCH_TIE_LINES", "600000,3000000") {
        ties(lines, count);
    }
    for buffers in sizes("RLM_BENCH_BUFFERS", "10000,100000") {
        filters(buffers, &queries);
    }
    for chunks in sizes("RLM_BENCH_VECTORS", "100000,1000000") {
        vectors(chunks, &queries);
    }
}
