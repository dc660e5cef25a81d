//! Output hygiene across commands: control characters from text we did not write never reach a
//! terminal, a closed pipe ends every command quietly, and `--json` is JSON Lines with a `type`.

use std::path::Path;
use std::process::Stdio;

use assert_cmd::Command;
use rlm_fake::{FakeReply, FakeServer};

use crate::support::{
    json_lines, output as run_async, rlm_store_process, rlm_with_fake, rlm_with_store, text, write,
};

/// A window-title change, a carriage return with erase-line, and a bell.
const HOSTILE: &str = "\x1b]0;pwned\x07\r\x1b[2Kfake prompt$ ";

struct Store {
    dir: tempfile::TempDir,
}

impl Store {
    /// A store with one buffer whose text carries terminal escapes.
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut lines = String::new();
        for i in 0..3000 {
            lines.push_str(&format!("line {i} needle {HOSTILE}\n"));
        }
        write(dir.path(), "hostile.txt", &lines);
        let store = Self { dir };
        store.rlm().args(["load", "hostile.txt"]).assert().success();
        store
    }

    fn rlm(&self) -> Command {
        rlm_with_store(self.dir.path())
    }

    fn json_lines(&self, args: &[&str]) -> Vec<serde_json::Value> {
        let output = self.rlm().arg("--json").args(args).output().unwrap();
        assert!(output.status.success(), "{}", text(&output.stderr));
        json_lines(&text(&output.stdout))
    }
}

/// Runs `rlm ARGS` with a stdout whose reader is already gone: every write fails with EPIPE.
fn with_closed_stdout(dir: &Path, args: &[&str]) -> std::process::Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut command = rlm_store_process(dir);
    command
        .env_remove("RUST_BACKTRACE")
        .args(args)
        .stdout(writer)
        .stderr(Stdio::piped());
    command.output().unwrap()
}

#[test]
fn every_output_path_ends_quietly_on_a_closed_pipe() {
    let store = Store::new();
    let dir = store.dir.path();
    let cases: &[&[&str]] = &[
        &["completions", "bash"],
        &["completions", "zsh"],
        &["list"],
        &["--json", "list"],
        &["show", "hostile.txt"],
        &["show", "hostile.txt", "--text"],
        &["--json", "show", "hostile.txt", "--text"],
        &["--json", "show", "hostile.txt", "--chunks"],
        &["peek", "hostile.txt", "--lines", "1:"],
        &["--json", "peek", "hostile.txt", "--lines", "1:"],
        &["grep", "needle"],
        &["--json", "grep", "needle"],
        &["search", "needle"],
        &["--json", "search", "needle"],
        &["status"],
        &["--json", "status"],
        &["chunk", "hostile.txt"],
        &["--json", "chunk", "hostile.txt"],
        &["inspect", "hostile.txt"],
        &["--json", "inspect", "hostile.txt"],
        &["config", "paths"],
        &["--json", "config", "paths"],
        &["config", "show"],
    ];
    for args in cases {
        let output = with_closed_stdout(dir, args);
        assert_eq!(
            (output.status.code(), text(&output.stderr)),
            (Some(0), String::new()),
            "rlm {}",
            args.join(" ")
        );
    }
}

