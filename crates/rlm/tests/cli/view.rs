//! `rlm view` through the real binary, over logs written by a real `rlm run` (fake provider),
//! and the page rendered in a real headless browser (Debian's chromium).
//!
//! The browser tests skip with a notice when chromium is missing, unless
//! `RLM_REQUIRE_BROWSER=1` (set by CI), where a missing browser fails.

#![expect(clippy::panic, reason = "a test fails by panicking")]

use std::path::{Path, PathBuf};
use std::process::Command as Process;

use rlm_fake::{FakeReply, FakeServer};

use crate::support::{KEY, output as run, rlm_in, rlm_with_fake, text, write};

/// A real run over the fake provider: turn 1 starts a child run (two turns of its own) and
/// prints hostile markup; turn 2 answers. Returns the log directory.
async fn logged_run(dir: &Path) -> PathBuf {
    let server = FakeServer::start().await.unwrap();
    server.script(
        "root",
        [
            FakeReply::text(
                "Plan: <script>alert('reply')</script> delegate (https://example.invalid/doc).\n```repl\n# marker-alpha\n\
                 r = rlm_query('Count the rows </script><script>alert(1)</script>')\n\
                 print('</script><script>alert(2)</script>')\nprint(r)\n",
            ),
            FakeReply::text("FINAL_VAR(r)"),
        ],
    );
    server.script(
        "sub",
        [
            FakeReply::text("```repl\nn = 'seven'\nprint('child-output-marker')\n"),
            FakeReply::text("FINAL_VAR(n)"),
        ],
    );
    let mut command = rlm_with_fake(dir, &server);
    command.args([
        "run",
        "--model",
        "openai:root",
        "--subcall-model",
        "openai:sub",
        "--max-depth",
        "2",
        "--log",
        "logs",
        "--context",
        "a\nb\nc",
        "How many rows?",
    ]);
    let output = run(command).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "seven\n");
    dir.join("logs")
}

