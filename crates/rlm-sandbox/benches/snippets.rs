//! Typical RLM snippets over a generated 50 MB context: Monty (worker process) next to CPython
//! (`python3`) on the same machine, plus native helpers against the same work in pure Python.
//!
//! Run: `cargo bench -p rlm-sandbox --bench snippets`. `RLM_BENCH_RUNS` (default 3) sets the runs
//! per snippet (medians are printed); `RLM_BENCH_MB` (default 50) the context size.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rlm_sandbox::{ContextInput, Host, Limits, Sandbox, Session, WorkerCommand};

const LATENCY: Duration = Duration::from_millis(50);

/// (name, setup run once untimed, timed code). Setup gives later snippets their variables.
const SNIPPETS: &[(&str, &str, &str)] = &[
    ("len(context)", "", "n = len(context)"),
    ("split lines", "", "lines = context.split('\\n')"),
    ("count 'ERROR'", "", "c = context.count('ERROR')"),
    (
        "re.findall needles",
        "import re",
        "codes = re.findall(r'secret code: ([A-Z]{3}-\\d{4})', context)",
    ),
    (
        "filter lines with `in`",
        "lines = context.split('\\n')",
        "errors = [l for l in lines if 'ERROR' in l]",
    ),
    (
        "json.loads per line",
        "import json\nlines = context.split('\\n')",
        "recs = [json.loads(l) for l in lines if l]",
    ),
    (
        "chunk loop (50 x 1 MB slices)",
        "",
        "chunks = [context[i * 1000000:(i + 1) * 1000000] for i in range(50)]",
    ),
    (
        "20 sequential llm_query",
        "",
        "answers = [llm_query('summarize part ' + str(i)) for i in range(20)]",
    ),
    (
        "llm_query_batched(50)",
        "",
        "answers = llm_query_batched(['summarize part ' + str(i) for i in range(50)])",
    ),
];

/// (task, pure Python, with helpers). Pure Python runs in Monty and CPython; helpers in Monty.
const HELPER_PAIRS: &[(&str, &str, &str)] = &[
    (
        "regex matches with positions",
        "import re\nfound = [(m.start(), m.end(), m.group(0)) for m in re.finditer(r'secret code: [A-Z]{3}-\\d{4}', context)]",
        "found = find_all(r'secret code: [A-Z]{3}-\\d{4}')",
    ),
    (
        "find + slice 50 needles",
        "pos = 0\nhits = []\nfor _ in range(50):\n    i = context.find('secret code', pos)\n    hits.append(context[i:i + 40])\n    pos = i + 1",
        "hits = [slice_text(s, s + 40) for s, e, t in find_all('secret code', max_matches=50)]",
    ),
    (
        "lines 200000..200010",
        "part = context.split('\\n')[200000:200010]",
        "part = line_range(200000, 200010)",
    ),
    (
        "chunk 1 MB, 1 kB overlap",
        "step = 1000000 - 1000\nparts = [context[i:i + 1000000] for i in range(0, len(context), step)]",
        "parts = chunk_text(1000000, 1000)",
    ),
    (
        "grep with 1 line of context",
        "import re\nls = context.split('\\n')\nout = []\nfor i, l in enumerate(ls):\n    if re.search('secret code', l):\n        out.append('\\n'.join(ls[max(0, i - 1):i + 2]))",
        "out = grep('secret code', 1)",
    ),
];

struct FakeLlm;

#[async_trait::async_trait]
impl Host for FakeLlm {
    async fn llm_query(&self, prompt: String, _model: Option<String>) -> Result<String, String> {
        tokio::time::sleep(LATENCY).await;
        Ok(format!(
            "canned answer for: {}",
            prompt.chars().take(30).collect::<String>()
        ))
    }
    async fn rlm_query(&self, prompt: String, model: Option<String>) -> Result<String, String> {
        self.llm_query(prompt, model).await
    }
}

