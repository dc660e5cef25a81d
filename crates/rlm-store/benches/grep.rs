//! `rlm grep` against ripgrep over the same text: a mixed set of patterns (literals, a rare
//! needle, case-insensitive, words, a class-led regex with Unicode `\b`), at two corpus sizes so
//! growth is visible.
//!
//! Both sides run as processes and are timed from outside: ripgrep (`rg -n --no-heading`) over
//! the files on disk, with two threads (its default here: one per core) and with one, and this bench's own binary in a child mode that opens the store and
//! writes `name:line:text` lines as `rlm grep` does. Each pair alternates; medians are printed
//! with each side's peak RSS (from `wait4`) and the matching line counts, which must agree.
//! The first (untimed) run of `rlm grep` also samples its own /proc/self/status every
//! millisecond and reports the peaks of its two kinds of resident memory: anonymous (heap,
//! stacks: what it allocated) and file-backed (pages of the binary and of the memory-mapped
//! database, which the kernel drops under pressure; `VmHWM` counts both).
//!
//! Prints figures; asserts nothing about time. Run with `cargo bench -p rlm-store --bench grep`.
//! `RLM_BENCH_MB` (default `25,100`): corpus sizes in MB; `RLM_BENCH_RUNS` (default 5);
//! `RLM_BENCH_RG`: the ripgrep binary (default `rg` on the path); `RLM_BENCH_FILE_KB` (default
//! 1000): the size of each file, so a smaller one makes more buffers of the same corpus.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]
// `wait4` for each child's peak RSS.
#![allow(unsafe_code)]

use std::fmt::Write as _;
use std::io::{BufWriter, Write as _};
use std::ops::ControlFlow;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rlm_context::chunk::ChunkOptions;
use rlm_store::{GrepLine, GrepOptions, Source, Store};

mod common;
use common::{ResidentSampler, Rng};

const CHILD: &str = "RLM_BENCH_GREP_CHILD";

/// Set for a child that should write the peaks of its resident memory to this file.
const RSS_REPORT: &str = "RLM_BENCH_GREP_RSS";

/// The patterns, with ripgrep's flags and the same options for the store.
const PATTERNS: &[(&str, &str)] = &[
    ("ERROR", ""),
    ("needle_31337", ""),
    ("timeout", "-i"),
    ("retry", "-w"),
    (r"[A-Z][a-z]+Error\b", ""),
    (r"\w+@\w+\.(com|org)", ""),
    (r"^2026-\d\d-\d\d \S+ WARN", ""),
];

/// About `bytes` of logs, source-like lines and prose (some of it not ASCII), in files of about
/// `file_bytes`.
fn corpus(dir: &Path, bytes: usize, file_bytes: usize) {
    const LEVELS: &[&str] = &["INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"];
    const ERRORS: &[&str] = &["ParseError", "TimeoutError", "KeyError", "IoError", "ok"];
    const WORDS: &[&str] = &[
        "the", "worker", "queue", "retry", "retrying", "cache", "Timeout", "socket", "naïve",
        "café", "über", "index", "parser", "token", "buffer", "résumé", "request", "user",
    ];
    let mut rng = Rng(0x6e_e7);
    let mut written = 0;
    let mut file = 0;
    while written < bytes {
        let mut text = String::with_capacity(file_bytes + 1_000);
        while text.len() < file_bytes {
            match rng.next() % 3 {
                0 => {
                    let _ = writeln!(
                        text,
                        "2026-{:02}-{:02} {:02}:{:02}:{:02} {} req={} {} {} {}",
                        rng.next() % 12 + 1,
                        rng.next() % 28 + 1,
                        rng.next() % 24,
                        rng.next() % 60,
                        rng.next() % 60,
                        rng.pick(LEVELS),
                        rng.next() % 100_000,
                        rng.pick(WORDS),
                        rng.pick(ERRORS),
                        rng.pick(WORDS)
                    );
                }
                1 => {
                    let _ = writeln!(
                        text,
                        "    let {} = {}.{}(user{}@example.{}); // {}",
                        rng.pick(WORDS),
                        rng.pick(WORDS),
                        rng.pick(WORDS),
                        rng.next() % 1_000,
                        if rng.next().is_multiple_of(2) {
                            "com"
                        } else {
                            "net"
                        },
                        rng.pick(WORDS)
                    );
                }
                _ => {
                    for _ in 0..14 {
                        text.push_str(rng.pick(WORDS));
                        text.push(' ');
                    }
                    if rng.next().is_multiple_of(20_000) {
                        text.push_str("needle_31337");
                    }
                    text.push('\n');
                }
            }
        }
        std::fs::write(dir.join(format!("part{file:04}.log")), &text).unwrap();
        written += text.len();
        file += 1;
    }
}

