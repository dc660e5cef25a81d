//! `rlm run` with custom tools declared in `rlm.toml` (`[run.tools.NAME]`): commands model code
//! calls like functions, with JSON in and out, the same host functions the Python package's
//! callables are.

use rlm_fake::FakeReply;

use crate::support::{output as run, rlm_in, rlm_with_fake, scripted, text};

const TOOLS: &str = r#"
[run.tools.shout]
command = ["python3", "-c", "import json, sys; a = json.load(sys.stdin); print(json.dumps({'loud': a['text'].upper() + a['end']}))"]
description = "Shouts a text"
parameters = ["text", "end"]
defaults = { end = "!" }

[run.tools.picky]
command = ["sh", "-c", "echo '{\"error\": {\"type\": \"ValueError\", \"message\": \"too quiet\"}}'; exit 1"]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_code_calls_the_commands_of_run_tools() {
    let (dir, server) = scripted(
        "root",
        [
            FakeReply::text(
                "```repl\nprint(shout('hi')['loud'], shout(text='yo', end='?')['loud'])\ntry:\n    picky()\nexcept ValueError as e:\n    print('refused:', e)\n```",
            ),
            FakeReply::text("FINAL(done)"),
        ],
    )
    .await;
    std::fs::write(dir.path().join("rlm.toml"), TOOLS).unwrap();
    let mut command = rlm_with_fake(dir.path(), &server);
    command.args([
        "run",
        "--no-log",
        "--model",
        "openai:root",
        "--context",
        "x",
        "Shout.",
    ]);
    let output = run(command).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(text(&output.stdout), "done\n");
    let requests = server.requests_for("root");
    let system = requests[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        system.contains("- `shout(text, end='!')`: Shouts a text"),
        "{system}"
    );
    let fed_back = requests[1].last_user_message();
    assert!(fed_back.contains("HI! YO?"), "{fed_back}");
    assert!(fed_back.contains("refused: too quiet"), "{fed_back}");

    // `rlm config show` lists them.
    let mut show = rlm_in(dir.path());
    show.args(["config", "show"]);
    let shown = text(&show.output().unwrap().stdout);
    assert!(shown.contains("run.tools.shout"), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_with_a_reserved_name_is_refused_before_any_model_is_asked() {
    let (dir, server) = scripted("root", [FakeReply::text("FINAL(no)")]).await;
    std::fs::write(
        dir.path().join("rlm.toml"),
        "[run.tools.llm_query]\ncommand = [\"true\"]\n",
    )
    .unwrap();
    let mut command = rlm_with_fake(dir.path(), &server);
    command.args([
        "run",
        "--no-log",
        "--model",
        "openai:root",
        "--context",
        "x",
        "q",
    ]);
    let output = run(command).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("reserved") && stderr.contains("llm_query"),
        "{stderr}"
    );
    assert!(server.requests_for("root").is_empty());
}
