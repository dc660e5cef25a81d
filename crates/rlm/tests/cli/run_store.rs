//! `rlm run --store`: the RLM loop over a store, with a scripted root model whose code calls
//! the store's host functions.

use std::path::Path;

use rlm_fake::{FakeReply, FakeServer};

use crate::support::{output, rlm_in, rlm_with_fake_store, rlm_with_store, scripted, text, write};

/// Loads two small files into `dir/store` (the store `RLM_STORE` names for every command).
fn load_store(dir: &Path) {
    write(
        dir,
        "app.log",
        "2024-01-01 INFO start\n2024-01-02 ERROR disk full on /var\n2024-01-03 INFO ok\n\
         2024-01-04 ERROR disk full on /home\n",
    );
    write(
        dir,
        "notes.md",
        "# Notes\n\nThe backup server is called falcon.\n",
    );
    let assert = rlm_with_store(dir)
        .args(["load", "--no-embed", "app.log", "notes.md"])
        .assert();
    assert.success();
}

async fn run_over_store(dir: &Path, server: &FakeServer, args: &[&str]) -> std::process::Output {
    let mut command = rlm_with_fake_store(dir, server);
    command
        .args(["run", "--log", "logs", "--model", "openai:root", "--store"])
        .args(args);
    output(command).await
}

