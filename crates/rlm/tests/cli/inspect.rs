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
