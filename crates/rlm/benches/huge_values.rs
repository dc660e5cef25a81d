//! Peak memory and log size of `rlm run` when model code hands the host huge values (not a
//! timed test): a 300 MB `FINAL_VAR` answer, a 100 MB `llm_query` prompt, a 30 MB root reply.
//!
//! Each case runs the real binary with the sandbox in its worker process, the in-process fake
//! provider scripting the root model's replies, and the trajectory on. `/proc/<pid>/status` is
//! polled for `VmHWM` of the `rlm` process and of its sandbox worker, separately (as in
//! `context_rss`). Printed per case: exit code, host and worker peak RSS, trajectory bytes, and
//! whether the value reached the provider or stdout.
//!
//! `RLM_BENCH_HUGE_MB` scales the three sizes (default 300; the prompt is a third of it, the
//! reply a tenth). `RLM_BENCH_BASELINE=1` leaves out the size flags, for a binary built before
//! they existed.
//!
//! Run with `cargo bench --profile dev -p rlm --bench huge_values`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rlm_fake::{FakeReply, FakeServer};

const MIB: f64 = 1024.0 * 1024.0;
const POLL: Duration = Duration::from_millis(10);

fn main() {
    let megabytes: usize = std::env::var("RLM_BENCH_HUGE_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let baseline = std::env::var_os("RLM_BENCH_BASELINE").is_some();
    let answer = megabytes * 1_000_000;
    let prompt = answer / 3;
    let reply = answer / 10;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(FakeServer::start()).unwrap();
    server.respond_with(|_| FakeReply::text("ok"));

    let final_var = format!("```repl\nbig = 'a' * {answer}\nFINAL_VAR('big')\n");
    let mut cases: Vec<(String, Vec<String>, Vec<&str>)> = vec![(
        format!("{} MB FINAL_VAR answer, default caps", answer / 1_000_000),
        vec![final_var.clone(), "FINAL(short)".to_owned()],
        vec![],
    )];
    if !baseline {
        cases.push((
            format!(
                "{} MB FINAL_VAR answer, --max-answer-size 1GB",
                answer / 1_000_000
            ),
            vec![final_var, "FINAL(short)".to_owned()],
            vec!["--max-answer-size", "1GB"],
        ));
    }
    cases.push((
        format!("{} MB llm_query prompt", prompt / 1_000_000),
        vec![
            format!("```repl\nx = llm_query('p' * {prompt})\nprint(len(x))\n"),
            "FINAL(short)".to_owned(),
        ],
        vec![],
    ));
    cases.push((
        format!("{} MB root reply", reply / 1_000_000),
        vec![
            format!("```repl\nprint(1)\n# {}\n", "r".repeat(reply)),
            "FINAL(short)".to_owned(),
        ],
        vec![],
    ));

    for (name, replies, flags) in cases {
        server.script("root", replies.into_iter().map(FakeReply::text));
        let before = server.requests_for("sub").len();
        let dir = tempfile::tempdir().unwrap();
        let peaks = run(&server, dir.path(), &flags);
        let sent_to_sub = server.requests_for("sub").len() - before;
        println!("{name}:");
        println!(
            "  exit {:?}, {:.1}s wall, answer on stdout {} bytes, sub-calls sent {sent_to_sub}",
            peaks.code, peaks.seconds, peaks.answer_bytes
        );
        println!(
            "  peak RSS (VmHWM): rlm process {:>6.0} MiB, sandbox worker {:>6.0} MiB",
            peaks.host as f64 / MIB,
            peaks.worker as f64 / MIB
        );
        println!(
            "  trajectory: {:.1} MiB",
            log_bytes(&dir.path().join("log")) as f64 / MIB
        );
    }
}

struct Peaks {
    code: Option<i32>,
    answer_bytes: usize,
    seconds: f64,
    host: u64,
    worker: u64,
}

fn run(server: &FakeServer, dir: &Path, flags: &[&str]) -> Peaks {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rlm"))
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("XDG_CONFIG_HOME", dir.join("xdg"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("OPENAI_BASE_URL", server.openai_base_url())
        .env("OPENAI_API_KEY", "sk-bench")
        .args(["--quiet", "run", "--model", "openai:root"])
        .args(["--subcall-model", "openai:sub", "--context", "x"])
        .arg("--log")
        .arg(dir.join("log"))
        .args(flags)
        .arg("q")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Drain stdout as it comes: a large answer would otherwise fill the pipe and block the
    // child, which this loop waits on.
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    let mut host = 0;
    let mut worker = 0;
    while child.try_wait().unwrap().is_none() {
        host = host.max(peak_rss(pid).unwrap_or(0));
        for id in children(pid) {
            worker = worker.max(peak_rss(id).unwrap_or(0));
        }
        std::thread::sleep(POLL);
    }
    let seconds = started.elapsed().as_secs_f64();
    let status = child.wait().unwrap();
    let answer_bytes = reader.join().unwrap().unwrap();
    Peaks {
        code: status.code(),
        answer_bytes: usize::try_from(answer_bytes).unwrap_or(usize::MAX),
        seconds,
        host,
        worker,
    }
}

fn log_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|entry| entry.metadata().ok())
                .map(|metadata| metadata.len())
                .sum()
        })
        .unwrap_or(0)
}

/// `VmHWM` of a live process, in bytes.
fn peak_rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kilobytes: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kilobytes * 1024)
}

/// Direct children of a process (its sandbox worker), from every thread's `children` list.
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .filter_map(|id| id.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}
