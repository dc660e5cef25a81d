//! `rlm prompt build` against a local server's window (llama.cpp `/props`), `--window-tokens`
//! and `--refresh-summary`.

use std::path::Path;

use rlm_fake::{FakeReply, FakeServer};

use crate::support::{output, rlm_with_fake, text, write};

/// 60 messages of about 80 tokens each.
fn history(dir: &Path) {
    let lines: String = (0..60)
        .map(|index| {
            let role = if index % 2 == 0 { "user" } else { "assistant" };
            let content = format!("message-{index:04} ") + &"alpha beta gamma ".repeat(25);
            serde_json::json!({ "role": role, "content": content }).to_string() + "\n"
        })
        .collect();
    write(dir, "chat.jsonl", &lines);
}

fn build(dir: &Path, server: &FakeServer, extra: &[&str]) -> assert_cmd::Command {
    let mut command = rlm_with_fake(dir, server);
    command.args([
        "--json",
        "prompt",
        "build",
        "--history",
        "chat.jsonl",
        "--history-budget",
        "2000",
        "-m",
        "openai:small",
        "-o",
        "prompt.json",
    ]);
    command.args(extra);
    command
}

/// The server's reported window splits the summary into pieces where the default window
/// would send it whole; `--window-tokens` wins over the server; `--refresh-summary` asks
/// again over a cached summary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_summary_fits_the_servers_window_and_can_be_refreshed() {
    let dir = tempfile::tempdir().unwrap();
    history(dir.path());
    let server = FakeServer::start().await.unwrap();
    server.respond_with(|seen| {
        FakeReply::text(format!(
            "summary of {} bytes",
            seen.last_user_message().len()
        ))
    });
    server.set_props(serde_json::json!({"default_generation_settings": {"n_ctx": 4096}}));

    let first = output(build(dir.path(), &server, &[])).await;
    let stderr = text(&first.stderr);
    assert!(first.status.success(), "{stderr}");
    assert!(
        stderr.contains("window 4096 tokens, reported by the server"),
        "{stderr}"
    );
    let plan: serde_json::Value = serde_json::from_slice(&first.stdout).unwrap();
    let calls = plan["model_calls"].as_array().unwrap();
    assert!(calls.len() > 1, "pieces then a merge: {calls:?}");
    // Each call says on stderr when it is sent and when it answered, so minutes of
    // summarizing are not silent.
    for number in 1..=calls.len() {
        let purpose = calls[number - 1]["purpose"].as_str().unwrap();
        assert!(
            stderr.contains(&format!("summary: call {number} ({purpose}) sent, ")),
            "{stderr}"
        );
        assert!(
            stderr.contains(&format!("summary: call {number} ({purpose}) answered in ")),
            "{stderr}"
        );
    }
    assert_eq!(server.props_requests(), 1);

    // A warm build: the summary comes from the cache, and neither the model nor the server
    // is asked (it used to send three probes: /props, /info, /get_server_info).
    let requests = server.request_count();
    let warm = output(build(dir.path(), &server, &[])).await;
    assert!(warm.status.success(), "{}", text(&warm.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&warm.stdout).unwrap();
    assert_eq!(plan["history"]["cache_hit"], true);
    assert_eq!(
        server.props_requests(),
        1,
        "the warm build asked the server"
    );
    assert_eq!(server.request_count(), requests);

    // A window given by flag is used as it is: one call (the default 100,000 holds it all).
    let before = server.request_count();
    let flagged = output(build(
        dir.path(),
        &server,
        &["--window-tokens", "100000", "--refresh-summary"],
    ))
    .await;
    let stderr = text(&flagged.stderr);
    assert!(flagged.status.success(), "{stderr}");
    assert!(
        stderr.contains("window 100000 tokens, configured"),
        "{stderr}"
    );
    let plan: serde_json::Value = serde_json::from_slice(&flagged.stdout).unwrap();
    assert_eq!(plan["history"]["cache_hit"], false, "refreshed, not read");
    assert_eq!(server.request_count() - before, 1);

    let bad = output(build(dir.path(), &server, &["--window-tokens", "0"])).await;
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("--window-tokens"));
}
