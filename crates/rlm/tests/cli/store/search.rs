//! `rlm list` and `rlm search` (BM25): identifiers, filters, ids, snippets.

use super::*;

#[test]
fn list_and_search_find_code_identifiers() {
    let fixture = Fixture::new();
    fixture.load();
    let list = stdout(fixture.rlm().arg("list"));
    settings().bind(|| insta::assert_snapshot!("list", list));
    let search = stdout(fixture.rlm().args(["search", "logger"]));
    settings().bind(|| insta::assert_snapshot!("search_logger", search));
}

/// Columns stay aligned whatever the names: the name, the one column of any width, is last.
#[test]
fn list_columns_stay_aligned_with_long_names() {
    let fixture = Fixture::new();
    fixture.load();
    let long = format!("{}notes.txt", "deep/".repeat(20));
    let dir = fixture.path(&format!("project/{}", long.rsplit_once('/').unwrap().0));
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(fixture.path(&format!("project/{long}")), "x\n").unwrap();
    fixture.rlm().args(["load", "project"]).assert().success();
    let list = stdout(fixture.rlm().arg("list"));
    let columns: Vec<Option<usize>> = list.lines().map(|line| line.find(" line")).collect();
    assert_eq!(columns.len(), 4, "{list}");
    assert!(columns.windows(2).all(|pair| pair[0] == pair[1]), "{list}");
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

    // A filter that matches no buffer at all says so, and shows what names look like.
    let (code, printed, stderr) =
        run(fixture
            .rlm()
            .args(["search", "logger", "--path", "docs/*.md"]));
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(printed, "");
    assert!(
        stderr.contains(
            "the --path filter `docs/*.md` matches no stored buffer; names look like `project/"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("no chunk matches"), "{stderr}");
    // A filter that matches buffers where the query finds nothing keeps the plain note.
    let (_, _, stderr) = run(fixture.rlm().args(["search", "zebra", "--path", "*.md"]));
    assert!(
        stderr.contains("note: no chunk matches the query"),
        "{stderr}"
    );
    // `--store` is taken before the command too, as `--json` and `--config` are.
    let before = stdout(
        crate::support::rlm_in(fixture.dir.path())
            .args(["--store", "store", "search", "logger", "--json"]),
    );
    assert!(before.contains("project/src/app.py"), "{before}");
}

/// 300 nested braces in `--path` made `search` and `grep` panic (exit 101) inside the glob
/// library: now both refuse the glob as an input error, saying why.
#[test]
fn a_path_glob_nested_too_deep_is_an_input_error() {
    let fixture = Fixture::new();
    fixture.load();
    let glob = format!("{}a{}", "{".repeat(300), "}".repeat(300));
    for command in ["search", "grep"] {
        let output = fixture
            .rlm()
            .args([command, "logger", "--path", &glob])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{command}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("is too complex (braces nested 300 deep; at most 32 levels are taken)"),
            "{command}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
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
