//! `rlm prompt build` at process level: the release binary, its files read from disk, timed from
//! outside (not a timed test).
//!
//! Writes the input of `rlm-assemble`'s `prompt` bench to a directory: a 2,500-message history
//! (`chat.jsonl`, ~215k o200k tokens), 2,000 source files under `src/` (4.8 MB), `NOTES.md` and a
//! 20,000-line `ci.log` whose tail is kept. The first build summarizes the older history through
//! the in-process fake provider (OpenAI wire format) and fills the cache directory; each later
//! process finds its summary and token counts there, as an agent calling `rlm prompt build` every
//! turn does.
//!
//! Printed: medians of wall time and of the child's CPU time (user + system, `getrusage` of
//! waited-for children) for warm builds with the other core free, with a busy loop on one core
//! (a loaded machine), and with a message more in the history each turn (and the model calls
//! that took); the stderr line
//! count of a default build (the plan's summary) and of `-v` (one line per item).
//!
//! Run with `cargo bench -p rlm --bench prompt_cli` (`RLM_BENCH_RUNS` sets the runs per case,
//! `RLM_BENCH_KEEP=DIR` keeps the inputs and the cache in `DIR`).
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(unsafe_code, reason = "getrusage for the children's CPU time")]

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rlm_fake::{FakeReply, FakeServer};

const FILES: usize = 2_000;
const MESSAGES: usize = 2_500;

