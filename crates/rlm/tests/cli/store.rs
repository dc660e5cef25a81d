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

    fn path(&self, relative: &str) -> std::path::PathBuf {
        self.dir.path().join(relative)
    }
}

/// Runs a command and returns (exit code, stdout, stderr).
fn run(command: &mut Command) -> (Option<i32>, String, String) {
    let output = command.output().unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn json_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
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

/// The static model wheel, when scripts/test has set RLM_TEST_WHEELS.
fn static_model_wheel() -> Option<std::path::PathBuf> {
    let Some(wheels) = std::env::var_os("RLM_TEST_WHEELS").filter(|v| !v.is_empty()) else {
        eprintln!("skipped: RLM_TEST_WHEELS is not set (scripts/test downloads the model wheels)");
        return None;
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
    Some(wheel)
}

/// With two imported models and none configured, the store's own model is the choice: load
/// embeds new chunks with it and semantic search uses it (both exited 2 before).
#[test]
fn with_two_models_the_store_uses_the_model_of_its_vectors() {
    let Some(wheel) = static_model_wheel() else {
        return;
    };
    let fixture = Fixture::new();
    let import = |name: &str| {
        fixture
            .rlm()
            .args(["models", "import", "--name", name])
            .arg(&wheel)
            .assert()
            .success();
    };
    import("small");
    fixture.load();
    import("other");
    std::fs::write(fixture.path("project/extra.md"), "# Extra\n\nMore words.\n").unwrap();
    let (code, _, stderr) = run(fixture.rlm().args(["load", "project"]));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("embedded 1 chunk"), "{stderr}");
    let (code, out, stderr) = run(fixture
        .rlm()
        .args(["--json", "search", "logger", "--mode", "semantic"]));
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(json_lines(&out)[0]["mode"], "semantic", "{stderr}");
    // A fresh store and two models: the load succeeds and says why nothing was embedded.
    let (code, _, stderr) = run(fixture.rlm().args(["load", "project", "--store", "fresh"]));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("note: new chunks are not embedded"),
        "{stderr}"
    );
}

