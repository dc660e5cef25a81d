//! The store commands, `rlm run --store` and `rlm store copy` on a PostgreSQL store, against
//! the test server (`RLM_TEST_POSTGRES_URL`, started by `scripts/test`; the tests skip with a
//! notice without it): the same output as on a local store, and the password nowhere.

use std::path::Path;

use rlm_fake::FakeReply;

use crate::support::{output, rlm_store_process, scripted, text, write};

/// The server's URL without its password (which goes in `PGPASSWORD`), with `schema`, and the
/// password.
fn server(schema: &str) -> Option<(String, String)> {
    let Ok(url) = std::env::var("RLM_TEST_POSTGRES_URL") else {
        eprintln!("notice: RLM_TEST_POSTGRES_URL is unset; skipping the PostgreSQL CLI tests");
        return None;
    };
    let (scheme, rest) = url.split_once("://").unwrap();
    let (userinfo, rest) = rest.split_once('@').unwrap();
    let (user, password) = userinfo.split_once(':').unwrap();
    let separator = if rest.contains('?') { '&' } else { '?' };
    let schema = format!("{schema}_{}", std::process::id());
    Some((
        format!("{scheme}://{user}@{rest}{separator}schema={schema}"),
        password.to_owned(),
    ))
}

/// `rlm ARGS` over `store` (a directory or a URL), with the password in the environment.
fn rlm(dir: &Path, store: &str, password: &str, args: &[&str]) -> (i32, String, String) {
    let mut command = rlm_store_process(dir);
    command
        .env("RLM_STORE", store)
        .env("PGPASSWORD", password)
        .args(args);
    let result = command.output().unwrap();
    let (stdout, stderr) = (text(&result.stdout), text(&result.stderr));
    assert!(
        !stdout.contains(password) && !stderr.contains(password),
        "the password shows in `rlm {args:?}`: {stdout}{stderr}"
    );
    (result.status.code().unwrap_or(-1), stdout, stderr)
}

fn files(dir: &Path) {
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
}

