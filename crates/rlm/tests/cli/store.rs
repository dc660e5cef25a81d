//! `rlm load / list / show / peek / grep / chunk / search / delete / status` end to end.

use std::path::Path;

use assert_cmd::Command;

use crate::support::rlm_in;

struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let files = dir.path().join("project");
        std::fs::create_dir_all(files.join("src")).unwrap();
        std::fs::create_dir_all(files.join("docs")).unwrap();
        std::fs::write(
            files.join("src/app.py"),
            "import logging\n\nlog = logging.getLogger(__name__)\n\n\ndef parse_args(argv):\n    return argv[1:]\n",
        )
        .unwrap();
        std::fs::write(
            files.join("docs/guide.md"),
            "# Guide\n\nThe logger writes to stderr.\n\n## Usage\n\nRun the tool with arguments.\n",
        )
        .unwrap();
        std::fs::write(
            files.join("docs/data.csv"),
            "id,name\n1,alpha\n2,\"beta\ngamma\"\n",
        )
        .unwrap();
        std::fs::write(files.join("image.bin"), b"\x00\x01binary").unwrap();
        // An empty configuration file so the user's own settings never leak in.
        std::fs::write(dir.path().join("rlm.toml"), "").unwrap();
        Self { dir }
    }

    fn rlm(&self) -> Command {
        let mut command = rlm_in(self.dir.path());
        command
            .env("RLM_STORE", self.dir.path().join("store"))
            .env("RLM_CONFIG", self.dir.path().join("rlm.toml"))
            .env("RLM_MODELS_DIR", self.dir.path().join("models"));
        command
    }

    fn load(&self) {
        self.rlm().args(["load", "project"]).assert().success();
    }
}

fn stdout(command: &mut Command) -> String {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(r"\(\d+\.\ds\)", "(TIME)");
    settings.add_filter(r"score \d+\.\d+", "score S");
    settings.add_filter(r"chunk\s+\d+", "chunk N");
    settings.add_filter(r"/tmp/[^\s/]+", "[TMP]");
    settings
}

#[test]
fn load_reports_skips_and_a_summary() {
    let fixture = Fixture::new();
    let output = fixture.rlm().args(["load", "project"]).output().unwrap();
    assert!(output.status.success());
    assert!(output.stdout.is_empty(), "results only with --json");
    settings().bind(|| insta::assert_snapshot!(String::from_utf8_lossy(&output.stderr)));
    // Loading again is a no-op.
    let again = fixture
        .rlm()
        .args(["load", "project", "--json"])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(report["loaded"].as_array().unwrap().len(), 0);
    assert_eq!(report["unchanged"].as_array().unwrap().len(), 3);
}

#[test]
fn list_and_search_find_code_identifiers() {
    let fixture = Fixture::new();
    fixture.load();
    let list = stdout(fixture.rlm().arg("list"));
    settings().bind(|| insta::assert_snapshot!("list", list));
    let search = stdout(fixture.rlm().args(["search", "logger"]));
    settings().bind(|| insta::assert_snapshot!("search_logger", search));
}

#[test]
fn search_json_ids_work_with_peek() {
    let fixture = Fixture::new();
    fixture.load();
    let json = stdout(fixture.rlm().args(["search", "parse_args", "--json"]));
    let first: serde_json::Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
    assert_eq!(first["type"], "hit");
    assert_eq!(first["buffer"], "project/src/app.py");
    let id = first["chunk_id"].as_i64().unwrap().to_string();
    let text = stdout(fixture.rlm().args(["peek", "--chunk", &id]));
    assert!(text.contains("def parse_args(argv):"), "{text}");
}

