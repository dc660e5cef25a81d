#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use super::*;
use crate::schema::*;
use crate::{Error, TrajectoryWriter};
use rlm_types::{Message, ModelTotals, Role, Usage, UsageReport};

const XSS: &str = "<script>alert('x')</script></script><img src=x onerror=alert(1)>";

pub(super) fn metadata(run_id: &str, depth: u32, query: &str) -> RunMetadata {
    RunMetadata {
        run_id: run_id.to_owned(),
        parent_run_id: None,
        depth,
        root_model: "openai:root".to_owned(),
        subcall_model: "openai:sub".to_owned(),
        max_depth: 2,
        max_iterations: 30,
        backend: "rlm".to_owned(),
        backend_kwargs: BackendArguments {
            model_name: "openai:root".to_owned(),
        },
        environment_type: "monty".to_owned(),
        environment_kwargs: Default::default(),
        other_backends: vec![],
        query: query.to_owned(),
        contexts: Contexts {
            count: 0,
            parts: vec![],
        },
        budget: Budget {
            max_tokens: Some(50_000),
            max_cost_usd: None,
            max_calls: None,
            timeout_seconds: None,
            max_subcalls: None,
            max_consecutive_errors: 3,
        },
    }
}

fn message(role: Role, content: &str) -> Message {
    Message::new(role, content)
}

fn turn(n: u32, prompt: Vec<Message>, response: &str, blocks: Vec<CodeBlock>) -> Iteration {
    Iteration {
        iteration: n,
        run_id: "r".to_owned(),
        prompt,
        response: response.to_owned(),
        code_blocks: blocks,
        final_answer: None,
        seconds: 0.5,
        usage: ModelTotals {
            calls: 1,
            usage: Usage {
                input_tokens: 1000,
                output_tokens: 50,
                ..Usage::default()
            },
            ..ModelTotals::default()
        },
        notes: vec![],
    }
}

fn block(code: &str, stdout: &str, subcalls: Vec<Subcall>) -> CodeBlock {
    CodeBlock {
        code: code.to_owned(),
        result: CodeResult {
            stdout: stdout.to_owned(),
            stderr: String::new(),
            error: None,
            final_answer: None,
            seconds: 0.1,
            subcalls,
            host_calls: Vec::new(),
        },
    }
}

fn outcome(run_id: &str, status: Status, answer: Option<&str>, turns: u32) -> RunOutcome {
    RunOutcome {
        run_id: run_id.to_owned(),
        status,
        answer: answer.map(str::to_owned),
        partial_answer: None,
        iterations: turns,
        usage: UsageReport::default(),
        subcalls: 1,
        usage_summary: UsageSummary::default(),
        seconds: 2.0,
        error: None,
    }
}

/// A root run of two turns whose first turn starts a child run (its log named by a path that
/// does not exist as written, as when the logs were moved), with hostile text everywhere.
pub(super) fn run_with_child(dir: &Path) -> PathBuf {
    let child = TrajectoryWriter::create(dir, "rlm_x_abc.1").unwrap();
    child.write(&metadata("abc.1", 1, XSS)).unwrap();
    let mut child_turn = turn(
        1,
        vec![message(Role::System, "sys"), message(Role::User, XSS)],
        "FINAL(seven)",
        vec![],
    );
    child_turn.final_answer = Some("seven".to_owned());
    child.write(&child_turn).unwrap();
    child
        .write(&outcome("abc.1", Status::Answered, Some("seven"), 1))
        .unwrap();

    let root = TrajectoryWriter::create(dir, "rlm_x_abc").unwrap();
    root.write(&metadata("abc", 0, "How many <b>rows</b>?"))
        .unwrap();
    let call = Subcall {
        kind: SubcallKind::RlmQuery,
        model: "openai:sub".to_owned(),
        prompt: XSS.to_owned(),
        prompt_chars: 9_000,
        response: "seven".to_owned(),
        response_chars: 5,
        usage_summary: UsageSummary::default(),
        cost_usd: 0.001,
        seconds: 1.0,
        error: None,
        child_run_id: Some("abc.1".to_owned()),
        child_log: Some(PathBuf::from("moved/away/rlm_x_abc.1.jsonl")),
    };
    let first_prompt = vec![
        message(Role::System, "sys"),
        message(Role::User, "question"),
    ];
    let reply = format!("Let me look. {XSS}\n```repl\nr = rlm_query('count')\n```");
    root.write(&turn(
        1,
        first_prompt.clone(),
        &reply,
        vec![block("r = rlm_query('count')\nprint(r)", XSS, vec![call])],
    ))
    .unwrap();
    let mut second_prompt = first_prompt;
    second_prompt.push(message(Role::Assistant, &format!("{reply}\n```")));
    second_prompt.push(message(Role::User, "Output of block 1: feedback-marker"));
    let mut last = turn(2, second_prompt, "FINAL(seven)", vec![]);
    last.final_answer = Some("seven".to_owned());
    last.usage.calls = 2;
    last.notes = vec!["the reply was cut inside FINAL(...); asked again".to_owned()];
    root.write(&last).unwrap();
    root.write(&outcome("abc", Status::Answered, Some("seven"), 2))
        .unwrap();
    root.path().to_path_buf()
}

