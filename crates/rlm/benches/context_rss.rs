//! Peak memory of `rlm run` over one big context file (not a timed test).
//!
//! Writes an ASCII NDJSON file (1 GiB by default; `RLM_BENCH_CONTEXT_MB` changes it), answers the
//! root model from the in-process fake provider with two turns (`n = len(context)` and a
//! `find_all` that scans the whole context natively, then `FINAL_VAR(n)`), and runs the real
//! binary with the sandbox in its default worker process, once with `--context-file` and once with
//! the file piped to `--context -`.
//! While it runs, `/proc/<pid>/status` is polled for `VmHWM` (peak resident set) of the `rlm`
//! process itself and of its sandbox worker, read separately: `/usr/bin/time -v` would report
//! the larger of the two, because the waited-for worker counts as the host's child. The worker's
//! `RssAnon` (its own memory) and `RssFile` (file pages it maps: shared with the page cache and
//! reclaimable) are polled too, each for its largest value, and so is the time until the fake
//! provider sees the first model request (the worker has loaded the contexts by then).
//!
//! Run with `cargo bench -p rlm --bench context_rss`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufWriter, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rlm_fake::{FakeReply, FakeServer};

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
                FakeReply::text(
                    "```repl\nn = len(context)\nprint(n, len(find_all('no such text')))\n",
                ),
                FakeReply::text("FINAL_VAR(n)"),
            ],
        );
        let peaks = run(&server, dir.path(), &context, stdin);
        assert_eq!(peaks.answer, (megabytes * MIB).to_string(), "wrong answer");
        println!(
            "rlm run over {megabytes} MiB ({}), 2 turns, worker-process sandbox: {:.1}s wall, \
             worker started after {:.2}s, first model request after {:.2}s",
            if stdin {
                "--context - from stdin"
            } else {
                "--context-file"
            },
            peaks.seconds,
            peaks.worker_started,
            peaks.first_request
        );
        println!(
            "  peak RSS (VmHWM) of the rlm process:    {:>6.0} MiB",
            peaks.host as f64 / MIB as f64
        );
        println!(
            "  peak RSS (VmHWM) of the sandbox worker: {:>6.0} MiB",
            peaks.worker.high_water as f64 / MIB as f64
        );
        println!(
            "  worker's largest RssAnon / RssFile:     {:>6.0} / {:.0} MiB",
            peaks.worker.anonymous as f64 / MIB as f64,
            peaks.worker.file as f64 / MIB as f64
        );
    }
}

struct Peaks {
    answer: String,
    seconds: f64,
    /// Seconds from the start until the fake provider saw the first request.
    first_request: f64,
    /// Seconds from the start until the sandbox worker process was first seen.
    worker_started: f64,
    host: u64,
    worker: Memory,
}

/// Largest values seen of a process's `/proc/<pid>/status` memory fields, in bytes.
#[derive(Default)]
struct Memory {
    high_water: u64,
    anonymous: u64,
    file: u64,
}

impl Memory {
    fn update(&mut self, pid: u32) {
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            return;
        };
        let field = |name: &str| -> u64 {
            status
                .lines()
                .find(|line| line.starts_with(name))
                .and_then(|line| line.split_whitespace().nth(1)?.parse::<u64>().ok())
                .map_or(0, |kilobytes| kilobytes * 1024)
        };
        self.high_water = self.high_water.max(field("VmHWM:"));
        self.anonymous = self.anonymous.max(field("RssAnon:"));
        self.file = self.file.max(field("RssFile:"));
    }
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
    let requests_before = server.request_count();
    let mut first_request = None;
    let mut worker_started = None;
    let mut host = Memory::default();
    let mut worker = Memory::default();
    while child.try_wait().unwrap().is_none() {
        host.update(pid);
        for id in children(pid) {
            worker_started.get_or_insert_with(|| started.elapsed().as_secs_f64());
            worker.update(id);
        }
        if first_request.is_none() && server.request_count() > requests_before {
            first_request = Some(started.elapsed().as_secs_f64());
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
        first_request: first_request.unwrap_or(f64::NAN),
        worker_started: worker_started.unwrap_or(f64::NAN),
        host: host.high_water,
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
