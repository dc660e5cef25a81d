//! `rlm run --session`, `rlm sessions` and `rlm runs` through the real binary, with a scripted
//! fake root model: variables and conversations carry over, bad names exit 2, a changed
//! context is named, and past runs can be listed and inspected.

use std::path::Path;

use rlm_fake::{FakeReply, FakeServer};

use crate::support::{json_lines, output as run, rlm_in, rlm_with_fake, scripted, text};

/// `rlm [--json] run --model openai:root --session NAME ARGS QUESTION` against `server`.
async fn ask(
    dir: &Path,
    server: &FakeServer,
    session: &str,
    args: &[&str],
    question: &str,
) -> std::process::Output {
    let mut command = rlm_with_fake(dir, server);
    command
        .args(["run", "--model", "openai:root", "--session", session])
        .args(args)
        .arg(question);
    run(command).await
}

/// `rlm ARGS` with no provider, to its end: (exit code, stdout, stderr).
async fn rlm(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let mut command = rlm_in(dir);
    command.args(args);
    let output = run(command).await;
    (
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr),
    )
}

/// The text of every message of a root request, as sent.
fn request_text(server: &FakeServer, index: usize) -> String {
    server.requests_for("root")[index].body["messages"].to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_question_reads_the_first_ones_variables_and_conversation() {
    let (dir, server) = scripted(
        "root",
        [
            FakeReply::text(
                "```repl\nx = 41\nitems = [1, 'two', (3, None), {'k': True}]\ndef twice(n):\n    return 2 * n\nprint(context[:5])\n",
            ),
            FakeReply::text("FINAL_VAR(x)"),
            FakeReply::text(
                "```repl\ny = x + 1\nprint(history_0[0]['role'], len(history_0), items[2][0])\nprint(context[:5])\n",
            ),
            FakeReply::text("FINAL_VAR(y)"),
        ],
    )
    .await;
    std::fs::write(dir.path().join("data.txt"), "alpha beta\n").unwrap();
    let first = ask(
        dir.path(),
        &server,
        "work",
        &["--context-file", "data.txt"],
        "Set x",
    )
    .await;
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    assert_eq!(text(&first.stdout), "41\n");

    // After question 1: plain data is restorable, a function is not; what every run binds
    // itself is not listed.
    let (code, stdout, stderr) = rlm(dir.path(), &["--json", "sessions", "show", "work"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    let records = json_lines(&stdout);
    assert_eq!(records[0]["type"], "session");
    assert_eq!(records[0]["questions"].as_array().unwrap().len(), 1);
    assert_eq!(records[0]["contexts"][0]["state"], "unchanged");
    let variable = |records: &[serde_json::Value], name: &str| {
        records
            .iter()
            .find(|record| record["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {records:?}"))
            .clone()
    };
    assert_eq!(variable(&records, "x")["restorable"], true);
    assert_eq!(variable(&records, "items")["length"], 4);
    let twice = variable(&records, "twice");
    assert_eq!(twice["restorable"], false);
    assert!(
        twice["not_restorable"]
            .as_str()
            .unwrap()
            .contains("not plain data"),
        "{twice}"
    );
    assert!(
        records.iter().all(|record| record["name"] != "context"
            && record["name"] != "contextMeta"
            && record["name"] != "answer"),
        "{stdout}"
    );

    // No context given: the session's are used.
    let second = ask(dir.path(), &server, "work", &[], "What is x + 1?").await;
    let stderr = text(&second.stderr);
    assert_eq!(second.status.code(), Some(0), "{stderr}");
    assert_eq!(text(&second.stdout), "42\n");
    assert!(stderr.contains("session work: question 2"), "{stderr}");
    // The first message of question 2 says what is there, and what is not.
    let opening = request_text(&server, 2);
    assert!(opening.contains("continues a session"), "{opening}");
    assert!(opening.contains("`x` (int)"), "{opening}");
    assert!(opening.contains("`items` (list)"), "{opening}");
    assert!(opening.contains("Not restored"), "{opening}");
    assert!(opening.contains("`twice` (function"), "{opening}");
    assert!(opening.contains("`history_0`"), "{opening}");
    // history_0 is question 1's conversation: its first user message, the reply, the
    // feedback and the answering reply; the context is bound as before.
    let feedback = request_text(&server, 3);
    assert!(feedback.contains("user 4 3"), "{feedback}");
    assert!(feedback.contains("alpha"), "{feedback}");

    let (code, stdout, stderr) = rlm(dir.path(), &["--json", "sessions", "show", "work"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    let records = json_lines(&stdout);
    assert_eq!(records[0]["questions"].as_array().unwrap().len(), 2);
    assert_eq!(variable(&records, "y")["preview"], "42");
    assert!(
        records.iter().all(|record| record["name"] != "history_0"),
        "{stdout}"
    );

    let (code, stdout, _) = rlm(dir.path(), &["sessions", "list"]).await;
    assert_eq!(code, Some(0));
    assert!(stdout.starts_with("work  2 questions"), "{stdout}");
    let (code, _, stderr) = rlm(dir.path(), &["sessions", "rm", "work"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    let (code, stdout, _) = rlm(dir.path(), &["--json", "sessions", "list"]).await;
    assert_eq!((code, stdout.as_str()), (Some(0), ""));
    let (code, _, stderr) = rlm(dir.path(), &["sessions", "show", "work"]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("no session `work`"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_names_that_are_paths_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a/b", "..", "../up", "x..y"] {
        let (code, _, stderr) = rlm(
            dir.path(),
            &[
                "run",
                "--model",
                "openai:root",
                "--session",
                name,
                "--context",
                "t",
                "q",
            ],
        )
        .await;
        assert_eq!(code, Some(2), "{name}: {stderr}");
        assert!(stderr.contains("is not a session name"), "{stderr}");
        for action in ["show", "rm"] {
            let (code, _, stderr) = rlm(dir.path(), &["sessions", action, name]).await;
            assert_eq!(code, Some(2), "{action} {name}: {stderr}");
        }
    }
    // Nothing was created outside the sessions directory.
    assert!(!dir.path().join("state/rlm/up").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_changed_on_disk_is_named_and_a_missing_one_refused() {
    let (dir, server) = scripted(
        "root",
        [
            FakeReply::text("FINAL(one)"),
            FakeReply::text("```repl\nprint(context)\n"),
            FakeReply::text("FINAL(two)"),
        ],
    )
    .await;
    let data = dir.path().join("data.txt");
    std::fs::write(&data, "first version\n").unwrap();
    let first = ask(
        dir.path(),
        &server,
        "s",
        &["--context-file", "data.txt"],
        "q1",
    )
    .await;
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    std::fs::write(&data, "second, longer version\n").unwrap();
    let second = ask(dir.path(), &server, "s", &["--quiet"], "q2").await;
    let stderr = text(&second.stderr);
    assert_eq!(second.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("warning: context"), "{stderr}");
    assert!(stderr.contains("data.txt changed on disk"), "{stderr}");
    // The run read the file as it is now.
    assert!(request_text(&server, 2).contains("second, longer version"));

    std::fs::remove_file(&data).unwrap();
    let third = ask(dir.path(), &server, "s", &[], "q3").await;
    let stderr = text(&third.stderr);
    assert_eq!(third.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("data.txt of session `s` is gone"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_are_listed_and_shown_turn_by_turn_with_their_variables() {
    let (dir, server) = scripted(
        "root",
        [
            FakeReply::text("```repl\nx = 41\nwords = context.split()\nprint(len(words))\n"),
            FakeReply::text("FINAL_VAR(x)"),
        ],
    )
    .await;
    let mut command = rlm_with_fake(dir.path(), &server);
    command.args([
        "--json",
        "run",
        "--model",
        "openai:root",
        "--context",
        "a b c",
        "Count the words",
    ]);
    let output = run(command).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let result = &json_lines(&text(&output.stdout))[0];
    let run_id = result["run_id"].as_str().unwrap().to_owned();

    let (code, stdout, stderr) = rlm(dir.path(), &["--json", "runs", "list"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    let runs = json_lines(&stdout);
    assert_eq!(runs.len(), 1, "{stdout}");
    assert_eq!(runs[0]["run_id"], run_id.as_str());
    assert_eq!(runs[0]["status"], "answered");
    assert_eq!(runs[0]["turns"], 2);
    assert_eq!(runs[0]["question"], "Count the words");
    assert_eq!(runs[0]["unpriced_calls"], 2);
    let (code, stdout, stderr) = rlm(dir.path(), &["runs", "list"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains(" unknown "), "{stdout}");

    let (code, stdout, stderr) = rlm(
        dir.path(),
        &["--json", "runs", "show", &run_id, "--turn", "1", "--vars"],
    )
    .await;
    assert_eq!(code, Some(0), "{stderr}");
    let records = json_lines(&stdout);
    assert_eq!(records[0]["type"], "run");
    assert_eq!(records[0]["contexts"][0]["chars"], 5);
    let turns: Vec<_> = records.iter().filter(|r| r["type"] == "turn").collect();
    assert_eq!(turns.len(), 1, "{stdout}");
    assert_eq!(turns[0]["turn"], 1);
    let block = &turns[0]["code_blocks"][0];
    assert!(
        block["code"].as_str().unwrap().contains("x = 41"),
        "{stdout}"
    );
    assert_eq!(block["result"]["stdout"], "3\n");
    assert_eq!(turns[0]["usage"]["calls"], 1);
    let variables: Vec<_> = records.iter().filter(|r| r["type"] == "variable").collect();
    let names: Vec<&str> = variables
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["words", "x"], "{stdout}");
    assert_eq!(variables[0]["python_type"], "list");
    assert_eq!(variables[0]["length"], 3);
    assert_eq!(variables[1]["preview"], "41");

    // The text form, one turn, by `last`.
    let (code, stdout, stderr) = rlm(
        dir.path(),
        &["runs", "show", "last", "--turn", "2", "--vars"],
    )
    .await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("result: answered · 2 turns"), "{stdout}");
    // The fake model has no price: its cost is unknown, not $0.
    assert!(stdout.contains(" · cost unknown · "), "{stdout}");
    assert!(!stdout.contains("$0.0000"), "{stdout}");
    assert!(stdout.contains("── turn 2"), "{stdout}");
    assert!(!stdout.contains("── turn 1"), "{stdout}");
    assert!(stdout.contains("x · int · 2 B · 41"), "{stdout}");
    let (code, _, stderr) = rlm(dir.path(), &["runs", "show", &run_id, "--turn", "9"]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("has no turn 9"), "{stderr}");
    // An unknown id's hint names the word `runs show` takes for the newest run, not a flag.
    let (code, _, stderr) = rlm(dir.path(), &["runs", "show", "0000dead"]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("`rlm runs show last`"), "{stderr}");
    assert!(!stderr.contains("--last"), "{stderr}");
}