#[test]
fn filters_restrict_results_before_ranking() {
    let fixture = Fixture::new();
    fixture.load();
    let json = stdout(
        fixture
            .rlm()
            .args(["search", "logger", "--path", "*.md", "--json"]),
    );
    let buffers: Vec<String> = json
        .lines()
        .map(|line| {
            serde_json::from_str::<serde_json::Value>(line).unwrap()["buffer"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(buffers, ["project/docs/guide.md"]);
}

#[test]
fn semantic_without_a_model_says_so_once_and_uses_bm25() {
    let fixture = Fixture::new();
    fixture.load();
    let output = fixture
        .rlm()
        .args(["search", "logger", "--mode", "hybrid"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.matches("using BM25").count(), 1, "{stderr}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("project/src/app.py"));
}

#[test]
fn peek_lines_and_bytes() {
    let fixture = Fixture::new();
    fixture.load();
    let lines = stdout(
        fixture
            .rlm()
            .args(["peek", "project/src/app.py", "--lines", "3:3"]),
    );
    assert_eq!(lines, "log = logging.getLogger(__name__)\n");
    let bytes = stdout(
        fixture
            .rlm()
            .args(["peek", "project/src/app.py", "--bytes", "0:6"]),
    );
    assert_eq!(bytes, "import\n");
}

#[test]
fn grep_prints_ripgrep_style_lines() {
    let fixture = Fixture::new();
    fixture.load();
    let out = stdout(fixture.rlm().args([
        "grep",
        "log(ger|ging)",
        "-C",
        "1",
        "--buffer",
        "project/src/app.py",
    ]));
    insta::assert_snapshot!("grep", out);
    fixture
        .rlm()
        .args(["grep", "no_such_thing_anywhere"])
        .assert()
        .code(1);
}

#[test]
fn chunk_previews_without_storing() {
    let fixture = Fixture::new();
    let out = stdout(
        fixture
            .rlm()
            .args(["chunk", "project/docs/guide.md", "--chunk-size", "40"]),
    );
    insta::assert_snapshot!("chunk_guide", out);
    assert!(!fixture.dir.path().join("store").exists());
}

#[test]
fn absurd_flags_are_input_errors() {
    let fixture = Fixture::new();
    let zero = fixture
        .rlm()
        .args(["load", "project", "--chunk-size", "0"])
        .output()
        .unwrap();
    assert_eq!(zero.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&zero.stderr).contains("chunk size must be at least 1"));
    let overlap = fixture
        .rlm()
        .args([
            "chunk",
            "project/docs/guide.md",
            "--chunk-size",
            "10",
            "--overlap",
            "10",
        ])
        .output()
        .unwrap();
    assert_eq!(overlap.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&overlap.stderr).contains("overlap (10) must be smaller"));
    fixture.load();
    let unknown = fixture.rlm().args(["show", "nope"]).output().unwrap();
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("rlm list"));
    let reversed = fixture
        .rlm()
        .args(["peek", "project/src/app.py", "--lines", "5:2"])
        .output()
        .unwrap();
    assert_eq!(reversed.status.code(), Some(2));
    let missing = fixture
        .rlm()
        .args(["load", "does/not/exist"])
        .output()
        .unwrap();
    assert_ne!(missing.status.code(), Some(0));
}

#[test]
fn stdin_loads_under_a_name_and_delete_removes_it() {
    let fixture = Fixture::new();
    fixture
        .rlm()
        .args(["load", "-", "--name", "piped"])
        .write_stdin("piped content here\n")
        .assert()
        .success();
    let show = stdout(fixture.rlm().args(["show", "piped", "--json"]));
    let value: serde_json::Value = serde_json::from_str(&show).unwrap();
    assert_eq!(value["type"], "buffer");
    assert_eq!(value["bytes"], 19);
    assert_eq!(
        show.lines().count(),
        1,
        "show never dumps text unless asked"
    );
    fixture.rlm().args(["delete", "piped"]).assert().success();
    let status = stdout(fixture.rlm().args(["status", "--json"]));
    let value: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert_eq!(value["buffers"], 0);
    assert_eq!(value["indexed_chunks"], 0);
}

#[test]
fn two_processes_loading_at_once_both_succeed() {
    let fixture = Fixture::new();
    let write_set = |name: &str| {
        let dir = fixture.dir.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        for index in 0..30 {
            let body: String = (0..200)
                .map(|line| format!("{name} file {index} line {line}\n"))
                .collect();
            std::fs::write(dir.join(format!("f{index}.txt")), body).unwrap();
        }
    };
    write_set("left");
    write_set("right");
    let spawn = |name: &str| {
        std::process::Command::new(assert_cmd::cargo::cargo_bin("rlm"))
            .current_dir(fixture.dir.path())
            .env("RLM_STORE", fixture.dir.path().join("store"))
            .args(["load", name, "-q"])
            .spawn()
            .unwrap()
    };
    let mut left = spawn("left");
    let mut right = spawn("right");
    assert!(left.wait().unwrap().success());
    assert!(right.wait().unwrap().success());
    let status = stdout(fixture.rlm().args(["status", "--json"]));
    let value: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert_eq!(value["buffers"], 60);
    assert_eq!(value["pending_index_work"], 0);
    assert_eq!(value["chunks"], value["indexed_chunks"]);
}

#[test]
fn read_commands_need_an_existing_store() {
    let fixture = Fixture::new();
    let output = fixture.rlm().arg("list").output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("no store at"));
    assert!(!Path::new(&fixture.dir.path().join("store")).exists());
}

/// With the static model wheel (scripts/test sets RLM_TEST_WHEELS): import, load embeds at
/// once, hybrid search runs without a fallback notice, and `rlm embed` has nothing left to do.
#[test]
fn load_embeds_with_an_imported_static_model_and_hybrid_search_uses_it() {
    let Some(wheels) = std::env::var_os("RLM_TEST_WHEELS").filter(|v| !v.is_empty()) else {
        eprintln!("skipped: RLM_TEST_WHEELS is not set (scripts/test downloads the model wheels)");
        return;
    };
    let wheel = std::fs::read_dir(&wheels)
        .unwrap()
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| {
            path.to_string_lossy()
                .contains("tokenlearn_static_model-0.1.1")
        })
        .expect("RLM_TEST_WHEELS has no tokenlearn_static_model wheel");
    let fixture = Fixture::new();
    fixture
        .rlm()
        .args(["models", "import", "--name", "small"])
        .arg(&wheel)
        .assert()
        .success();
    let load = fixture.rlm().args(["load", "project"]).output().unwrap();
    assert!(load.status.success());
    assert!(String::from_utf8_lossy(&load.stderr).contains("embedded 3 chunks"));
    let status: serde_json::Value =
        serde_json::from_str(&stdout(fixture.rlm().args(["status", "--json"]))).unwrap();
    assert_eq!(status["embedded_chunks"], 3);
    assert!(
        status["embedding_model"]
            .as_str()
            .unwrap()
            .starts_with("small@")
    );
    let search = fixture
        .rlm()
        .args(["search", "logger", "--mode", "hybrid", "--json"])
        .output()
        .unwrap();
    assert!(search.status.success());
    assert!(
        search.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&search.stderr)
    );
    let first: serde_json::Value = serde_json::from_str(
        String::from_utf8_lossy(&search.stdout)
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(first["mode"], "hybrid");
    let again = fixture.rlm().arg("embed").output().unwrap();
    assert!(String::from_utf8_lossy(&again.stderr).contains("embedded 0 chunks"));
}