#[test]
fn piped_data_is_byte_exact_and_diagnostics_are_neutralised() {
    let store = Store::new();
    // Data into a pipe keeps every byte, escapes included.
    let peek = store
        .rlm()
        .args(["peek", "hostile.txt", "--lines", "1:1"])
        .output()
        .unwrap();
    assert_eq!(text(&peek.stdout), format!("line 0 needle {HOSTILE}\n"));
    let grep = store
        .rlm()
        .args(["grep", "-m", "2", "needle"])
        .output()
        .unwrap();
    assert_eq!(
        text(&grep.stdout),
        format!("hostile.txt:1:line 0 needle {HOSTILE}\nhostile.txt:2:line 1 needle {HOSTILE}\n")
    );
    let shown = store
        .rlm()
        .args(["show", "hostile.txt", "--text"])
        .output()
        .unwrap();
    assert_eq!(
        shown.stdout,
        std::fs::read(store.dir.path().join("hostile.txt")).unwrap()
    );

    // A file name with escapes, quoted in an error, even with colour forced on.
    let name = format!("missing{HOSTILE}.txt");
    let error = store
        .rlm()
        .args(["--color", "always", "inspect", &name])
        .output()
        .unwrap();
    assert_eq!(error.status.code(), Some(2));
    let stderr = text(&error.stderr);
    assert!(
        stderr.contains(r"missing\x1b]0;pwned\x07\x0d\x1b[2Kfake"),
        "{stderr}"
    );
    assert!(
        !stderr.contains('\x07') && !stderr.contains('\r'),
        "{stderr:?}"
    );
    assert!(!stderr.contains("\x1b]0;"), "{stderr:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_progress_neutralises_repl_output_and_model_code() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "notes.txt", "hello\n");
    let server = FakeServer::start().await.unwrap();
    server.script(
        "root",
        [
            FakeReply::text(
                "```repl\nprint('\\x1b]0;pwned\\x07\\r\\x1b[2Kgone')\nx = 1 # \x1b[31mred\n",
            ),
            FakeReply::text("FINAL(done \x1b]0;t\x07)"),
        ],
    );
    let mut command = rlm_with_fake(dir.path(), &server);
    command.args([
        "--color",
        "always",
        "run",
        "--model",
        "openai:root",
        "--context-file",
        "notes.txt",
        "Go",
    ]);
    let output = run_async(command).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(r"\x1b]0;pwned\x07\x0d\x1b[2Kgone"),
        "{stderr}"
    );
    assert!(stderr.contains(r"\x1b[31mred"), "{stderr}");
    assert!(
        !stderr.contains("\x1b]0;") && !stderr.contains('\x07'),
        "{stderr:?}"
    );
    // The answer piped to a file stays byte-exact.
    assert_eq!(text(&output.stdout), "done \x1b]0;t\x07\n");
}

#[test]
fn json_is_json_lines_with_a_type_everywhere() {
    let store = Store::new();
    let list = store.json_lines(&["list"]);
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["type"], "buffer");
    assert_eq!(list[0]["name"], "hostile.txt");

    let show = store.json_lines(&["show", "hostile.txt", "--chunks", "--text"]);
    let types: Vec<&str> = show.iter().map(|v| v["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"buffer"));
    assert_eq!(types.last(), Some(&"text"));
    assert!(
        types[1..types.len() - 1].iter().all(|t| *t == "chunk"),
        "{types:?}"
    );

    for (args, kind) in [
        (&["status"][..], "status"),
        (&["peek", "hostile.txt", "--lines", "1:2"][..], "text"),
        (&["config", "paths"][..], "config_file"),
        (&["load", "hostile.txt"][..], "load"),
    ] {
        let lines = store.json_lines(args);
        assert!(!lines.is_empty(), "{args:?}");
        assert!(
            lines.iter().all(|v| v["type"] == kind),
            "{args:?}: {lines:?}"
        );
    }

    // An empty result is an empty stream and exit 0.
    let models = store
        .rlm()
        .args(["--json", "models", "list"])
        .output()
        .unwrap();
    assert_eq!(models.status.code(), Some(0));
    assert!(models.stdout.is_empty(), "{}", text(&models.stdout));

    // `chunk` counts the same characters in JSON as in text.
    write(store.dir.path(), "t.csv", "id,name\n1,alpha\n2,beta\n");
    let json = store.json_lines(&["chunk", "t.csv"]);
    let plain = text(
        &store
            .rlm()
            .args(["chunk", "t.csv"])
            .output()
            .unwrap()
            .stdout,
    );
    let chars = json[0]["chars"].as_u64().unwrap();
    assert!(
        plain.contains(&format!(" {chars} chars")),
        "json says {chars}: {plain}"
    );

    // No hits: an empty stream, and a note on stderr.
    let search = store
        .rlm()
        .args(["--json", "search", "zzzunmatched"])
        .output()
        .unwrap();
    assert_eq!(search.status.code(), Some(0));
    assert!(search.stdout.is_empty());
    assert!(
        text(&search.stderr).contains("no chunk matches"),
        "{}",
        text(&search.stderr)
    );
}
