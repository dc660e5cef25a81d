//! Every format, by extension and by sniffing, through the public API.

use std::io::Write as _;

use rlm_context::{
    AnalyzeOptions, ContextMetadata, Format, analyze_bytes, analyze_path, analyze_reader,
};

fn analyze(content: &str, name: Option<&str>) -> ContextMetadata {
    analyze_bytes(content.as_bytes(), name, &AnalyzeOptions::default())
}

#[test]
fn ndjson_counts_records_and_unions_sparse_fields_in_order() {
    let content = concat!(
        "{\"author\":\"a\",\"text\":\"hi\",\"authorProfile\":{\"displayName\":\"A\",\"x\":{\"deep\":1}}}\n",
        "\n",
        "{\"author\":\"b\",\"text\":\"yo\",\"hashtags\":[\"x\"]}\n",
        "{\"author\":\"c\",\"embed\":{\"external\":{\"uri\":\"u\"}}}\n",
    );
    for name in [Some("feed.ndjson"), Some("feed.jsonl"), None] {
        let metadata = analyze(content, name);
        assert_eq!(metadata.format, Format::Ndjson, "{name:?}");
        assert_eq!(metadata.records, Some(3));
        assert_eq!(metadata.lines, 4);
        assert_eq!(
            metadata.fields,
            [
                "author",
                "text",
                "authorProfile",
                "hashtags",
                "embed",
                "authorProfile.displayName",
                "authorProfile.x",
                "embed.external"
            ]
        );
        assert!(
            metadata
                .sample
                .as_deref()
                .unwrap()
                .starts_with("{\"author\":\"a\"")
        );
    }
}

#[test]
fn fields_seen_only_late_in_a_file_are_found() {
    // 5,000 records; `late` appears from record 1,500 on, `rare` in 100 records near the end.
    let mut ndjson = String::new();
    for index in 0..5_000 {
        let late = if index >= 1_500 { ",\"late\":true" } else { "" };
        let rare = if (4_700..4_800).contains(&index) {
            ",\"rare\":{\"x\":1}"
        } else {
            ""
        };
        ndjson.push_str(&format!("{{\"id\":{index}{late}{rare}}}\n"));
    }
    let expected = ["id", "late", "rare", "rare.x"];
    let known_size = analyze(&ndjson, Some("events.ndjson"));
    assert_eq!(known_size.fields, expected);
    let streamed = analyze_reader(
        ndjson.as_bytes(),
        Some("events.ndjson"),
        &AnalyzeOptions::default(),
    )
    .unwrap();
    assert_eq!(
        streamed.fields, expected,
        "stdin: the size is known once it ends"
    );

    let elements: Vec<String> = ndjson.lines().map(str::to_owned).collect();
    let array = format!("[{}]", elements.join(",\n"));
    let metadata = analyze(&array, Some("events.json"));
    assert_eq!(metadata.format, Format::JsonArray);
    assert_eq!(metadata.fields, expected);
}

#[test]
fn ndjson_with_a_malformed_first_line_is_still_ndjson_with_a_note() {
    let content = "not json at all\n{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n{\"a\":4}\n{\"a\":5}\n";
    let metadata = analyze(content, Some("events.ndjson"));
    assert_eq!(metadata.format, Format::Ndjson);
    assert_eq!(metadata.records, Some(6));
    assert_eq!(metadata.fields, ["a"]);
    assert!(
        metadata
            .notes
            .iter()
            .any(|n| n.contains("1 of the first 6 lines")),
        "{:?}",
        metadata.notes
    );
    assert_eq!(metadata.sample.as_deref(), Some("{\"a\":1}"));
}

#[test]
fn json_object_reports_top_level_keys_and_one_level_of_paths() {
    let content =
        r#"{"name": "x", "config": {"depth": {"too": "deep"}, "size": 3}, "items": [1, 2]}"#;
    let metadata = analyze(content, Some("settings.json"));
    assert_eq!(metadata.format, Format::Json);
    assert_eq!(metadata.records, None);
    assert_eq!(
        metadata.fields,
        ["name", "config", "items", "config.depth", "config.size"]
    );
    assert!(!metadata.fields_truncated);
    assert!(metadata.notes.is_empty(), "{:?}", metadata.notes);
}

