//! Load + search benchmark on a generated ~100 MB mixed corpus (prose, code, logs, NDJSON).
//!
//! Prints figures; asserts nothing about time. Run with
//! `cargo bench -p rlm-store --bench load_search`. Environment:
//! - `RLM_BENCH_MB` (default 100): corpus size in MB.
//! - `RLM_BENCH_1M` (default 1): also generate and load a corpus ten times as large (~1 GB,
//!   ~1.3M chunks) to measure load and query latency at that size; `0` skips it. It needs about
//!   4 GB of free disk for the corpus, the store and the transient write-ahead log.
//! - `RLM_BENCH_CORPUS_DIR`: write the 1x corpus there and keep it (to run other tools on it).
//!
//! Reference (same machine class): rlm-rs loads 100 MB in 33 s at 842 MB peak RSS and its store
//! is 588 MB.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::fmt::Write as _;
use std::io::Write as _;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rlm_context::chunk::{ChunkOptions, Strategy};
use rlm_store::{SearchRequest, Store};

mod common;
use common::{ResidentSampler, Rng, cpu_seconds, peak_rss_mb, reset_peak_rss};

const SYLLABLES: &[&str] = &[
    "ka", "lo", "mi", "ne", "ru", "sta", "ter", "vo", "lin", "qua", "der", "pho", "zen", "tri",
    "mor", "cal", "ex", "bri", "son", "ta", "ver", "gen", "dal", "pu", "ri", "no", "sel", "fa",
    "ho", "wen",
];

fn vocabulary(rng: &mut Rng, size: usize) -> Vec<String> {
    (0..size)
        .map(|_| {
            let parts = 1 + rng.below(3);
            (0..parts)
                .map(|_| SYLLABLES[rng.below(SYLLABLES.len())])
                .collect()
        })
        .collect()
}

/// Zipf-ish pick: low ranks are far more common, like real text.
fn word<'a>(rng: &mut Rng, words: &'a [String]) -> &'a str {
    let a = rng.below(words.len());
    let b = rng.below(a + 1);
    &words[b]
}

fn prose(rng: &mut Rng, words: &[String], bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 256);
    while out.len() < bytes {
        if rng.below(8) == 0 {
            let _ = writeln!(out, "## {} {}\n", word(rng, words), word(rng, words));
        }
        for _ in 0..(2 + rng.below(6)) {
            let length = 6 + rng.below(18);
            for index in 0..length {
                let w = word(rng, words);
                if index == 0 {
                    let mut chars = w.chars();
                    if let Some(first) = chars.next() {
                        out.extend(first.to_uppercase());
                        out.push_str(chars.as_str());
                    }
                } else {
                    out.push(' ');
                    out.push_str(w);
                }
            }
            out.push_str(". ");
        }
        out.push_str("\n\n");
    }
    out
}

fn camel(rng: &mut Rng, words: &[String]) -> String {
    let mut name = word(rng, words).to_owned();
    for _ in 0..(1 + rng.below(2)) {
        let w = word(rng, words);
        let mut chars = w.chars();
        if let Some(first) = chars.next() {
            name.extend(first.to_uppercase());
            name.push_str(chars.as_str());
        }
    }
    name
}

fn snake(rng: &mut Rng, words: &[String]) -> String {
    (0..(2 + rng.below(2)))
        .map(|_| word(rng, words))
        .collect::<Vec<_>>()
        .join("_")
}

fn code(rng: &mut Rng, words: &[String], bytes: usize, python: bool) -> String {
    let mut out = String::with_capacity(bytes + 512);
    while out.len() < bytes {
        let name = snake(rng, words);
        let arg = snake(rng, words);
        let call = camel(rng, words);
        if python {
            let _ = writeln!(out, "def {name}({arg}, options=None):");
            let _ = writeln!(
                out,
                "    \"\"\"{} {} {}.\"\"\"",
                word(rng, words),
                word(rng, words),
                word(rng, words)
            );
            for _ in 0..(3 + rng.below(8)) {
                let _ = writeln!(
                    out,
                    "    {} = self.{call}({arg}, {})",
                    snake(rng, words),
                    rng.below(1000)
                );
            }
            let _ = writeln!(out, "    return {arg}\n");
        } else {
            let _ = writeln!(
                out,
                "/// {} {} {}.",
                word(rng, words),
                word(rng, words),
                word(rng, words)
            );
            let _ = writeln!(out, "pub fn {name}({arg}: &str) -> Result<usize, Error> {{");
            for _ in 0..(3 + rng.below(8)) {
                let _ = writeln!(
                    out,
                    "    let {} = {call}({arg}, {})?;",
                    snake(rng, words),
                    rng.below(1000)
                );
            }
            let _ = writeln!(out, "    Ok({arg}.len())\n}}\n");
        }
    }
    out
}

