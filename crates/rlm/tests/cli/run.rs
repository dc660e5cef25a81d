//! `rlm run` through the real binary: the fake provider server stands in for OpenAI, the sandbox
//! runs in a worker process (the binary itself).

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use rlm_llm::fake::{FakeReply, FakeServer};

use crate::support::{output as run, rlm_in, rlm_with_fake, text};

const KEY: &str = "sk-test-do-not-log-4242";

fn rlm(dir: &Path, server: Option<&FakeServer>) -> Command {
    match server {
        Some(server) => rlm_with_fake(dir, server, KEY),
        None => {
            let mut command = rlm_in(dir);
            command.env("OPENAI_API_KEY", KEY);
            command
        }
    }
}

fn logs_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_on_stdout_with_progress_on_stderr_and_a_clean_log() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("notes.txt"),
        "alpha\nthe password is swordfish\nomega\n",
    )
    .unwrap();
    let server = FakeServer::start().await.unwrap();
    server.script(
        "root",
        [
            FakeReply::text("```repl\nhits = grep('password')\nprint(hits)\nword = llm_query('Which word is the password? ' + hits)\n"),
            FakeReply::text("FINAL_VAR(word)"),
        ],
    );
    server.respond_with(|seen| {
        let answer = if seen.last_user_message().contains("swordfish") {
            "swordfish"
        } else {
            "unknown"
        };
        FakeReply::text(answer)
    });
    let mut command = rlm(dir.path(), Some(&server));
    command.args([
        "run",
        "--model",
        "openai:root",
        "--subcall-model",
        "openai:sub",
        "--log",
        "logs",
        "--context-file",
        "notes.txt",
        "What is the password?",
    ]);
    let output = run(command).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(text(&output.stdout), "swordfish\n");
    assert!(stderr.contains("── turn 1/30"), "{stderr}");
    assert!(stderr.contains("│ hits = grep('password')"), "{stderr}");
    assert!(stderr.contains("1: the password is swordfish"), "{stderr}");
    assert!(stderr.contains("answered after 2 turns"), "{stderr}");
    let logs = logs_in(&dir.path().join("logs"));
    assert_eq!(logs.len(), 1, "{logs:?}");
    let log = std::fs::read_to_string(&logs[0]).unwrap();
    assert!(!log.contains(KEY), "the API key leaked into the trajectory");
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.first().unwrap()["type"], "metadata");
    assert_eq!(lines.last().unwrap()["type"], "result");
    let call = &lines[1]["code_blocks"][0]["result"]["rlm_calls"][0];
    assert_eq!(call["root_model"], "openai:sub");
    // The root request carried the stop sequence that ends a reply after its code block.
    let root = &server.requests_for("root")[0];
    assert_eq!(root.body["stop"][0], "\n```\n", "{}", root.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_result_and_exit_1_without_an_answer() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    server.script(
        "root",
        [
            FakeReply::text("```repl\nanswer = 'probably 3'\nprint(len(context))\n"),
            FakeReply::text(""),
        ],
    );
    let mut command = rlm(dir.path(), Some(&server));
    command.args([
        "run",
        "--json",
        "--no-log",
        "--model",
        "openai:root",
        "--max-iterations",
        "1",
        "--context",
        "abc",
        "How long?",
    ]);
    let output = run(command).await;
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let result: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["status"], "iteration_limit");
    assert_eq!(result["answer"], serde_json::Value::Null);
    assert_eq!(result["partial_answer"], "probably 3");
    assert_eq!(result["iterations"], 2);
    assert_eq!(result["log"], serde_json::Value::Null);
    assert!(result["tokens"].as_u64().unwrap() > 0);
}

/// File and stdin contexts are read by the sandbox worker only; the sizes the model is told
/// (measured by the host in one streamed pass) match what `len()` gives in the worker, for
/// invalid UTF-8 (replaced with U+FFFD), a byte-order mark, and standard input.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_contexts_are_described_as_the_worker_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("latin1.txt"), b"caf\xe9\nbar\n").unwrap();
    std::fs::write(dir.path().join("bom.txt"), "\u{feff}hi\n").unwrap();
    let server = FakeServer::start().await.unwrap();
    server.script(
        "root",
        [
            FakeReply::text(
                "```repl\nsizes = str(len(context_0)) + ',' + str(len(context_1)) + ',' + str(len(context_2))\nprint(sizes)\nprint(context_0[3] == '\\ufffd')\n",
            ),
            FakeReply::text("FINAL_VAR(sizes)"),
        ],
    );
    let mut command = rlm(dir.path(), Some(&server));
    command
        .args([
            "run",
            "--no-log",
            "--model",
            "openai:root",
            "--context-file",
            "latin1.txt",
            "--context-file",
            "bom.txt",
            "--context",
            "-",
            "How long?",
        ])
        .write_stdin("from stdin\n");
    let output = run(command).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "9,4,11\n");
    let requests = server.requests_for("root");
    let first = requests[0].last_user_message();
    assert!(
        first.contains("There are 3 contexts, 24 chars in total"),
        "{first}"
    );
    let feedback = requests[1].last_user_message();
    assert!(feedback.contains("9,4,11\nTrue"), "{feedback}");
}