fn generate_context(path: &Path, megabytes: usize) {
    let mut text = String::with_capacity(megabytes << 20);
    let levels = ["INFO", "DEBUG", "WARN", "ERROR"];
    let mut line = 0_usize;
    while text.len() < megabytes << 20 {
        let message = match line % 1000 {
            7 => "café — naïve 日本語 timeout".to_owned(),
            500 => format!(
                "secret code: {}BC-{:04}",
                char::from(b'A' + (line % 26) as u8),
                line % 10000
            ),
            _ => "request handled in time".to_owned(),
        };
        let _ = writeln!(
            text,
            "{{\"id\": {line}, \"level\": \"{}\", \"user\": \"user{}\", \"msg\": \"{message}\", \"score\": {}.{}}}",
            levels[line % 4],
            line % 977,
            line % 100,
            line % 7
        );
        line += 1;
    }
    std::fs::write(path, text).unwrap();
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

async fn monty_times(
    sandbox: &Sandbox,
    path: &Path,
    cases: &[(String, String, String)],
    runs: usize,
) -> Vec<f64> {
    let mut session = Session::start(
        sandbox,
        vec![ContextInput::TextFile(path.to_owned())],
        None,
        Arc::new(FakeLlm),
    )
    .await
    .unwrap();
    let mut medians = Vec::new();
    for (name, setup, code) in cases {
        if !setup.is_empty() {
            let result = session.execute(setup).await.unwrap();
            assert!(result.is_ok(), "setup of {name}: {result:?}");
        }
        let mut times = Vec::new();
        for _ in 0..runs {
            let result = session.execute(code).await.unwrap();
            assert!(result.is_ok(), "{name}: {}", result.to_model_text());
            times.push(result.duration.as_secs_f64() * 1000.0);
        }
        medians.push(median(times));
    }
    medians
}

/// Runs the same snippets in one CPython process; `None` when `python3` is missing.
fn cpython_times(path: &Path, cases: &[(String, String, String)], runs: usize) -> Option<Vec<f64>> {
    let driver = r#"
import json, sys, time
from concurrent.futures import ThreadPoolExecutor
path, runs, cases = sys.argv[1], int(sys.argv[2]), json.loads(sys.stdin.read())
def llm_query(prompt, model=None):
    time.sleep(0.05)
    return 'canned answer for: ' + prompt[:30]
def llm_query_batched(prompts, model=None):
    with ThreadPoolExecutor(max_workers=max(1, len(prompts))) as pool:
        return list(pool.map(llm_query, prompts))
env = {'llm_query': llm_query, 'llm_query_batched': llm_query_batched}
env['context'] = open(path, encoding='utf-8').read()
out = []
for name, setup, code in cases:
    if setup:
        exec(setup, env)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        exec(code, env)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    out.append(times[len(times) // 2])
print(json.dumps(out))
"#;
    let mut child = std::process::Command::new("python3")
        .args(["-I", "-S", "-c", driver])
        .arg(path)
        .arg(runs.to_string())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .ok()?;
    let input = serde_json::to_vec(cases).unwrap();
    std::io::Write::write_all(child.stdin.as_mut()?, &input).ok()?;
    drop(child.stdin.take());
    let output = child.wait_with_output().ok()?;
    serde_json::from_slice(&output.stdout).ok()
}

fn owned(
    cases: impl Iterator<Item = (&'static str, &'static str, &'static str)>,
) -> Vec<(String, String, String)> {
    cases
        .map(|(a, b, c)| (a.to_owned(), b.to_owned(), c.to_owned()))
        .collect()
}

fn main() {
    let runs: usize = std::env::var("RLM_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let megabytes: usize = std::env::var("RLM_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("context.ndjson");
    generate_context(&path, megabytes);
    let worker = WorkerCommand::new(
        env!("CARGO_BIN_EXE_rlm-sandbox-worker"),
        Vec::<String>::new(),
    );
    let limits = Limits::default()
        .timeout(Duration::from_secs(120))
        .memory_bytes(8 << 30);
    let sandbox = Sandbox::builder()
        .limits(limits)
        .worker_command(worker)
        .build()
        .unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();

    println!(
        "context: {megabytes} MB NDJSON, 1 line in 1000 non-ASCII; fake LLM latency {} ms; median of {runs}",
        LATENCY.as_millis()
    );
    let start = std::time::Instant::now();
    let session_start = runtime.block_on(Session::start(
        &sandbox,
        vec![ContextInput::TextFile(path.clone())],
        None,
        Arc::new(FakeLlm),
    ));
    drop(session_start.unwrap());
    println!(
        "session start (worker spawn + context load): {:.0} ms\n",
        start.elapsed().as_secs_f64() * 1000.0
    );

    let cases = owned(SNIPPETS.iter().copied());
    let monty = runtime.block_on(monty_times(&sandbox, &path, &cases, runs));
    let cpython = cpython_times(&path, &cases, runs);
    println!(
        "{:<34} {:>10} {:>10} {:>8}",
        "snippet", "monty ms", "python ms", "ratio"
    );
    for (index, (name, _, _)) in cases.iter().enumerate() {
        let python = cpython.as_ref().map(|times| times[index]);
        println!(
            "{:<34} {:>10.1} {:>10} {:>8}",
            name,
            monty[index],
            python.map_or("-".to_owned(), |t| format!("{t:.1}")),
            python.map_or("-".to_owned(), |t| format!(
                "{:.2}",
                monty[index] / t.max(0.01)
            ))
        );
    }
    let batched = monty[cases.len() - 1];
    println!(
        "\nllm_query_batched(50): {batched:.1} ms = {:.2} x one call latency\n",
        batched / LATENCY.as_secs_f64() / 1000.0
    );

    let pure = owned(
        HELPER_PAIRS
            .iter()
            .map(|(name, pure, _)| (*name, "", *pure)),
    );
    let helped = owned(
        HELPER_PAIRS
            .iter()
            .map(|(name, _, helper)| (*name, "", *helper)),
    );
    let monty_pure = runtime.block_on(monty_times(&sandbox, &path, &pure, runs));
    let monty_helper = runtime.block_on(monty_times(&sandbox, &path, &helped, runs));
    let python_pure = cpython_times(&path, &pure, runs);
    println!(
        "{:<34} {:>12} {:>14} {:>10} {:>8}",
        "task", "monty pure", "monty helper", "python", "speedup"
    );
    for (index, (name, _, _)) in pure.iter().enumerate() {
        println!(
            "{:<34} {:>12.1} {:>14.1} {:>10} {:>8.1}",
            name,
            monty_pure[index],
            monty_helper[index],
            python_pure
                .as_ref()
                .map_or("-".to_owned(), |t| format!("{:.1}", t[index])),
            monty_pure[index] / monty_helper[index].max(0.01)
        );
    }
}
