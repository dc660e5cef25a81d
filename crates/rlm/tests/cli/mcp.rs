//! `rlm mcp` driven by a client nobody here wrote: the official MCP Python SDK (`mcp` on
//! PyPI) over stdio. `scripts/test` installs it into a virtual environment and sets
//! `RLM_TEST_MCP_PYTHON` to its interpreter; without it the test skips with a notice, with it
//! set but broken the test fails.

use std::path::{Path, PathBuf};

use rlm_fake::FakeReply;

use crate::support::{
    KEY, assert_tool_error, rlm_store_process, rlm_with_store, scripted, text, with_fake,
};

const CLIENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cli/mcp/client.py");

fn python() -> Option<PathBuf> {
    let Some(python) = std::env::var_os("RLM_TEST_MCP_PYTHON") else {
        eprintln!(
            "skipped: set RLM_TEST_MCP_PYTHON to a Python with the `mcp` package (scripts/test does)"
        );
        return None;
    };
    Some(PathBuf::from(python))
}

/// The text of a story long enough for several small chunks.
fn story(dir: &Path) {
    let paragraphs = [
        "The lighthouse keeper climbed the stairs every evening at dusk.",
        "Ships passed the rocks safely because the lamp never failed.",
        "One winter the keeper found a letter wedged in the lens housing.",
        "It named a harbour far to the south and a date long past.",
    ];
    std::fs::write(dir.join("story.txt"), paragraphs.join("\n\n") + "\n").unwrap();
}