#[test]
fn bad_input_exits_2_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let output = rlm(dir.path(), None)
        .args([
            "run",
            "--model",
            "openai:x",
            "--context-file",
            "missing.txt",
            "q",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("cannot read missing.txt"), "{stderr}");
    let output = rlm(dir.path(), None)
        .args(["run", "--model", "openai:x", "q"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("no context given"));
    let output = rlm(dir.path(), None)
        .args(["run", "--context", "x", "q"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("no model configured"));
    // The run's wall-time budget is --timeout (alias --max-time); nonsense values are usage errors.
    for flag in ["--timeout", "--max-time"] {
        let output = rlm(dir.path(), None)
            .args([
                "run",
                "--model",
                "openai:x",
                "--context",
                "x",
                flag,
                "-3",
                "q",
            ])
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(2),
            "{flag}: {}",
            text(&output.stderr)
        );
    }
}

/// `rlm run ARGS --no-log --context abc q` without any key, which must exit 2 (an input error);
/// returns stdout and stderr.
fn run_expecting_input_error(dir: &Path, args: &[&str]) -> (String, String) {
    let output = rlm_in(dir)
        .arg("run")
        .args(args)
        .args(["--no-log", "--context", "abc", "q"])
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
    (text(&output.stdout), stderr)
}

/// A model error keeps its kind through the engine: without a key the run is an input error
/// (exit 2) with the hint `rlm chat` gives, not a budget hint; the summary reads right.
#[test]
fn a_missing_key_exits_2_with_the_export_hint() {
    let dir = tempfile::tempdir().unwrap();
    let (_, stderr) = run_expecting_input_error(dir.path(), &["--model", "openai:gpt-4o"]);
    for expected in [
        "error: no answer: the root model failed",
        "Caused by: no API key for provider `openai`",
        "hint: export OPENAI_API_KEY=",
        " · 1 turn · 0 model calls · 0 tokens · $0.0000 · ",
    ] {
        assert!(stderr.contains(expected), "{expected}: {stderr}");
    }
    assert!(!stderr.contains("--max-iterations"), "{stderr}");
    assert!(!stderr.contains("$-0"), "{stderr}");
}

/// A replay miss and an unknown provider are input errors too, in JSON mode as well (the
/// result line still goes to stdout).
#[test]
fn replay_misses_and_unknown_providers_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("empty.jsonl"), "").unwrap();
    let replay = [
        "--json",
        "--replay",
        "empty.jsonl",
        "--model",
        "openai:gpt-4o",
    ];
    let (stdout, stderr) = run_expecting_input_error(dir.path(), &replay);
    assert!(
        stderr.contains("no recorded response in empty.jsonl"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: the recording has no answer"),
        "{stderr}"
    );
    let result: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(result["status"], "model_error");
    let error = result["error"].as_str().unwrap();
    assert!(error.contains("no recorded response"), "{result}");
    assert_eq!(result["usage"]["subcalls"], 0);

    let (_, stderr) = run_expecting_input_error(dir.path(), &["--model", "nosuch:m"]);
    assert!(stderr.contains("unknown provider `nosuch`"), "{stderr}");
    assert!(stderr.contains("hint: known prefixes"), "{stderr}");
}

