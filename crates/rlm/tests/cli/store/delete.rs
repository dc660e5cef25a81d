//! `rlm delete` and re-loading: the store follows the file system.

use super::*;

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
fn a_glob_that_matches_nothing_is_a_note_and_the_rest_is_deleted() {
    let fixture = Fixture::new();
    fixture.load();
    let (code, printed, stderr) =
        run(fixture
            .rlm()
            .args(["delete", "project/src/app.py", "*.tmp", "--json"]));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("note: no buffer matches `*.tmp`"),
        "{stderr}"
    );
    let deleted = json_lines(&printed);
    assert_eq!(deleted.len(), 1, "{printed}");
    assert_eq!(deleted[0]["name"], "project/src/app.py");
    // Nothing matched at all: an input error naming the patterns, nothing deleted.
    let (code, _, stderr) = run(fixture.rlm().args(["delete", "*.tmp", "*.bak"]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("no buffer matches `*.tmp`, `*.bak`"),
        "{stderr}"
    );
    // A plain name that names nothing is still refused, and deletes nothing else.
    let (code, _, stderr) = run(fixture.rlm().args(["delete", "project/docs", "nope.md"]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("no buffer named \"nope.md\""), "{stderr}");
    assert!(stdout(fixture.rlm().args(["list"])).contains("project/docs/data.csv"));
}