/// With the static model wheel (scripts/test sets RLM_TEST_WHEELS): import, load embeds at
/// once, hybrid search runs without a fallback notice, and `rlm embed` has nothing left to do.
#[test]
fn load_embeds_with_an_imported_static_model_and_hybrid_search_uses_it() {
    let Some(wheel) = static_model_wheel() else {
        return;
    };
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

#[test]
fn load_goes_on_past_a_missing_path_and_exits_2() {
    let fixture = Fixture::new();
    let (code, _, stderr) = run(fixture.rlm().args([
        "load",
        "project/docs/guide.md",
        "does/not/exist",
        "project/src",
    ]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("error: cannot read does/not/exist"),
        "{stderr}"
    );
    assert!(stderr.contains("No such file"), "{stderr}");
    let names: Vec<String> = json_lines(&stdout(fixture.rlm().args(["list", "--json"])))
        .iter()
        .map(|buffer| buffer["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["project/docs/guide.md", "project/src/app.py"]);
    // Only missing paths: nothing to load, no store created.
    let (code, _, _) = run(fixture.rlm().args(["load", "nope", "--store", "other"]));
    assert_eq!(code, Some(2));
    assert!(!fixture.path("other").exists());
}

#[test]
fn a_named_binary_file_is_an_error_and_walked_ones_are_summarised() {
    let fixture = Fixture::new();
    let (code, _, stderr) =
        run(fixture
            .rlm()
            .args(["load", "project/image.bin", "project/src/app.py"]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("error: cannot load project/image.bin: binary file (NUL bytes)"),
        "{stderr}"
    );
    assert!(stderr.contains("loaded 1 buffer, "), "{stderr}");
    for number in 0..4 {
        std::fs::write(fixture.path(&format!("project/blob{number}.bin")), b"\0\0").unwrap();
    }
    let (code, _, stderr) = run(fixture.rlm().args(["load", "project"]));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("note: skipped 5 files: binary file (NUL bytes) (-v lists them)"),
        "{stderr}"
    );
    assert!(!stderr.contains("project/blob0.bin"), "{stderr}");
    // Not a terminal: no carriage returns or escape sequences for redrawn progress.
    assert!(!stderr.contains(['\r', '\x1b']), "{stderr:?}");
    let (_, _, verbose) = run(fixture.rlm().args(["load", "project", "-v"]));
    assert!(
        verbose.contains("note: skipped project/blob0.bin: binary file (NUL bytes)"),
        "{verbose}"
    );
}

#[test]
fn a_latin1_log_loads_with_replacement_characters_and_a_note() {
    let fixture = Fixture::new();
    std::fs::write(
        fixture.path("server.log"),
        b"caf\xe9 ouvert\nna\xefve requ\xeate\n",
    )
    .unwrap();
    let (code, _, stderr) = run(fixture.rlm().args(["load", "server.log"]));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains(
            "note: server.log: invalid UTF-8: 3 sequence(s), first at byte 3; \
             stored with replacement characters"
        ),
        "{stderr}"
    );
    let text = stdout(fixture.rlm().args(["peek", "server.log", "--lines", "1:1"]));
    assert_eq!(text, "caf\u{FFFD} ouvert\n");
}

#[test]
fn reloading_a_directory_forgets_deleted_files_and_delete_takes_a_directory() {
    let fixture = Fixture::new();
    fixture.load();
    std::fs::remove_file(fixture.path("project/docs/guide.md")).unwrap();
    let (code, _, stderr) = run(fixture.rlm().args(["load", "project"]));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("1 removed (files gone)"), "{stderr}");
    let search = stdout(fixture.rlm().args(["search", "logger", "--json"]));
    let buffers: Vec<_> = json_lines(&search)
        .iter()
        .map(|hit| hit["buffer"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(buffers, ["project/src/app.py"]);
    let deleted = stdout(fixture.rlm().args(["delete", "project/docs", "--json"]));
    let deleted = json_lines(&deleted);
    assert_eq!(deleted.len(), 1);
    assert_eq!(deleted[0]["type"], "deleted");
    assert_eq!(deleted[0]["name"], "project/docs/data.csv");
    fixture.rlm().args(["delete", "*.py"]).assert().success();
    assert_eq!(stdout(fixture.rlm().args(["list", "--json"])), "");
}

#[test]
fn load_takes_include_exclude_hidden_and_no_ignore() {
    let fixture = Fixture::new();
    std::fs::write(fixture.path("project/.env.example"), "KEY=value\n").unwrap();
    std::fs::write(fixture.path("project/.gitignore"), "*.csv\n").unwrap();
    let names = |args: &[&str]| -> Vec<String> {
        let store = fixture.path(&format!("store-{}", args.join("_").replace('*', "x")));
        let report = stdout(
            fixture
                .rlm()
                .args(["load", "project", "--json", "--store"])
                .arg(&store)
                .args(args),
        );
        let report: serde_json::Value = serde_json::from_str(&report).unwrap();
        let mut names: Vec<String> = report["loaded"]
            .as_array()
            .unwrap()
            .iter()
            .map(|buffer| buffer["name"].as_str().unwrap().to_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(names(&[]), ["project/docs/guide.md", "project/src/app.py"]);
    assert_eq!(names(&["--include", "*.py"]), ["project/src/app.py"]);
    assert_eq!(names(&["--exclude", "docs"]), ["project/src/app.py"]);
    assert_eq!(
        names(&["--no-ignore", "--exclude", "*.md"]),
        ["project/docs/data.csv", "project/src/app.py"]
    );
    assert_eq!(
        names(&["--hidden", "--include", "*.example"]),
        ["project/.env.example"]
    );
}

#[test]
fn stdin_loaded_again_without_a_name_says_it_replaced_the_old_one() {
    let fixture = Fixture::new();
    let load = |text: &str| {
        run(fixture
            .rlm()
            .args(["load", "-"])
            .write_stdin(text.to_owned()))
    };
    let (code, _, first) = load("first text\n");
    assert_eq!(code, Some(0));
    assert!(!first.contains("replaced"), "{first}");
    let (code, _, second) = load("second text\n");
    assert_eq!(code, Some(0));
    assert!(
        second.contains("note: replaced the buffer `stdin` of an earlier load; pass --name NAME"),
        "{second}"
    );
}

#[test]
fn a_buffer_is_named_by_a_unique_suffix_and_an_ambiguous_one_lists_candidates() {
    let fixture = Fixture::new();
    std::fs::create_dir_all(fixture.path("project/tests")).unwrap();
    std::fs::write(
        fixture.path("project/tests/app.py"),
        "def test_app():\n    pass\n",
    )
    .unwrap();
    fixture.load();
    let show = json_lines(&stdout(fixture.rlm().args(["show", "guide.md", "--json"])));
    assert_eq!(show[0]["name"], "project/docs/guide.md");
    let lines = stdout(fixture.rlm().args(["peek", "src/app.py", "--lines", "1:1"]));
    assert_eq!(lines, "import logging\n");
    let grep = stdout(
        fixture
            .rlm()
            .args(["grep", "def", "--buffer", "tests/app.py"]),
    );
    assert_eq!(grep, "project/tests/app.py:1:def test_app():\n");
    let (code, _, stderr) = run(fixture.rlm().args(["show", "app.py"]));
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("\"app.py\" matches 2 buffers: project/src/app.py, project/tests/app.py"),
        "{stderr}"
    );
    assert!(stderr.contains("hint: give more of the path"), "{stderr}");
}

#[test]
fn search_takes_unquoted_words_and_marks_matches_and_peek_clamps_bytes() {
    let fixture = Fixture::new();
    fixture.load();
    // Unquoted words are one query; the snippet marks what matched (offsets in JSON).
    let hits = json_lines(&stdout(
        fixture.rlm().args(["--json", "search", "parse", "args"]),
    ));
    assert_eq!(hits[0]["buffer"], "project/src/app.py");
    let snippet = hits[0]["snippet"].as_str().unwrap();
    assert_eq!(snippet, "def parse_args(argv):");
    let marked: Vec<&str> = hits[0]["highlights"]
        .as_array()
        .unwrap()
        .iter()
        .map(|range| {
            let at = |key: &str| range[key].as_u64().unwrap() as usize;
            &snippet[at("start")..at("end")]
        })
        .collect();
    assert_eq!(marked, ["parse", "args"]);
    // Bytes past the end are clamped, as lines are.
    let tail = stdout(fixture.rlm().args(["peek", "app.py", "--bytes", "85:5000"]));
    assert_eq!(tail, "argv[1:]\n");
}

#[test]
fn grep_takes_fixed_strings_words_names_counts_and_one_sided_context() {
    let fixture = Fixture::new();
    fixture.load();
    let grep = |args: &[&str]| stdout(fixture.rlm().arg("grep").args(args));
    assert_eq!(
        grep(&["-F", "getLogger(__name__)"]),
        "project/src/app.py:3:log = logging.getLogger(__name__)\n"
    );
    assert_eq!(
        grep(&["-w", "log"]),
        "project/src/app.py:3:log = logging.getLogger(__name__)\n"
    );
    assert_eq!(
        grep(&["-l", "logg"]),
        "project/docs/guide.md\nproject/src/app.py\n"
    );
    assert_eq!(
        grep(&["-c", "log"]),
        "project/docs/guide.md:1\nproject/src/app.py:2\n"
    );
    assert_eq!(
        grep(&["-A", "1", "def"]),
        "project/src/app.py:6:def parse_args(argv):\nproject/src/app.py-7-    return argv[1:]\n"
    );
    assert_eq!(
        grep(&["-B", "1", "^def"]),
        "project/src/app.py-5-\nproject/src/app.py:6:def parse_args(argv):\n"
    );
    let coloured = grep(&["--color", "always", "-w", "log"]);
    assert!(
        coloured.contains("\u{1b}[1m\u{1b}[31mlog\u{1b}[0m = logging"),
        "{coloured:?}"
    );
    // Search snippets mark the matched terms the same way.
    let search = stdout(
        fixture
            .rlm()
            .args(["search", "--color", "always", "parse_args"]),
    );
    assert!(
        search.contains("def \u{1b}[1m\u{1b}[31mparse_args\u{1b}[0m(argv):"),
        "{search:?}"
    );
}

#[test]
fn chunk_counts_characters_the_same_in_json_and_text() {
    let fixture = Fixture::new();
    let rows: String = (0..40)
        .map(|row| format!("{row},name number {row}\n"))
        .collect();
    std::fs::write(fixture.path("table.csv"), format!("id,name\n{rows}")).unwrap();
    let args = ["chunk", "table.csv", "--chunk-size", "200"];
    let json = json_lines(&stdout(fixture.rlm().arg("--json").args(args)));
    let text = stdout(fixture.rlm().args(args));
    assert!(json.len() > 1);
    assert!(json.iter().all(|chunk| chunk["header_chars"] == 8));
    let counted: Vec<u64> = text
        .lines()
        .skip(1)
        .map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let at = words.iter().position(|word| *word == "chars").unwrap();
            words[at - 1].parse().unwrap()
        })
        .collect();
    let reported: Vec<u64> = json
        .iter()
        .map(|chunk| chunk["chars"].as_u64().unwrap())
        .collect();
    assert_eq!(counted, reported);
}