#[test]
fn every_store_command_answers_on_postgres_as_on_a_directory() {
    let Some((url, password)) = server("cli") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    files(dir.path());
    let local = dir.path().join("local").to_string_lossy().into_owned();
    for store in [&local, &url] {
        let (code, _, stderr) = rlm(
            dir.path(),
            store,
            &password,
            &["load", "--no-embed", "app.log", "notes.md"],
        );
        assert_eq!(code, 0, "{stderr}");
    }
    for args in [
        &["list", "--json"][..],
        &["search", "disk full", "--json"],
        &["search", "backup", "--path", "*.md"],
        &["grep", "ERROR", "-C", "1"],
        &["grep", "-i", "FALCON", "--json"],
        &["peek", "app.log", "--lines", "2:3"],
        &["show", "notes.md", "--chunks"],
        &["delete", "notes.md"],
        &["list"],
        &["search", "falcon"],
    ] {
        let (local_code, local_out, _) = rlm(dir.path(), &local, &password, args);
        let (code, out, stderr) = rlm(dir.path(), &url, &password, args);
        let local_out = local_out.replace(&local, "STORE");
        let without_times = |text: &str| -> String {
            text.lines()
                .map(
                    |line| match serde_json::from_str::<serde_json::Value>(line) {
                        Ok(mut value) => {
                            if let Some(object) = value.as_object_mut() {
                                object.remove("loaded_at");
                            }
                            value.to_string()
                        }
                        Err(_) => line.to_owned(),
                    },
                )
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(
            (code, without_times(&out)),
            (local_code, without_times(&local_out)),
            "rlm {args:?}: {stderr}"
        );
    }
    let (code, status, _) = rlm(dir.path(), &url, &password, &["status"]);
    assert_eq!(code, 0);
    assert!(status.contains("buffers:        1"), "{status}");
    assert!(status.contains("?schema=cli_"), "{status}");
    let (code, doctor, _) = rlm(dir.path(), &url, &password, &["doctor"]);
    assert_eq!(code, 0, "{doctor}");
    assert!(doctor.contains("pgvector"), "{doctor}");
    let (code, _, stderr) = rlm(dir.path(), &url, &password, &["reindex"]);
    assert_eq!(code, 0, "{stderr}");

    // Copied back to a directory, the store lists as it does in PostgreSQL.
    let copy = dir.path().join("copy").to_string_lossy().into_owned();
    let (code, out, stderr) = rlm(
        dir.path(),
        &local,
        &password,
        &["store", "copy", &url, &copy],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        out.starts_with("copied 1 buffers (1 chunks, 0 vectors)"),
        "{out}"
    );
    assert_eq!(
        rlm(dir.path(), &copy, &password, &["list"]).1,
        rlm(dir.path(), &url, &password, &["list"]).1
    );
}

#[test]
fn a_wrong_password_or_a_missing_store_is_a_clear_error() {
    let Some((url, _)) = server("cli_bad") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (code, _, stderr) = rlm(dir.path(), &url, "zq-97531-wr0ng", &["list"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("refused the password of user \"rlm\""),
        "{stderr}"
    );
    assert!(stderr.contains("hint: "), "{stderr}");
    let (_, password) = server("cli_bad").unwrap();
    let (code, _, stderr) = rlm(dir.path(), &url, &password, &["search", "anything"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("error: no store at postgres://rlm@"),
        "{stderr}"
    );
    let (code, _, stderr) = rlm(dir.path(), "postgres://db.example/x", &password, &["list"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("names no user"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_over_a_postgres_store_calls_the_same_host_functions() {
    let Some((url, password)) = server("cli_run") else {
        return;
    };
    let code = "```repl\nhits = search(\"backup falcon\", k=3)\nerrors = grep(\"ERROR\", buffer=\"app.log\")\nresult = hits[0][\"buffer\"] + \" \" + str(len(errors[\"matches\"])) + \" \" + read(\"app.log\", 2, 2).strip()\nFINAL_VAR(\"result\")\n```";
    let (dir, server) = scripted("root", [FakeReply::text(code)]).await;
    files(dir.path());
    let (status, _, stderr) = rlm(
        dir.path(),
        &url,
        &password,
        &["load", "--no-embed", "app.log", "notes.md"],
    );
    assert_eq!(status, 0, "{stderr}");
    let mut command = rlm_store_process(dir.path());
    crate::support::with_fake(&mut command, &server);
    command
        .env("RLM_STORE", &url)
        .env("PGPASSWORD", &password)
        .args([
            "run",
            "--log",
            "logs",
            "--model",
            "openai:root",
            "--store",
            "Where are backups?",
        ]);
    let result = output(assert_cmd::Command::from_std(command)).await;
    assert_eq!(result.status.code(), Some(0), "{}", text(&result.stderr));
    assert_eq!(
        text(&result.stdout),
        "notes.md 2 2024-01-02 ERROR disk full on /var\n"
    );
}

/// The models of a query over [`files`]: a plan searching for "disk full", extractors
/// reporting every chunk they are shown, a report counting the findings.
fn answer_disk_query(seen: &rlm_fake::SeenRequest) -> FakeReply {
    crate::support::answer_query_about(
        seen,
        "disk full",
        "the disk filled, says chunk",
        "The disk filled",
    )
}

/// `rlm query` and the MCP server's tools over a PostgreSQL store answer as over a directory
/// loaded with the same files: the same report and findings, the same search hits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_and_mcp_answer_on_postgres_as_on_a_directory() {
    let Some((url, password)) = server("cli_query") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let fake = rlm_fake::FakeServer::start().await.unwrap();
    fake.respond_with(answer_disk_query);
    files(dir.path());
    let local = dir.path().join("local-store").display().to_string();
    let mut answers = Vec::new();
    for store in [&local, &url] {
        let (status, _, stderr) = rlm(
            dir.path(),
            store,
            &password,
            &["load", "--no-embed", "app.log", "notes.md"],
        );
        assert_eq!(status, 0, "{stderr}");
        let mut command = rlm_store_process(dir.path());
        crate::support::with_fake(&mut command, &fake);
        command
            .env("RLM_STORE", store)
            .env("PGPASSWORD", &password)
            .args([
                "--json",
                "query",
                "--model",
                "openai:root",
                "--subcall-model",
                "openai:sub",
                "--no-log",
                "--max-tool-rounds",
                "0",
                "Why did the disk fill?",
            ]);
        let result = output(assert_cmd::Command::from_std(command)).await;
        let stdout = text(&result.stdout);
        assert_eq!(result.status.code(), Some(0), "{}", text(&result.stderr));
        assert!(!stdout.contains(&password));
        let record: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        answers.push(record);
    }
    for field in [
        "status",
        "report",
        "findings",
        "chunks_selected",
        "chunks_analyzed",
    ] {
        assert_eq!(answers[0][field], answers[1][field], "{field}");
    }
    assert_eq!(answers[0]["status"], "answered");
    assert!(
        answers[1]["report"].as_str().unwrap().contains("findings"),
        "{}",
        answers[1]
    );

    // The MCP server started over each store: the same search hits.
    let mut hits = Vec::new();
    for store in [&local, &url] {
        let mut command = rlm_store_process(dir.path());
        command
            .env("RLM_STORE", store)
            .env("PGPASSWORD", &password)
            .arg("mcp");
        let mut session = crate::mcp_session::Session::start(&mut command);
        let found = session.call(
            "search",
            serde_json::json!({ "query": "disk full", "k": 3 }),
        );
        assert_eq!(found["isError"], false, "{found}");
        assert!(!found.to_string().contains(&password));
        hits.push(found["structuredContent"]["records"].clone());
    }
    assert!(
        hits[0].as_array().is_some_and(|hits| !hits.is_empty()),
        "{}",
        hits[0]
    );
    assert_eq!(hits[0], hits[1]);
}