#[test]
fn a_run_with_a_child_renders_everything_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let log = run_with_child(dir.path());
    let run = RunView::load(&log).unwrap();
    assert!(run.is_complete());
    assert_eq!(run.turns.len(), 2);
    assert_eq!(run.total_turns(), 3, "the child's turn counts");
    // The second turn shows only its new message: not the system prompt, not the first reply.
    let second = &run.turns[1];
    assert_eq!(second.prompt_messages, 4);
    assert_eq!(second.new_messages.len(), 1);
    assert!(second.new_messages[0].content.contains("feedback-marker"));
    let Some(ChildRun::Loaded(child)) = run.turns[0].children.get(&(0, 0)) else {
        panic!("child not loaded: {:?}", run.turns[0].children);
    };
    assert_eq!(child.metadata.run_id, "abc.1");

    let html = render(&run.clone().into());
    assert_eq!(
        html.matches("<script").count(),
        1,
        "only the page's own script"
    );
    assert_eq!(html.matches("</script>").count(), 1);
    assert!(!html.contains("<img"));
    assert!(!html.contains("<b>rows"));
    assert!(html.contains("How many &lt;b&gt;rows&lt;/b&gt;?"));
    // `'` needs no escape in text, nor in the double-quoted attributes maud writes.
    assert!(html.contains("&lt;script&gt;alert('x')&lt;/script&gt;"));
    assert!(html.contains("<details class=\"child\"><summary>Child run <code>abc.1</code>"));
    assert!(html.contains("re-asked"));
    assert!(html.contains("prompt (first 64 of 9.0 K chars)"));
    assert!(html.contains("<section id=\"answer\"><h2>Answer</h2>"));
    assert!(!html.contains("id=\"incomplete\""));
}

#[test]
fn the_page_points_nowhere() {
    let dir = tempfile::tempdir().unwrap();
    let run = RunView::load(&run_with_child(dir.path())).unwrap();
    let html = render(&run.clone().into());
    assert_self_contained(&html);
    assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none'"));
    // The check can fail.
    let outside = html.replace("<main", "<img src=\"http://127.0.0.1:9/x.png\"><main");
    assert!(std::panic::catch_unwind(|| assert_self_contained(&outside)).is_err());
}

/// Nothing in the page's own markup, style or script refers outside the page: no `src`, no
/// link but to `#fragments`, no URL, `url()`, `fetch` or `import` in the style or script. Text
/// from the log is escaped, so its `<` never starts a tag and its URLs are only text.
pub(crate) fn assert_self_contained(html: &str) {
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
            "url(",
            "fetch(",
            "import",
            "xmlhttprequest",
            "@font",
            "://",
        ] {
            assert!(!body.contains(needle), "{open} contains {needle}");
        }
    }
}