/// The README's keyless example: replaying `examples/needle.replay.jsonl` must answer. Set
/// `RLM_RECORD_EXAMPLES=1` to re-record it against the fake server (after a prompt change).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_replay_example_answers_without_a_key() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let recording = root.join("examples/needle.replay.jsonl");
    let args = [
        "--model",
        "openai:gpt-4o",
        "--subcall-model",
        "openai:gpt-4o-mini",
        "--context-file",
        "examples/needle-haystack.ndjson",
        "--no-log",
        "What is the secret code in the logs?",
    ];
    if std::env::var_os("RLM_RECORD_EXAMPLES").is_some() {
        let _ = std::fs::remove_file(&recording);
        let server = FakeServer::start().await.unwrap();
        server.script(
            "gpt-4o",
            NEEDLE_SCRIPT.iter().map(|reply| FakeReply::text(*reply)),
        );
        server.respond_with(|seen| {
            let message = seen.last_user_message();
            let code = message
                .split_whitespace()
                .find(|word| word.starts_with("OSPREY-"))
                .map_or("NONE", |word| {
                    word.trim_matches(|c: char| !c.is_alphanumeric() && c != '-')
                });
            FakeReply::text(code)
        });
        let mut command = rlm(&root, Some(&server));
        command
            .arg("run")
            .arg("--record")
            .arg(&recording)
            .args(args);
        let output = run(command).await;
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    }
    let mut command = rlm(&root, None);
    command
        .env_remove("OPENAI_API_KEY")
        .arg("run")
        .arg("--replay")
        .arg(&recording)
        .args(args);
    let output = run(command).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let answer = text(&output.stdout);
    assert!(answer.contains("OSPREY-7731"), "{answer}");
}

/// What the scripted root model writes in the example.
const NEEDLE_SCRIPT: [&str; 4] = [
    "I'll start by looking at the shape of the data.\n```repl\nlines = context.splitlines()\nprint(len(lines))\nprint(lines[0])\n",
    "Each line is a JSON record with a `msg` field. Let me search the messages for codes or secrets.\n```repl\nhits = grep('(?i)code|secret|password')\nprint(hits[:2000])\n",
    "One support-chat message mentions a code. I'll have a sub-model confirm what it is.\n```repl\nline = grep('(?i)override code')\ncode = llm_query('This log line may reveal an access code. Reply with the code only, or NONE.\\n\\n' + line)\nprint(code)\n",
    "FINAL(The secret code is OSPREY-7731: user gus read out the vault override code in a support chat at 2024-05-13T08:08:08Z.)",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_exits_130_and_keeps_the_turns_already_logged() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    server.script(
        "root",
        [
            FakeReply::text("```repl\nprint(len(context))\n"),
            FakeReply::hang(),
        ],
    );
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("rlm"))
        .current_dir(dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join("xdg"))
        .env("OPENAI_BASE_URL", server.openai_base_url())
        .env("OPENAI_API_KEY", KEY)
        .env_remove("RLM_CONFIG")
        .args([
            "run",
            "--model",
            "openai:root",
            "--log",
            "logs",
            "--context",
            "abc",
            "q",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while server.requests_for("root").len() < 2 || server.in_flight() == 0 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "turn 2 never started"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    assert_eq!(exit.code(), Some(130));
    let logs = logs_in(&dir.path().join("logs"));
    assert_eq!(logs.len(), 1);
    let log = std::fs::read_to_string(&logs[0]).unwrap();
    let kinds: Vec<String> = log
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["type"].to_string())
        .collect();
    assert_eq!(kinds, ["\"metadata\"", "\"iteration\""]);
}

#[test]
fn max_errors_must_be_at_least_one() {
    let dir = tempfile::tempdir().unwrap();
    let (_, stderr) =
        run_expecting_input_error(dir.path(), &["--model", "openai:x", "--max-errors", "0"]);
    assert!(
        stderr.contains("--max-errors must be at least 1"),
        "{stderr}"
    );
}

/// Model code names another model: refused with the flag to use, unless the user allowed it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_may_pick_only_models_the_user_allowed() {
    for allow in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let server = FakeServer::start().await.unwrap();
        server.script(
            "root",
            [
                FakeReply::text("```repl\nprint(llm_query('hi', model='openai:other'))\n"),
                FakeReply::text("FINAL(done)"),
            ],
        );
        server.respond_with(|_| FakeReply::text("from other"));
        let mut command = rlm(dir.path(), Some(&server));
        command.args([
            "run",
            "--no-log",
            "--model",
            "openai:root",
            "--context",
            "x",
        ]);
        if allow {
            command.args(["--allow-model", "openai:other"]);
        }
        command.arg("q");
        let output = run(command).await;
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
        let feedback = server.requests_for("root")[1]
            .last_user_message()
            .to_owned();
        if allow {
            assert_eq!(server.requests_for("other").len(), 1);
            assert!(feedback.contains("from other"), "{feedback}");
        } else {
            assert!(server.requests_for("other").is_empty());
            assert!(
                feedback.contains("is not allowed") && feedback.contains("--allow-model"),
                "{feedback}"
            );
        }
    }
}
