//! `rlm load`: what is loaded, skipped and refused, and what it says about it.

use super::*;

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
    // Without --json the load counts what it wrote and left alone rather than listing it:
    // the closing line says the same.
    std::fs::write(
        fixture.path("project/docs/guide.md"),
        "# Guide\n\nrewritten\n",
    )
    .unwrap();
    let (code, stdout, stderr) = run(fixture.rlm().args(["load", "project"]));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.is_empty());
    assert!(
        stderr.contains("loaded 1 buffer, 19 B, 1 chunk; 2 unchanged, 1 skipped"),
        "{stderr}"
    );
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
fn max_file_size_skips_larger_files_and_absurd_sizes_are_refused() {
    let fixture = Fixture::new();
    std::fs::write(fixture.path("big.log"), "x".repeat(5000) + "\n").unwrap();
    for absurd in ["0", "-1", "3GiB", "ten"] {
        let flag = format!("--max-file-size={absurd}");
        let (code, _, stderr) = run(fixture.rlm().args(["load", "project", &flag]));
        assert_eq!(code, Some(2), "{absurd}: {stderr}");
        assert!(
            stderr.contains("--max-file-size") || stderr.contains("buffer limit"),
            "{absurd}: {stderr}"
        );
        assert!(
            !fixture.path("store").exists(),
            "{absurd}: a store was created"
        );
    }
    let (code, _, stderr) = run(fixture.rlm().args([
        "load",
        "big.log",
        "project/src/app.py",
        "--max-file-size",
        "4KB",
    ]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "error: cannot load big.log: larger than the 4000-byte limit set for this load"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("loaded 1 buffer, "), "{stderr}");
    let (code, _, stderr) = run(fixture.rlm().args(["load", "big.log"]));
    assert_eq!(code, Some(0), "without the flag the file loads: {stderr}");
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

/// Ctrl-C during a load stops it, says that nothing of it was stored and how to go on, and
/// leaves the store as it was.
#[test]
fn ctrl_c_during_a_load_says_what_was_kept() {
    use std::io::Write as _;
    let fixture = Fixture::new();
    fixture.load();
    let mut command = crate::support::rlm_store_process(fixture.dir.path());
    let mut child = command
        .args(["load", "-", "--name", "slow"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Standard input stays open: the load is still reading when the signal comes.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"a first line of a long stream\n").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let output = child.wait_with_output().unwrap();
    drop(stdin);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted: nothing of this load was stored"),
        "{stderr}"
    );
    let listed = stdout(fixture.rlm().args(["list"]));
    assert!(!listed.contains("slow"), "{listed}");
    assert!(listed.contains("project/src/app.py"), "{listed}");
}

/// `[store] url` in `rlm.toml` names the store when neither `--store` nor `RLM_STORE` does
/// (they win over it), and `rlm config show` says which file set it.
#[test]
fn the_configuration_file_can_name_the_store() {
    let fixture = Fixture::new();
    let dir = fixture.dir.path();
    std::fs::write(dir.join("rlm.toml"), "[store]\nurl = \"team-store\"\n").unwrap();
    let rlm = || crate::support::rlm_in(dir);
    let (code, _, stderr) = run(rlm().args(["load", "project/docs/guide.md", "-q"]));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(dir.join("team-store").is_dir());
    assert!(!dir.join(".rlm").exists());
    let listed = stdout(rlm().args(["list", "--json"]));
    assert!(listed.contains("project/docs/guide.md"), "{listed}");

    let shown = json_lines(&stdout(rlm().args(["config", "show", "--json"])));
    let store = shown.iter().find(|line| line["key"] == "store.url");
    assert!(store.is_some(), "no store.url in {shown:?}");
    let store = store.unwrap();
    assert_eq!(store["value"], "team-store", "{store}");
    assert!(
        store["path"].as_str().unwrap().ends_with("rlm.toml"),
        "{store}"
    );

    let (code, _, stderr) =
        run(rlm()
            .env("RLM_STORE", dir.join("other"))
            .args(["load", "project/src/app.py", "-q"]));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(dir.join("other").is_dir());
    let listed = stdout(rlm().args(["list", "--json"]));
    assert!(!listed.contains("app.py"), "{listed}");
}
