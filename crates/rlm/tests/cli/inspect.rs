//! `rlm inspect` (and the `records` chunker behind `rlm chunk`) on inputs a new user brings:
//! stray quotes in tables, wide JSON maps, fields that appear late, odd files.

use crate::support::{rlm_in as rlm, stdout_of, write};

#[test]
fn a_quote_inside_an_unquoted_csv_field_is_an_ordinary_character() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "inch.csv",
        "item,size\nmonitor,27\" wide\ncable,2 m\nmouse,small\n",
    );
    let out = stdout_of(
        rlm(dir.path())
            .args(["inspect", "inch.csv"])
            .assert()
            .success(),
    );
    insta::assert_snapshot!(out, @r#"
    [Context available in context]
      Source: inch.csv
      Format: CSV (delimiter-separated values), delimiter ','
      Size: 49 chars, 4 lines
      Records: 3 (header excluded)
      Columns: item, size
      Sample: monitor,27" wide
    "#);
}

/// A big TSV without quoting whose field starts with a quote that never closes: records are
/// counted, and chunked, by lines from there, and the model is told so.
#[test]
fn a_tsv_quote_that_never_closes_falls_back_to_lines_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let mut content = String::from("package\tdescription\n");
    content.push_str("tape\t\"Best\" tape\n");
    content.push_str("screen\t\"27 inch, matte\n");
    for index in 0..20_000 {
        content.push_str(&format!("pkg{index}\tplain description {index}\n"));
    }
    write(dir.path(), "packages.tsv", &content);
    let assert = rlm(dir.path())
        .args(["--json", "inspect", "packages.tsv"])
        .assert()
        .success();
    let metadata: serde_json::Value = serde_json::from_str(&stdout_of(assert)).unwrap();
    assert_eq!(metadata["records"], 20_002);
    assert_eq!(
        metadata["notes"],
        serde_json::json!([
            "quotes do not balance: a quoted field opened on line 3 does not close within 128 KiB, so the rows it would span are counted as lines"
        ])
    );

    let assert = rlm(dir.path())
        .args(["--json", "chunk", "packages.tsv", "--chunk-size", "2000"])
        .assert()
        .success();
    let chunks: Vec<serde_json::Value> = stdout_of(assert)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let largest = chunks
        .iter()
        .map(|chunk| chunk["chars"].as_u64().unwrap())
        .max()
        .unwrap();
    // Each chunk is at most 2,000 characters plus the header row it carries.
    assert!(largest <= 2000 + 20, "a chunk of {largest} chars");
    assert_eq!(chunks.last().unwrap()["lines"][1], 20_003);
}

#[test]
fn every_top_level_key_is_listed_before_the_paths_of_a_wide_map() {
    let dir = tempfile::tempdir().unwrap();
    let properties: Vec<String> = (0..600)
        .map(|index| format!("\"p{index}\": {{\"type\": \"string\"}}"))
        .collect();
    let schema = format!(
        "{{\"$schema\": \"s\", \"$id\": \"i\", \"title\": \"t\", \"type\": \"object\", \"properties\": {{{}}}, \"required\": [], \"definitions\": {{}}, \"examples\": []}}",
        properties.join(", ")
    );
    write(dir.path(), "schema.json", &schema);
    let assert = rlm(dir.path())
        .args(["--json", "inspect", "schema.json"])
        .assert()
        .success();
    let metadata: serde_json::Value = serde_json::from_str(&stdout_of(assert)).unwrap();
    let fields = metadata["fields"].as_array().unwrap();
    assert_eq!(
        fields[..9],
        [
            "$schema",
            "$id",
            "title",
            "type",
            "properties",
            "required",
            "definitions",
            "examples",
            "properties.p0"
        ]
    );
    assert_eq!(fields.len(), 500);
    assert_eq!(metadata["fields_truncated"], true);
    assert_eq!(metadata["fields_omitted"], 600 - 492);

    let out = stdout_of(
        rlm(dir.path())
            .args(["inspect", "schema.json"])
            .assert()
            .success(),
    );
    assert!(
        out.contains("  Fields: $schema, $id, title, type, properties, required, definitions, examples, properties.p0, "),
        "{out}"
    );
    assert!(out.contains(", … (+568 more)\n"), "{out}");
}

