//! `rlm doctor` and `rlm reindex`, and how every store command reacts to a damaged store.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

use crate::support::{rlm_in, text};

struct Damaged {
    dir: tempfile::TempDir,
}

impl Damaged {
    /// A store with 30 loaded files.
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let files = dir.path().join("project");
        std::fs::create_dir_all(&files).unwrap();
        for i in 0..30 {
            std::fs::write(
                files.join(format!("file{i}.txt")),
                format!("line of file {i}\nthe zircon{i} marker\n"),
            )
            .unwrap();
        }
        std::fs::write(dir.path().join("rlm.toml"), "").unwrap();
        let damaged = Self { dir };
        damaged
            .rlm()
            .args(["load", "--no-embed", "project"])
            .assert()
            .success();
        damaged
    }

    fn rlm(&self) -> Command {
        let mut command = rlm_in(self.dir.path());
        command
            .env("RLM_STORE", self.store())
            .env("RLM_CONFIG", self.dir.path().join("rlm.toml"))
            .env("RLM_MODELS_DIR", self.dir.path().join("models"));
        command
    }

    fn store(&self) -> PathBuf {
        self.dir.path().join("store")
    }

    fn run(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let output = self.rlm().args(args).output().unwrap();
        (
            output.status.code(),
            text(&output.stdout),
            text(&output.stderr),
        )
    }
}

fn empty_database(store: &Path) {
    std::fs::write(store.join("store.sqlite"), b"").unwrap();
    for name in ["store.sqlite-wal", "store.sqlite-shm"] {
        let _ = std::fs::remove_file(store.join(name));
    }
}

#[test]
fn a_zero_byte_database_is_reported_not_replaced() {
    let store = Damaged::new();
    empty_database(&store.store());
    for args in [
        &["status"][..],
        &["list"],
        &["search", "zircon3"],
        &["load", "--no-embed", "project"],
    ] {
        let (code, _, stderr) = store.run(args);
        assert_eq!(code, Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains("is damaged: store.sqlite is empty"),
            "{stderr}"
        );
        assert!(stderr.contains("hint: `rlm doctor`"), "{stderr}");
    }
    assert_eq!(
        std::fs::metadata(store.store().join("store.sqlite"))
            .unwrap()
            .len(),
        0,
        "a load must not write a new store over the damaged one"
    );
    let (code, stdout, _) = store.run(&["doctor"]);
    assert_eq!(code, Some(1));
    assert!(stdout.contains("problem  database"), "{stdout}");
}

#[test]
fn a_deleted_index_fails_search_until_reindex_rebuilds_it() {
    let store = Damaged::new();
    std::fs::remove_dir_all(store.store().join("bm25")).unwrap();

    let (code, stdout, stderr) = store.run(&["status"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stdout.contains("OUT OF STEP: 0 documents for 30 chunks"),
        "{stdout}"
    );
    let (code, stdout, stderr) = store.run(&["search", "zircon7"]);
    assert_eq!(code, Some(1), "search must not answer 'no match': {stdout}");
    assert!(
        stderr.contains("the search index holds 0 documents"),
        "{stderr}"
    );
    assert!(stderr.contains("rlm reindex"), "{stderr}");

    let (code, stdout, _) = store.run(&["doctor"]);
    assert_eq!(code, Some(1));
    assert!(stdout.contains("problem  bm25 index"), "{stdout}");
    assert!(stdout.contains("fix: run `rlm reindex`"), "{stdout}");

    let (code, _, stderr) = store.run(&["reindex"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("reindexed 30 chunks of 30 buffers"),
        "{stderr}"
    );
    let (code, stdout, _) = store.run(&["search", "zircon7"]);
    assert_eq!(code, Some(0));
    assert!(stdout.contains("file7.txt"), "{stdout}");
    let (code, stdout, _) = store.run(&["status"]);
    assert_eq!(code, Some(0));
    assert!(stdout.contains("index state:    up to date"), "{stdout}");
}

#[test]
fn a_corrupt_index_is_rebuilt_by_reindex() {
    let store = Damaged::new();
    std::fs::write(store.store().join("bm25/meta.json"), "garbage").unwrap();
    let (code, _, stderr) = store.run(&["search", "zircon2"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("cannot read the search index"), "{stderr}");
    assert!(stderr.contains("rlm reindex"), "{stderr}");
    let (code, _, stderr) = store.run(&["load", "--no-embed", "project"]);
    assert_eq!(code, Some(1), "load must not report success: {stderr}");

    store.rlm().arg("reindex").assert().success();
    let (code, stdout, _) = store.run(&["search", "zircon2"]);
    assert_eq!(code, Some(0));
    assert!(stdout.contains("file2.txt"), "{stdout}");
}

#[test]
fn doctor_lists_every_check_as_json_and_exits_by_the_result() {
    let store = Damaged::new();
    let (code, stdout, _) = store.run(&["--json", "doctor"]);
    assert_eq!(code, Some(0));
    let records: Vec<serde_json::Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(records.len(), 9, "{stdout}");
    assert!(
        records[..8]
            .iter()
            .all(|record| record["type"] == "check" && record["ok"] == true)
    );
    assert_eq!(records[8]["type"], "summary");
    assert_eq!(records[8]["problems"], 0);

    let spool = store.store().join(".reader-77-0.spool");
    std::fs::write(&spool, vec![b'x'; 1000]).unwrap();
    let (code, stdout, _) = store.run(&["--json", "doctor"]);
    assert_eq!(code, Some(1));
    let temporary: serde_json::Value = stdout
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .find(|record| record["name"] == "temporary files")
        .unwrap();
    assert_eq!(temporary["ok"], false);
    assert!(temporary["detail"].as_str().unwrap().contains("1000 bytes"));
    assert!(spool.exists(), "doctor changes nothing");

    // Any command that opens the store removes the leftovers.
    store.rlm().arg("status").assert().success();
    assert!(!spool.exists());
    store.rlm().arg("doctor").assert().success();
}

#[test]
fn doctor_and_reindex_without_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout) = {
        let output = rlm_in(dir.path())
            .args(["doctor", "--store", "absent"])
            .output()
            .unwrap();
        (output.status.code(), text(&output.stdout))
    };
    assert_eq!(code, Some(1));
    assert!(stdout.contains("no store in absent"), "{stdout}");
    assert!(!dir.path().join("absent").exists());
    let output = rlm_in(dir.path())
        .args(["reindex", "--store", "absent"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("no store at absent"));
}
