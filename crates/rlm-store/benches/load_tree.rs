//! Loading a source tree (many small files) at several sizes: does CPU grow linearly with the
//! tree and does resident memory stay flat?
//!
//! Generates a tree of source-like files of 2–20 KB (Rust, Python, Markdown; one line unique
//! to each file so no two are alike; identifiers drawn from about a million, so the index grows
//! with the tree as a real one's does and merges its segments) in nested directories, then
//! loads it into a new store in a child process of this binary, as `rlm load DIR` does:
//! `collect_sources` walks it and `Store::load` stores and indexes every file, its report
//! counting the buffers rather than listing them. For each size it prints the child's CPU time
//! (user + system, all threads, from `wait4`), CPU per MB, peak RSS (`wait4`), and the peaks of
//! its anonymous (heap, stacks) and file-backed (mapped index segments, the binary) resident
//! memory sampled from /proc/self/status every 10 ms, each with its ratio to the smallest size.
//!
//! Prints figures; asserts nothing about time. Run with
//! `cargo bench -p rlm-store --bench load_tree`. `RLM_BENCH_MB` (default `200,480,900`): tree
//! sizes in MB, each generated, loaded `RLM_BENCH_RUNS` times (default 3; medians are printed)
//! and deleted in turn; `RLM_BENCH_DIR`: where to put them
//! (default the system's temporary directory; needs about 2.3x the largest size free);
//! `RLM_BENCH_KEEP`: keep each generated tree and store (their directory is printed);
//! `RLM_BENCH_LIST`: have the report list each buffer, as `rlm load --json` does.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]
// `wait4` for each child's CPU time and peak RSS.
#![allow(unsafe_code)]

use std::fmt::Write as _;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use rlm_context::chunk::ChunkOptions;
use rlm_store::{Store, collect_sources};

mod common;
use common::{ResidentSampler, Rng};

/// Set in the child: `STORE\tTREE\tREPORT`.
const CHILD: &str = "RLM_BENCH_TREE_CHILD";

const IDENTS: &[&str] = &[
    "buffer", "index", "parser", "token", "request", "queue", "worker", "cache", "socket",
    "config", "reader", "writer", "segment", "offset", "length", "result", "error", "handle",
];
const TYPES: &[&str] = &["u64", "usize", "String", "Vec<u8>", "bool", "Option<i64>"];
const SYLLABLES: &[&str] = &[
    "ka", "lo", "mi", "ren", "tas", "vo", "quo", "zel", "pra", "dun", "fi", "gor", "hex", "ju",
    "nim", "or", "pe", "sul", "tri", "ux", "bel", "cor", "dax", "em", "fro", "gli", "har", "isk",
    "jor", "kel", "lum", "mox",
];

/// An identifier: a common word half the time, else one of about a million made of syllables,
/// so that the index's vocabulary grows with the tree as a real one's does.
fn word(rng: &mut Rng) -> String {
    if rng.below(2) == 0 {
        return rng.pick(IDENTS).to_owned();
    }
    let syllables = 2 + rng.below(3);
    (0..syllables).map(|_| rng.pick(SYLLABLES)).collect()
}

/// One file's text: about `bytes` of code or prose, starting with a line unique to `file`.
fn file_text(rng: &mut Rng, file: usize, kind: usize, bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 200);
    let _ = writeln!(text, "// file {file} generated for the load_tree bench");
    while text.len() < bytes {
        let (a, b, c) = (word(rng), word(rng), word(rng));
        match kind {
            0 => {
                let _ = writeln!(
                    text,
                    "pub fn {a}_{b}({c}: &{}) -> Result<{}> {{\n    let {a} = {c}.{b}({})?;\n    \
                     if {a}.is_empty() {{ return Err(Error::{}(\"{b} {c}\")); }}\n    Ok({a})\n}}\n",
                    rng.pick(TYPES),
                    rng.pick(TYPES),
                    rng.next() % 4096,
                    rng.pick(&["Missing", "Invalid", "Closed"]),
                );
            }
            1 => {
                let _ = writeln!(
                    text,
                    "def {a}_{b}(self, {c}, limit={}):\n    \"\"\"Return the {b} of {c}.\"\"\"\n    \
                     for item in self.{a}:\n        if item.{c} > limit:\n            yield item\n",
                    rng.next() % 1000,
                );
            }
            _ => {
                let _ = writeln!(
                    text,
                    "The {a} keeps its {b} until the {c} is done; see section {} for why the \
                     {b} is read twice.\n",
                    rng.next() % 100,
                );
            }
        }
    }
    text
}

