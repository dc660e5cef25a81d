//! `rlm view` over a 1,000-turn run: reading the log (and its child logs) plus writing the page,
//! then loading the page in headless chromium when it is installed.
//!
//! The log is written as the engine writes it: every turn's `prompt` holds the whole
//! conversation so far, so the file grows with the square of the turns. Every 10th turn makes a
//! sub-call, every 100th starts a child run of 3 turns (its own log), every 25th has a code
//! error. Run: `cargo bench -p rlm-trace --bench view`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use rlm_trace::view::{LogView, RunView, write_page};
use rlm_trace::*;
use rlm_types::{Message, ModelTotals, Role, Usage, UsageReport};

const TURNS: u32 = 1_000;
const RUNS: usize = 5;

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let log = write_run(dir.path(), "rlm_2026-11-23_10-00-00_bench", "bench", TURNS);
    let log_bytes = std::fs::metadata(&log).unwrap().len();
    println!(
        "log: {TURNS} turns, {:.1} MB (+ {} child logs), written in {:.1} s",
        log_bytes as f64 / 1e6,
        TURNS / 100,
        started.elapsed().as_secs_f64()
    );

    let page = dir.path().join("page.html");
    let mut load = Vec::new();
    let mut render = Vec::new();
    for _ in 0..RUNS {
        let started = Instant::now();
        let run = RunView::load(&log).unwrap();
        load.push(started.elapsed().as_secs_f64() * 1e3);
        let started = Instant::now();
        assert_eq!(run.turns.len(), TURNS as usize);
        let log = LogView::from(run);
        write_page(&log, &page).unwrap();
        render.push(started.elapsed().as_secs_f64() * 1e3);
    }
    let page_bytes = std::fs::metadata(&page).unwrap().len();
    // To look at the page: RLM_BENCH_PAGE=/tmp/page.html keeps a copy.
    if let Some(keep) = std::env::var_os("RLM_BENCH_PAGE") {
        std::fs::copy(&page, keep).unwrap();
    }
    println!(
        "rlm view (library): read log median {:.0} ms, render + write page median {:.0} ms \
         (runs: {RUNS}); page {:.1} MB",
        median(&mut load),
        median(&mut render),
        page_bytes as f64 / 1e6
    );

    let Some(chromium) = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .map(PathBuf::from)
        .find(|path| path.is_file())
    else {
        println!("page load: skipped (chromium not installed)");
        return;
    };
    let empty = dir.path().join("empty.html");
    std::fs::write(
        &empty,
        "<!DOCTYPE html><html><body><script>addEventListener('load',function(){\
         document.documentElement.setAttribute('data-load-ms',performance.now().toFixed(1))})\
         </script></body></html>",
    )
    .unwrap();
    for (name, file) in [
        ("empty page (baseline)", &empty),
        ("1,000-turn page", &page),
    ] {
        let mut load_ms = Vec::new();
        let mut wall_ms = Vec::new();
        for _ in 0..3 {
            let (load, wall) = browser_load(&chromium, file, dir.path());
            load_ms.push(load);
            wall_ms.push(wall);
        }
        println!(
            "chromium headless, {name}: load event at median {:.0} ms after navigation; \
             whole --dump-dom run median {:.0} ms",
            median(&mut load_ms),
            median(&mut wall_ms)
        );
    }
}

