//! Assembly speed on a generated source tree of ~1,000 files (a few MB), printed as medians.
//!
//! Run: `cargo bench -p rlm-assemble --bench assemble`. Figures printed:
//! - cold assemble with exact o200k counts (token cache emptied before each run),
//! - warm rebuild after one evidence part changed (one part recounted),
//! - warm rebuild with nothing changed,
//! - assemble with the `approx` estimate instead of BPE (the "no exact counts" path),
//! - repomix on the same tree in the same run when `npm` can install it (skipped otherwise;
//!   set `RLM_BENCH_SKIP_REPOMIX=1` to skip).
//!
//! Each figure is the median wall time and, in brackets, the median CPU time of the process
//! (all threads, from getrusage): on a machine shared with other builds, wall time mostly
//! measures the queue for a core.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(unsafe_code, reason = "getrusage for CPU time")]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rlm_assemble::{AddOptions, Ctx, InitOptions, Slot};
use rlm_context::tokens::Tokenizer;

const FILES: usize = 1_000;
const RUNS: usize = 5;

fn main() {
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("proj");
    let bytes = generate_tree(&tree.join("src"));
    println!("tree: {FILES} files, {:.2} MB", bytes as f64 / 1e6);

    let before = cpu_time();
    let started = Instant::now();
    Tokenizer::O200k.warm_up();
    let wall = started.elapsed();
    show(
        "o200k table load (once per process):",
        (wall, cpu_time().saturating_sub(before)),
    );

    let ctx_dir = tree.join("ctx");
    let options = InitOptions {
        tokenizer: Tokenizer::O200k,
        ..InitOptions::default()
    };
    let (ctx, _) = Ctx::init(&ctx_dir, options).unwrap();
    ctx.ask("Where is the retry policy configured?").unwrap();
    let add = AddOptions {
        rank: None,
        slot: Slot::Evidence,
        link: false,
        base: tree.clone(),
        follow: false,
    };
    let before = cpu_time();
    let started = Instant::now();
    let added = ctx.add(&["src/**/*".to_owned()], &add).unwrap();
    let wall = started.elapsed();
    show(
        &format!("add {} files (read, write, count):", added.changes.len()),
        (wall, cpu_time().saturating_sub(before)),
    );
    let cache = ctx_dir.join("build/.token-cache");

    let cold_both = median_with_cpu(RUNS, || {
        let _ = fs::remove_dir_all(&cache);
        let started = Instant::now();
        let report = ctx.assemble().unwrap();
        assert!(report.counted_parts > FILES);
        started.elapsed()
    });
    let cold = cold_both.0;
    let report = ctx.assemble().unwrap();
    show("cold assemble, exact o200k counts:", cold_both);
    println!(
        "  ({} parts, {} tokens)",
        report.plan.totals.included, report.plan.totals.tokens
    );

    let evidence = ctx_dir.join("evidence");
    let mut parts: Vec<PathBuf> = fs::read_dir(&evidence)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    parts.sort();
    let mut round = 0;
    let warm_changed_both = median_with_cpu(RUNS, || {
        round += 1;
        let part = &parts[round * 97 % parts.len()];
        let mut text = fs::read_to_string(part).unwrap();
        text.push_str(&format!("// edited in round {round}\n"));
        fs::write(part, text).unwrap();
        let started = Instant::now();
        let report = ctx.assemble().unwrap();
        assert_eq!(
            report.counted_parts, 1,
            "exactly the edited part is recounted"
        );
        started.elapsed()
    });
    show("warm rebuild after a one-part change:", warm_changed_both);
    let warm_same = median_with_cpu(RUNS, || {
        let started = Instant::now();
        ctx.assemble().unwrap();
        started.elapsed()
    });
    show("warm rebuild, nothing changed:", warm_same);

    let approx = ctx.clone().with_tokenizer(Tokenizer::Approx);
    let approx_cache = cache.join("approx");
    let no_counts_both = median_with_cpu(RUNS, || {
        let _ = fs::remove_file(&approx_cache);
        let started = Instant::now();
        approx.assemble().unwrap();
        started.elapsed()
    });
    show("assemble, approx estimate (no BPE):", no_counts_both);
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    println!(
        "ratios wall (cpu): cold exact / no-BPE {:.2}x ({:.2}x); one-part rebuild / no-BPE {:.2}x ({:.2}x)",
        ratio(cold_both.0, no_counts_both.0),
        ratio(cold_both.1, no_counts_both.1),
        ratio(warm_changed_both.0, no_counts_both.0),
        ratio(warm_changed_both.1, no_counts_both.1),
    );

    repomix(work.path(), &tree.join("src"), cold);
}

