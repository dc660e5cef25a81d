//! `rlm run` through the real binary: the fake provider server stands in for OpenAI, the sandbox
//! runs in a worker process (the binary itself).

use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;
use rlm_fake::{FakeReply, FakeServer};

use crate::support::{
    KEY, output as run, rlm_in, rlm_with_fake, scripted, send_signal, spawn_with_fake, text,
    wait_until,
};

fn rlm(dir: &Path, server: Option<&FakeServer>) -> Command {
    match server {
        Some(server) => rlm_with_fake(dir, server),
        None => {
            let mut command = rlm_in(dir);
            command.env("OPENAI_API_KEY", KEY);
            command
        }
    }
}

/// `rlm run --no-log --model openai:root ARGS` against `server`, to its end.
async fn run_root(dir: &Path, server: &FakeServer, args: &[&str]) -> std::process::Output {
    let mut command = rlm_with_fake(dir, server);
    command
        .args(["run", "--no-log", "--model", "openai:root"])
        .args(args);
    run(command).await
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
    // The fake models have no price: the running total says so instead of `$0.0000`.
    assert!(stderr.contains(" tokens · cost unknown"), "{stderr}");
    assert!(!stderr.contains("$0.0000"), "{stderr}");
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
    let (dir, server) = scripted(
        "root",
        [
            FakeReply::text("```repl\nanswer = 'probably 3'\nprint(len(context))\n"),
            FakeReply::text(""),
        ],
    )
    .await;
    let args = [
        "--json",
        "--max-iterations",
        "1",
        "--context",
        "abc",
        "How long?",
    ];
    let output = run_root(dir.path(), &server, &args).await;
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

    // With --allow-binary a binary file is read anyway, as text with replacement characters.
    std::fs::write(dir.path().join("program"), b"\x00\x01\x02abc\x00").unwrap();
    server.script("root", [FakeReply::text("FINAL(read)")]);
    let mut command = rlm(dir.path(), Some(&server));
    command.args([
        "run",
        "--no-log",
        "--model",
        "openai:root",
        "--context-file",
        "program",
        "--allow-binary",
        "What is it?",
    ]);
    let output = run(command).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "read\n");
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
    // A binary file is refused as `rlm load` refuses it, before any model is asked.
    std::fs::write(
        dir.path().join("program"),
        b"\x7fELF\x02\x01\x00\x00\x00binary\x00\x00",
    )
    .unwrap();
    let output = rlm(dir.path(), None)
        .args([
            "run",
            "--model",
            "openai:x",
            "--context-file",
            "program",
            "q",
        ])
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("program is binary"), "{stderr}");
    assert!(stderr.contains("--allow-binary"), "{stderr}");
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