/// A log written before its key was masked (an older rlm, or a key configured since) shows
/// none of the key in the page once this process knows it.
#[test]
fn the_page_masks_the_keys_this_process_knows() {
    const KEY: &str = "view-key-Qs3Hd8Fz1Tn6Yc5";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.jsonl");
    // Written without the writer, which would mask it if another test had registered it.
    let timestamp = "2026-01-01T00:00:00.000Z";
    let lines = [
        crate::writer::encode(
            &metadata("abc", 0, &format!("why does {KEY} fail?")),
            timestamp,
        ),
        crate::writer::encode(
            &turn(1, vec![], &format!("the key {KEY}"), vec![]),
            timestamp,
        ),
    ];
    std::fs::write(&path, lines.map(Result::unwrap).concat()).unwrap();
    let run = RunView::load(&path).unwrap();
    assert!(
        render(&run.clone().into()).contains(KEY),
        "the log holds it raw"
    );
    rlm_types::ApiKey::new(KEY);
    let html = render(&run.into());
    assert!(html.contains("the key &lt;redacted&gt;"), "{html}");
    assert!(!html.contains("<redacted>"), "the mask is text, not markup");
    for start in 0..=KEY.len() - 8 {
        assert!(!html.contains(&KEY[start..start + 8]), "{html}");
    }
}

#[test]
fn a_run_in_progress_renders_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let log = TrajectoryWriter::create(dir.path(), "run").unwrap();
    log.write(&metadata("abc", 0, "q")).unwrap();
    log.write(&turn(1, vec![], "thinking", vec![])).unwrap();
    let run = RunView::load(log.path()).unwrap();
    assert!(!run.is_complete());
    let html = render(&run.clone().into());
    assert!(html.contains("id=\"incomplete\""));
    assert!(html.contains("the 1 turns logged so far") || html.contains("Shown: the 1 turns"));
    assert!(!html.contains("cut short"));

    // The writer halfway through the second turn's line: the first turn shows, the cut line
    // is named.
    let whole = std::fs::read_to_string(log.path()).unwrap();
    let second = serde_json::to_string(&turn(2, vec![], "second reply", vec![])).unwrap();
    std::fs::write(
        log.path(),
        format!("{whole}{}", &second[..second.len() / 2]),
    )
    .unwrap();
    let run = RunView::load(log.path()).unwrap();
    assert_eq!(run.turns.len(), 1);
    assert_eq!(run.cut_line, Some(3));
    let html = render(&run.clone().into());
    assert!(html.contains("Line 3, the last, is cut short"), "{html}");
    assert!(!html.contains("second reply"));
}

#[test]
fn bad_logs_are_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let good = TrajectoryWriter::create(dir.path(), "good").unwrap();
    good.write(&metadata("abc", 0, "q")).unwrap();
    good.write(&turn(1, vec![], "reply", vec![])).unwrap();
    let whole = std::fs::read_to_string(good.path()).unwrap();
    good.write(&outcome("abc", Status::Answered, Some("a"), 1))
        .unwrap();
    let finished = std::fs::read_to_string(good.path()).unwrap();

    let cases = [
        ("notes.txt", "hello world\n".to_owned()),
        ("empty.jsonl", String::new()),
        (
            "other.jsonl",
            "{\"type\":\"iteration\",\"x\":1}\n".to_owned(),
        ),
        // Cut after the run ended: not a log being written.
        ("cut.jsonl", format!("{finished}{{\"type\":\"iter")),
        (
            "newer.jsonl",
            whole.replacen(
                &format!("\"version\":{}", crate::VERSION),
                "\"version\":99",
                1,
            ),
        ),
    ];
    for (name, text) in cases {
        let err = RunView::load(&write(name, &text)).unwrap_err();
        let message = err.to_string();
        match name {
            "notes.txt" | "empty.jsonl" | "other.jsonl" => {
                assert!(
                    matches!(err, Error::NotATrajectory { .. }),
                    "{name}: {err:?}"
                );
                assert!(
                    message.contains("is not an rlm trajectory log"),
                    "{message}"
                );
            }
            "cut.jsonl" => {
                assert!(matches!(err, Error::Truncated { line: 4, .. }), "{err:?}");
                assert!(message.contains("truncated"), "{message}");
            }
            _ => {
                assert!(
                    matches!(err, Error::NewerVersion { version: 99, .. }),
                    "{err:?}"
                );
                assert!(message.contains("version 99"), "{message}");
            }
        }
    }
    assert!(matches!(
        RunView::load(&dir.path().join("missing.jsonl")),
        Err(Error::Io { .. })
    ));
}

