//! The PostgreSQL store against the local store, measured in the same run on the same corpus:
//! load throughput, BM25, semantic and grep latency (p50, p95), then 4 loaders and 8 searchers
//! at once (errors, search p95, whether anything was lost).
//!
//! Prints figures; asserts nothing about time. Run with a server (scripts/postgres-test-server):
//! `eval "$(scripts/postgres-test-server start)"; cargo bench -p rlm-store --features postgres
//! --bench postgres`. Environment:
//! - `RLM_TEST_POSTGRES_URL`: the server (required).
//! - `RLM_BENCH_CHUNKS` (default `100000`): chunk counts of the stores, comma-separated
//!   (`100000,1000000`); 100 log lines a buffer, one chunk a line.
//! - `RLM_BENCH_QUERIES` (default 60): queries per measured case.
//! - `RLM_BENCH_VECTORS` (default `1`): `0` skips embedding and the semantic and hybrid cases
//!   (building PostgreSQL's HNSW index over a million vectors takes over half an hour on two
//!   shared cores).
//! - `RLM_BENCH_SECONDS` (default 20): length of the concurrent phase.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rlm_context::chunk::{ChunkOptions, Strategy};
use rlm_embed::{Embedder, ModelId, ModelKind};
use rlm_store::{GrepOptions, SearchMode, SearchRequest, Source, Store, StoreLocation};

mod common;
use common::Rng;

const DIMENSION: usize = 64;
const LINES_PER_BUFFER: usize = 100;