/// Writes about `bytes` of files of 2–20 KB into `root`, 100 to a directory; returns the
/// number of files.
fn tree(root: &Path, bytes: usize) -> usize {
    const EXTENSIONS: [&str; 3] = ["rs", "py", "md"];
    let mut rng = Rng(0x7e_e5);
    let (mut written, mut file) = (0, 0);
    while written < bytes {
        let dir = root.join(format!(
            "crate{:03}/src/mod{:02}",
            file / 1000,
            file / 100 % 10
        ));
        if file % 100 == 0 {
            std::fs::create_dir_all(&dir).unwrap();
        }
        let kind = rng.below(3);
        let size = 2_000 + rng.below(18_000);
        let text = file_text(&mut rng, file, kind, size);
        std::fs::write(dir.join(format!("f{file}.{}", EXTENSIONS[kind])), &text).unwrap();
        written += text.len();
        file += 1;
    }
    file
}

/// Child mode: walk and load the tree as `rlm load DIR` does, writing the peaks of anonymous
/// and file-backed resident memory to `report`.
fn child(spec: &str) {
    let mut parts = spec.split('\t');
    let (store, tree, report) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    // As `rlm load` does before it loads.
    rlm_store::release_freed_memory_promptly();
    let sampler = ResidentSampler::start();
    let sources = collect_sources(&[PathBuf::from(tree)]).unwrap();
    let mut store = Store::open(store).unwrap();
    // As `rlm load` without `--json`: it prints a summary, not each buffer.
    store.set_list_loaded(std::env::var_os("RLM_BENCH_LIST").is_some());
    let report_of_load = store
        .load(sources, &ChunkOptions::default(), &mut |_| {
            ControlFlow::Continue(())
        })
        .unwrap();
    drop(store);
    let (anonymous, file) = sampler.finish();
    std::fs::write(
        report,
        format!("{anonymous} {file} {}", report_of_load.totals.buffers),
    )
    .unwrap();
}

/// One load's figures.
#[derive(Clone, Copy)]
struct Figures {
    megabytes: f64,
    files: usize,
    cpu: f64,
    wall: f64,
    peak: f64,
    anonymous: f64,
    file: f64,
}

/// Loads `tree` into a new store in `store` in a child; returns its figures.
fn load(store: &Path, tree: &Path, megabytes: f64, files: usize) -> Figures {
    let report = store.with_extension("rss");
    let spec = format!(
        "{}\t{}\t{}",
        store.display(),
        tree.display(),
        report.display()
    );
    let started = Instant::now();
    // Reaped by `wait4` below, which also gives the CPU time and peak RSS.
    #[allow(clippy::zombie_processes)]
    let child = Command::new(std::env::current_exe().unwrap())
        .env(CHILD, spec)
        .spawn()
        .unwrap();
    // SAFETY: `rusage` is plain data that `wait4` fills; the pid is our own unwaited child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let mut status = 0;
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: as above; `status` and `usage` outlive the call.
    let waited = unsafe { libc::wait4(pid, &raw mut status, 0, &raw mut usage) };
    assert_eq!(waited, pid, "wait4 failed");
    let wall = started.elapsed().as_secs_f64();
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "load failed"
    );
    let seconds = |time: libc::timeval| time.tv_sec as f64 + time.tv_usec as f64 / 1e6;
    let peaks = std::fs::read_to_string(&report).unwrap();
    let mut peaks = peaks.split(' ');
    let mut next = || peaks.next().unwrap().parse::<f64>().unwrap();
    let (anonymous, file, loaded) = (next(), next(), next());
    assert_eq!(loaded as usize, files, "every file is loaded");
    Figures {
        megabytes,
        files,
        cpu: seconds(usage.ru_utime) + seconds(usage.ru_stime),
        wall,
        peak: usage.ru_maxrss as f64 / 1024.0,
        anonymous,
        file,
    }
}