#[test]
fn a_missing_child_log_is_named_in_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let log = run_with_child(dir.path());
    std::fs::remove_file(dir.path().join("rlm_x_abc.1.jsonl")).unwrap();
    let run = RunView::load(&log).unwrap();
    assert!(matches!(
        run.turns[0].children.get(&(0, 0)),
        Some(ChildRun::Missing(_))
    ));
    let html = render(&run.clone().into());
    assert!(html.contains("class=\"muted child-missing\">Child run abc.1:"));
}

#[test]
fn the_page_is_written_whole_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let run = RunView::load(&run_with_child(dir.path())).unwrap();
    let out = dir.path().join("page.html");
    write_page(&run.clone().into(), &out).unwrap();
    assert!(
        std::fs::read_to_string(&out)
            .unwrap()
            .ends_with("</html>\n")
    );
    let err = write_page(
        &run.clone().into(),
        &dir.path().join("no/such/dir/page.html"),
    )
    .unwrap_err();
    assert!(matches!(err, Error::Io { .. }));
    let leftovers = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".tmp")
        })
        .count();
    assert_eq!(leftovers, 0);
}

fn host_call(name: &str, arguments: &str, result: Option<&str>, error: Option<&str>) -> HostCall {
    HostCall {
        name: name.to_owned(),
        arguments: arguments.to_owned(),
        result_bytes: result.map_or(0, |text| text.len() as u64),
        result_items: u64::from(result.is_some()),
        result: result.map(str::to_owned),
        seconds: 0.02,
        error: error.map(str::to_owned),
    }
}

/// The text of the first element that starts with `start`, up to its `end`.
fn section<'a>(html: &'a str, start: &str, end: &str) -> &'a str {
    let at = html.find(start).unwrap_or_else(|| panic!("no {start}"));
    let rest = &html[at..];
    &rest[..rest.find(end).unwrap_or(rest.len())]
}