fn main() {
    let runs: usize = std::env::var("RLM_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&runs| runs > 0)
        .unwrap_or(21);
    let temporary = tempfile::tempdir().unwrap();
    // `RLM_BENCH_KEEP=DIR`: the inputs and the warm cache are written there and kept, to time
    // or profile one build by hand afterwards.
    let kept = std::env::var_os("RLM_BENCH_KEEP").map(std::path::PathBuf::from);
    let dir = kept.as_deref().unwrap_or(temporary.path());
    if let Some(dir) = &kept {
        std::fs::create_dir_all(dir).unwrap();
    }
    let bytes = write_inputs(dir);
    println!(
        "inputs: {MESSAGES} messages in chat.jsonl, {FILES} files under src/ ({:.1} MB), \
         NOTES.md, 20,000-line ci.log",
        bytes as f64 / 1e6
    );

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(FakeServer::start()).unwrap();
    server.respond_with(|_| FakeReply::text("## Requirements\n- keep the retry policy\n"));

    let (first, output) = timed(|| build(&server, dir, &[]));
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!(
        "first build (counts everything, {} summary calls): {:.0} ms wall [cpu {:.0} ms]",
        server.request_count(),
        ms(first.0),
        ms(first.1)
    );
    assert!(server.request_count() > 0, "no summary call:\n{stderr}");
    let first_sent: usize = server
        .requests_for("summarizer")
        .iter()
        .map(|request| request.last_user_message().len())
        .sum();
    println!("  ({:.1} KB of messages sent)", first_sent as f64 / 1e3);
    let calls = server.request_count();

    let warm = median(runs, || build(&server, dir, &[]));
    assert_eq!(
        server.request_count(),
        calls,
        "a warm build called the model"
    );
    show("warm build, other core free:", warm);

    let busy = Arc::new(AtomicBool::new(true));
    let spinner = {
        let busy = Arc::clone(&busy);
        std::thread::spawn(move || {
            let mut spins = 0_u64;
            while busy.load(Ordering::Relaxed) {
                spins = std::hint::black_box(spins.wrapping_add(1));
            }
        })
    };
    let loaded = median(runs, || build(&server, dir, &[]));
    show("warm build, a busy loop on one core:", loaded);

    grow_history(&server, dir, runs);
    busy.store(false, Ordering::Relaxed);
    spinner.join().unwrap();

    let quiet = build(&server, dir, &[]);
    let verbose = build(&server, dir, &["-v"]);
    println!(
        "stderr: {} lines by default, {} with -v",
        String::from_utf8_lossy(&quiet.stderr).lines().count(),
        String::from_utf8_lossy(&verbose.stderr).lines().count()
    );
    println!("model calls in all: {}", server.request_count());
}

/// One `rlm prompt build` process over the inputs in `dir`, checked to have succeeded.
fn build(server: &FakeServer, dir: &Path, extra: &[&str]) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_rlm"))
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("XDG_CONFIG_HOME", dir.join("xdg"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("OPENAI_BASE_URL", server.openai_base_url())
        .env("OPENAI_API_KEY", "sk-bench")
        .args(extra)
        .args([
            "prompt",
            "build",
            "--stage",
            "error-fixing",
            "--history",
            "chat.jsonl",
            "--notes",
            "NOTES.md",
            "--source",
            "src/**/*.rs",
            "--build-log",
            "ci.log",
            "--tokenizer",
            "o200k",
            "-m",
            "openai:summarizer",
            "-o",
            "prompt.json",
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "rlm prompt build failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Wall time and the waited-for child's CPU time of `run`.
fn timed<T>(run: impl FnOnce() -> T) -> ((Duration, Duration), T) {
    let before = children_cpu();
    let started = Instant::now();
    let value = run();
    let wall = started.elapsed();
    ((wall, children_cpu().saturating_sub(before)), value)
}

fn median<T>(runs: usize, mut run: impl FnMut() -> T) -> (Duration, Duration) {
    let (mut walls, mut cpus): (Vec<_>, Vec<_>) = (0..runs).map(|_| timed(&mut run).0).unzip();
    walls.sort();
    cpus.sort();
    (walls[runs / 2], cpus[runs / 2])
}

/// User + system CPU time of this process's waited-for children.
fn children_cpu() -> Duration {
    // SAFETY: getrusage only writes into the zeroed struct we pass.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let micros = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Duration::from_micros(micros(usage.ru_utime) + micros(usage.ru_stime))
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn show(label: &str, (wall, cpu): (Duration, Duration)) {
    println!(
        "{label:<42} {:>7.1} ms wall  [cpu {:>6.1} ms]",
        ms(wall),
        ms(cpu)
    );
}

/// Writes the bench's inputs under `dir`; returns the source files' bytes.
fn write_inputs(dir: &Path) -> usize {
    let mut history = String::new();
    for index in 0..MESSAGES {
        let role = if index % 2 == 0 { "user" } else { "assistant" };
        let content = format!(
            "Turn {index}: the retry policy in src/module_{}.rs backs off {} ms; \
             we decided to cap it because the pod restarted. {}",
            index % FILES,
            index * 7,
            "Checked the logs and the test output again. ".repeat(6)
        );
        writeln!(
            history,
            "{}",
            serde_json::json!({"role": role, "content": content})
        )
        .unwrap();
    }
    std::fs::write(dir.join("chat.jsonl"), history).unwrap();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let mut bytes = 0;
    for index in 0..FILES {
        let text: String = (0..40)
            .map(|line| {
                format!("pub fn item_{index}_{line}(value: u64) -> u64 {{ value * {line} }}\n")
            })
            .collect();
        bytes += text.len();
        std::fs::write(dir.join(format!("src/module_{index}.rs")), text).unwrap();
    }
    std::fs::write(
        dir.join("NOTES.md"),
        "Keep the retry policy configurable.\n",
    )
    .unwrap();
    let log = (0..20_000)
        .map(|line| format!("[{line}] compiling crate {line}\n"))
        .collect::<String>()
        + "error[E0308]: mismatched types\n";
    std::fs::write(dir.join("ci.log"), log).unwrap();
    bytes
}

/// An agent's loop: each turn the history grows by a message (the bench's messages are
/// appended cumulatively) and the prompt is built again; the history is put back after.
fn grow_history(server: &FakeServer, dir: &std::path::Path, runs: usize) {
    let history = dir.join("chat.jsonl");
    let original = std::fs::read_to_string(&history).unwrap();
    let mut text = original.clone();
    let calls_before = server.request_count();
    let mut turn = 0;
    let grown = median(runs, || {
        turn += 1;
        let role = if turn % 2 == 0 { "assistant" } else { "user" };
        let content = format!(
            "Turn {turn} of the session: the build fails again in src/module_{turn}.rs; {}",
            "looked at the retry test once more. ".repeat(turn % 5 + 1)
        );
        writeln!(
            text,
            "{}",
            serde_json::json!({"role": role, "content": content})
        )
        .unwrap();
        std::fs::write(&history, &text).unwrap();
        build(server, dir, &[])
    });
    show("a message more each turn, busy loop on:", grown);
    let sent: usize = server
        .requests_for("summarizer")
        .iter()
        .skip(calls_before)
        .map(|request| request.last_user_message().len())
        .sum();
    println!(
        "  ({} model calls over those {runs} turns, {:.1} KB of messages sent)",
        server.request_count() - calls_before,
        sent as f64 / 1e3
    );
    std::fs::write(&history, &original).unwrap();
}
