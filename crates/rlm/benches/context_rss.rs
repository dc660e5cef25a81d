//! Peak memory of `rlm run` over one big context file (not a timed test).
//!
//! Writes an ASCII NDJSON file (1 GiB by default; `RLM_BENCH_CONTEXT_MB` changes it), answers the
//! root model from the in-process fake provider with two turns (`n = len(context)`, then
//! `FINAL_VAR(n)`), and runs the real binary with the sandbox in its default worker process, once
//! with `--context-file` and once with the file piped to `--context -`.
//! While it runs, `/proc/<pid>/status` is polled for `VmHWM` (peak resident set) of the `rlm`
//! process itself and of its sandbox worker, read separately: `/usr/bin/time -v` would report
//! the larger of the two, because the waited-for worker counts as the host's child.
//!
//! Run with `cargo bench -p rlm --bench context_rss`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufWriter, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rlm_llm::fake::{FakeReply, FakeServer};

const MIB: u64 = 1024 * 1024;
const POLL: Duration = Duration::from_millis(10);

fn main() {
    let megabytes: u64 = std::env::var("RLM_BENCH_CONTEXT_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024);
    let dir = tempfile::tempdir().unwrap();
    let context = dir.path().join("context.ndjson");
    let started = Instant::now();
    write_context(&context, megabytes * MIB);
    println!(
        "context: {} MiB of NDJSON written in {:.1}s",
        megabytes,
        started.elapsed().as_secs_f64()
    );

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(FakeServer::start()).unwrap();
    for stdin in [false, true] {
        server.script(
            "root",
            [
                FakeReply::text("```repl\nn = len(context)\nprint(n)\n"),
                FakeReply::text("FINAL_VAR(n)"),
            ],
        );
        let peaks = run(&server, dir.path(), &context, stdin);
        assert_eq!(peaks.answer, (megabytes * MIB).to_string(), "wrong answer");
        println!(
            "rlm run over {megabytes} MiB ({}), 2 turns, worker-process sandbox: {:.1}s wall",
            if stdin {
                "--context - from stdin"
            } else {
                "--context-file"
            },
            peaks.seconds
        );
        println!(
            "  peak RSS (VmHWM) of the rlm process:    {:>6.0} MiB",
            peaks.host as f64 / MIB as f64
        );
        println!(
            "  peak RSS (VmHWM) of the sandbox worker: {:>6.0} MiB",
            peaks.worker as f64 / MIB as f64
        );
    }
}

struct Peaks {
    answer: String,
    seconds: f64,
    host: u64,
    worker: u64,
}

/// Runs `rlm run` over `context` (as a file or piped to stdin), polling peak RSS until it exits.
fn run(server: &FakeServer, dir: &Path, context: &Path, stdin: bool) -> Peaks {
    let started = Instant::now();
    let mut command = Command::new(env!("CARGO_BIN_EXE_rlm"));
    command
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("XDG_CONFIG_HOME", dir.join("xdg"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("OPENAI_BASE_URL", server.openai_base_url())
        .env("OPENAI_API_KEY", "sk-bench")
        .args(["--quiet", "run", "--model", "openai:root", "--no-log"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if stdin {
        command
            .args(["--context", "-"])
            .stdin(std::fs::File::open(context).unwrap());
    } else {
        command.arg("--context-file").arg(context);
    }
    let mut child = command.arg("How many chars?").spawn().unwrap();
    let pid = child.id();
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
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "rlm run failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Peaks {
        answer: String::from_utf8_lossy(&output.stdout).trim().to_owned(),
        seconds,
        host,
        worker,
    }
}

/// ASCII NDJSON log lines, exactly `bytes` long (the last line is padded).
fn write_context(path: &Path, bytes: u64) {
    let mut out = BufWriter::with_capacity(4 * MIB as usize, std::fs::File::create(path).unwrap());
    let mut written = 0_u64;
    let mut index = 0_u64;
    while written < bytes {
        let line = format!(
            "{{\"ts\":\"2024-05-01T12:{:02}:{:02}Z\",\"level\":\"{}\",\"user\":\"u{}\",\"msg\":\"request {} served in {} ms\"}}\n",
            index / 60 % 60,
            index % 60,
            if index.is_multiple_of(97) {
                "ERROR"
            } else {
                "INFO"
            },
            index % 1000,
            index,
            index % 750
        );
        let room = (bytes - written) as usize;
        let line = if line.len() <= room {
            line
        } else {
            "x".repeat(room)
        };
        out.write_all(line.as_bytes()).unwrap();
        written += line.len() as u64;
        index += 1;
    }
    out.flush().unwrap();
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