const WORDS: &[&str] = &[
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango",
    "uniform", "victor", "whiskey", "xray", "yankee", "zulu", "error", "timeout", "retry",
    "connect", "socket", "parser", "cache", "index", "buffer", "worker", "queue", "token",
];

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
                for word in text
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|w| !w.is_empty())
                {
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

/// Buffer `index` of a generated service log: one chunk a line.
fn buffer(index: usize, seed: u64) -> Source {
    let mut rng = Rng(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ (index as u64 + 1));
    let mut text = String::with_capacity(LINES_PER_BUFFER * 80);
    for line in 0..LINES_PER_BUFFER {
        let level = if rng.below(20) == 0 { "ERROR" } else { "INFO" };
        text.push_str(&format!(
            "2024-06-{:02} {level} request {index}-{line}",
            line % 28 + 1
        ));
        for _ in 0..(4 + rng.below(6)) {
            // Zipf-ish: low ranks far more common.
            let a = rng.below(WORDS.len());
            text.push(' ');
            text.push_str(WORDS[rng.below(a + 1)]);
        }
        text.push('\n');
    }
    Source::Text {
        name: format!("logs/dir{:03}/service-{index:06}.log", index % 997),
        text,
    }
}

fn options() -> ChunkOptions {
    ChunkOptions {
        strategy: Strategy::Records,
        size: 60,
        ..ChunkOptions::default()
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn timed(count: usize, mut run: impl FnMut(usize)) -> (f64, f64) {
    let mut times: Vec<f64> = (0..count)
        .map(|index| {
            let started = Instant::now();
            run(index);
            started.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(f64::total_cmp);
    (percentile(&times, 0.5), percentile(&times, 0.95))
}

fn queries(count: usize) -> Vec<String> {
    let mut rng = Rng(0xBEEF);
    (0..count)
        .map(|_| {
            (0..1 + rng.below(3))
                .map(|_| WORDS[rng.below(WORDS.len())])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn environment(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

fn main() {
    let Ok(url) = std::env::var("RLM_TEST_POSTGRES_URL") else {
        println!("RLM_TEST_POSTGRES_URL is unset: start scripts/postgres-test-server first");
        return;
    };
    let sizes: Vec<usize> = environment("RLM_BENCH_CHUNKS", "100000")
        .split(',')
        .map(|size| size.trim().parse().unwrap())
        .collect();
    let count: usize = environment("RLM_BENCH_QUERIES", "60").parse().unwrap();
    let seconds: u64 = environment("RLM_BENCH_SECONDS", "20").parse().unwrap();
    let vectors = environment("RLM_BENCH_VECTORS", "1") != "0";
    for chunks in sizes {
        let buffers = chunks / LINES_PER_BUFFER;
        println!("\n== {chunks} chunks ({buffers} buffers of {LINES_PER_BUFFER} log lines)");
        let dir = tempfile::tempdir().unwrap();
        let location = StoreLocation::parse(&format!("{url}&schema=bench_{chunks}")).unwrap();
        let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        client
            .batch_execute(&format!("DROP SCHEMA IF EXISTS bench_{chunks} CASCADE"))
            .unwrap();
        let mut stores = [
            ("local", Store::open(dir.path().join("store")).unwrap()),
            ("postgres", Store::open_at(&location, None).unwrap()),
        ];
        println!(
            "{:<28} {:>14} {:>14} {:>8}",
            "", "local", "postgres", "ratio"
        );
        let mut loads = Vec::new();
        for (_, store) in &mut stores {
            let started = Instant::now();
            for batch in (0..buffers).collect::<Vec<_>>().chunks(200) {
                let sources = batch.iter().map(|&index| buffer(index, 1)).collect();
                store
                    .load(sources, &options(), &mut |_| ControlFlow::Continue(()))
                    .unwrap();
            }
            loads.push(started.elapsed().as_secs_f64());
        }
        let megabytes = stores[0].1.status().unwrap().text_bytes as f64 / 1e6;
        println!(
            "{:<28} {:>11.1} s {:>11.1} s {:>7.2}x   ({megabytes:.0} MB: {:.1} / {:.1} MB/s)",
            "load",
            loads[0],
            loads[1],
            loads[1] / loads[0],
            megabytes / loads[0],
            megabytes / loads[1]
        );
        let embedder = HashingEmbedder {
            id: ModelId::from_stored("hashing@000000000000".to_owned()),
        };
        let mut embeds = Vec::new();
        for (_, store) in stores.iter_mut().filter(|_| vectors) {
            let started = Instant::now();
            store
                .embed(&embedder, false, &mut |_| ControlFlow::Continue(()))
                .unwrap();
            embeds.push(started.elapsed().as_secs_f64());
        }
        if let [local, postgres] = embeds[..] {
            println!(
                "{:<28} {:>11.1} s {:>11.1} s {:>7.2}x",
                "embed (64-dim hashing)",
                local,
                postgres,
                postgres / local
            );
        }
        let questions = queries(count);
        let case = |label: &str, run: &dyn Fn(&Store, usize)| {
            let figures: Vec<(f64, f64)> = stores
                .iter()
                .map(|(_, store)| {
                    run(store, 0); // warm
                    timed(count, |index| run(store, index))
                })
                .collect();
            println!(
                "{:<28} {:>6.2}/{:<6.2} {:>6.2}/{:<6.2} {:>7.2}x   (ms p50/p95, ratio of p50)",
                label,
                figures[0].0,
                figures[0].1,
                figures[1].0,
                figures[1].1,
                figures[1].0 / figures[0].0
            );
        };
        case("BM25 top-10", &|store, index| {
            store
                .search(&SearchRequest::new(&questions[index]))
                .unwrap();
        });
        case("BM25 top-10 --path dir007", &|store, index| {
            let request = SearchRequest {
                path_glob: Some("logs/dir007/*".into()),
                ..SearchRequest::new(&questions[index])
            };
            store.search(&request).unwrap();
        });
        case("BM25 rare: one request id", &|store, index| {
            let request = SearchRequest::new(format!("{}-{}", index * 7 % buffers, index % 100));
            store.search(&request).unwrap();
        });
        let vector_case = |label: &str, run: &dyn Fn(&Store, usize)| {
            if vectors {
                case(label, run);
            }
        };
        vector_case("semantic top-10", &|store, index| {
            let request = SearchRequest {
                mode: SearchMode::Semantic,
                ..SearchRequest::new(&questions[index])
            };
            store.search_with(&request, Some(&embedder)).unwrap();
        });
        vector_case("hybrid top-10", &|store, index| {
            let request = SearchRequest {
                mode: SearchMode::Hybrid,
                ..SearchRequest::new(&questions[index])
            };
            store.search_with(&request, Some(&embedder)).unwrap();
        });
        case("grep one request id", &|store, index| {
            let pattern = format!("request {}-{} ", index * 13 % buffers, index % 100);
            store
                .grep(&pattern, &GrepOptions::default(), &mut |_| {
                    ControlFlow::Continue(())
                })
                .unwrap();
        });
        case("grep ERROR in dir007", &|store, _| {
            let options = GrepOptions {
                path_glob: Some("logs/dir007/*".into()),
                ..GrepOptions::default()
            };
            store
                .grep("ERROR", &options, &mut |_| ControlFlow::Continue(()))
                .unwrap();
        });
        drop(stores);
        let local = StoreLocation::Directory(dir.path().join("store"));
        concurrent("local", &local, buffers, &questions, seconds);
        concurrent("postgres", &location, buffers, &questions, seconds);
        client
            .batch_execute(&format!("DROP SCHEMA IF EXISTS bench_{chunks} CASCADE"))
            .unwrap();
    }
}

/// 4 loaders (new buffers, 20 at a time) and 8 searchers on their own connections for
/// `seconds`: errors, search p50/p95 while loading, and whether every loaded buffer is there.
fn concurrent(
    name: &str,
    location: &StoreLocation,
    first: usize,
    questions: &[String],
    seconds: u64,
) {
    let stop = Arc::new(AtomicBool::new(false));
    let errors = Arc::new(AtomicU64::new(0));
    let next = Arc::new(AtomicU64::new(first as u64));
    let loaders: Vec<_> = (0..4)
        .map(|_| {
            let (location, stop, errors, next) =
                (location.clone(), stop.clone(), errors.clone(), next.clone());
            std::thread::spawn(move || {
                let mut store = Store::open_at(&location, None).unwrap();
                let mut loaded = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let start = next.fetch_add(20, Ordering::Relaxed) as usize;
                    let sources = (start..start + 20).map(|index| buffer(index, 2)).collect();
                    match store.load(sources, &options(), &mut |_| ControlFlow::Continue(())) {
                        Ok(report) => loaded.extend(report.loaded.into_iter().map(|b| b.name)),
                        Err(_) => {
                            errors.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                loaded
            })
        })
        .collect();
    let searchers: Vec<_> = (0..8)
        .map(|searcher| {
            let (location, stop, errors) = (location.clone(), stop.clone(), errors.clone());
            let questions = questions.to_vec();
            std::thread::spawn(move || {
                let store = Store::open_at(&location, None).unwrap();
                let mut times = Vec::new();
                let mut index = searcher;
                while !stop.load(Ordering::Relaxed) {
                    let started = Instant::now();
                    let request = SearchRequest::new(&questions[index % questions.len()]);
                    if store.search(&request).is_err() {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                    times.push(started.elapsed().as_secs_f64() * 1000.0);
                    index += 8;
                }
                times
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(seconds));
    stop.store(true, Ordering::Relaxed);
    let loaded: Vec<String> = loaders
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let mut times: Vec<f64> = searchers
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    times.sort_by(f64::total_cmp);
    let store = Store::open_at(location, None).unwrap();
    let names: std::collections::HashSet<String> =
        store.list().unwrap().into_iter().map(|b| b.name).collect();
    let lost = loaded.iter().filter(|name| !names.contains(*name)).count();
    let status = store.status().unwrap();
    let consistent = status.indexed_chunks == status.chunks;
    println!(
        "4 loaders + 8 searchers, {name:<8} {seconds} s: {} buffers loaded ({:.0}/s), {} searches \
         p50 {:.2} ms p95 {:.2} ms, {} errors, {lost} loaded buffers missing, index {}",
        loaded.len(),
        loaded.len() as f64 / seconds as f64,
        times.len(),
        percentile(&times, 0.5),
        percentile(&times, 0.95),
        errors.load(Ordering::Relaxed),
        if consistent { "in step" } else { "OUT OF STEP" }
    );
}
