//! `rlm prompt build|plan` through the real binary, summaries from the fake provider.

use std::path::Path;

use rlm_fake::{FakeReply, FakeServer};

use crate::support::{KEY, output, rlm_in, rlm_with_fake, text, write};

/// `count` JSON Lines messages of about 80 tokens each, numbered.
fn history(dir: &Path, count: usize) -> String {
    let lines: String = (0..count)
        .map(|index| {
            let role = if index % 2 == 0 { "user" } else { "assistant" };
            let content = format!("message-{index:04} ") + &"alpha beta gamma ".repeat(25);
            serde_json::json!({ "role": role, "content": content }).to_string() + "\n"
        })
        .collect();
    write(dir, "chat.jsonl", &lines);
    "chat.jsonl".to_owned()
}

#[test]
fn build_writes_messages_with_logs_only_when_fixing_errors() {
    let dir = tempfile::tempdir().unwrap();
    history(dir.path(), 4);
    write(dir.path(), "NOTES.md", "Keep the API stable.\n");
    write(dir.path(), "ci.log", "step 1\nerror: linker failed\n");
    std::fs::create_dir(dir.path().join("src")).unwrap();
    write(dir.path(), "src/lib.rs", "pub fn f() {}\n");
    let build = |stage: &str| {
        let out = rlm_in(dir.path())
            .args([
                "prompt",
                "build",
                "--stage",
                stage,
                "--history",
                "chat.jsonl",
            ])
            .args([
                "--notes",
                "NOTES.md",
                "--build-log",
                "ci.log",
                "--source",
                "src/**/*.rs",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (value, text(&out.stderr))
    };
    let (fixing, stderr) = build("error-fixing");
    let user = fixing["messages"][1]["content"].as_str().unwrap();
    assert!(user.contains("error: linker failed") && user.contains("pub fn f()"));
    assert!(
        stderr.contains("history") && stderr.contains("digest sha256:"),
        "{stderr}"
    );
    let system = fixing["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("<promise>COMPLETE</promise>"));
    let (coding, _) = build("coding");
    let user = coding["messages"][1]["content"].as_str().unwrap();
    assert!(!user.contains("linker failed") && user.contains("Keep the API stable."));
    let (_, stderr) = build("deploying");
    assert!(
        stderr.contains("unknown stage `deploying`, using `coding`"),
        "{stderr}"
    );
}

#[test]
fn bad_input_exits_2_naming_the_problem_and_a_tiny_budget_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "bad.jsonl",
        "{\"role\":\"user\",\"content\":\"a\"}\nnot json\n",
    );
    let run = |args: &[&str]| {
        rlm_in(dir.path())
            .arg("prompt")
            .arg("build")
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["--history", "bad.jsonl"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("bad.jsonl: line 2: not valid JSON"),
        "{}",
        text(&out.stderr)
    );
    let out = run(&["--notes", "missing.md"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("missing.md does not exist"));
    for budget in ["0", "-5"] {
        let out = run(&["--budget-total", budget]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{budget}: {}",
            text(&out.stderr)
        );
    }
    let out = run(&["--budget-total", "50"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("the system prompt needs") && stderr.contains("total budget"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_history_is_summarized_once_and_rebuilt_from_the_cache_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    server.script(
        "gpt-4o-mini",
        [FakeReply::text("## Requirements\n- stable API")],
    );
    history(dir.path(), 60);
    let build = |output_name: &str| {
        let mut command = rlm_with_fake(dir.path(), &server);
        command.args([
            "--json",
            "prompt",
            "build",
            "--history",
            "chat.jsonl",
            "--history-budget",
            "2000",
            "-m",
            "openai:gpt-4o-mini",
            "-o",
            output_name,
        ]);
        command
    };
    let first = output(build("one.json")).await;
    assert!(first.status.success(), "{}", text(&first.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&first.stdout).unwrap();
    assert_eq!(plan["type"], "plan");
    assert_eq!(plan["history"]["action"], "summarized");
    assert_eq!(plan["model_calls"].as_array().unwrap().len(), 1);
    let second = output(build("two.json")).await;
    assert!(second.status.success(), "{}", text(&second.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&second.stdout).unwrap();
    assert_eq!(plan["history"]["cache_hit"], true);
    assert_eq!(
        server.request_count(),
        1,
        "the second build used the cached summary"
    );
    let one = std::fs::read(dir.path().join("one.json")).unwrap();
    let two = std::fs::read(dir.path().join("two.json")).unwrap();
    assert_eq!(one, two);
    assert!(text(&one).contains("- stable API"));
    assert!(!text(&first.stderr).contains(KEY) && !text(&second.stderr).contains(KEY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unavailable_model_falls_back_and_plan_calls_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start().await.unwrap();
    server.script("gpt-4o-mini", [FakeReply::status(404, "no such model")]);
    history(dir.path(), 60);
    let mut command = rlm_with_fake(dir.path(), &server);
    command.args([
        "prompt",
        "build",
        "--history",
        "chat.jsonl",
        "--history-budget",
        "2000",
        "-m",
        "openai:gpt-4o-mini",
    ]);
    let out = output(command).await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("history not summarized (the summarizing model failed"),
        "{stderr}"
    );
    assert!(text(&out.stdout).contains("message-0059"));
    let calls = server.request_count();

    let mut command = rlm_with_fake(dir.path(), &server);
    command.args([
        "--json",
        "prompt",
        "plan",
        "--history",
        "chat.jsonl",
        "--history-budget",
        "2000",
        "-m",
        "openai:gpt-4o-mini",
    ]);
    let out = output(command).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["history"]["action"], "would-summarize");
    assert!(plan["history"]["estimate"]["cost_usd"].as_f64().unwrap() > 0.0);
    assert_eq!(server.request_count(), calls, "plan made no model call");
    // The text plan says the real split and that the calls are a build's, not its own.
    let summarized = plan["history"]["summarized_messages"].as_u64().unwrap();
    let messages = plan["history"]["messages"].as_u64().unwrap();
    assert!(summarized > 0 && summarized < messages, "{plan}");
    let mut command = rlm_with_fake(dir.path(), &server);
    command.args([
        "prompt",
        "plan",
        "--history",
        "chat.jsonl",
        "--history-budget",
        "2000",
        "-m",
        "openai:gpt-4o-mini",
    ]);
    let out = output(command).await;
    let shown = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        shown.contains(&format!(
            "a build would summarize {summarized} of {messages} messages and keep {} verbatim",
            messages - summarized
        )),
        "{shown}"
    );
    assert!(shown.contains("it would take "), "{shown}");
    assert!(!shown.contains(" 1 calls"), "{shown}");
    assert_eq!(server.request_count(), calls, "plan made no model call");
}

#[test]
fn build_summarises_items_per_kind_on_stderr_and_lists_each_with_verbose() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    for index in 0..40 {
        let body = format!("pub fn f{index}() {{}}\n") + &"// filler line of code\n".repeat(40);
        write(dir.path(), &format!("src/file{index:02}.rs"), &body);
    }
    let build = |verbose: bool| {
        let mut command = rlm_in(dir.path());
        if verbose {
            command.arg("-v");
        }
        let out = command
            .args(["prompt", "build", "--source", "src/*.rs"])
            .args(["--context-budget", "2000"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stderr)
    };
    let summary = build(false);
    let line = summary
        .lines()
        .find(|line| line.trim_start().starts_with("source_files"))
        .unwrap_or_else(|| panic!("no source_files line:\n{summary}"));
    assert!(
        line.contains(" in, ") && line.contains(" skipped"),
        "{line}"
    );
    assert!(
        !summary.contains("file07.rs"),
        "no line per file:\n{summary}"
    );
    assert!(summary.contains("-v, or `rlm prompt plan`"), "{summary}");
    let detail = build(true);
    for index in 0..40 {
        assert!(detail.contains(&format!("file{index:02}.rs")), "{detail}");
    }
}