#[test]
fn a_wide_map_does_not_push_top_level_keys_out() {
    // A JSON schema: ten top-level keys, one of them a map with 600 entries.
    let properties: Vec<String> = (0..600)
        .map(|i| format!("\"p{i}\": {{\"type\": \"string\"}}"))
        .collect();
    let content = format!(
        r#"{{"$schema": "s", "$id": "i", "title": "t", "description": "d", "type": "object",
            "properties": {{{}}}, "required": ["p0"], "additionalProperties": false,
            "definitions": {{"a": {{}}}}, "examples": []}}"#,
        properties.join(", ")
    );
    let metadata = analyze(&content, Some("schema.json"));
    assert_eq!(
        metadata.fields[..10],
        [
            "$schema",
            "$id",
            "title",
            "description",
            "type",
            "properties",
            "required",
            "additionalProperties",
            "definitions",
            "examples"
        ]
    );
    assert_eq!(metadata.fields[10], "properties.p0");
    assert_eq!(metadata.fields.len(), 500);
    assert!(metadata.fields_truncated);
    assert_eq!(metadata.fields_omitted, 601 - 490);
    let json = serde_json::to_value(&metadata).unwrap();
    assert_eq!(json["fields_truncated"], true);
}

#[test]
fn json_array_reports_length_and_fields_of_elements() {
    let content =
        "[\n  {\"id\": 1, \"user\": {\"name\": \"a\"}},\n  {\"id\": 2, \"extra\": true}\n]\n";
    for name in [Some("list.json"), None] {
        let metadata = analyze(content, name);
        assert_eq!(metadata.format, Format::JsonArray);
        assert_eq!(metadata.records, Some(2));
        assert_eq!(metadata.fields, ["id", "user", "extra", "user.name"]);
        assert_eq!(
            metadata.sample.as_deref(),
            Some("{\"id\": 1, \"user\": {\"name\": \"a\"}}")
        );
    }
}

#[test]
fn truncated_json_is_reported_not_crashed_on() {
    let metadata = analyze("[{\"a\": 1}, {\"a\": ", Some("cut.json"));
    assert!(
        metadata.notes.iter().any(|n| n.contains("malformed")),
        "{:?}",
        metadata.notes
    );
    let metadata = analyze("{ this is not json", Some("bad.json"));
    assert_eq!(metadata.format, Format::Json);
    assert!(
        metadata
            .notes
            .iter()
            .any(|n| n.contains("does not parse as JSON: key must be a string at line 1 column 3")),
        "{:?}",
        metadata.notes
    );
}

#[test]
fn csv_counts_rows_with_quoted_newlines_and_delimiters() {
    let content = "id,comment,score\r\n1,\"multi\nline, with comma\",3\r\n2,\"say \"\"hi\"\"\",4\r\n3,plain,5\r\n";
    for name in [Some("data.csv"), Some("data.txt"), None] {
        let metadata = analyze(content, name);
        assert_eq!(metadata.format, Format::Csv, "{name:?}");
        assert_eq!(metadata.records, Some(3));
        assert_eq!(metadata.fields, ["id", "comment", "score"]);
        assert_eq!(metadata.delimiter.as_deref(), Some(","));
        assert_eq!(metadata.encoding.crlf_lines, 4);
    }
    assert!(
        analyze(content, Some("data.txt"))
            .notes
            .iter()
            .any(|n| n.contains("CSV"))
    );
}

#[test]
fn tsv_and_semicolon_tables_report_their_delimiter() {
    let tsv = analyze("name\tage\nann\t3\nbob\t4\n", Some("people.tsv"));
    assert_eq!(
        (tsv.format, tsv.records, tsv.delimiter.as_deref()),
        (Format::Tsv, Some(2), Some("\t"))
    );
    let semicolon = analyze("a;b;c\n1;2;3\n4;5;6\n", None);
    assert_eq!(
        (semicolon.format, semicolon.delimiter.as_deref()),
        (Format::Csv, Some(";"))
    );
}

#[test]
fn markdown_counts_headings_and_gives_an_outline() {
    let content =
        "# Guide\n\nintro\n\n## Install\n\n```sh\n# not a heading\n```\n\n## Use\n### Deep\n";
    let metadata = analyze(content, Some("guide.md"));
    assert_eq!(metadata.format, Format::Markdown);
    assert_eq!(metadata.headings, Some(4));
    let outline: Vec<_> = metadata
        .outline
        .iter()
        .map(|h| (h.level, h.text.as_str()))
        .collect();
    assert_eq!(
        outline,
        [(1, "Guide"), (2, "Install"), (2, "Use"), (3, "Deep")]
    );
}

#[test]
fn xml_and_html_report_their_root_element() {
    let xml = analyze(
        "<?xml version=\"1.0\"?>\n<!-- c -->\n<feed><entry/></feed>\n",
        None,
    );
    assert_eq!(
        (xml.format, xml.root_element.as_deref()),
        (Format::Xml, Some("feed"))
    );
    let html = analyze(
        "<!DOCTYPE html>\n<html lang=\"en\"><body>hi</body></html>",
        Some("page.html"),
    );
    assert_eq!(
        (html.format, html.root_element.as_deref()),
        (Format::Html, Some("html"))
    );
}