/// Loads every file of `files` into a new store (in a child: the bench process itself stays
/// small, since a child's peak RSS starts from its parent's).
fn load(store: &Path, files: &Path) {
    let mut sources: Vec<Source> = std::fs::read_dir(files)
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            Source::File { path, name }
        })
        .collect();
    sources.sort_by_key(|source| match source {
        Source::File { name, .. } => name.clone(),
        _ => String::new(),
    });
    let mut store = Store::open(store).unwrap();
    store
        .load(sources, &ChunkOptions::default(), &mut |_| {
            ControlFlow::Continue(())
        })
        .unwrap();
}

fn options(flags: &str) -> GrepOptions {
    GrepOptions {
        ignore_case: flags.contains('i'),
        word: flags.contains('w'),
        // As `rlm grep` when its output is not coloured.
        lines_only: true,
        ..GrepOptions::default()
    }
}

/// Child mode: load the files into the store, or grep it as `rlm grep` does, lines to stdout.
fn child(spec: &str) {
    if let Some(spec) = spec.strip_prefix("load\t") {
        let (store, files) = spec.split_once('\t').unwrap();
        load(Path::new(store), Path::new(files));
        return;
    }
    let mut parts = spec.splitn(3, '\t');
    let (store, flags, pattern) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    let sampler = std::env::var_os(RSS_REPORT)
        .map(|path| (path, ResidentSampler::every(Duration::from_millis(1))));
    let store = Store::open(store).unwrap();
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(64 * 1024, stdout.lock());
    let mut number = itoa::Buffer::new();
    store
        .grep(pattern, &options(flags), &mut |line| {
            // As `rlm grep` writes an uncoloured line.
            if let GrepLine::Match {
                buffer, line, text, ..
            } = line
            {
                let _ = out
                    .write_all(buffer.as_bytes())
                    .and_then(|()| out.write_all(b":"))
                    .and_then(|()| out.write_all(number.format(line).as_bytes()))
                    .and_then(|()| out.write_all(b":"))
                    .and_then(|()| out.write_all(text.as_bytes()))
                    .and_then(|()| out.write_all(b"\n"));
            }
            ControlFlow::Continue(())
        })
        .unwrap();
    out.flush().unwrap();
    if let Some((path, sampler)) = sampler {
        let (anonymous, file) = sampler.finish();
        std::fs::write(path, format!("{anonymous} {file}")).unwrap();
    }
}