/// Writes FILES pseudo-random source files (deterministic) and returns their total size.
fn generate_tree(src: &Path) -> usize {
    let mut seed: u64 = 0x5eed;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize
    };
    let words = [
        "retry", "policy", "config", "client", "request", "handler", "buffer", "index", "token",
        "stream", "cache", "parse", "render", "budget", "evidence", "window", "limit", "query",
        "session", "plan",
    ];
    let mut total = 0;
    for index in 0..FILES {
        let dir = src.join(format!("module_{:02}", index % 40));
        fs::create_dir_all(&dir).unwrap();
        let extension = ["rs", "py", "ts"][index % 3];
        let mut text = String::new();
        let target = 2_000 + next() % 4_000;
        while text.len() < target {
            let a = words[next() % words.len()];
            let b = words[next() % words.len()];
            let n = next() % 1000;
            text.push_str(&match extension {
                "rs" => format!(
                    "/// Applies the {a} {b}.\npub fn {a}_{b}_{n}(input: &str) -> Result<usize, Error> {{\n    let {a} = input.len() * {n};\n    Ok({a})\n}}\n\n"
                ),
                "py" => format!(
                    "def {a}_{b}_{n}(value):\n    \"\"\"Return the {b} for {a}.\"\"\"\n    return value * {n}\n\n"
                ),
                _ => format!(
                    "export function {a}{}{n}(x: number): number {{\n  // {b} handling\n  return x + {n};\n}}\n\n",
                    capitalize(b)
                ),
            });
        }
        total += text.len();
        fs::write(dir.join(format!("file_{index:04}.{extension}")), text).unwrap();
    }
    total
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|first| first.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

/// Median wall time of `runs` runs of `run` (which returns the wall time it measured), and the
/// median process CPU time over the same runs.
fn median(runs: usize, mut run: impl FnMut() -> Duration) -> Duration {
    let (wall, _) = median_with_cpu(runs, &mut run);
    wall
}

fn median_with_cpu(runs: usize, mut run: impl FnMut() -> Duration) -> (Duration, Duration) {
    let mut walls = Vec::with_capacity(runs);
    let mut cpus = Vec::with_capacity(runs);
    for _ in 0..runs {
        let before = cpu_time();
        walls.push(run());
        cpus.push(cpu_time().saturating_sub(before));
    }
    walls.sort();
    cpus.sort();
    (walls[runs / 2], cpus[runs / 2])
}

/// User + system CPU time of this process, all threads (including finished ones).
fn cpu_time() -> Duration {
    // SAFETY: getrusage only writes into the zeroed struct we pass.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let micros = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Duration::from_micros(micros(usage.ru_utime) + micros(usage.ru_stime))
}

fn show(label: &str, (wall, cpu): (Duration, Duration)) {
    println!(
        "{label:<42} {:>8.1} ms  [cpu {:>7.1} ms]",
        ms(wall),
        ms(cpu)
    );
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// Times repomix (installed with npm into target/bench-tools) on the same tree, if possible.
fn repomix(work: &Path, src: &Path, ours: Duration) {
    if std::env::var_os("RLM_BENCH_SKIP_REPOMIX").is_some() {
        println!("repomix: skipped (RLM_BENCH_SKIP_REPOMIX)");
        return;
    }
    let tools = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-tools/repomix");
    let binary = tools.join("node_modules/.bin/repomix");
    if !binary.exists() {
        let _ = fs::create_dir_all(&tools);
        let installed = Command::new("npm")
            .args([
                "install",
                "--silent",
                "--no-audit",
                "--no-fund",
                "repomix@1",
            ])
            .current_dir(&tools)
            .output();
        if !matches!(installed, Ok(ref out) if out.status.success()) || !binary.exists() {
            println!("repomix: skipped (npm could not install it)");
            return;
        }
    }
    let version = Command::new(&binary).arg("--version").output();
    let version = version.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    let output = work.join("repomix-output.xml");
    let time = |extra: &[&str]| {
        median(3, || {
            let started = Instant::now();
            let status = Command::new(&binary)
                .arg(src)
                .args(["--quiet", "-o"])
                .arg(&output)
                .args(extra)
                .current_dir(work)
                .status();
            let elapsed = started.elapsed();
            assert!(status.is_ok_and(|s| s.success()), "repomix failed");
            elapsed
        })
    };
    let with_counts = time(&[]);
    let lean = time(&["--no-file-summary", "--no-security-check"]);
    println!(
        "repomix {} (default, counts tokens):      {:>8.1} ms  ({:.1}x our cold exact)",
        version.unwrap_or_default(),
        ms(with_counts),
        with_counts.as_secs_f64() / ours.as_secs_f64()
    );
    println!(
        "repomix --no-file-summary --no-security-check: {:>8.1} ms  ({:.1}x our cold exact)",
        ms(lean),
        lean.as_secs_f64() / ours.as_secs_f64()
    );
}