fn root_log(logs: &Path) -> PathBuf {
    std::fs::read_dir(logs)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            name.ends_with(".jsonl") && !name.trim_end_matches(".jsonl").contains('.')
        })
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_run_renders_in_a_browser_with_its_child_and_no_network() {
    let dir = tempfile::tempdir().unwrap();
    let logs = logged_run(dir.path()).await;
    let output = rlm_in(dir.path())
        .args(["view", "--last", "--log", "logs"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let printed = text(&output.stdout);
    let page = dir.path().join(printed.trim());
    assert!(
        printed.starts_with("rlm-") && printed.trim().ends_with(".html"),
        "{printed}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains(KEY));
    assert_eq!(html.matches("<script").count(), 1, "only the page's script");
    assert_no_outside_references(&html);
    assert!(
        logs.read_dir().unwrap().count() >= 2,
        "the child wrote its own log"
    );

    let Some(browser) = browser() else { return };
    let (dom, requests) = browser.render(&page, "");
    // What a person sees: the answer, the turn count, the child run, hostile text as text.
    let answer = between(&dom, "<section id=\"answer\">", "</section>");
    assert!(answer.contains("<pre>seven</pre>"), "{answer}");
    assert!(
        dom.contains("id=\"match-count\">2 turns</span>"),
        "script ran: {dom}"
    );
    let child = between(&dom, "<details class=\"child\">", "</main>");
    assert!(child.contains("— 2 turns, answered"), "{child}");
    assert!(child.contains("child-output-marker"), "{child}");
    assert_eq!(
        dom.matches("<script").count(),
        1,
        "injected script elements"
    );
    assert!(dom.contains("&lt;script&gt;alert('reply')&lt;/script&gt;"));
    assert!(dom.contains("&lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;"));
    assert!(dom.contains("data-load-ms=\""), "the load handler ran");
    assert_eq!(
        requests,
        Vec::<String>::new(),
        "the page made network requests"
    );

    // The search box filters turns; `#search=` fills it from the address.
    let (dom, _) = browser.render(&page, "#search=marker-alpha");
    let counter = between(&dom, "<span id=\"match-count\">", "</span>");
    assert!(counter.contains("1 of 2 turns match"), "{counter}");
    assert_eq!(dom.matches("<section class=\"turn\" id=\"t").count(), 2);
    assert!(
        dom.contains("<section class=\"turn\" id=\"t2\" hidden=\"\">"),
        "{dom}"
    );
}

/// The request check itself can fail: a page that loads an image is caught.
#[test]
fn the_browser_check_sees_a_page_that_fetches() {
    let Some(browser) = browser() else { return };
    let dir = tempfile::tempdir().unwrap();
    let page = write(
        dir.path(),
        "fetching.html",
        "<!DOCTYPE html><html><body><img src=\"http://127.0.0.1:9/probe.png\"></body></html>",
    );
    let (_, requests) = browser.render(&page, "");
    assert!(
        requests
            .iter()
            .any(|url| url.contains("127.0.0.1:9/probe.png")),
        "{requests:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_ids_logs_and_json_output() {
    let dir = tempfile::tempdir().unwrap();
    let logs = logged_run(dir.path()).await;
    let log = root_log(&logs);
    let id = log
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .rsplit('_')
        .next()
        .unwrap()
        .to_owned();
    // By run id, with --json; the default page is ./rlm-ID.html.
    let output = rlm_in(dir.path())
        .args(["view", &id, "--log", "logs", "--json"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["type"], "view");
    assert_eq!(json["run_id"], id.as_str());
    assert_eq!(json["turns"], 2);
    assert_eq!(json["turns_with_children"], 4);
    assert_eq!(json["complete"], true);
    assert_eq!(json["path"], format!("rlm-{id}.html"));
    assert!(dir.path().join(format!("rlm-{id}.html")).is_file());
    // A child's id finds the child's log.
    let output = rlm_in(dir.path())
        .args([
            "view",
            &format!("{id}.1"),
            "--log",
            "logs",
            "-o",
            "child.html",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let child = std::fs::read_to_string(dir.path().join("child.html")).unwrap();
    assert!(child.contains(&format!("rlm run <code>{id}.1</code>")));
    // A log file: the page goes beside it.
    let output = rlm_in(dir.path()).arg("view").arg(&log).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(log.with_extension("html").is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_logs_exit_2_and_a_run_in_progress_renders() {
    let dir = tempfile::tempdir().unwrap();
    let logs = logged_run(dir.path()).await;
    let whole = std::fs::read_to_string(root_log(&logs)).unwrap();
    let lines: Vec<&str> = whole.lines().collect();
    let cases = [
        (
            "notes.txt",
            "just some notes\n".to_owned(),
            "is not an rlm trajectory log",
        ),
        // Cut after the run's result line: damaged, not a run still writing.
        (
            "cut.jsonl",
            format!("{whole}{{\"type\":\"iter"),
            "is truncated",
        ),
        (
            "newer.jsonl",
            whole.replace(
                &format!("\"version\":{},", rlm_trace::VERSION),
                "\"version\":7,",
            ),
            "format version 7",
        ),
    ];
    for (name, content, expected) in cases {
        write(dir.path(), name, &content);
        let output = rlm_in(dir.path()).args(["view", name]).output().unwrap();
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{name}: {stderr}");
        assert!(stderr.contains(expected), "{name}: {stderr}");
        assert!(stderr.contains("hint:"), "{name}: {stderr}");
        assert!(!dir.path().join(name).with_extension("html").exists());
    }
    for args in [
        &["view", "deadbeef", "--log", "logs"][..],
        &["view", "--last", "--log", "none"],
    ] {
        let output = rlm_in(dir.path()).args(args).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    }

    // Metadata and the first turn only: what a run still going has written.
    write(
        dir.path(),
        "going.jsonl",
        &format!("{}\n{}\n", lines[0], lines[1]),
    );
    let output = rlm_in(dir.path())
        .args(["view", "going.jsonl"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains("has no result line"));
    let html = std::fs::read_to_string(dir.path().join("going.html")).unwrap();
    assert!(html.contains("id=\"incomplete\""));
    assert!(html.contains("Shown: the 1 turns logged so far"));

    // The same with the writer halfway through the second turn's line.
    write(
        dir.path(),
        "writing.jsonl",
        &format!("{}\n{}\n{}", lines[0], lines[1], half(lines[2])),
    );
    let output = rlm_in(dir.path())
        .args(["view", "writing.jsonl"])
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("its last line (3) is cut short and left out"),
        "{stderr}"
    );
    let html = std::fs::read_to_string(dir.path().join("writing.html")).unwrap();
    assert!(html.contains("Shown: the 1 turns logged so far. Line 3, the last, is cut short"));
}

/// Nothing in the page's own markup, style or script refers outside the page: no `src`, no
/// link but to `#fragments`, no URL, `url()`, `fetch` or `import` in the style or script. Text
/// from the log is escaped, so its `<` never starts a tag and a URL in it is only text.
fn assert_no_outside_references(html: &str) {
    for tag in html
        .split('<')
        .skip(1)
        .map(|rest| rest.split('>').next().unwrap())
    {
        let tag = tag.to_lowercase();
        assert!(!tag.contains(" src="), "<{tag}>");
        assert!(!tag.contains("://"), "<{tag}>");
        for (at, _) in tag.match_indices("href=\"") {
            assert_eq!(&tag[at + 6..at + 7], "#", "<{tag}>");
        }
    }
    for (open, close) in [("<style>", "</style>"), ("<script", "</script>")] {
        let start = html.find(open).unwrap();
        let body = html[start..][..html[start..].find(close).unwrap()].to_lowercase();
        for needle in [
            "http",
            "://",
            "url(",
            "fetch(",
            "import",
            "xmlhttprequest",
            "@font",
        ] {
            assert!(!body.contains(needle), "{open} contains {needle}");
        }
    }
}

/// The first half of a line (whole chars).
pub(crate) fn half(line: &str) -> &str {
    let (cut, _) = line.char_indices().nth(line.chars().count() / 2).unwrap();
    &line[..cut]
}

pub(crate) fn between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let from = text
        .find(start)
        .unwrap_or_else(|| panic!("{start} not in the page"));
    let rest = &text[from..];
    &rest[..rest.find(end).map_or(rest.len(), |n| n + end.len())]
}

pub(crate) struct Browser {
    path: PathBuf,
}

/// Debian's chromium, or `None` with a notice; with `RLM_REQUIRE_BROWSER=1`, a missing browser
/// fails the test instead.
pub(crate) fn browser() -> Option<Browser> {
    let path = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|path| path.is_file());
    match path {
        Some(path) => Some(Browser { path }),
        None if std::env::var("RLM_REQUIRE_BROWSER").as_deref() == Ok("1") => {
            panic!("RLM_REQUIRE_BROWSER=1 but chromium is not installed (apt-get install chromium)")
        }
        None => {
            eprintln!(
                "notice: chromium not found; skipping the browser check (apt-get install chromium)"
            );
            None
        }
    }
}

impl Browser {
    /// Loads `page` headless and returns the DOM after its scripts ran, and the URLs of every
    /// network request the page made (from chromium's net log; the browser's own background
    /// requests are told apart by their isolation key, which is the page's `file://` origin
    /// for the page's requests).
    pub(crate) fn render(&self, page: &Path, fragment: &str) -> (String, Vec<String>) {
        let scratch = tempfile::tempdir().unwrap();
        let net_log = scratch.path().join("net.json");
        let output = Process::new("timeout")
            .arg("120")
            .arg(&self.path)
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
            .arg(format!(
                "--user-data-dir={}",
                scratch.path().join("profile").display()
            ))
            .arg(format!("--log-net-log={}", net_log.display()))
            .arg("--dump-dom")
            .arg(format!(
                "file://{}{fragment}",
                page.canonicalize().unwrap().display()
            ))
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "chromium failed: {}",
            text(&output.stderr)
        );
        let log: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&net_log).unwrap()).unwrap();
        let start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"].clone();
        let requests = log["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|event| event["type"] == start_job)
            .filter(|event| {
                let key = event["params"]["network_isolation_key"]
                    .as_str()
                    .unwrap_or("");
                let initiator = event["params"]["initiator"].as_str().unwrap_or("");
                key.contains("file://") || initiator.starts_with("file:")
            })
            .filter_map(|event| event["params"]["url"].as_str())
            .filter(|url| !url.starts_with("file:") && !url.starts_with("data:"))
            .map(str::to_owned)
            .collect();
        (text(&output.stdout), requests)
    }
}

/// A log is input: its `run_id` never becomes a path (`x/../../../PWNED` would write outside
/// the working directory), an error in one of its lines names the file, and bidi controls
/// from it are shown, not obeyed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_cannot_choose_where_its_page_goes_and_errors_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let logs = logged_run(dir.path()).await;
    let log = root_log(&logs);
    let whole = std::fs::read_to_string(&log).unwrap();
    let id =
        serde_json::from_str::<serde_json::Value>(whole.lines().next().unwrap()).unwrap()["run_id"]
            .as_str()
            .unwrap()
            .to_owned();
    let hostile = whole
        .replace(&format!("\"{id}\""), "\"x/../../../PWNED\"")
        .replace("seven", "seven\u{202E}txt.exe");
    std::fs::write(&log, hostile).unwrap();
    let work = dir.path().join("deep/er");
    // With `rlm-x/` present, `rlm-x/../../../PWNED.html` would resolve to the temp dir.
    std::fs::create_dir_all(work.join("rlm-x")).unwrap();
    let output = rlm_in(&work)
        .args(["view", "--last", "--log"])
        .arg(&logs)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stem = log.file_stem().unwrap().to_string_lossy().into_owned();
    let page = work.join(format!("rlm-{stem}.html"));
    assert_eq!(text(&output.stdout).trim(), format!("rlm-{stem}.html"));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains('\u{202E}'), "the override is shown as text");
    assert!(html.contains("seven\\u{202e}txt.exe"));
    let escaped: Vec<PathBuf> = walk(dir.path())
        .into_iter()
        .filter(|path| path.to_string_lossy().contains("PWNED"))
        .collect();
    assert!(escaped.is_empty(), "{escaped:?}");

    // A malformed line: the error names the file as well as the line.
    write(
        dir.path(),
        "broken.jsonl",
        &format!("{}\nnot json\n", whole.lines().next().unwrap()),
    );
    let output = rlm_in(dir.path())
        .args(["view", "broken.jsonl"])
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("broken.jsonl"), "{stderr}");
    assert!(stderr.contains("line 2"), "{stderr}");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        }
        found.push(path);
    }
    found
}
