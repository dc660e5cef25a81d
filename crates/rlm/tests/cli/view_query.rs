//! `rlm view` over the log of a real `rlm query` (fake provider), and `rlm view --open`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rlm_fake::{FakeReply, FakeServer, SeenRequest};

use crate::support::{KEY, output as run, rlm_in, rlm_with_fake, text, write};
use crate::view::{between, browser, half};

/// A store of three small files.
fn loaded_store() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "auth.rs",
        "fn refresh_token() -> Result<Token, AuthError> { Err(AuthError::Expired) }\n",
    );
    write(
        dir.path(),
        "server.log",
        "ERROR token refresh failed: AuthError::Expired for user 42\n",
    );
    write(dir.path(), "recipe.md", "# Pasta\nBoil for nine minutes.\n");
    rlm_in(dir.path())
        .args(["load", "auth.rs", "server.log", "recipe.md"])
        .assert()
        .success();
    dir
}

/// The planner asks for two searches, one chunk per batch; the extractor reports `auth.rs`
/// and never gives a valid reply for `server.log` (re-asked, then left without a report); the
/// report cites what it got, with hostile markup.
fn answer(seen: &SeenRequest) -> FakeReply {
    let message = seen.last_user_message();
    if seen.model == "sub" {
        if message.contains("server.log") {
            return FakeReply::text("I cannot answer in JSON <b>sorry</b>");
        }
        let entries: Vec<String> = message
            .match_indices("<chunk id=\"")
            .filter_map(|(at, tag)| {
                let rest = &message[at + tag.len()..];
                rest[..rest.find('"')?].parse::<i64>().ok()
            })
            .map(|id| format!(r#"{{"chunk_id": {id}, "relevance": "high", "findings": ["AuthError::Expired seen in chunk {id}"], "summary": "the refresh path", "follow_up": []}}"#))
            .collect();
        return FakeReply::text(format!(r#"{{"results": [{}]}}"#, entries.join(",")));
    }
    if message.contains("seen in chunk") {
        return FakeReply::text(
            "## Summary\nToken refresh fails with **AuthError::Expired**. <script>alert(1)</script>",
        );
    }
    FakeReply::text(
        r#"{"mode": "bm25", "queries": ["token refresh", "AuthError Expired"], "top_k": 10, "batch_size": 1, "buffers": ["auth.rs", "server.log"]}"#,
    )
}

/// Runs the query; returns the log it wrote.
async fn logged_query(dir: &Path) -> PathBuf {
    let server = FakeServer::start().await.unwrap();
    server.respond_with(answer);
    let mut command = rlm_with_fake(dir, &server);
    command.args([
        "query",
        "--model",
        "openai:root",
        "--subcall-model",
        "openai:sub",
        "--log",
        "logs",
        "How does token refresh fail?",
    ]);
    let output = run(command).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let logs: Vec<PathBuf> = std::fs::read_dir(dir.join("logs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    logs.into_iter().next().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_log_shows_its_plan_batches_findings_and_report() {
    let dir = loaded_store();
    let log = logged_query(dir.path()).await;
    let output = rlm_in(dir.path())
        .args(["view", "--last", "--log", "logs", "--json"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["kind"], "query");
    assert_eq!(json["complete"], true);
    let id = json["run_id"].as_str().unwrap().to_owned();
    assert!(log.to_string_lossy().ends_with(&format!("_{id}.jsonl")));
    assert_eq!(json["path"], format!("rlm-query-{id}.html"));
    let page = dir.path().join(format!("rlm-query-{id}.html"));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains(KEY));
    assert_eq!(html.matches("<script").count(), 1, "only the page's script");

    assert!(html.contains(&format!("rlm query <code>{id}</code>")));
    assert!(html.contains("<p id=\"status\" class=\"status ok\">answered</p>"));
    assert!(html.contains("How does token refresh fail?"));
    assert!(html.contains("<dt>extractor model</dt><dd>openai:sub</dd>"));
    let plan = between(&html, "<section id=\"plan\">", "</section>");
    assert!(plan.contains("the model"), "{plan}");
    assert!(plan.contains("<code>AuthError Expired</code>"), "{plan}");
    let search = between(&html, "<section id=\"search\">", "</section>");
    assert!(search.contains("2 chunks by bm25 search"), "{search}");
    assert!(
        search.contains("auth.rs:1-1") && search.contains("server.log:1-1"),
        "{search}"
    );
    let batches = between(&html, "<section id=\"batches\">", "</section>");
    assert!(batches.contains("2 batches"), "{batches}");
    assert!(batches.contains("re-asked 1×"), "{batches}");
    assert!(batches.contains("1 chunk without a report"), "{batches}");
    assert!(batches.contains("Chunks without a report"), "{batches}");
    let findings = between(&html, "<section id=\"findings\">", "</section>");
    assert!(findings.contains("high relevance"), "{findings}");
    assert!(findings.contains("<code>auth.rs:1-1</code>"), "{findings}");
    assert!(
        findings.contains("AuthError::Expired seen in chunk"),
        "{findings}"
    );
    let report = between(&html, "<section id=\"report\">", "</section>");
    assert!(
        report.contains("<strong>AuthError::Expired</strong>"),
        "{report}"
    );
    assert!(
        report.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{report}"
    );
    let usage = between(&html, "<section id=\"usage\">", "</section>");
    for stage in ["plan", "extract", "synthesize", "total"] {
        assert!(usage.contains(&format!("<td>{stage}</td>")), "{usage}");
    }
    // plan 1 + extract (auth.rs once, server.log asked twice) 3 + report 1.
    assert!(
        usage.contains("<tr class=\"total\"><td>total</td><td>5</td>"),
        "{usage}"
    );
    assert!(html.contains("I cannot answer in JSON &lt;b&gt;sorry&lt;/b&gt;"));

    let Some(browser) = browser() else { return };
    let (dom, requests) = browser.render(&page, "#search=server.log");
    assert_eq!(requests, Vec::<String>::new(), "the page made requests");
    let counter = between(&dom, "<span id=\"match-count\">", "</span>");
    assert!(counter.contains(" of 5 calls match"), "{counter}");
    assert!(!counter.contains("5 of 5"), "{counter}");
    let report = between(&dom, "<section id=\"report\">", "</section>");
    assert!(
        report.contains("<strong>AuthError::Expired</strong>"),
        "{report}"
    );
    assert_eq!(
        dom.matches("<script").count(),
        1,
        "injected script elements"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_still_writing_its_log_renders_and_says_so() {
    let dir = loaded_store();
    let log = logged_query(dir.path()).await;
    let whole = std::fs::read_to_string(&log).unwrap();
    // Everything but the result line, and half of it.
    let last = whole.trim_end().rfind('\n').unwrap() + 1;
    let cut = format!("{}{}", &whole[..last], half(&whole[last..]));
    write(dir.path(), "going.jsonl", &cut);
    let output = rlm_in(dir.path())
        .args(["view", "going.jsonl"])
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("the query is still going"), "{stderr}");
    assert!(stderr.contains("is cut short and left out"), "{stderr}");
    let html = std::fs::read_to_string(dir.path().join("going.html")).unwrap();
    assert!(html.contains("<p id=\"status\" class=\"status running\">no result yet</p>"));
    assert!(
        html.contains("Shown: the 5 model calls logged so far."),
        "{html}"
    );
    assert!(html.contains("No report yet."));

    // The same cut after a whole log is a damaged file.
    write(
        dir.path(),
        "damaged.jsonl",
        &format!("{whole}{{\"type\":\"query_"),
    );
    let output = rlm_in(dir.path())
        .args(["view", "damaged.jsonl"])
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is truncated"), "{stderr}");
    assert!(stderr.contains("hint:"), "{stderr}");
    assert!(!dir.path().join("damaged.html").exists());
}

/// `--open` starts `$BROWSER` with the page and does not wait for it; with no browser at all
/// it says how to fix that (the page is written either way).
#[test]
fn open_starts_the_browser_without_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let log = write(
        dir.path(),
        "run.jsonl",
        concat!(
            r#"{"type":"metadata","version":2,"run_id":"a1b2c3d4","parent_run_id":null,"depth":0,"#,
            r#""root_model":"m","subcall_model":"m","max_depth":1,"max_iterations":5,"backend":"rlm","#,
            r#""backend_kwargs":{"model_name":"m"},"environment_type":"monty","other_backends":[],"#,
            r#""query":"q","contexts":{"count":0,"parts":[]},"budget":{"max_tokens":null,"#,
            r#""max_cost_usd":null,"timeout_seconds":null,"max_subcalls":null,"max_consecutive_errors":3}}"#,
            "\n"
        ),
    );
    let recorded = dir.path().join("opened.txt");
    // Records its argument, then stays open as a browser would.
    let script = write(
        dir.path(),
        "browser.sh",
        &format!(
            "#!/bin/sh\nprintf '%s' \"$1\" > '{}.tmp' && mv '{0}.tmp' '{0}'\nsleep 5\n",
            recorded.display()
        ),
    );
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let started = Instant::now();
    let output = rlm_in(dir.path())
        .args(["view", "run.jsonl", "--open"])
        .env("BROWSER", format!("/no/such/browser:{}", script.display()))
        .output()
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "rlm waited for the browser"
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let page = log.with_extension("html");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !recorded.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let opened = std::fs::read_to_string(&recorded).expect("the browser was not started");
    assert_eq!(
        Path::new(&opened).canonicalize().unwrap(),
        page.canonicalize().unwrap()
    );

    // Neither $BROWSER nor xdg-open: an error with a hint; the page is still written.
    std::fs::remove_file(&page).unwrap();
    let empty = tempfile::tempdir().unwrap();
    let output = rlm_in(dir.path())
        .args(["view", "run.jsonl", "--open"])
        .env_remove("BROWSER")
        .env("PATH", empty.path())
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no browser could be started"), "{stderr}");
    assert!(stderr.contains("`xdg-open`"), "{stderr}");
    assert!(stderr.contains("hint: set BROWSER"), "{stderr}");
    assert!(page.is_file());
}
