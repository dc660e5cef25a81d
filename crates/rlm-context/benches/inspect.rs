//! Context metadata speed and memory, against `wc -l` on the same file.
//!
//! Run: `cargo bench -p rlm-context --bench inspect` (sizes: `RLM_BENCH_MB`, default 1024 for
//! NDJSON; CSV and JSON-array files are a quarter of that; runs: `RLM_BENCH_RUNS`, default 5).
//! `RLM_BENCH_FORMATS` (comma-separated: `ndjson`, `csv`, `csv-quoted`, `json-array`; default all)
//! picks the files. Prints medians of the runs with a warm page cache, the ratio to `wc -l`, and
//! the peak RSS growth during analysis, and (`mem`) the median time of the same analysis over
//! the file's bytes already in memory: the scan's own cost, without the kernel's copy.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rlm_context::{AnalyzeOptions, analyze_path};

fn main() -> std::io::Result<()> {
    let megabytes: u64 = std::env::var("RLM_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024);
    let runs: usize = std::env::var("RLM_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&runs| runs > 0)
        .unwrap_or(5);
    let dir = tempfile::tempdir()?;
    println!(
        "rlm inspect benchmark ({} cores)",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "wall = median wall time; cpu = median CPU time (user+sys, 10 ms ticks), robust when the machine is shared"
    );
    println!(
        "{:<12} {:>8} {:>11} {:>11} {:>7} {:>10} {:>10} {:>7} {:>7} {:>10} {:>9}",
        "format",
        "MB",
        "wall",
        "wc wall",
        "ratio",
        "cpu",
        "wc cpu",
        "ratio",
        "GB/s",
        "RSS +MB",
        "mem"
    );
    let small = generate(dir.path(), "seed.ndjson", 4, ndjson_line)?;
    report("ndjson 4MB", &small, runs)?;
    let wanted = std::env::var("RLM_BENCH_FORMATS").unwrap_or_default();
    let wanted = |name: &str| wanted.is_empty() || wanted.split(',').any(|w| w.trim() == name);
    let shapes: [(&str, Generator, u64); 4] = [
        (
            "ndjson",
            |dir, mb| generate(dir, "feed.ndjson", mb, ndjson_line),
            megabytes,
        ),
        (
            "csv",
            |dir, mb| generate(dir, "table.csv", mb, csv_line),
            megabytes / 4,
        ),
        (
            "csv-quoted",
            |dir, mb| generate(dir, "quoted.csv", mb, quoted_csv_line),
            megabytes / 4,
        ),
        (
            "json-array",
            |dir, mb| generate_array(dir, "items.json", mb),
            megabytes / 4,
        ),
    ];
    for (name, make, size) in shapes {
        if !wanted(name) {
            continue;
        }
        let path = make(dir.path(), size)?;
        report(name, &path, runs)?;
        std::fs::remove_file(&path)?;
    }
    Ok(())
}

/// Writes a file of about the given megabytes in a directory.
type Generator = fn(&Path, u64) -> std::io::Result<PathBuf>;

fn report(name: &str, path: &Path, runs: usize) -> std::io::Result<()> {
    let bytes = std::fs::metadata(path)?.len();
    // Warm the page cache so both tools read from memory.
    wc_lines(path)?;
    let mut analyze_times = Vec::new();
    let mut analyze_cpu = Vec::new();
    let mut wc_times = Vec::new();
    let mut wc_cpu = Vec::new();
    let mut peak_growth = 0;
    for _ in 0..runs {
        let (wall, cpu) = wc_lines(path)?;
        wc_times.push(wall);
        wc_cpu.push(cpu);
        reset_peak_rss();
        let before = peak_rss_kb();
        let cpu_before = cpu_ticks(false);
        let start = Instant::now();
        let metadata =
            analyze_path(path, &AnalyzeOptions::default()).map_err(std::io::Error::other)?;
        analyze_times.push(start.elapsed());
        analyze_cpu.push(ticks_to_duration(cpu_ticks(false) - cpu_before));
        peak_growth = peak_growth.max(peak_rss_kb().saturating_sub(before));
        std::hint::black_box(metadata);
    }
    let in_memory = in_memory(path, runs)?;
    let analyze = median(analyze_times);
    let wc = median(wc_times);
    let (cpu, wc_cpu) = (median(analyze_cpu), median(wc_cpu));
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let ratio = |a: Duration, b: Duration| {
        if b.is_zero() {
            f64::NAN
        } else {
            a.as_secs_f64() / b.as_secs_f64()
        }
    };
    println!(
        "{:<12} {:>8.1} {:>9.1}ms {:>9.1}ms {:>7.2} {:>8.0}ms {:>8.0}ms {:>7.2} {:>7.2} {:>10.1} {:>7.1}ms",
        name,
        bytes as f64 / 1e6,
        ms(analyze),
        ms(wc),
        ratio(analyze, wc),
        ms(cpu),
        ms(wc_cpu),
        ratio(cpu, wc_cpu),
        bytes as f64 / analyze.as_secs_f64() / 1e9,
        peak_growth as f64 / 1024.0,
        ms(in_memory),
    );
    Ok(())
}

/// Median time of the analysis over the file's bytes in memory.
fn in_memory(path: &Path, runs: usize) -> std::io::Result<Duration> {
    let bytes = std::fs::read(path)?;
    let name = path.file_name().and_then(|name| name.to_str());
    let mut times = Vec::new();
    for _ in 0..runs {
        let start = Instant::now();
        let metadata = rlm_context::analyze_bytes(&bytes, name, &AnalyzeOptions::default());
        times.push(start.elapsed());
        std::hint::black_box(metadata);
    }
    Ok(median(times))
}

/// Runs `wc -l`; returns its wall time and its CPU time (from the children's rusage ticks).
fn wc_lines(path: &Path) -> std::io::Result<(Duration, Duration)> {
    let children_before = cpu_ticks(true);
    let start = Instant::now();
    let status = Command::new("wc")
        .arg("-l")
        .arg(path)
        .stdout(std::process::Stdio::null())
        .status()?;
    if !status.success() {
        return Err(std::io::Error::other("wc -l failed"));
    }
    Ok((
        start.elapsed(),
        ticks_to_duration(cpu_ticks(true) - children_before),
    ))
}

/// utime+stime (or cutime+cstime for waited-for children) from /proc/self/stat, in clock ticks.
fn cpu_ticks(children: bool) -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    // After the name: state, ppid, pgrp, session, tty, tpgid, flags, 4 fault counters, then
    // utime, stime, cutime, cstime (fields 14-17 of proc(5)).
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let (first, second) = if children { (13, 14) } else { (11, 12) };
    let tick = |index: usize| {
        fields
            .get(index)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    tick(first) + tick(second)
}

fn ticks_to_duration(ticks: u64) -> Duration {
    // Linux reports these in USER_HZ, which is 100 on every mainstream configuration.
    Duration::from_millis(ticks * 10)
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// Resets VmHWM (Linux: writing 5 to clear_refs), so each run reports its own peak.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn peak_rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn generate(
    dir: &Path,
    name: &str,
    megabytes: u64,
    line: fn(u64) -> String,
) -> std::io::Result<PathBuf> {
    let path = dir.join(name);
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(&path)?);
    let target = megabytes * 1_000_000;
    let mut written = 0;
    let mut index = 0;
    if name.ends_with(".csv") {
        let header = "id,user,level,message,score\n";
        out.write_all(header.as_bytes())?;
        written += header.len() as u64;
    }
    while written < target {
        let text = line(index);
        out.write_all(text.as_bytes())?;
        written += text.len() as u64;
        index += 1;
    }
    out.flush()?;
    Ok(path)
}

fn generate_array(dir: &Path, name: &str, megabytes: u64) -> std::io::Result<PathBuf> {
    let path = dir.join(name);
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(&path)?);
    let target = megabytes * 1_000_000;
    let mut written = 1;
    out.write_all(b"[")?;
    let mut index = 0;
    while written < target {
        let mut text = ndjson_line(index);
        text.pop();
        if index > 0 {
            text.insert(0, ',');
        }
        out.write_all(text.as_bytes())?;
        written += text.len() as u64;
        index += 1;
    }
    out.write_all(b"]")?;
    out.flush()?;
    Ok(path)
}