fn logs(rng: &mut Rng, words: &[String], bytes: usize) -> String {
    const LEVELS: &[&str] = &["INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"];
    let mut out = String::with_capacity(bytes + 256);
    let mut second = 0u64;
    while out.len() < bytes {
        second += 1 + rng.below(3) as u64;
        let _ = writeln!(
            out,
            "2026-11-{:02}T{:02}:{:02}:{:02}Z {} service={} request_id={:016x} latency_ms={} msg=\"{} {} {}\"",
            1 + (second / 86_400) % 28,
            (second / 3600) % 24,
            (second / 60) % 60,
            second % 60,
            LEVELS[rng.below(LEVELS.len())],
            word(rng, words),
            rng.next(),
            rng.below(5000),
            word(rng, words),
            word(rng, words),
            word(rng, words)
        );
    }
    out
}

fn ndjson(rng: &mut Rng, words: &[String], bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 256);
    let mut id = 0;
    while out.len() < bytes {
        id += 1;
        let _ = writeln!(
            out,
            "{{\"id\":{id},\"user\":\"{}\",\"event\":\"{}\",\"tags\":[\"{}\",\"{}\"],\"score\":{}.{},\"text\":\"{} {} {} {}\"}}",
            word(rng, words),
            camel(rng, words),
            word(rng, words),
            word(rng, words),
            rng.below(100),
            rng.below(100),
            word(rng, words),
            word(rng, words),
            word(rng, words),
            word(rng, words)
        );
    }
    out
}

/// Writes the corpus; returns its total size in bytes.
fn generate(dir: &Path, megabytes: usize, words: &[String]) -> u64 {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let total = megabytes * 1_000_000;
    // Shares: 30% prose, 20% Rust, 15% Python, 20% logs, 15% NDJSON.
    let plan: [(&str, &str, usize, usize); 5] = [
        ("prose", "md", total * 30 / 100, 100_000),
        ("rust", "rs", total * 20 / 100, 40_000),
        ("python", "py", total * 15 / 100, 40_000),
        ("logs", "log", total * 20 / 100, 2_000_000),
        ("events", "ndjson", total * 15 / 100, 2_000_000),
    ];
    let mut written = 0u64;
    for (kind, extension, bytes, file_size) in plan {
        let sub = dir.join(kind);
        std::fs::create_dir_all(&sub).unwrap();
        let mut done = 0;
        let mut index = 0;
        while done < bytes {
            let size = file_size.min(bytes - done).max(1);
            let content = match kind {
                "prose" => prose(&mut rng, words, size),
                "rust" => code(&mut rng, words, size, false),
                "python" => code(&mut rng, words, size, true),
                "logs" => logs(&mut rng, words, size),
                _ => ndjson(&mut rng, words, size),
            };
            std::fs::write(sub.join(format!("{kind}_{index:04}.{extension}")), &content).unwrap();
            done += content.len();
            written += content.len() as u64;
            index += 1;
        }
    }
    written
}

fn directory_size(path: &Path) -> u64 {
    std::fs::read_dir(path).map_or(0, |entries| {
        entries
            .flatten()
            .map(|entry| {
                let path = entry.path();
                if path.is_dir() {
                    directory_size(&path)
                } else {
                    entry.metadata().map_or(0, |m| m.len())
                }
            })
            .sum()
    })
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index].as_secs_f64() * 1000.0
}