const SEARCH_AND_ANSWER: &str = r#"```repl
hits = search("lighthouse keeper", k=1)
answer = hits[0]["buffer"] + ":" + str(hits[0]["start_line"])
FINAL_VAR("answer")
```"#;

/// The model `query` asks: a plan, extractions (every chunk relevant), then the report.
fn answer_query(seen: &rlm_fake::SeenRequest) -> FakeReply {
    crate::support::answer_query_about(
        seen,
        "lighthouse keeper",
        "the keeper is in chunk",
        "The keeper lives in the lighthouse",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(
    clippy::too_many_lines,
    reason = "one scenario of the official client against one server process"
)]
async fn the_python_sdk_client_calls_tools_and_pages_resources() {
    let Some(python) = python() else { return };
    let (dir, server) = scripted(
        "root",
        [
            FakeReply::text("```repl\nanswer = context.split()[-1]\nprint(answer)\n"),
            FakeReply::text("FINAL_VAR(answer)"),
        ],
    )
    .await;
    // `run` over the store: the root model's code searches it and answers from the hit.
    server.script("store", [FakeReply::text(SEARCH_AND_ANSWER)]);
    // `query`: the planner asks for a BM25 search in batches of one chunk, each extractor
    // reports its chunks, the report cites what was found.
    server.respond_with(answer_query);
    story(dir.path());
    rlm_with_store(dir.path())
        .args(["load", "story.txt", "--chunk-size", "70"])
        .assert()
        .success();
    rlm_with_store(dir.path())
        .args(["ctx", "init", "--tokenizer", "approx"])
        .assert()
        .success();

    // The client's process carries the hermetic environment the server inherits.
    let template = {
        let mut command = rlm_store_process(dir.path());
        with_fake(&mut command, &server);
        command
    };
    let mut client = std::process::Command::new(&python);
    client
        .arg(CLIENT)
        .arg(assert_cmd::cargo::cargo_bin("rlm"))
        .arg(dir.path());
    client.current_dir(dir.path());
    for (name, value) in template.get_envs() {
        match value {
            Some(value) => client.env(name, value),
            None => client.env_remove(name),
        };
    }
    let output = tokio::task::spawn_blocking(move || client.output().unwrap())
        .await
        .unwrap();
    let stderr = text(&output.stderr);
    assert!(
        output.status.success(),
        "the client failed (is RLM_TEST_MCP_PYTHON's `mcp` installed?):\n{stderr}"
    );
    assert!(!stderr.contains(KEY) && !text(&output.stdout).contains(KEY));
    let seen: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();

    assert_eq!(seen["server"], "rlm");
    let tools = seen["tools"].as_object().unwrap();
    for name in [
        "inspect",
        "load",
        "list_buffers",
        "search",
        "grep",
        "peek",
        "run",
        "ctx_assemble",
        "query",
    ] {
        assert_eq!(tools[name]["type"], "object", "{name}: {}", tools[name]);
    }
    assert!(tools["search"]["properties"]["k"].is_object());

    // Every tool declares the shape of its structured result: its command's records. The SDK
    // validated each successful call against it (it raises otherwise); these calls succeeded.
    let output_schemas = seen["output_schemas"].as_object().unwrap();
    for (name, schema) in output_schemas {
        assert_eq!(schema["type"], "object", "{name}: {schema}");
        assert_eq!(schema["required"], serde_json::json!(["records"]), "{name}");
        assert_eq!(schema["properties"]["records"]["type"], "array", "{name}");
    }
    assert_eq!(output_schemas.len(), tools.len());
    for (name, result) in seen["valid"].as_object().unwrap() {
        assert_eq!(result["is_error"], false, "{name}: {result}");
        let records = result["structured"]["records"].as_array().unwrap();
        assert!(!records.is_empty(), "{name}: {result}");
    }
    let load = &seen["valid"]["load"]["structured"]["records"][0];
    assert_eq!(
        load["unchanged"],
        serde_json::json!(["story.txt"]),
        "{load}"
    );
    let grep = &seen["valid"]["grep"]["structured"]["records"];
    assert_eq!(grep[0]["type"], "match", "{grep}");

    // search over the loaded store: the chunk with both words ranks first.
    let search = &seen["search"];
    assert_eq!(search["is_error"], false, "{search}");
    let hits = search["structured"]["records"].as_array().unwrap();
    assert!(!hits.is_empty() && hits.len() <= 2, "{search}");
    assert_eq!(hits[0]["type"], "hit");
    assert!(
        hits[0]["snippet"]
            .as_str()
            .unwrap()
            .contains("lighthouse keeper"),
        "{search}"
    );

    // run against the fake provider: the model's code found the answer.
    let run = &seen["run"];
    assert_eq!(run["is_error"], false, "{run}");
    let result = &run["structured"]["records"][0];
    assert_eq!(result["type"], "result", "{run}");
    assert_eq!(result["answer"], "7", "{run}");
    // The client asked for progress: one notification per turn, growing, out of 30.
    let progress = seen["run_progress"].as_array().unwrap();
    let values: Vec<f64> = progress
        .iter()
        .map(|update| update["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(values, [1.0, 2.0], "{progress:?}");
    assert_eq!(progress[0]["total"], 30.0);
    let first = progress[0]["message"].as_str().unwrap();
    assert!(first.starts_with("turn 1: 0 sub-calls, "), "{first}");
    let last = progress[1]["message"].as_str().unwrap();
    assert!(last.ends_with(" · answered"), "{last}");

    // query: planned, one extractor per chunk found, a report citing them; a progress
    // notification per batch.
    let query = &seen["query"];
    assert_eq!(query["is_error"], false, "{query}");
    let report = &query["structured"]["records"][0];
    assert_eq!(report["type"], "result", "{query}");
    assert_eq!(report["status"], "answered", "{query}");
    assert_eq!(
        report["plan"]["queries"][0], "lighthouse keeper",
        "{report}"
    );
    let batches = report["batches"].as_u64().unwrap();
    assert!(batches >= 2, "{report}");
    assert!(
        report["report"]
            .as_str()
            .unwrap()
            .starts_with("## Summary\nThe keeper lives in the lighthouse"),
        "{report}"
    );
    let progress = seen["query_progress"].as_array().unwrap();
    assert_eq!(progress.len() as u64, batches, "{progress:?}");
    assert_eq!(progress.last().unwrap()["progress"], batches as f64);
    assert_eq!(progress[0]["total"], batches as f64);
    assert!(
        progress[0]["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!("batch 1/{batches}: ")),
        "{progress:?}"
    );

    // run over the store: the model's code found the chunk with search().
    let run_store = &seen["run_store"];
    assert_eq!(run_store["is_error"], false, "{run_store}");
    let result = &run_store["structured"]["records"][0];
    assert_eq!(result["answer"], "story.txt:1", "{run_store}");
    assert_tool_error(&seen["run_store_outside"], "outside the server's root");

    // Bad input: tool errors with the CLI's messages, and the session goes on.
    assert_tool_error(&seen["wrong_type"], "invalid type");
    assert_tool_error(&seen["missing"], "peek needs a buffer");
    assert_tool_error(&seen["outside"], "outside the server's root");
    assert_tool_error(&seen["store_error"], "no-such-buffer");
    // A path the command reports and goes on after: its error is the result's text.
    assert_tool_error(&seen["load_missing"], "error: cannot read ");
    assert_tool_error(&seen["load_missing"], "no-such-file.txt");
    assert!(
        seen["unknown_tool"]
            .as_str()
            .unwrap()
            .contains("unknown tool"),
        "{seen}"
    );
    let after = &seen["list_after_errors"];
    assert_eq!(
        after["structured"]["records"][0]["name"], "story.txt",
        "{after}"
    );

    // Resources: the buffer then each of its chunks, three a page, each once.
    let pages: Vec<Vec<String>> = serde_json::from_value(seen["resource_pages"].clone()).unwrap();
    let chunks = after["structured"]["records"][0]["chunks"]
        .as_u64()
        .unwrap() as usize;
    assert!(chunks >= 3, "{after}");
    assert_eq!(pages.len(), (1 + chunks).div_ceil(3), "{pages:?}");
    assert!(pages.iter().all(|page| page.len() <= 3 && !page.is_empty()));
    let uris: Vec<&String> = pages.iter().flatten().collect();
    assert_eq!(uris.len(), 1 + chunks);
    assert!(uris[0].starts_with("rlm://buffer/"), "{uris:?}");
    let unique: std::collections::HashSet<_> = uris.iter().collect();
    assert_eq!(unique.len(), uris.len(), "{uris:?}");
    assert!(
        seen["chunk_text"].as_str().unwrap().contains("lighthouse"),
        "{seen}"
    );
}

/// One JSON-RPC exchange with a stdio server: writes `message`, reads the answer line.
fn exchange(
    stdin: &mut std::process::ChildStdin,
    stdout: &mut impl std::io::BufRead,
    message: &str,
) -> serde_json::Value {
    use std::io::Write as _;
    writeln!(stdin, "{message}").unwrap();
    stdin.flush().unwrap();
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    serde_json::from_str(&line)
        .map_err(|err| format!("{err}: {line:?}"))
        .unwrap()
}

/// `rlm mcp --store DIR`: the tools work over DIR, as the resources do, not over the default
/// store (there is none here: no `RLM_STORE`, no `.rlm`).
#[test]
fn the_tools_use_the_store_the_server_was_started_with() {
    use std::io::BufReader;
    use std::process::Stdio;

    let dir = tempfile::tempdir().unwrap();
    story(dir.path());
    crate::support::rlm_in(dir.path())
        .args([
            "load",
            "--store",
            "elsewhere",
            "story.txt",
            "--chunk-size",
            "70",
        ])
        .assert()
        .success();
    let mut server = crate::support::rlm_process(dir.path())
        .args(["mcp", "--store", "elsewhere"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    let mut stdout = BufReader::new(server.stdout.take().unwrap());
    let initialized = exchange(
        &mut stdin,
        &mut stdout,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#,
    );
    assert_eq!(initialized["result"]["serverInfo"]["name"], "rlm");
    {
        use std::io::Write as _;
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )
        .unwrap();
    }
    let call = |id: u32, tool: &str, arguments: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments}}}}}"#
        )
    };
    // Each answer: not an error, its first record's `field` names the story.
    let first_record_names_the_story = |reply: serde_json::Value, field: &str| {
        let result = &reply["result"];
        assert_eq!(result["isError"], false, "{reply}");
        assert_eq!(
            result["structuredContent"]["records"][0][field], "story.txt",
            "{reply}"
        );
    };
    let listed = exchange(&mut stdin, &mut stdout, &call(2, "list_buffers", "{}"));
    first_record_names_the_story(listed, "name");
    let searched = exchange(
        &mut stdin,
        &mut stdout,
        &call(3, "search", r#"{"query": "lighthouse keeper", "k": 1}"#),
    );
    first_record_names_the_story(searched, "buffer");
    // A query that starts with a hyphen is a query, not a flag: the request is the tool's
    // arguments themselves.
    let hyphen = exchange(
        &mut stdin,
        &mut stdout,
        &call(5, "search", r#"{"query": "-x lighthouse", "k": 1}"#),
    );
    first_record_names_the_story(hyphen, "buffer");
    // The tools say how they behave.
    let tools = exchange(
        &mut stdin,
        &mut stdout,
        r#"{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{}}"#,
    );
    let annotations = |name: &str| {
        tools["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|tool| tool["name"] == name)
            .unwrap()["annotations"]
            .clone()
    };
    assert_eq!(annotations("search")["readOnlyHint"], true);
    assert_eq!(annotations("load")["readOnlyHint"], false);
    assert_eq!(annotations("run")["openWorldHint"], true);
    let resources = exchange(
        &mut stdin,
        &mut stdout,
        r#"{"jsonrpc":"2.0","id":4,"method":"resources/list","params":{}}"#,
    );
    assert!(
        resources["result"]["resources"]
            .as_array()
            .is_some_and(|list| !list.is_empty()),
        "{resources}"
    );
    drop(stdin);
    assert!(server.wait().unwrap().success());
    // Nothing was created where the default store would be.
    assert!(!dir.path().join(".rlm").exists());
}
