//! `rlm mcp`'s `run` answered by the client's own model through MCP sampling, with the
//! official MCP Python SDK as the client (`RLM_TEST_MCP_PYTHON`, as in `mcp.rs`): the server
//! has no API key and no model configured.

use std::path::PathBuf;

use crate::mcp_http::Listening;
use crate::support::{rlm_store_process, text};

const CLIENT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/cli/mcp/sampling_client.py"
);
/// What the client's scripted model answers to the sub-call (`sampling_client.py`).
const ORACLE: &str = "heliotrope-7731";

/// How the client reaches the server.
#[derive(Clone, Copy)]
enum Transport {
    /// The client starts `rlm mcp` and speaks over its stdin/stdout.
    Stdio,
    /// The client connects to a running `rlm mcp --http 127.0.0.1:0`.
    Http,
}

/// The client's report of a session in `mode` (`sampling` or `plain`), or `None` when the
/// Python SDK is not configured.
async fn session(mode: &str, transport: Transport) -> Option<serde_json::Value> {
    let Some(python) = std::env::var_os("RLM_TEST_MCP_PYTHON").map(PathBuf::from) else {
        eprintln!(
            "skipped: set RLM_TEST_MCP_PYTHON to a Python with the `mcp` package (scripts/test does)"
        );
        return None;
    };
    let dir = tempfile::tempdir().unwrap();
    // The hermetic environment (no RLM_*, no *_API_KEY, an empty config) for client and
    // server alike: the server inherits the client's.
    let template = rlm_store_process(dir.path());
    let mut client = std::process::Command::new(&python);
    client
        .arg(CLIENT)
        .arg(assert_cmd::cargo::cargo_bin("rlm"))
        .arg(dir.path())
        .arg(mode)
        .current_dir(dir.path());
    let server = match transport {
        Transport::Stdio => None,
        Transport::Http => Some(Listening::start(dir.path(), &[])),
    };
    if let Some(server) = &server {
        client.arg(&server.url);
    }
    for (name, value) in template.get_envs() {
        match value {
            Some(value) => client.env(name, value),
            None => client.env_remove(name),
        };
    }
    // Loopback requests must not go to a proxy from the caller's environment.
    for proxy in ["http_proxy", "https_proxy", "all_proxy"] {
        client
            .env_remove(proxy)
            .env_remove(proxy.to_ascii_uppercase());
    }
    let output = tokio::task::spawn_blocking(move || client.output().unwrap())
        .await
        .unwrap();
    drop(server);
    let stderr = text(&output.stderr);
    assert!(
        output.status.success(),
        "the client failed (is RLM_TEST_MCP_PYTHON's `mcp` installed?):\n{stderr}"
    );
    let seen: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        seen["api_keys"],
        serde_json::json!([]),
        "the server got a key"
    );
    Some(seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_is_answered_by_the_clients_model_through_sampling_without_a_key() {
    if let Some(seen) = session("sampling", Transport::Stdio).await {
        answered_through_sampling(&seen);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_works_over_streamable_http_too() {
    if let Some(seen) = session("sampling", Transport::Http).await {
        answered_through_sampling(&seen);
    }
}

/// What a sampled `run` must have done (`sampling_client.py`'s script).
fn answered_through_sampling(seen: &serde_json::Value) {
    let run = &seen["run"];
    assert_eq!(run["is_error"], false, "{seen}");
    let result = &run["structured"]["records"][0];
    assert_eq!(result["type"], "result", "{run}");
    assert_eq!(result["answer"], ORACLE, "{run}");
    // The client reports no token counts: estimated, marked so, and free to the server.
    let total = &result["usage"]["total"];
    assert_eq!(total["calls"], 3, "{result}");
    assert_eq!(total["estimated_calls"], 3, "{result}");
    assert!(total["input_tokens"].as_u64().unwrap() > 0, "{result}");
    assert_eq!(result["cost_usd"], 0.0, "{result}");
    assert_eq!(result["cost_is_partial"], false, "{result}");
    let models = result["usage"]["models"].as_object().unwrap();
    assert_eq!(models["mcp:client"]["calls"], 2, "{result}");
    assert_eq!(models["mcp:hinted-model"]["calls"], 1, "{result}");

    // What the client was asked: two root turns (the RLM system prompt, no hint: the client
    // chooses), one sub-call with the prompt alone and the hint, each with a token cap.
    let requests = seen["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 3, "{requests:?}");
    let (subcalls, roots): (Vec<_>, Vec<_>) = requests
        .iter()
        .partition(|request| request["subcall"] == true);
    assert_eq!((roots.len(), subcalls.len()), (2, 1), "{requests:?}");
    for root in &roots {
        assert_eq!(root["has_system_prompt"], true, "{root}");
        assert_eq!(root["hints"], serde_json::json!([]), "{root}");
        assert_eq!(
            root["stop_sequences"],
            serde_json::json!(["\n```\n"]),
            "{root}"
        );
        assert_eq!(root["roles"][0], "user", "{root}");
        assert!(root["max_tokens"].as_u64().unwrap() > 0, "{root}");
    }
    assert!(
        roots[1]["roles"].as_array().unwrap().len() >= 3,
        "the second turn carries the first reply and its output: {}",
        roots[1]
    );
    assert!(
        roots[1]["roles"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("assistant")),
        "{}",
        roots[1]
    );
    let subcall = subcalls[0];
    assert_eq!(
        subcall["hints"],
        serde_json::json!(["hinted-model"]),
        "{subcall}"
    );
    assert_eq!(subcall["roles"], serde_json::json!(["user"]), "{subcall}");
    assert!(subcall["max_tokens"].as_u64().unwrap() > 0, "{subcall}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_sampling_capability_the_client_model_is_refused_clearly() {
    let Some(seen) = session("plain", Transport::Stdio).await else {
        return;
    };
    let asked = &seen["asked_for_sampling"];
    assert_eq!(asked["is_error"], true, "{seen}");
    let message = asked["text"].as_str().unwrap();
    assert!(
        message.contains("did not declare the `sampling` capability"),
        "{message}"
    );
    assert!(message.starts_with("error: "), "{message}");
    // With no model configured and no sampling, the CLI's own message and hint.
    let no_model = &seen["no_model"];
    assert_eq!(no_model["is_error"], true, "{seen}");
    assert!(
        no_model["text"]
            .as_str()
            .unwrap()
            .contains("no model configured"),
        "{no_model}"
    );
    assert_eq!(
        seen["after"]["is_error"], false,
        "the session goes on: {seen}"
    );
    assert!(
        seen["after"]["text"].as_str().unwrap().contains("csv"),
        "{seen}"
    );
}