fn ndjson_line(index: u64) -> String {
    let accent = if index.is_multiple_of(1000) {
        " café — naïve 日本語"
    } else {
        ""
    };
    format!(
        "{{\"id\":{index},\"author\":\"did:plc:{:x}\",\"text\":\"post number {index} about \\\"things\\\"{accent}\",\"createdAt\":\"2024-11-02T15:30:00Z\",\"authorProfile\":{{\"displayName\":\"User {}\"}},\"hashtags\":[\"a\",\"b\"]}}\n",
        index * 7919,
        index % 977
    )
}

fn csv_line(index: u64) -> String {
    if index.is_multiple_of(50) {
        format!(
            "{index},user{},WARN,\"multi-line\nmessage, with a comma\",{}\n",
            index % 311,
            index % 100
        )
    } else {
        format!(
            "{index},user{},INFO,plain message number {index},{}\n",
            index % 311,
            index % 100
        )
    }
}

/// Every field quoted (as spreadsheets export), `""` in one row in five and a newline inside a
/// field in one row in five (issue 51's shape).
fn quoted_csv_line(index: u64) -> String {
    let message = match index % 5 {
        1 => format!("said \"\"hello\"\" to user {index}"),
        3 => format!("first line of note {index}\nsecond line, with a comma"),
        _ => format!("plain message number {index}, fine"),
    };
    format!(
        "\"{index}\",\"user{}\",\"INFO\",\"{message}\",\"{}\"\n",
        index % 311,
        index % 100
    )
}