/// Every model the run may call is checked before the first turn: without its key, the root,
/// the sub-call or an allowed model is an input error (exit 2) naming the model, with the hint
/// `rlm chat` gives — not a budget hint, and not a run whose every `llm_query` fails.
#[test]
fn a_missing_key_for_any_model_of_the_run_exits_2_with_the_export_hint() {
    let dir = tempfile::tempdir().unwrap();
    for (args, refused, variable) in [
        (
            &["--model", "openai:gpt-4o"][..],
            "openai:gpt-4o",
            "OPENAI_API_KEY",
        ),
        (
            &["--model", "ollama:root", "--subcall-model", "openai:x"],
            "openai:x",
            "OPENAI_API_KEY",
        ),
        (
            &["--model", "ollama:root", "--allow-model", "anthropic:y"],
            "anthropic:y",
            "ANTHROPIC_API_KEY",
        ),
    ] {
        let (stdout, stderr) = run_expecting_input_error(dir.path(), args);
        for expected in [
            format!("error: model `{refused}` cannot be used"),
            format!(
                "Caused by: no API key for provider `{}`",
                refused.split(':').next().unwrap()
            ),
            format!("hint: export {variable}="),
        ] {
            assert!(stderr.contains(&expected), "{expected}: {stderr}");
        }
        assert!(!stderr.contains("--max-iterations"), "{stderr}");
        assert!(!stderr.contains("turn"), "no turn was taken: {stderr}");
        assert!(stdout.is_empty(), "{stdout}");
    }
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

/// The README's keyless example, read from README.md: replaying `examples/needle.replay.jsonl`
/// must answer. Set `RLM_RECORD_EXAMPLES=1` to re-record it against the fake server (after a
/// prompt change).
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
    // The command as the README prints it (its main job), replaying the recording made above.
    let documented = crate::readme::command("run --replay");
    assert!(
        documented
            .windows(2)
            .any(|pair| pair == ["--replay", "examples/needle.replay.jsonl"]),
        "{documented:?}"
    );
    let mut command = rlm(&root, None);
    command
        .env_remove("OPENAI_API_KEY")
        .args(&documented)
        .arg("--no-log");
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

/// Ctrl-C and SIGTERM (`timeout`, a CI runner, `docker stop`) both end the log with an
/// `interrupted` result; the exit code says which signal came (130, 143).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_and_sigterm_end_the_log_with_an_interrupted_result() {
    for (signal, code) in [("INT", 130), ("TERM", 143)] {
        let (dir, server) = scripted(
            "root",
            [
                FakeReply::text("```repl\nprint(len(context))\n"),
                FakeReply::hang(),
            ],
        )
        .await;
        let args = [
            "run",
            "--model",
            "openai:root",
            "--log",
            "logs",
            "--context",
            "abc",
            "q",
        ];
        let child = spawn_with_fake(dir.path(), &server, &args);
        let turn_two = || server.requests_for("root").len() >= 2 && server.in_flight() != 0;
        wait_until(Duration::from_secs(30), "turn 2 never started", turn_two).await;
        assert_eq!(send_signal(child, signal).await, Some(code), "SIG{signal}");
        let logs = logs_in(&dir.path().join("logs"));
        assert_eq!(logs.len(), 1);
        let log = std::fs::read_to_string(&logs[0]).unwrap();
        let lines: Vec<serde_json::Value> = log
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let kinds: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["metadata", "iteration", "result"], "SIG{signal}");
        let result = &lines[2];
        assert_eq!(result["status"], "interrupted", "{result}");
        assert_eq!(result["iterations"], 2, "turn 2 was under way");
        assert_eq!(result["answer"], serde_json::Value::Null);
    }
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

/// `--block-timeout` bounds one code block's interpreter time: a block that never ends is
/// stopped with a `TimeoutError` the model sees, and the run goes on to its answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn block_timeout_stops_a_block_that_never_ends() {
    let (dir, server) = scripted(
        "root",
        [
            FakeReply::text("```repl\nn = 0\nwhile True:\n    n += 1\n"),
            FakeReply::text("FINAL(stopped)"),
        ],
    )
    .await;
    let args = ["--block-timeout", "0.5", "--context", "x", "q"];
    let output = run_root(dir.path(), &server, &args).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout).trim(), "stopped");
    let feedback = server.requests_for("root")[1]
        .last_user_message()
        .to_owned();
    assert!(feedback.contains("TimeoutError"), "{feedback}");
}

/// Nonsense per-block limits are usage errors that name where they were set.
#[test]
fn bad_block_timeouts_exit_2_naming_the_flag_or_key() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["0", "-2", "1e12"] {
        let (_, stderr) = run_expecting_input_error(
            dir.path(),
            &["--model", "openai:x", &format!("--block-timeout={bad}")],
        );
        assert!(stderr.contains("--block-timeout"), "{bad}: {stderr}");
    }
    std::fs::write(dir.path().join("rlm.toml"), "[run]\nblock_timeout = 0\n").unwrap();
    let (_, stderr) = run_expecting_input_error(dir.path(), &["--model", "openai:x"]);
    assert!(stderr.contains("block_timeout in [run]"), "{stderr}");
    assert!(
        stderr.contains("hint: give seconds greater than 0"),
        "{stderr}"
    );
}

/// A limit that would end the run before its first turn is refused, naming its flag.
#[test]
fn zero_limits_name_their_flag() {
    let dir = tempfile::tempdir().unwrap();
    for flag in ["--max-subcalls", "--max-tokens", "--max-errors"] {
        let (_, stderr) =
            run_expecting_input_error(dir.path(), &["--model", "openai:x", flag, "0"]);
        // `--max-tokens` quotes the value, as `rlm query` does (one BudgetOptions for both).
        let expected = if flag == "--max-tokens" {
            format!("error: {flag} 0 must be at least 1")
        } else {
            format!("error: {flag} must be at least 1")
        };
        assert!(stderr.contains(&expected), "{flag}: {stderr}");
    }
}