#[test]
fn code_language_comes_from_the_extension_or_shebang() {
    let rust = analyze("fn main() {}\n", Some("main.rs"));
    assert_eq!(
        (rust.format, rust.language.as_deref()),
        (Format::Code, Some("Rust"))
    );
    assert_eq!(rust.format_description, "Rust source code");
    let script = analyze("#!/usr/bin/env bash\necho hi\n", Some("deploy"));
    assert_eq!(script.language.as_deref(), Some("Shell"));
}

#[test]
fn empty_plain_and_binary_inputs() {
    let empty = analyze("", Some("nothing.txt"));
    assert_eq!(
        (empty.format, empty.chars, empty.lines, empty.sample),
        (Format::Empty, 0, 0, None)
    );
    let text = analyze("just words\nmore words\n", Some("notes.txt"));
    assert_eq!((text.format, text.lines), (Format::PlainText, 2));
    let binary = analyze_bytes(
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        Some("image.png"),
        &AnalyzeOptions::default(),
    );
    assert_eq!(binary.format, Format::Binary);
    assert_eq!(binary.sample, None, "binary bytes are never dumped");
}

#[test]
fn bom_crlf_and_invalid_utf8_are_reported() {
    let metadata = analyze_bytes(
        b"\xEF\xBB\xBFa,b\r\n1,2\r\n",
        Some("bom.csv"),
        &AnalyzeOptions::default(),
    );
    assert!(metadata.encoding.bom);
    assert_eq!(
        metadata.fields,
        ["a", "b"],
        "the BOM is not part of the first column"
    );
    assert_eq!((metadata.chars, metadata.bytes), (10, 13));
    let latin1 = analyze_bytes(
        b"caf\xe9 au lait\nna\xefve\n",
        Some("latin1.txt"),
        &AnalyzeOptions::default(),
    );
    assert_eq!(latin1.format, Format::PlainText);
    assert!(!latin1.encoding.valid_utf8);
    assert_eq!(latin1.encoding.invalid_sequences, 2);
    assert_eq!(latin1.encoding.first_invalid_offset, Some(3));
    assert!(latin1.notes.iter().any(|n| n.contains("invalid UTF-8")));
}

#[test]
fn samples_are_truncated_on_a_character_boundary() {
    let content = "é".repeat(500);
    let options = AnalyzeOptions {
        sample_chars: 7,
        ..AnalyzeOptions::default()
    };
    let metadata = analyze_bytes(content.as_bytes(), Some("accents.txt"), &options);
    assert_eq!(metadata.sample.as_deref(), Some("ééééééé"));
    assert!(metadata.sample_truncated);
    assert_eq!((metadata.chars, metadata.bytes), (500, 1000));
}

#[test]
fn large_inputs_span_many_blocks_and_count_exactly() {
    // Several 1 MiB blocks, with records and multi-byte characters crossing block edges.
    let mut content = String::new();
    let mut expected_records = 0;
    while content.len() < 3_500_000 {
        content.push_str(&format!(
            "{{\"id\":{expected_records},\"text\":\"naïve café — 日本 {expected_records}\"}}\n"
        ));
        expected_records += 1;
    }
    let metadata = analyze_reader(
        content.as_bytes(),
        Some("big.ndjson"),
        &AnalyzeOptions::default(),
    )
    .unwrap();
    assert_eq!(metadata.records, Some(expected_records));
    assert_eq!(metadata.lines, expected_records);
    assert_eq!(metadata.chars, content.chars().count() as u64);
    assert_eq!(metadata.fields, ["id", "text"]);

    let mut array = String::from("[");
    for index in 0..60_000 {
        if index > 0 {
            array.push(',');
        }
        array.push_str(&format!(
            "{{\"n\":{index},\"s\":\"a [bracket] in \\\"quotes\\\" {{brace}}\"}}"
        ));
    }
    array.push(']');
    let metadata = analyze_bytes(
        array.as_bytes(),
        Some("big.json"),
        &AnalyzeOptions::default(),
    );
    assert_eq!(metadata.format, Format::JsonArray);
    assert_eq!(metadata.records, Some(60_000));
    assert!(metadata.notes.is_empty(), "{:?}", metadata.notes);
}