fn run(
    label: &str,
    corpus: &Path,
    store_dir: &Path,
    input_bytes: u64,
    options: ChunkOptions,
    queries: &[String],
) {
    reset_peak_rss();
    let sampler = ResidentSampler::start();
    let cpu_before = cpu_seconds();
    let started = Instant::now();
    let mut store = Store::open(store_dir).unwrap();
    let sources = || rlm_store::collect_sources(&[corpus.to_path_buf()]).unwrap();
    let report = store
        .load(sources(), &options, &mut |_| ControlFlow::Continue(()))
        .unwrap();
    let load_seconds = started.elapsed().as_secs_f64();
    let load_cpu = cpu_seconds() - cpu_before;
    let peak = peak_rss_mb();
    let (anonymous, mapped) = sampler.finish();
    let status = store.status().unwrap();
    let store_bytes = directory_size(store_dir);
    println!("== {label}");
    println!(
        "load+chunk+bm25: {:.2} s wall ({:.1} MB/s), {:.2} s CPU ({:.1} ms per MB), {} buffers, \
         {} chunks, peak RSS {:.0} MB (heap {anonymous:.0}, mapped files {mapped:.0})",
        load_seconds,
        input_bytes as f64 / 1e6 / load_seconds,
        load_cpu,
        load_cpu * 1e3 / (input_bytes as f64 / 1e6),
        report.loaded.len(),
        status.chunks,
        peak
    );
    println!(
        "store on disk: {:.1} MB = {:.2}x input {:.1} MB (sqlite {:.1} MB, bm25 {:.1} MB)",
        store_bytes as f64 / 1e6,
        store_bytes as f64 / input_bytes as f64,
        input_bytes as f64 / 1e6,
        status.database_bytes as f64 / 1e6,
        status.index_bytes as f64 / 1e6
    );
    drop(store);
    let store = Store::open(store_dir).unwrap();
    let started = Instant::now();
    let reload = {
        let mut store = Store::open(store_dir).unwrap();
        store
            .load(sources(), &options, &mut |_| ControlFlow::Continue(()))
            .unwrap()
    };
    println!(
        "unchanged reload: {:.2} s ({} unchanged, {} loaded)",
        started.elapsed().as_secs_f64(),
        reload.unchanged.len(),
        reload.loaded.len()
    );
    for (name, filter) in [
        ("all buffers", None),
        ("--path '*/logs/*'", Some("*/logs/*")),
    ] {
        let mut latencies = Vec::with_capacity(queries.len());
        let mut hits = 0;
        for query in queries {
            let mut request = SearchRequest::new(query.clone());
            request.path_glob = filter.map(str::to_owned);
            let started = Instant::now();
            let outcome = store.search(&request).unwrap();
            latencies.push(started.elapsed());
            hits += outcome.hits.len();
        }
        latencies.sort();
        println!(
            "bm25 top-10 ({name}), {} queries incl. snippets: p50 {:.2} ms, p95 {:.2} ms, mean hits {:.1}",
            queries.len(),
            percentile(&latencies, 0.5),
            percentile(&latencies, 0.95),
            hits as f64 / queries.len() as f64
        );
    }
    let _ = std::io::stdout().flush();
}

fn main() {
    // As `rlm load` does.
    rlm_store::release_freed_memory_promptly();
    let megabytes: usize = std::env::var("RLM_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let million = std::env::var("RLM_BENCH_1M").map_or(true, |v| v != "0");
    let root = tempfile::tempdir().unwrap();
    // RLM_BENCH_CORPUS_DIR keeps the generated corpus there, to run other tools on it.
    let corpus: PathBuf = std::env::var_os("RLM_BENCH_CORPUS_DIR")
        .map_or_else(|| root.path().join("corpus"), PathBuf::from);
    let mut rng = Rng(42);
    let words = vocabulary(&mut rng, 20_000);
    let started = Instant::now();
    let input_bytes = generate(&corpus, megabytes, &words);
    println!(
        "corpus: {:.1} MB generated in {:.1} s (30% prose, 20% Rust, 15% Python, 20% logs, 15% NDJSON)",
        input_bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    let mut queries = Vec::new();
    for index in 0..200 {
        queries.push(match index % 4 {
            0 => word(&mut rng, &words).to_owned(),
            1 => format!("{} {}", word(&mut rng, &words), word(&mut rng, &words)),
            2 => format!(
                "{} {} {}",
                word(&mut rng, &words),
                word(&mut rng, &words),
                word(&mut rng, &words)
            ),
            _ => snake(&mut rng, &words),
        });
    }
    let options = ChunkOptions {
        strategy: Strategy::Auto,
        size: 1000,
        ..ChunkOptions::default()
    };
    run(
        "~100k chunks (auto chunker, 1000 chars)",
        &corpus,
        &root.path().join("store-100k"),
        input_bytes,
        options,
        &queries,
    );
    if million {
        // Ten times the corpus, same mix and chunker: about 1.3M chunks of ~800 bytes.
        let big = root.path().join("corpus-10x");
        let started = Instant::now();
        let big_bytes = generate(&big, megabytes * 10, &words);
        println!(
            "corpus: {:.1} MB generated in {:.1} s",
            big_bytes as f64 / 1e6,
            started.elapsed().as_secs_f64()
        );
        run(
            "~1M chunks (10x corpus, auto chunker, 1000 chars)",
            &big,
            &root.path().join("store-1m"),
            big_bytes,
            options,
            &queries,
        );
    }
}