fn trajectory(dir: &Path) -> Vec<serde_json::Value> {
    let mut logs: Vec<_> = std::fs::read_dir(dir.join("logs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    logs.sort();
    let log = std::fs::read_to_string(&logs[0]).unwrap();
    log.lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

const EXPLORE: &str = r#"```repl
names = sorted(b["name"] for b in buffers()["buffers"])
hits = search("backup falcon", k=3)
chunk = get_chunks([hits[0]["chunk_id"]])[0]
errors = grep("ERROR", buffer="app.log")
second = read("app.log", 2, 2)
try:
    read("missing.txt", 1, 1)
    caught = "nothing raised"
except LookupError as error:
    caught = str(error)
result = " | ".join([",".join(names), hits[0]["buffer"], str("falcon" in chunk["text"]), str(len(errors["matches"])), errors["matches"][1]["text"], second.strip(), caught])
FINAL_VAR("result")
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_reads_the_store_through_host_functions_and_every_call_is_logged() {
    let (dir, server) = scripted("root", [FakeReply::text(EXPLORE)]).await;
    load_store(dir.path());
    let output = run_over_store(dir.path(), &server, &["Where are backups kept?"]).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(
        text(&output.stdout),
        "app.log,notes.md | notes.md | True | 2 | 2024-01-04 ERROR disk full on /home | \
         2024-01-02 ERROR disk full on /var | no buffer named \"missing.txt\" in the store; \
         buffers() lists the stored buffers\n"
    );

    // The first prompt describes the store, not a context, and the system prompt the functions.
    let first = &server.requests_for("root")[0].body["messages"];
    let system = first[0]["content"].as_str().unwrap();
    assert!(
        system.contains("search(query, k=10, mode=\"bm25\")"),
        "{system}"
    );
    let user = first[1]["content"].as_str().unwrap();
    assert!(user.contains("a store of 2 buffers"), "{user}");
    assert!(user.contains("\n- app.log · "), "{user}");
    assert!(user.contains("\n- notes.md · markdown · "), "{user}");

    let lines = trajectory(dir.path());
    let calls = lines[1]["code_blocks"][0]["result"]["host_calls"]
        .as_array()
        .unwrap();
    let names: Vec<&str> = calls
        .iter()
        .map(|call| call["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["buffers", "search", "get_chunks", "grep", "read", "read"]
    );
    // buffers() answers one dict (its list, truncated and note), as grep does.
    assert_eq!(calls[0]["result_items"], 1);
    assert!(calls[0]["result_bytes"].as_u64().unwrap() > 0);
    let search: serde_json::Value =
        serde_json::from_str(calls[1]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(
        search,
        serde_json::json!({"query": "backup falcon", "k": 3, "mode": "bm25"})
    );
    assert!(calls[1]["execution_time"].as_f64().unwrap() >= 0.0);
    assert_eq!(calls[4]["error"], serde_json::Value::Null);
    assert_eq!(calls[5]["result_bytes"], 0);
    assert!(
        calls[5]["error"]
            .as_str()
            .unwrap()
            .starts_with("LookupError: no buffer named"),
        "{}",
        calls[5]
    );
    assert_eq!(lines.last().unwrap()["status"], "answered");
}

/// Store errors reach the code as Python exceptions and the run goes on: the next prompt
/// shows them and the model answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_errors_are_exceptions_the_model_sees_and_the_run_continues() {
    let (dir, server) = scripted(
        "root",
        [
            FakeReply::text("```repl\ngrep('(unclosed')\n"),
            FakeReply::text("```repl\nsearch('disk', mode='fuzzy')\n"),
            FakeReply::text("```repl\nprint(len(read('app.log', 1, 10**6)))\n"),
            FakeReply::text("FINAL(done)"),
        ],
    )
    .await;
    load_store(dir.path());
    let output = run_over_store(dir.path(), &server, &["Anything wrong?"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "done\n");
    let requests = server.requests_for("root");
    let after = |turn: usize| requests[turn].last_user_message().to_owned();
    assert!(
        after(1).contains("ValueError: invalid regular expression"),
        "{}",
        after(1)
    );
    assert!(
        after(2)
            .contains("ValueError: search(): mode must be \"bm25\", \"semantic\" or \"hybrid\""),
        "{}",
        after(2)
    );
    // An end past the last line is clamped, as `rlm peek --lines` does: all four lines.
    assert!(after(3).contains("\n112\n"), "{}", after(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_store_or_a_store_with_contexts_exits_2_with_a_hint() {
    let (dir, server) = scripted("root", [FakeReply::text("FINAL(never)")]).await;
    let output = run_over_store(dir.path(), &server, &["q"]).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no store at"), "{stderr}");
    assert!(
        stderr.contains("hint: load something first with `rlm load PATH`"),
        "{stderr}"
    );

    load_store(dir.path());
    let output = run_over_store(dir.path(), &server, &["--context-file", "app.log", "q"]).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--store cannot be combined with --context-file"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: load the files into the store"),
        "{stderr}"
    );
    assert!(server.requests_for("root").is_empty());
}

/// Answers are bounded and say so: `read` stops at 2,000 lines with where to continue,
/// `grep` at 500 matching lines with `truncated`, `search` refuses `k` over 100.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_answers_are_cut_and_say_where_to_continue() {
    let code = r#"```repl
text = read("big.txt", 1, 5000)
lines = text.splitlines()
found = grep("match")
try:
    search("match", k=101)
    refused = "no"
except ValueError as error:
    refused = str(error)
FINAL(str(len(lines)) + " | " + lines[1999] + " | " + lines[-1] + " | " + str(len(found["matches"])) + " " + str(found["truncated"]) + " | " + refused)
"#;
    let (dir, server) = scripted("root", [FakeReply::text(code)]).await;
    let big: String = (1..=2500).map(|n| format!("line {n} match\n")).collect();
    write(dir.path(), "big.txt", &big);
    rlm_with_store(dir.path())
        .args(["load", "--no-embed", "big.txt"])
        .assert()
        .success();
    let output = run_over_store(dir.path(), &server, &["How long?"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(
        text(&output.stdout),
        "2001 | line 2000 match | … [cut after line 2000: read returns at most 2000 lines and \
         200000 chars; continue with read(\"big.txt\", 2001, 2500)] | 500 True | search(): k \
         must be between 1 and 100, not 101\n"
    );
}

/// The run's logs (root and child runs), each parsed, by the `depth` of its first record.
fn logs_at_depth(dir: &Path, depth: u64) -> Vec<(std::path::PathBuf, Vec<serde_json::Value>)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir.join("logs")).unwrap() {
        let path = entry.unwrap().path();
        let lines: Vec<serde_json::Value> = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        if lines[0]["depth"] == depth {
            found.push((path, lines));
        }
    }
    found
}

/// `rlm view` shows each code block's store calls: name, arguments, result size, the error of
/// the one that failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_viewer_shows_the_store_calls_of_each_code_block() {
    let (dir, server) = scripted("root", [FakeReply::text(EXPLORE)]).await;
    load_store(dir.path());
    let output = run_over_store(dir.path(), &server, &["Where are backups kept?"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let (log, _) = logs_at_depth(dir.path(), 0).remove(0);
    let output = rlm_in(dir.path())
        .arg("view")
        .arg(&log)
        .args(["-o", "page.html"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let html = std::fs::read_to_string(dir.path().join("page.html")).unwrap();
    assert!(
        html.contains(
            "<summary>6 host calls: buffers, search, get_chunks, grep, read ×2, 1 failed</summary>"
        ),
        "{html}"
    );
    let head = |name: &str| {
        let call = html
            .split(&format!("<code>{name}("))
            .nth(1)
            .unwrap_or_else(|| panic!("no {name} call in the page"));
        call[..call.find("</div>").unwrap()].to_owned()
    };
    let buffers = head("buffers");
    assert!(
        buffers.starts_with("{&quot;offset&quot;:0})</code>"),
        "{buffers}"
    );
    let search = head("search");
    assert!(
        search.contains("&quot;query&quot;:&quot;backup falcon&quot;"),
        "{search}"
    );
    assert!(
        html.contains("<pre class=\"error\">LookupError: no buffer named &quot;missing.txt&quot;"),
        "{html}"
    );
    // The result previews are there to read (and for the filter box to find).
    assert!(
        html.contains("The backup server is called falcon."),
        "{html}"
    );
    assert!(html.contains("1 failed host call</span>"), "{html}");
}

/// `rlm_query` child runs of a run over a store get the store's functions, and their prompt
/// says what `context` holds for them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_runs_search_the_same_store() {
    let (dir, server) = scripted(
        "root",
        [FakeReply::text(
            "```repl\nr = rlm_query('Which file names the backup server?')\nFINAL_VAR(\"r\")\n",
        )],
    )
    .await;
    server.script(
        "sub",
        [FakeReply::text(
            "```repl\nhits = search('backup falcon', k=1)\nFINAL(hits[0]['buffer'] + ' of ' + str(len(buffers()['buffers'])))\n",
        )],
    );
    load_store(dir.path());
    let output = run_over_store(
        dir.path(),
        &server,
        &[
            "--max-depth",
            "2",
            "--subcall-model",
            "openai:sub",
            "Where are backups kept?",
        ],
    )
    .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "notes.md of 2\n");

    let child = &server.requests_for("sub")[0].body["messages"];
    let system = child[0]["content"].as_str().unwrap();
    assert!(system.contains("This is a child run"), "{system}");
    assert!(
        system.contains("search(query, k=10, mode=\"bm25\")"),
        "{system}"
    );
    let user = child[1]["content"].as_str().unwrap();
    assert!(user.contains("a store of 2 buffers"), "{user}");
    assert!(user.contains("delegated request"), "{user}");

    let (_, child_log) = logs_at_depth(dir.path(), 1).remove(0);
    let names: Vec<&str> = child_log[1]["code_blocks"][0]["result"]["host_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| call["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["search", "buffers"]);
}
