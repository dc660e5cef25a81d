//! `.gz` files read as the text they hold, by every command that reads files: `inspect`
//! describes the decompressed text, `load` stores it (and says so), `run --context-file` gives
//! it to the model; damaged gzip data is a clear error for that file alone.

use std::io::Write as _;
use std::path::Path;

use rlm_fake::{FakeReply, FakeServer};

use crate::support::{output, rlm_with_fake, rlm_with_store, text};

fn write_gzip(dir: &Path, name: &str, content: &str) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(content.as_bytes()).unwrap();
    let bytes = encoder.finish().unwrap();
    std::fs::write(dir.join(name), &bytes).unwrap();
    bytes
}

fn log() -> String {
    let mut log: String = (1..=300)
        .map(|i| format!("2026-01-01 12:00:{i} INFO request {i} served\n"))
        .collect();
    log.push_str("2026-01-01 ERROR ORCHID-7291 failed\n");
    log
}

#[test]
fn inspect_and_load_read_gzip_files_decompressed() {
    let dir = tempfile::tempdir().unwrap();
    let log = log();
    let compressed = write_gzip(dir.path(), "app.log.gz", &log);
    std::fs::write(dir.path().join("damaged.gz"), &compressed[..100]).unwrap();

    let inspected = rlm_with_store(dir.path())
        .args(["--json", "inspect", "app.log.gz"])
        .output()
        .unwrap();
    assert_eq!(
        inspected.status.code(),
        Some(0),
        "{}",
        text(&inspected.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&inspected.stdout).unwrap();
    assert_eq!(metadata["bytes"], log.len());
    assert_eq!(metadata["lines"], 301);
    assert!(
        metadata["notes"][0].as_str().unwrap().starts_with("gzip: "),
        "{metadata}"
    );

    let damaged = rlm_with_store(dir.path())
        .args(["inspect", "damaged.gz"])
        .output()
        .unwrap();
    let stderr = text(&damaged.stderr);
    assert_eq!(damaged.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cannot read damaged.gz"), "{stderr}");
    assert!(
        stderr.contains("gzip data that does not decompress"),
        "{stderr}"
    );

    // The damaged file is skipped with its reason; the good one is stored and searchable.
    let loaded = rlm_with_store(dir.path())
        .args(["load", "app.log.gz", "damaged.gz"])
        .output()
        .unwrap();
    let stderr = text(&loaded.stderr);
    assert_eq!(loaded.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("app.log.gz: decompressed from gzip ("),
        "{stderr}"
    );
    assert!(
        stderr.contains("cannot load damaged.gz: gzip data that does not decompress"),
        "{stderr}"
    );
    let grep = rlm_with_store(dir.path())
        .args(["grep", "ORCHID-[0-9]+"])
        .output()
        .unwrap();
    assert_eq!(
        text(&grep.stdout),
        "app.log.gz:301:2026-01-01 ERROR ORCHID-7291 failed\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_reads_a_gzip_context_file_decompressed() {
    let dir = tempfile::tempdir().unwrap();
    let log = log();
    write_gzip(dir.path(), "app.log.gz", &log);
    let server = FakeServer::start().await.unwrap();
    server.script(
        "root",
        [
            FakeReply::text(
                "```repl\nhit = [line for line in context.splitlines() if 'ERROR' in line][0]\nprint(len(context))\n```",
            ),
            FakeReply::text("FINAL_VAR(hit)"),
        ],
    );
    let mut command = rlm_with_fake(dir.path(), &server);
    command.args([
        "run",
        "--no-log",
        "--model",
        "openai:root",
        "--context-file",
        "app.log.gz",
        "Which code failed?",
    ]);
    let ran = output(command).await;
    assert_eq!(ran.status.code(), Some(0), "{}", text(&ran.stderr));
    assert_eq!(text(&ran.stdout), "2026-01-01 ERROR ORCHID-7291 failed\n");
    let requests = server.requests_for("root");
    let feedback = requests[1].last_user_message();
    assert!(feedback.contains(&log.len().to_string()), "{feedback}");
}