fn main() {
    if let Ok(spec) = std::env::var(CHILD) {
        child(&spec);
        return;
    }
    let base = std::env::var_os("RLM_BENCH_DIR").map_or_else(std::env::temp_dir, PathBuf::from);
    let sizes: Vec<usize> = std::env::var("RLM_BENCH_MB")
        .unwrap_or_else(|_| "200,480,900".to_owned())
        .split(',')
        .filter_map(|size| size.trim().parse().ok())
        .collect();
    let runs = std::env::var("RLM_BENCH_RUNS")
        .ok()
        .and_then(|runs| runs.parse().ok())
        .unwrap_or(3usize)
        .max(1);
    println!(
        "load of a generated source tree (files of 2-20 KB), each size loaded {runs} times into \
         a new store by a child process; medians, ratios against the first size"
    );
    println!(
        "  tree MB    files   CPU s  wall s  CPU ms/MB (ratio)  peak RSS MB (ratio)  \
         anon MB (ratio)  file MB (ratio)"
    );
    let mut first: Option<Figures> = None;
    for megabytes in sizes {
        let dir = tempfile::tempdir_in(&base).unwrap();
        let tree_dir = dir.path().join("tree");
        let files = tree(&tree_dir, megabytes * 1_000_000);
        let bytes = walk_bytes(&tree_dir) as f64 / 1e6;
        let loads: Vec<Figures> = (0..runs)
            .map(|run| {
                let store = dir.path().join(format!("store{run}"));
                let figures = load(&store, &tree_dir, bytes, files);
                if run + 1 < runs {
                    std::fs::remove_dir_all(&store).unwrap();
                }
                figures
            })
            .collect();
        let figures = median(&loads);
        if std::env::var_os("RLM_BENCH_KEEP").is_some() {
            println!("  (kept in {})", dir.keep().display());
        }
        print_row(&figures, first.get_or_insert(figures));
    }
}

/// The median of each figure of `loads`.
fn median(loads: &[Figures]) -> Figures {
    let middle = |figure: fn(&Figures) -> f64| {
        let mut values: Vec<f64> = loads.iter().map(figure).collect();
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    Figures {
        megabytes: loads[0].megabytes,
        files: loads[0].files,
        cpu: middle(|f| f.cpu),
        wall: middle(|f| f.wall),
        peak: middle(|f| f.peak),
        anonymous: middle(|f| f.anonymous),
        file: middle(|f| f.file),
    }
}

fn print_row(figures: &Figures, base: &Figures) {
    let per_mb = |f: &Figures| f.cpu * 1000.0 / f.megabytes;
    println!(
        "  {:7.0} {:8} {:7.1} {:7.1} {:10.1} ({:.2}x) {:12.1} ({:.2}x) {:9.1} ({:.2}x) {:9.1} ({:.2}x)",
        figures.megabytes,
        figures.files,
        figures.cpu,
        figures.wall,
        per_mb(figures),
        per_mb(figures) / per_mb(base),
        figures.peak,
        figures.peak / base.peak,
        figures.anonymous,
        figures.anonymous / base.anonymous,
        figures.file,
        figures.file / base.file,
    );
}

/// Bytes of the files under `dir`.
fn walk_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                walk_bytes(&entry.path())
            } else {
                entry.metadata().unwrap().len()
            }
        })
        .sum()
}