/// Runs `command`, returning its wall time, peak RSS in MB and, when `count`, its output lines.
fn measure(command: &mut Command, count: bool) -> (Duration, f64, usize) {
    command
        .stdout(if count { Stdio::piped() } else { Stdio::null() })
        .stderr(Stdio::inherit());
    let started = Instant::now();
    // Reaped by `wait4` below, which also gives the peak RSS that `Child::wait` does not.
    #[allow(clippy::zombie_processes)]
    let mut child = command.spawn().unwrap();
    let lines = child.stdout.take().map_or(0, |stdout| {
        use std::io::BufRead as _;
        std::io::BufReader::new(stdout).lines().count()
    });
    let mut status = 0;
    // SAFETY: `rusage` is plain data that `wait4` fills; the pid is our own unwaited child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: as above; `status` and `usage` outlive the call.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let elapsed = started.elapsed();
    assert_eq!(waited, pid, "wait4 failed");
    (elapsed, usage.ru_maxrss as f64 / 1024.0, lines)
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn bench(megabytes: usize, runs: usize, file_bytes: usize) {
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("files");
    std::fs::create_dir(&files).unwrap();
    corpus(&files, megabytes * 1_000_000, file_bytes);
    let store_dir = dir.path().join("store");
    let exe = std::env::current_exe().unwrap();
    let loaded = Command::new(&exe)
        .env(
            CHILD,
            format!("load\t{}\t{}", store_dir.display(), files.display()),
        )
        .status()
        .unwrap();
    assert!(loaded.success(), "the load failed");
    let store_mb =
        std::fs::metadata(store_dir.join("store.sqlite")).map_or(0.0, |m| m.len() as f64 / 1e6);
    println!(
        "corpus {megabytes} MB in {} files ({store_mb:.0} MB database), medians of {runs} (ms), \
         peak RSS (MB; rlm's split into anonymous + file-backed pages):",
        std::fs::read_dir(&files).unwrap().count()
    );
    println!(
        "  pattern                      rlm grep  rg -j2   ratio  rg -j1   ratio  RSS rlm / rg  rlm anon + file  lines"
    );
    for (pattern, flags) in PATTERNS {
        let rlm = || {
            let mut command = Command::new(&exe);
            command.env(
                CHILD,
                format!("{}\t{flags}\t{pattern}", store_dir.display()),
            );
            command
        };
        let rg = |threads: &str| {
            let mut command = Command::new(ripgrep());
            command.args(["-n", "--no-heading", "--color", "never", "-j", threads]);
            if !flags.is_empty() {
                command.arg(flags);
            }
            command.arg("-e").arg(pattern).arg(&files);
            command
        };
        let report = dir.path().join("rss");
        let (_, _, rlm_lines) = measure(rlm().env(RSS_REPORT, &report), true);
        let split = std::fs::read_to_string(&report).unwrap_or_default();
        let split: Vec<f64> = split.split(' ').filter_map(|v| v.parse().ok()).collect();
        let (_, _, rg_lines) = measure(&mut rg("2"), true);
        let (mut ours, mut theirs, mut single, mut rss) =
            (Vec::new(), Vec::new(), Vec::new(), (0.0f64, 0.0f64));
        for _ in 0..runs {
            let (time, peak, _) = measure(&mut rlm(), false);
            ours.push(time);
            rss.0 = rss.0.max(peak);
            let (time, peak, _) = measure(&mut rg("2"), false);
            theirs.push(time);
            rss.1 = rss.1.max(peak);
            single.push(measure(&mut rg("1"), false).0);
        }
        let (ours, theirs, single) = (median(ours), median(theirs), median(single));
        let ms = |time: Duration| time.as_secs_f64() * 1e3;
        println!(
            "  {:<28} {:>8.1} {:>7.1} {:>6.2}x {:>7.1} {:>6.2}x  {:>5.0} / {:<5.0}  {:>5.1} + {:<5.1}    {}{}",
            format!("{flags} {pattern}").trim(),
            ms(ours),
            ms(theirs),
            ms(ours) / ms(theirs),
            ms(single),
            ms(ours) / ms(single),
            rss.0,
            rss.1,
            split.first().copied().unwrap_or(f64::NAN),
            split.get(1).copied().unwrap_or(f64::NAN),
            rlm_lines,
            if rlm_lines == rg_lines {
                String::new()
            } else {
                format!(" (rg: {rg_lines})")
            }
        );
    }
}

/// `RLM_BENCH_RG`, else `rg` on the path.
fn ripgrep() -> std::ffi::OsString {
    std::env::var_os("RLM_BENCH_RG").unwrap_or_else(|| "rg".into())
}

fn main() {
    if let Ok(spec) = std::env::var(CHILD) {
        child(&spec);
        return;
    }
    let Ok(version) = Command::new(ripgrep()).arg("--version").output() else {
        println!("skipped: ripgrep (`rg`) is not installed");
        return;
    };
    let version = String::from_utf8_lossy(&version.stdout);
    println!("{}", version.lines().next().unwrap_or("ripgrep"));
    let runs = std::env::var("RLM_BENCH_RUNS")
        .ok()
        .and_then(|runs| runs.parse().ok())
        .unwrap_or(5usize)
        .max(1);
    let file_bytes = std::env::var("RLM_BENCH_FILE_KB")
        .ok()
        .and_then(|kb| kb.parse::<usize>().ok())
        .map_or(1_000_000, |kb| kb.max(1) * 1_000);
    for megabytes in std::env::var("RLM_BENCH_MB")
        .unwrap_or_else(|_| "25,100".to_owned())
        .split(',')
        .filter_map(|size| size.trim().parse().ok())
    {
        bench(megabytes, runs, file_bytes);
    }
}
