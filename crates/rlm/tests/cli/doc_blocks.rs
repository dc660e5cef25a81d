//! The offline shell blocks of docs/, run as written: each `rlm` command of the block, in
//! order, in a scratch directory holding the files the block names, must succeed (or fail as
//! the test says an illustrative line does, e.g. a chunk id the reader's store would have).
//! Every `rlm` command of every doc block also parses (`cli::tests` in the binary); these run.

use std::path::Path;

use crate::support::{rlm_store_process, text};

/// A shell command line of the docs: its words (single and double quotes group), and the file
/// a trailing `< FILE` feeds it.
#[derive(Debug, Clone)]
struct Line {
    text: String,
    words: Vec<String>,
    stdin: Option<String>,
}

fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match (quote, c) {
            (Some(open), c) if c == open => quote = None,
            (Some(_), c) => word.get_or_insert_default().push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_default();
            }
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (None, c) => word.get_or_insert_default().push(c),
        }
    }
    assert!(quote.is_none(), "unbalanced quote: {text}");
    words.extend(word);
    words
}

/// The `rlm` lines of the first shell block of docs/`file` whose first line contains `first`.
fn block(file: &str, first: &str) -> Vec<Line> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs")
        .join(file);
    let markdown = std::fs::read_to_string(&path).unwrap();
    let start = markdown.find(first);
    assert!(
        start.is_some(),
        "docs/{file} has no block starting with {first:?}"
    );
    let start = start.unwrap();
    let body = &markdown[start..];
    let body = body[..body.find("```").unwrap_or(body.len())].replace("\\\n", " ");
    body.lines()
        .map(|line| line.trim().trim_start_matches("$ "))
        .map(|line| {
            line.split_once(" #")
                .map_or(line, |(command, _)| command)
                .trim()
        })
        .filter(|line| line.starts_with("rlm "))
        .map(|line| {
            let (command, stdin) = match line.split_once(" < ") {
                Some((command, file)) => (command, Some(file.trim().to_owned())),
                None => (line, None),
            };
            Line {
                text: line.to_owned(),
                words: words(command),
                stdin,
            }
        })
        .collect()
}

/// Runs `lines` in `dir` over the store `dir/store`; a line whose text contains a key of
/// `failing` must fail with the message given, every other line must succeed.
fn run_block(dir: &Path, lines: &[Line], failing: &[(&str, &str)]) {
    assert!(!lines.is_empty());
    for line in lines {
        let mut command = rlm_store_process(dir);
        command.args(&line.words[1..]);
        match &line.stdin {
            Some(file) => command.stdin(std::fs::File::open(dir.join(file)).unwrap()),
            None => command.stdin(std::process::Stdio::null()),
        };
        let output = command.output().unwrap();
        let stderr = text(&output.stderr);
        match failing.iter().find(|(part, _)| line.text.contains(part)) {
            Some((_, message)) => {
                assert_ne!(output.status.code(), Some(0), "{}: {stderr}", line.text);
                assert!(stderr.contains(message), "{}: {stderr}", line.text);
            }
            None => assert_eq!(
                output.status.code(),
                Some(0),
                "`{}` failed:\n{stderr}",
                line.text
            ),
        }
    }
}

fn write(dir: &Path, name: &str, content: &str) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// docs/ctx.md's walk-through: init, ask, add a line range, a glob and a link, status, focus,
/// assemble.
#[test]
fn the_ctx_walk_through_runs_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let flow: String = (1..=200)
        .map(|i| format!("echo step {i}  # retry with backoff when deploy fails\n"))
        .collect();
    write(dir.path(), "src/flow.sh", &flow);
    write(
        dir.path(),
        "src/deploy.rs",
        "fn retry() { /* backoff */ }\n",
    );
    write(dir.path(), "src/util.rs", "fn unrelated() {}\n");
    write(
        dir.path(),
        "docs/ops.md",
        "# Ops\nRetry deploys with backoff.\n",
    );
    let lines = block("ctx.md", "$ rlm ctx init");
    assert!(lines.len() >= 8, "{lines:?}");
    run_block(dir.path(), &lines, &[]);
    let plan = std::fs::read_to_string(dir.path().join("ctx/build/ctxplan.json")).unwrap();
    assert!(plan.contains("flow"), "{plan}");
}

/// docs/store.md's tour of the store commands, over a small tree with the files it names.
/// The embedding lines run when scripts/test has fetched the static model's wheel.
#[test]
fn the_store_tour_runs_as_written() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "src/main.rs",
        "fn main() {\n    let config = read_config();\n}\n",
    );
    write(
        dir.path(),
        "src/cli.rs",
        "fn parse_args() {}\nfn print_args() { todo!() }\n",
    );
    write(
        dir.path(),
        "src/app.py",
        "import logging\nlog = logging.getLogger('config')\n",
    );
    write(dir.path(), "src/tests/test_app.py", "def test(): pass\n");
    write(
        dir.path(),
        "docs/guide.md",
        "# Guide\nRead the config file first.\n",
    );
    write(dir.path(), "notes.md", "# Notes\nconfig getLogger\n");
    write(dir.path(), "app.log", "12:00 INFO up\n12:01 ERROR down\n");
    let csv: String = std::iter::once("id,name\n".to_owned())
        .chain((0..500).map(|i| format!("{i},row {i}\n")))
        .collect();
    write(dir.path(), "big.csv", &csv);
    let lines = block("store.md", "rlm load src docs notes.md");
    let embeds = |line: &Line| line.text.starts_with("rlm embed") || line.text.contains("hybrid");
    let (with_model, without): (Vec<Line>, Vec<Line>) = lines.iter().cloned().partition(embeds);
    assert!(!with_model.is_empty() && without.len() >= 12, "{lines:?}");
    // The block's chunk id is an example; the reader's store has its own.
    let failing = [("--chunk 1234", "no chunk with id 1234")];
    let Some(wheel) = crate::embed_on_load::static_wheel() else {
        run_block(dir.path(), &without, &failing);
        return;
    };
    crate::support::rlm_with_store(dir.path())
        .args(["models", "import"])
        .arg(&wheel)
        .assert()
        .success();
    run_block(dir.path(), &lines, &failing);
}

/// docs/run.md's keyless run (a recording answers), then its block on reading runs back; the
/// block's run id is an example (the reader's runs have their own).
#[test]
fn the_replayed_run_and_reading_it_back_run_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    std::fs::create_dir(dir.path().join("examples")).unwrap();
    for name in ["needle.replay.jsonl", "needle-haystack.ndjson"] {
        std::fs::copy(examples.join(name), dir.path().join("examples").join(name)).unwrap();
    }
    let run = block("run.md", "$ rlm run --replay examples/needle.replay.jsonl");
    assert_eq!(run.len(), 1, "{run:?}");
    run_block(dir.path(), &run, &[]);
    let runs = block("run.md", "$ rlm runs list");
    assert_eq!(runs.len(), 3, "{runs:?}");
    run_block(dir.path(), &runs, &[("3f9c2a1b", "3f9c2a1b")]);
}