/// `(load event ms as the page measured it, wall ms of the chromium process)`.
fn browser_load(chromium: &Path, page: &Path, scratch: &Path) -> (f64, f64) {
    let profile = tempfile::tempdir_in(scratch).unwrap();
    let started = Instant::now();
    let output = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let wall = started.elapsed().as_secs_f64() * 1e3;
    let dom = String::from_utf8_lossy(&output.stdout);
    let load = dom
        .split("data-load-ms=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .and_then(|ms| ms.parse().ok())
        .unwrap_or(f64::NAN);
    (load, wall)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn message(role: Role, content: String) -> Message {
    Message::new(role, content)
}

/// Writes a run of `turns` turns (and its child runs) as the engine would; returns its log.
fn write_run(dir: &Path, stem: &str, run_id: &str, turns: u32) -> PathBuf {
    let writer = TrajectoryWriter::create(dir, stem).unwrap();
    writer.write(&metadata(run_id, turns)).unwrap();
    let system = "You answer questions about a large context by writing Python in ```repl \
                  blocks. "
        .repeat(40);
    let mut conversation = vec![
        message(Role::System, system),
        message(
            Role::User,
            format!(
                "Question: how many errors are in the log? {}",
                "x".repeat(600)
            ),
        ),
    ];
    let mut children = 0;
    for n in 1..=turns {
        let code = format!(
            "hits = grep(r'ERROR {n}')\nprint(len(hits), hits[:3])  # turn {n}\nsummary = 'part {n}'"
        );
        let response =
            format!("Turn {n}: I will look at the **next** slice.\n```repl\n{code}\n```");
        let subcalls = subcalls_of_turn(dir, stem, run_id, n, &mut children);
        let error =
            (n % 25 == 0).then(|| "NameError: name 'hitz' is not defined (line 2)".to_owned());
        let stdout = format!("3 ['ERROR {n} a', 'ERROR {n} b', 'ERROR {n} c']\n");
        writer
            .write(&Iteration {
                iteration: n,
                run_id: run_id.to_owned(),
                prompt: conversation.clone(),
                response: response.clone(),
                code_blocks: vec![CodeBlock {
                    code,
                    result: CodeResult {
                        stdout: stdout.clone(),
                        stderr: String::new(),
                        error,
                        final_answer: None,
                        seconds: 0.01,
                        subcalls,
                        host_calls: Vec::new(),
                    },
                }],
                final_answer: (n == turns).then(|| "42".to_owned()),
                seconds: 1.5,
                usage: ModelTotals {
                    calls: 1,
                    usage: Usage {
                        input_tokens: 1_000 + u64::from(n) * 120,
                        output_tokens: 60,
                        ..Usage::default()
                    },
                    cost_usd: 0.002,
                    ..ModelTotals::default()
                },
                notes: vec![],
            })
            .unwrap();
        conversation.push(message(Role::Assistant, response));
        conversation.push(message(
            Role::User,
            format!(
                "Output of block 1:\n```\n{stdout}```\n\nTurn {} of {turns}.",
                n + 1
            ),
        ));
    }
    writer
        .write(&RunOutcome {
            run_id: run_id.to_owned(),
            status: Status::Answered,
            answer: Some("42".to_owned()),
            partial_answer: None,
            iterations: turns,
            usage: UsageReport::default(),
            subcalls: u64::from(turns / 10),
            usage_summary: UsageSummary::default(),
            seconds: 1_500.0,
            error: None,
        })
        .unwrap();
    writer.path().to_path_buf()
}

/// Every tenth turn asks a sub-model; every hundredth runs a child (its own log, written here).
fn subcalls_of_turn(
    dir: &Path,
    stem: &str,
    run_id: &str,
    n: u32,
    children: &mut u32,
) -> Vec<Subcall> {
    if !n.is_multiple_of(10) {
        return Vec::new();
    }
    let child_log = n.is_multiple_of(100).then(|| {
        *children += 1;
        let child_id = format!("{run_id}.{children}");
        write_run(dir, &format!("{stem}.{children}"), &child_id, 3)
    });
    vec![Subcall {
        kind: if child_log.is_some() {
            SubcallKind::RlmQuery
        } else {
            SubcallKind::LlmQuery
        },
        model: "openai:sub".to_owned(),
        prompt: format!("Summarise slice {n}: {}", "y".repeat(300)),
        prompt_chars: 12_000,
        response: format!("Slice {n} has 3 errors."),
        response_chars: 22,
        usage_summary: UsageSummary::default(),
        cost_usd: 0.0004,
        seconds: 0.8,
        error: None,
        child_run_id: child_log.as_ref().map(|_| format!("{run_id}.{children}")),
        child_log,
    }]
}

fn metadata(run_id: &str, turns: u32) -> RunMetadata {
    RunMetadata {
        run_id: run_id.to_owned(),
        parent_run_id: None,
        depth: u32::from(run_id.contains('.')),
        root_model: "openai:gpt-5".to_owned(),
        subcall_model: "openai:sub".to_owned(),
        max_depth: 2,
        max_iterations: turns,
        backend: "rlm".to_owned(),
        backend_kwargs: BackendArguments {
            model_name: "openai:gpt-5".to_owned(),
        },
        environment_type: "monty".to_owned(),
        environment_kwargs: Default::default(),
        other_backends: vec!["openai:sub".to_owned()],
        query: "How many errors are in the log?".to_owned(),
        contexts: Contexts {
            count: 0,
            parts: vec![],
        },
        budget: Budget {
            max_tokens: None,
            max_cost_usd: None,
            max_calls: None,
            timeout_seconds: None,
            max_subcalls: None,
            max_consecutive_errors: 5,
        },
    }
}