#[test]
fn fields_that_appear_only_late_in_a_file_or_stream_are_listed() {
    let dir = tempfile::tempdir().unwrap();
    // Over 1 MiB, so stdin is sampled before its size is known.
    let mut content = String::new();
    for index in 0..40_000 {
        let late = if index >= 20_000 {
            ",\"edited\":true"
        } else {
            ""
        };
        content.push_str(&format!("{{\"id\":{index},\"text\":\"post\"{late}}}\n"));
    }
    assert!(content.len() > 1 << 20);
    write(dir.path(), "posts.ndjson", &content);
    let from_file = stdout_of(
        rlm(dir.path())
            .args(["inspect", "posts.ndjson"])
            .assert()
            .success(),
    );
    assert!(
        from_file.contains("  Fields: id, text, edited\n"),
        "{from_file}"
    );
    let from_stdin = stdout_of(
        rlm(dir.path())
            .args(["inspect", "-", "--name", "posts.ndjson"])
            .write_stdin(content)
            .assert()
            .success(),
    );
    assert!(
        from_stdin.contains("  Fields: id, text, edited\n"),
        "{from_stdin}"
    );
}

#[test]
fn ndjson_with_one_bad_line_in_three_is_ndjson_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "events.ndjson",
        "{\"a\":1}\n{\"b\":2}\n{\"c\": oops}\n",
    );
    let out = stdout_of(
        rlm(dir.path())
            .args(["inspect", "events.ndjson"])
            .assert()
            .success(),
    );
    insta::assert_snapshot!(out, @r#"
    [Context available in context]
      Source: events.ndjson
      Format: NDJSON (newline-delimited JSON)
      Size: 28 chars, 3 lines
      Records: 3
      Fields: a, b
      Note: 1 of the first 3 lines are not valid JSON
      Sample: {"a":1}
    "#);
}

#[test]
fn a_ragged_csv_is_sniffed_as_a_file_and_on_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let table = "id,name,city,note\n1,ann,oslo,x\n2,bob,rome\n3,cy,paris,big, old\n4,di,bonn,y\n5,ed,lima,z\n";
    write(dir.path(), "people.txt", table);
    let out = stdout_of(
        rlm(dir.path())
            .args(["inspect", "people.txt"])
            .assert()
            .success(),
    );
    insta::assert_snapshot!(out, @r#"
    [Context available in context]
      Source: people.txt
      Format: CSV (delimiter-separated values), delimiter ','
      Size: 86 chars, 6 lines
      Records: 5 (header excluded)
      Columns: id, name, city, note
      Note: the name suggests plain text but the content is CSV (delimiter-separated values)
      Note: rows have different numbers of fields: 2 of the first 6 rows differ from the header's 4
      Sample: 1,ann,oslo,x
    "#);
    let assert = rlm(dir.path())
        .args(["--json", "inspect", "-"])
        .write_stdin(table)
        .assert()
        .success();
    let metadata: serde_json::Value = serde_json::from_str(&stdout_of(assert)).unwrap();
    assert_eq!(
        (&metadata["format"], &metadata["records"]),
        (&serde_json::json!("csv"), &serde_json::json!(5))
    );
}

/// `rlm` run in `dir` with stdin from `stdin`, as `rlm_in` sets it up otherwise.
#[cfg(unix)]
fn rlm_with_stdin(dir: &std::path::Path, stdin: std::fs::File) -> std::process::Command {
    let mut command = std::process::Command::new(rlm(dir).get_program());
    command
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("XDG_CONFIG_HOME", dir.join("xdg"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .stdin(stdin)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    command
}

/// Waits at most 30 s: the point is that the command ends.
#[cfg(unix)]
fn output_within_30s(mut command: std::process::Command) -> std::process::Output {
    let mut child = command.spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut killed = false;
    while child.try_wait().unwrap().is_none() && !killed {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            killed = true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!killed, "still running after 30 s");
    child.wait_with_output().unwrap()
}

#[cfg(unix)]
#[test]
fn devices_are_refused_not_read_forever() {
    let dir = tempfile::tempdir().unwrap();
    let assert = rlm(dir.path())
        .args(["inspect", "/dev/zero"])
        .timeout(std::time::Duration::from_secs(30))
        .assert()
        .code(2);
    let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.starts_with("error: /dev/zero is a character device, not a file\n"),
        "{stderr}"
    );
    assert!(stderr.contains("hint: "), "{stderr}");

    let zero = std::fs::File::open("/dev/zero").unwrap();
    let mut command = rlm_with_stdin(dir.path(), zero);
    command.args(["inspect", "-"]);
    let output = output_within_30s(command);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("error: standard input is a character device, not a file\n"),
        "{stderr}"
    );

    // A pipe is read to its end.
    let assert = rlm(dir.path())
        .args(["inspect", "-"])
        .write_stdin("piped text\n")
        .assert()
        .success();
    assert!(stdout_of(assert).contains("Size: 11 chars, 1 line"));
}