/// Files past a few blocks are read through a memory map (Linux) or ahead on a second thread;
/// the result must be the one-thread pass's, whatever block edges the blocks land on.
#[test]
fn large_files_mapped_or_read_ahead_give_the_same_metadata_as_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let record = |i: usize| format!(r#"{{"id":{i},"text":"naïve 日本 🎉","n":{{"k":{i}}}}}"#);
    let records: Vec<String> = (0..150_000).map(record).collect();
    let array = format!("[{}]", records.join(",\n"));
    let ndjson = records.join("\n");
    let csv = (0..200_000).fold(String::from("id,note\n"), |mut csv, i| {
        csv.push_str(&format!("{i},\"café, 日本\nsecond line\"\n"));
        csv
    });
    // CR LF lines and invalid bytes: the counts and the first invalid offset add up over blocks.
    let log = (0..300_000).fold(String::new(), |mut log, i| {
        log.push_str(&format!("{i} GET /naïve 🎉\r\n"));
        log
    });
    let mut log = log.into_bytes();
    log.splice(3_000_001..3_000_001, *b"\xff\xe2\x82");
    for (name, content) in [
        ("big.json", array.into_bytes()),
        ("big.ndjson", ndjson.into_bytes()),
        ("big.csv", csv.into_bytes()),
        ("big.log", log),
    ] {
        assert!(content.len() > 5 << 20, "{name} is {} bytes", content.len());
        let path = dir.path().join(name);
        std::fs::write(&path, &content).unwrap();
        let from_file = analyze_path(&path, &AnalyzeOptions::default()).unwrap();
        let in_memory = analyze_bytes(&content, Some(name), &AnalyzeOptions::default());
        assert_eq!(from_file, in_memory, "{name}");
        assert!(from_file.lines >= 150_000, "{name}");
    }
}

#[test]
fn paths_directories_and_missing_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("table.csv");
    let mut file = std::fs::File::create(&path).unwrap();
    writeln!(file, "a,b\n1,2").unwrap();
    let metadata = analyze_path(&path, &AnalyzeOptions::default()).unwrap();
    assert_eq!(
        (metadata.source.as_deref(), metadata.records),
        (Some("table.csv"), Some(1))
    );
    let err = analyze_path(dir.path(), &AnalyzeOptions::default()).unwrap_err();
    assert!(matches!(err, rlm_context::Error::IsDirectory { .. }));
    let err = analyze_path(&dir.path().join("missing"), &AnalyzeOptions::default()).unwrap_err();
    assert!(err.to_string().contains("missing"), "{err}");
}

fn gzip(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes)?;
    encoder.finish()
}

/// A `.gz` file is analysed as the text it decompresses to, its format told by the name
/// without `.gz`, with a note giving the compressed size; damaged gzip data is an error that
/// says so; a file named `.gz` that is not gzip is read as it is.
#[test]
fn gzip_files_are_analysed_decompressed() {
    let dir = tempfile::tempdir().unwrap();
    let csv: String = std::iter::once("id,name\n".to_owned())
        .chain((0..500).map(|i| format!("{i},item {i}\n")))
        .collect();
    let compressed = gzip(csv.as_bytes()).unwrap();
    let path = dir.path().join("table.csv.gz");
    std::fs::write(&path, &compressed).unwrap();
    let metadata = analyze_path(&path, &AnalyzeOptions::default()).unwrap();
    let plain = analyze_bytes(
        csv.as_bytes(),
        Some("table.csv"),
        &AnalyzeOptions::default(),
    );
    assert_eq!(metadata.source.as_deref(), Some("table.csv.gz"));
    assert_eq!(metadata.format, Format::Csv);
    assert_eq!(
        (metadata.bytes, metadata.lines, metadata.records),
        (plain.bytes, plain.lines, Some(500))
    );
    assert_eq!(
        metadata.notes[0],
        format!(
            "gzip: {} bytes compressed; the figures are the decompressed text's",
            rlm_types::thousands(compressed.len() as u64)
        )
    );

    let damaged = dir.path().join("damaged.log.gz");
    std::fs::write(&damaged, &compressed[..compressed.len() / 2]).unwrap();
    let err = analyze_path(&damaged, &AnalyzeOptions::default()).unwrap_err();
    let cause = std::error::Error::source(&err).unwrap().to_string();
    assert!(err.to_string().contains("damaged.log.gz"), "{err}");
    assert!(
        cause.starts_with("gzip data that does not decompress"),
        "{cause}"
    );

    let not_gzip = dir.path().join("notes.gz");
    std::fs::write(&not_gzip, "just text\n").unwrap();
    let metadata = analyze_path(&not_gzip, &AnalyzeOptions::default()).unwrap();
    assert_eq!(metadata.bytes, 10);
    assert!(metadata.notes.iter().all(|note| !note.starts_with("gzip")));
}
