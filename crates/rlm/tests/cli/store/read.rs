//! `rlm peek`, `show` and `chunk`: reading buffers and chunk previews.

use super::*;

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
fn read_commands_need_an_existing_store() {
    let fixture = Fixture::new();
    let output = fixture.rlm().arg("list").output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("no store at"));
    assert!(!Path::new(&fixture.dir.path().join("store")).exists());
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