#[test]
fn host_calls_render_per_block_escaped_with_sizes_errors_and_folds() {
    let dir = tempfile::tempdir().unwrap();
    let log = TrajectoryWriter::create(dir.path(), "store").unwrap();
    log.write(&metadata("st", 0, "Where are backups kept?"))
        .unwrap();
    let long_result = format!("[{}]", vec![r#"{"chunk_id": 7}"#; 60].join(","));
    let long_arguments = format!(r#"{{"pattern": "{}", "buffer": null}}"#, "x".repeat(200));
    let mut explore = block("hits = search('backup')", "found", vec![]);
    explore.result.host_calls = vec![
        host_call(
            "search",
            &format!(r#"{{"query": "{XSS}", "k": 3, "mode": "bm25"}}"#),
            Some(r#"[{"chunk_id": 12, "snippet": "falcon-marker"}]"#),
            None,
        ),
        HostCall {
            result_items: 60,
            ..host_call("get_chunks", r#"{"ids": [12]}"#, Some(&long_result), None)
        },
        host_call("grep", &long_arguments, Some(r#"{"matches": []}"#), None),
        host_call(
            "read",
            r#"{"buffer": "missing.txt", "start_line": 1, "end_line": 1}"#,
            None,
            Some("LookupError: no buffer named \"missing.txt\" <in the store>"),
        ),
    ];
    let mut many = block("for q in qs: search(q)", "", vec![]);
    many.result.host_calls = (0..7)
        .map(|n| {
            host_call(
                "search",
                &format!(r#"{{"query": "q{n}"}}"#),
                Some("[]"),
                None,
            )
        })
        .collect();
    log.write(&turn(1, vec![], "look", vec![explore, many]))
        .unwrap();
    let run = RunView::load(log.path()).unwrap();
    let html = render(&run.into());

    // The hostile argument is text, never markup.
    assert_eq!(html.matches("<script").count(), 1);
    assert!(!html.contains("<img"));
    let first = section(
        &html,
        "<details class=\"host-calls\" open>",
        "<details class=\"host-calls\">",
    );
    assert!(
        first.contains("<summary>4 host calls: search, get_chunks, grep, read, 1 failed</summary>"),
        "{first}"
    );
    assert!(
        first.contains("<code>search({&quot;query&quot;: &quot;&lt;script&gt;"),
        "{first}"
    );
    assert!(first.contains("falcon-marker"));
    // Sizes: items for lists, bytes always.
    assert!(
        first.contains(&format!("0.02 s · 60 items, {} bytes", long_result.len())),
        "{first}"
    );
    assert!(first.contains("0.02 s · 15 bytes"), "{first}");
    // A long result is folded under its label; short ones are open.
    assert!(
        first.contains("<details class=\"text result\"><summary>result</summary>"),
        "{first}"
    );
    // Long arguments go below the head line.
    assert!(first.contains("<code>grep(…)</code>"), "{first}");
    assert!(first.contains(&"x".repeat(200)));
    // The failed call says so, with its escaped error.
    assert!(
        first.contains("<div class=\"host-call failed\">"),
        "{first}"
    );
    assert!(
        first.contains(
            "<pre class=\"error\">LookupError: no buffer named &quot;missing.txt&quot; \
             &lt;in the store&gt;</pre>"
        ),
        "{first}"
    );
    // Many calls are folded, named with their counts.
    assert!(
        html.contains("<details class=\"host-calls\"><summary>7 host calls: search ×7</summary>"),
        "{html}"
    );
    // The turn's badges count them, for the timeline and the filter box's text.
    assert!(html.contains("<span class=\"badge \">11 host calls</span>"));
    assert!(html.contains("<span class=\"badge bad\">1 failed host call</span>"));
    // Inside the turn section the filter box searches (its text content).
    let turn = section(&html, "<section class=\"turn\"", "</section>");
    assert!(turn.contains("falcon-marker") && turn.contains("q6"));
}

/// Bars follow the times as the timeline shows them: turns all shown as `0.00 s` get equal
/// bars, however their unrounded times differ.
#[test]
fn turns_shown_with_equal_times_get_equal_bars() {
    let dir = tempfile::tempdir().unwrap();
    let log = TrajectoryWriter::create(dir.path(), "rlm_x_fast").unwrap();
    log.write(&metadata("fast", 0, "quick?")).unwrap();
    for (n, seconds) in [(1, 0.001), (2, 0.004), (3, 0.0004)] {
        let mut iteration = turn(n, vec![message(Role::User, "q")], "thinking", vec![]);
        iteration.seconds = seconds;
        log.write(&iteration).unwrap();
    }
    log.write(&outcome("fast", Status::Answered, Some("done"), 3))
        .unwrap();
    let view = LogView::load(log.path()).unwrap();
    let html = render(&view);
    let timeline = section(&html, "<section id=\"timeline\">", "</section>");
    let widths: Vec<&str> = timeline
        .match_indices("style=\"width:")
        .map(|(at, found)| {
            let rest = &timeline[at + found.len()..];
            &rest[..rest.find('"').unwrap()]
        })
        .collect();
    assert_eq!(widths.len(), 3, "{timeline}");
    assert!(widths.iter().all(|width| *width == widths[0]), "{widths:?}");
    assert_eq!(timeline.matches("0.00 s").count(), 3, "{timeline}");
}

/// An answer forced at the iteration limit is shown as partial (`rlm run` exits 1 for it),
/// not as the green "answered"; a run of unpriced (local) calls costs "unknown", not $0.00.
#[test]
fn a_forced_answer_is_partial_and_an_unpriced_run_costs_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let writer = TrajectoryWriter::create(dir.path(), "rlm_x_forced").unwrap();
    writer.write(&metadata("forced", 0, "How many?")).unwrap();
    let mut last = turn(1, vec![message(Role::User, "question")], "About 7.", vec![]);
    last.final_answer = Some("About 7.".to_owned());
    last.usage.calls = 2;
    last.usage.unpriced_calls = 2;
    writer.write(&last).unwrap();
    let mut result = outcome("forced", Status::ForcedAnswer, Some("About 7."), 1);
    result.usage.total.calls = 2;
    result.usage.total.unpriced_calls = 2;
    writer.write(&result).unwrap();
    let run = RunView::load(writer.path()).unwrap();
    let html = render(&run.into());
    assert!(
        html.contains(
            "<p id=\"status\" class=\"status partial\">partial: answered at the iteration \
             limit</p>"
        ),
        "{html}"
    );
    assert!(!html.contains("status ok"));
    assert!(html.contains("<dt>cost</dt><dd>unknown</dd>"), "{html}");
    assert!(!html.contains("$0.00"));
}

/// An answer no code looked behind is not shown as the green "answered" either.
#[test]
fn an_answer_without_evidence_is_unchecked() {
    let dir = tempfile::tempdir().unwrap();
    let writer = TrajectoryWriter::create(dir.path(), "rlm_x_unchecked").unwrap();
    writer
        .write(&metadata("unchecked", 0, "What is the code?"))
        .unwrap();
    writer
        .write(&turn(
            1,
            vec![message(Role::User, "question")],
            "FINAL(x)",
            vec![],
        ))
        .unwrap();
    writer
        .write(&outcome("unchecked", Status::NoEvidence, Some("x"), 1))
        .unwrap();
    let html = render(&RunView::load(writer.path()).unwrap().into());
    assert!(
        html.contains(
            "<p id=\"status\" class=\"status partial\">unchecked: answered without evidence \
             (no code looked at the data)</p>"
        ),
        "{html}"
    );
    assert!(!html.contains("status ok"));
}

/// A reply's HTML, links and images are text on the page, and bidi controls anywhere in the
/// log are shown, not obeyed.
#[test]
fn a_reply_s_html_links_and_bidi_controls_are_shown_as_text() {
    let dir = tempfile::tempdir().unwrap();
    let log = TrajectoryWriter::create(dir.path(), "rlm_x_md").unwrap();
    log.write(&metadata("md", 0, "rename invoice\u{202E}fdp.exe?"))
        .unwrap();
    let reply = "<script>alert('block')</script>\n\nSee [the docs](javascript:alert(1)) and \
                 <a href=\"https://evil.invalid\">this</a> ![pixel](https://tracker.invalid/p.png) \
                 <script>alert('inline')</script> \u{2066}hidden\u{2069}.";
    log.write(&turn(1, vec![message(Role::User, "go")], reply, vec![]))
        .unwrap();
    let run = RunView::load(log.path()).unwrap();
    let html = render(&run.into());

    assert_self_contained(&html);
    assert_eq!(html.matches("<script").count(), 1, "only the page's own");
    assert!(!html.contains("<a href=\"https"), "{html}");
    assert!(!html.to_lowercase().contains("href=\"javascript"), "{html}");
    let turn = section(&html, "<section class=\"turn\"", "</section>");
    assert!(
        turn.contains("<pre class=\"html\">&lt;script&gt;alert('block')&lt;/script&gt;"),
        "{turn}"
    );
    assert!(
        turn.contains("&lt;script&gt;alert('inline')&lt;/script&gt;"),
        "{turn}"
    );
    assert!(
        turn.contains("the docs (javascript:alert(1))"),
        "the link is text: {turn}"
    );
    assert!(
        turn.contains("&lt;a href=&quot;https://evil.invalid&quot;&gt;this&lt;/a&gt;")
            || turn.contains("&lt;a href=\"https://evil.invalid\"&gt;this&lt;/a&gt;"),
        "{turn}"
    );
    assert!(
        turn.contains("[image: pixel] (https://tracker.invalid/p.png)"),
        "{turn}"
    );
    assert!(turn.contains("\\u{2066}hidden\\u{2069}"), "{turn}");
    assert!(html.contains("rename invoice\\u{202e}fdp.exe?"), "{html}");
    assert!(
        !html.contains(['\u{202E}', '\u{2066}', '\u{2069}']),
        "a bidi control left as is"
    );
}
