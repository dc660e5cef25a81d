//! Store behaviour: loading, replacement, atomicity, filters, grep and reading back.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ops::ControlFlow;

use rlm_context::chunk::{ChunkOptions, Strategy};
use rlm_store::{
    Error, GrepLine, GrepOptions, LoadEvent, LoadTotals, SearchMode, SearchRequest, Source, Store,
};

fn text(name: &str, text: &str) -> Source {
    Source::Text {
        name: name.to_owned(),
        text: text.to_owned(),
    }
}

fn keep_going(_: LoadEvent<'_>) -> ControlFlow<()> {
    ControlFlow::Continue(())
}

fn small_chunks() -> ChunkOptions {
    ChunkOptions {
        strategy: Strategy::Structure,
        size: 40,
        ..ChunkOptions::default()
    }
}

#[test]
fn code_tokenizer_finds_identifier_parts() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let sources = vec![
        text("a.py", "log = logging.getLogger(__name__)\n"),
        text("b.rs", "fn parse_args() -> Args { todo() }\n"),
        text("c.txt", "nothing relevant here\n"),
    ];
    store
        .load(sources, &ChunkOptions::default(), &mut keep_going)
        .unwrap();
    let names = |query: &str| -> Vec<String> {
        let outcome = store.search(&SearchRequest::new(query)).unwrap();
        outcome.hits.into_iter().map(|hit| hit.buffer).collect()
    };
    assert_eq!(names("logger"), ["a.py"]);
    assert_eq!(names("getLogger"), ["a.py"]);
    assert_eq!(names("args"), ["b.rs"]);
    assert_eq!(names("parse_args"), ["b.rs"]);
    assert!(names("absent").is_empty());
}

#[test]
fn reloading_unchanged_content_is_a_no_op() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let sources = || vec![text("notes.md", "alpha beta\n\ngamma delta\n")];
    let first = store
        .load(sources(), &small_chunks(), &mut keep_going)
        .unwrap();
    let before = store.buffer("notes.md").unwrap();
    let chunks_before = store.chunks_of(&before).unwrap();
    let second = store
        .load(sources(), &small_chunks(), &mut keep_going)
        .unwrap();
    assert_eq!(first.loaded.len(), 1);
    assert!(second.loaded.is_empty());
    assert_eq!(second.unchanged, ["notes.md"]);
    let after = store.buffer("notes.md").unwrap();
    assert_eq!(before, after);
    assert_eq!(chunks_before, store.chunks_of(&after).unwrap());
    // Different chunk options are a change even with the same content.
    let third = store
        .load(sources(), &ChunkOptions::default(), &mut keep_going)
        .unwrap();
    assert_eq!(third.loaded.len(), 1);
    assert!(third.loaded[0].replaced);
}

/// A store told not to list its loads' buffers counts them (what a front end showing only a
/// summary needs), tells each one as an event still, and stores the same.
#[test]
fn a_load_that_counts_only_lists_nothing_and_counts_everything() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    store.set_list_loaded(false);
    let sources = |second: &str| {
        vec![
            text("one", "alpha beta\n\ngamma delta\n"),
            text("two", second),
        ]
    };
    let mut told = Vec::new();
    let first = store
        .load(sources("epsilon\n"), &small_chunks(), &mut |event| {
            if let LoadEvent::Loaded(buffer) = event {
                told.push((buffer.name.clone(), buffer.bytes, buffer.chunks));
            }
            ControlFlow::Continue(())
        })
        .unwrap();
    assert!(
        first.loaded.is_empty() && first.unchanged.is_empty(),
        "{first:?}"
    );
    let chunks: u64 = told.iter().map(|(_, _, chunks)| chunks).sum();
    assert_eq!(told.len(), 2);
    assert_eq!(
        first.totals,
        LoadTotals {
            buffers: 2,
            bytes: 32,
            chunks,
            unchanged: 0
        }
    );
    assert!(chunks >= 2, "{told:?}");
    let second = store
        .load(sources("zeta\n"), &small_chunks(), &mut keep_going)
        .unwrap();
    assert!(second.loaded.is_empty() && second.unchanged.is_empty());
    assert_eq!(
        (
            second.totals.buffers,
            second.totals.bytes,
            second.totals.unchanged
        ),
        (1, 5, 1)
    );
    assert_eq!(store.list().unwrap().len(), 2);
    // Listing again (the default) lists, and counts the same.
    store.set_list_loaded(true);
    let third = store
        .load(sources("eta\n"), &small_chunks(), &mut keep_going)
        .unwrap();
    assert_eq!(third.loaded.len(), 1);
    assert_eq!(third.unchanged, ["one"]);
    assert_eq!((third.totals.buffers, third.totals.unchanged), (1, 1));
}

#[test]
fn a_changed_file_replaces_its_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    store
        .load(
            vec![text("doc", "oldword here\n\nmore oldword\n")],
            &small_chunks(),
            &mut keep_going,
        )
        .unwrap();
    let old = store.buffer("doc").unwrap();
    let report = store
        .load(
            vec![text("doc", "newword only\n")],
            &small_chunks(),
            &mut keep_going,
        )
        .unwrap();
    assert!(report.loaded[0].replaced);
    let new = store.buffer("doc").unwrap();
    assert_ne!(old.id, new.id);
    assert_eq!(store.list().unwrap().len(), 1);
    assert_eq!(store.chunks_of(&new).unwrap().len(), 1);
    assert!(
        store
            .search(&SearchRequest::new("oldword"))
            .unwrap()
            .hits
            .is_empty()
    );
    assert_eq!(
        store
            .search(&SearchRequest::new("newword"))
            .unwrap()
            .hits
            .len(),
        1
    );
    let status = store.status().unwrap();
    assert_eq!(
        (
            status.chunks,
            status.indexed_chunks,
            status.pending_index_work
        ),
        (1, 1, 0)
    );
}

#[test]
fn an_interrupted_load_leaves_nothing_visible() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    store
        .load(
            vec![text("kept", "kept text\n")],
            &small_chunks(),
            &mut keep_going,
        )
        .unwrap();
    let sources = vec![
        text("one", "first file\n"),
        text("two", "second file\n"),
        text("three", "x\n"),
    ];
    let mut seen = 0;
    let result = store.load(sources, &small_chunks(), &mut |event| {
        if let LoadEvent::Reading { .. } = event {
            seen += 1;
            if seen == 3 {
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    });
    assert!(matches!(result, Err(Error::Interrupted)));
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    let names: Vec<String> = store.list().unwrap().into_iter().map(|b| b.name).collect();
    assert_eq!(names, ["kept"]);
    assert!(
        store
            .search(&SearchRequest::new("file"))
            .unwrap()
            .hits
            .is_empty()
    );
    let status = store.status().unwrap();
    assert_eq!((status.chunks, status.indexed_chunks), (1, 1));
}

#[test]
fn an_interrupted_replacement_keeps_the_old_buffer_searchable() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    store
        .load(
            vec![text("notes", "original wording\n")],
            &small_chunks(),
            &mut keep_going,
        )
        .unwrap();
    // The replacement is fed to the index (a delete of the old buffer, an add of the new
    // text) before the callback cancels the load.
    let result = store.load(
        vec![text("notes", "replacement wording\n")],
        &small_chunks(),
        &mut |event| match event {
            LoadEvent::Loaded(_) => ControlFlow::Break(()),
            _ => ControlFlow::Continue(()),
        },
    );
    assert!(matches!(result, Err(Error::Interrupted)));
    let hits =
        |store: &Store, query: &str| store.search(&SearchRequest::new(query)).unwrap().hits.len();
    assert_eq!(
        (hits(&store, "original"), hits(&store, "replacement")),
        (1, 0)
    );
    // The same process can load again at once: the discarded writer released the index.
    store
        .load(
            vec![text("notes", "replacement wording\n")],
            &small_chunks(),
            &mut keep_going,
        )
        .unwrap();
    assert_eq!(
        (hits(&store, "original"), hits(&store, "replacement")),
        (0, 1)
    );
    let status = store.status().unwrap();
    assert_eq!(
        (
            status.chunks,
            status.indexed_chunks,
            status.pending_index_work
        ),
        (1, 1, 0)
    );
}

#[test]
fn filters_apply_before_ranking() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    // "strong" has many chunks dense with the term; "weak" mentions it once per chunk among
    // other words, so an unfiltered top-3 is all "strong".
    let strong: String = (0..20)
        .map(|i| format!("needle needle needle {i}\n\n"))
        .collect();
    let weak: String = (0..5)
        .map(|i| format!("needle among many other words in line {i} of text\n\n"))
        .collect();
    store
        .load(
            vec![
                text("src/strong.txt", &strong),
                text("docs/weak.txt", &weak),
            ],
            &ChunkOptions {
                strategy: Strategy::Structure,
                size: 30,
                ..ChunkOptions::default()
            },
            &mut keep_going,
        )
        .unwrap();
    let mut request = SearchRequest::new("needle");
    request.limit = 3;
    let unfiltered = store.search(&request).unwrap();
    assert!(
        unfiltered
            .hits
            .iter()
            .all(|hit| hit.buffer == "src/strong.txt")
    );
    request.buffers = vec!["docs/weak.txt".to_owned()];
    let by_buffer = store.search(&request).unwrap();
    assert_eq!(by_buffer.hits.len(), 3);
    assert!(
        by_buffer
            .hits
            .iter()
            .all(|hit| hit.buffer == "docs/weak.txt")
    );
    request.buffers.clear();
    request.path_glob = Some("docs/*".to_owned());
    let by_glob = store.search(&request).unwrap();
    assert_eq!(by_glob.hits.len(), 3);
    assert!(by_glob.hits.iter().all(|hit| hit.buffer == "docs/weak.txt"));
}

#[test]
fn semantic_without_a_model_falls_back_with_a_notice() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    store
        .load(vec![text("a", "word\n")], &small_chunks(), &mut keep_going)
        .unwrap();
    let mut request = SearchRequest::new("word");
    request.mode = SearchMode::Hybrid;
    let outcome = store.search(&request).unwrap();
    assert_eq!(outcome.mode, SearchMode::Bm25);
    assert!(outcome.notice.unwrap().contains("BM25"));
    assert_eq!(outcome.hits.len(), 1);
}

#[test]
fn peek_reads_lines_bytes_and_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let body: String = (1..=50).map(|i| format!("line {i} é\n")).collect();
    store
        .load(
            vec![text("lines.txt", &body)],
            &ChunkOptions {
                strategy: Strategy::Fixed,
                size: 37,
                overlap: 5,
                ..ChunkOptions::default()
            },
            &mut keep_going,
        )
        .unwrap();
    let buffer = store.buffer("lines.txt").unwrap();
    assert_eq!(buffer.lines, 50);
    assert_eq!(store.read_lines(&buffer, 1, 1).unwrap(), "line 1 é\n");
    assert_eq!(
        store.read_lines(&buffer, 20, 22).unwrap(),
        "line 20 é\nline 21 é\nline 22 é\n"
    );
    assert_eq!(store.read_lines(&buffer, 50, 60).unwrap(), "line 50 é\n");
    assert!(matches!(
        store.read_lines(&buffer, 51, 52),
        Err(Error::Range(_))
    ));
    // Byte 8 is the second byte of "é" in line 1: the range widens to the whole character.
    assert_eq!(store.read_bytes(&buffer, 8..9).unwrap(), "é");
    assert!(matches!(
        store.read_bytes(&buffer, 0..buffer.bytes + 1),
        Err(Error::Range(_))
    ));
    for chunk in store.chunks_of(&buffer).unwrap() {
        let expected = &body[chunk.bytes.start as usize..chunk.bytes.end as usize];
        assert_eq!(store.chunk_text(chunk.id).unwrap(), expected);
    }
}

/// A text over several 1 MiB pieces (how the store keeps a text) reads back as one text:
/// lines, byte ranges and chunks across the pieces' ends, and grep's line numbers after them.
#[test]
fn a_text_of_several_pieces_reads_back_whole_at_every_boundary() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    // Lines of uneven length, some with a two-byte character, ~2.6 MB in all.
    let body: String = (1..=40_000)
        .map(|i| format!("line {i} {}\n", "é-x".repeat(i % 29)))
        .collect();
    assert!(body.len() > 2 * (1 << 20) && body.len() < 3 * (1 << 20));
    store
        .load(
            vec![text("pieces.log", &body)],
            &ChunkOptions::default(),
            &mut keep_going,
        )
        .unwrap();
    let buffer = store.buffer("pieces.log").unwrap();
    assert_eq!(store.text(&buffer).unwrap(), body);
    let starts: Vec<usize> = std::iter::once(0)
        .chain(body.match_indices('\n').map(|(at, _)| at + 1))
        .collect();
    let line_of = |offset: usize| starts.partition_point(|&start| start <= offset);
    for boundary in [1usize << 20, 2 << 20] {
        // Bytes across the boundary (widened to whole characters, as every range is).
        let range = boundary as u64 - 2..boundary as u64 + 2;
        let read = store.read_bytes(&buffer, range.clone()).unwrap();
        assert!(body[range.start as usize - 1..range.end as usize + 1].contains(&read));
        assert!(read.len() >= 4);
        // The lines around it.
        let line = line_of(boundary) as u64;
        let expected = &body[starts[line as usize - 2]..starts[line as usize + 1]];
        assert_eq!(
            store.read_lines(&buffer, line - 1, line + 1).unwrap(),
            expected
        );
        // grep's number for the first line after it.
        let after = line_of(boundary) + 1;
        let needle = format!("line {after} ");
        let (lines, _) = grep_lines(&store, &format!("^{needle}"), &GrepOptions::default());
        assert_eq!(
            lines[0],
            format!(
                "{after}:[{needle}]{}",
                &body[starts[after - 1] + needle.len()..starts[after] - 1]
            )
        );
    }
    for line in [1, 2, 19_999, 39_999, 40_000] {
        let expected = &body[starts[line as usize - 1]..starts[line as usize]];
        assert_eq!(store.read_lines(&buffer, line, line).unwrap(), expected);
    }
    let ids: Vec<i64> = store
        .chunks_of(&buffer)
        .unwrap()
        .iter()
        .map(|chunk| chunk.id)
        .collect();
    let texts = store.chunk_texts(&ids).unwrap();
    for (chunk, text) in store.chunks_of(&buffer).unwrap().iter().zip(&texts) {
        let expected = &body[chunk.bytes.start as usize..chunk.bytes.end as usize];
        assert_eq!(text, expected);
        assert_eq!(store.chunk_text(chunk.id).unwrap(), expected);
    }
}

#[test]
fn csv_chunks_carry_the_header() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let csv: String = std::iter::once("id,name\n".to_owned())
        .chain((0..10).map(|i| format!("{i},\"name\n{i}\"\n")))
        .collect();
    store
        .load(
            vec![text("t.csv", &csv)],
            &ChunkOptions {
                size: 30,
                ..ChunkOptions::default()
            },
            &mut keep_going,
        )
        .unwrap();
    let buffer = store.buffer("t.csv").unwrap();
    assert_eq!(buffer.strategy, "records");
    let chunks = store.chunks_of(&buffer).unwrap();
    assert!(chunks.len() > 1);
    for chunk in chunks {
        let text = store.chunk_text(chunk.id).unwrap();
        assert!(text.starts_with("id,name\n"), "{text:?}");
        assert_eq!(
            text.matches('"').count() % 2,
            0,
            "a quoted record was split: {text:?}"
        );
    }
}

/// Reading many chunks at once gives what reading them one by one gives, in the order asked,
/// across buffers and with CSV headers; an unknown id is an error.
#[test]
fn chunk_texts_match_chunk_text_in_the_order_asked() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let csv: String = std::iter::once("id,name\n".to_owned())
        .chain((0..10).map(|i| format!("{i},name {i}\n")))
        .collect();
    let prose: String = (0..40)
        .map(|i| format!("line {i} of the notes\n"))
        .collect();
    store
        .load(
            vec![text("t.csv", &csv), text("notes.txt", &prose)],
            &small_chunks(),
            &mut keep_going,
        )
        .unwrap();
    let of = |name: &str| -> Vec<i64> {
        let buffer = store.buffer(name).unwrap();
        store
            .chunks_of(&buffer)
            .unwrap()
            .into_iter()
            .map(|chunk| chunk.id)
            .collect()
    };
    let (csv_ids, prose_ids) = (of("t.csv"), of("notes.txt"));
    assert!(csv_ids.len() > 1 && prose_ids.len() > 2);
    // Back and forth between the two buffers, then the rest of the notes backwards.
    let mut ids: Vec<i64> = csv_ids
        .iter()
        .zip(&prose_ids)
        .flat_map(|(csv, prose)| [*prose, *csv])
        .collect();
    ids.extend(prose_ids.iter().skip(csv_ids.len()).rev());
    ids.swap(0, 2);
    let one_by_one: Vec<String> = ids
        .iter()
        .map(|&id| store.chunk_text(id).unwrap())
        .collect();
    assert_eq!(store.chunk_texts(&ids).unwrap(), one_by_one);
    assert!(one_by_one.iter().any(|text| text.starts_with("id,name\n")));
    assert!(matches!(
        store.chunk_texts(&[ids[0], 999_999]),
        Err(Error::UnknownChunk(999_999))
    ));
}

#[test]
fn grep_prints_matches_with_context_like_ripgrep() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let body = "a\nb\nhit one\nc\nd\ne\nf\nhit two\ng\n";
    store
        .load(vec![text("f", body)], &small_chunks(), &mut keep_going)
        .unwrap();
    let options = GrepOptions {
        before: 1,
        after: 1,
        ..GrepOptions::default()
    };
    let (lines, summary) = grep_lines(&store, "hit", &options);
    assert_eq!(
        lines,
        [
            "2-b",
            "3:[hit] one",
            "4-c",
            "--",
            "7-f",
            "8:[hit] two",
            "9-g",
            "end f 2"
        ]
    );
    assert_eq!((summary.matched_lines, summary.matched_buffers), (2, 1));
}

/// Grep output as text: `N:line` with `[match]` marks, `N-context`, `--`, `end NAME COUNT`.
fn grep_lines(
    store: &Store,
    pattern: &str,
    options: &GrepOptions,
) -> (Vec<String>, rlm_store::GrepSummary) {
    let mut lines = Vec::new();
    let summary = store
        .grep(pattern, options, &mut |line| {
            lines.push(match line {
                GrepLine::Match {
                    line,
                    text,
                    matches,
                    ..
                } => {
                    let mut marked = String::new();
                    let mut at = 0;
                    for range in matches {
                        marked.push_str(&text[at..range.start]);
                        marked.push_str(&format!("[{}]", &text[range.clone()]));
                        at = range.end;
                    }
                    marked.push_str(&text[at..]);
                    format!("{line}:{marked}")
                }
                GrepLine::Context { line, text, .. } => format!("{line}-{text}"),
                GrepLine::Break => "--".to_owned(),
                GrepLine::End {
                    buffer,
                    matched_lines,
                } => format!("end {buffer} {matched_lines}"),
            });
            ControlFlow::Continue(())
        })
        .unwrap();
    (lines, summary)
}

#[test]
fn grep_takes_fixed_strings_words_separate_context_and_a_match_limit() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let body = "a.b and axb\ncat concat cat\nx\ny\ncat\n";
    store
        .load(vec![text("f", body)], &small_chunks(), &mut keep_going)
        .unwrap();
    let options = |change: &dyn Fn(&mut GrepOptions)| {
        let mut options = GrepOptions::default();
        change(&mut options);
        options
    };
    let (regex, _) = grep_lines(&store, "a.b", &GrepOptions::default());
    assert_eq!(regex, ["1:[a.b] and [axb]", "end f 1"]);
    let (fixed, _) = grep_lines(&store, "a.b", &options(&|o| o.fixed_strings = true));
    assert_eq!(fixed, ["1:[a.b] and axb", "end f 1"]);
    let (words, _) = grep_lines(&store, "cat", &options(&|o| o.word = true));
    assert_eq!(words, ["2:[cat] concat [cat]", "5:[cat]", "end f 2"]);
    let (after, _) = grep_lines(&store, "concat", &options(&|o| o.after = 2));
    assert_eq!(after, ["2:cat [concat] cat", "3-x", "4-y", "end f 1"]);
    let (before, _) = grep_lines(&store, "^y", &options(&|o| o.before = 1));
    assert_eq!(before, ["3-x", "4:[y]", "end f 1"]);
    let (first, summary) = grep_lines(&store, "cat", &options(&|o| o.max_count = Some(1)));
    assert_eq!(first, ["2:[cat] con[cat] [cat]", "end f 1"]);
    assert_eq!(summary.matched_lines, 1);
    let (plain, _) = grep_lines(&store, "cat", &options(&|o| o.lines_only = true));
    assert_eq!(plain, ["2:cat concat cat", "5:cat", "end f 2"]);
}

/// What grep should print for one buffer, worked out line by line in the plainest way.
fn grep_reference(body: &str, pattern: &regex::Regex, before: usize, after: usize) -> Vec<String> {
    let lines: Vec<&str> = body.lines().collect();
    let hits: Vec<usize> = (0..lines.len())
        .filter(|&i| pattern.is_match(lines[i]))
        .collect();
    let mut shown = vec![false; lines.len()];
    for &hit in &hits {
        let last = (hit + after).min(lines.len() - 1);
        shown[hit.saturating_sub(before)..=last].fill(true);
    }
    let mut out = Vec::new();
    let mut last: Option<usize> = None;
    for (i, line) in lines.iter().enumerate().filter(|(i, _)| shown[*i]) {
        if last.is_some_and(|last| i > last + 1) && before + after > 0 {
            out.push("--".to_owned());
        }
        if hits.binary_search(&i).is_ok() {
            let mut marked = String::new();
            let mut at = 0;
            for found in pattern.find_iter(line).filter(|found| !found.is_empty()) {
                marked.push_str(&line[at..found.start()]);
                marked.push_str(&format!("[{}]", found.as_str()));
                at = found.end();
            }
            marked.push_str(&line[at..]);
            out.push(format!("{}:{marked}", i + 1));
        } else {
            out.push(format!("{}-{line}", i + 1));
        }
        last = Some(i);
    }
    out
}

#[test]
fn grep_streams_large_buffers_with_the_same_lines_as_a_line_by_line_reference() {
    // Several megabytes, so the searcher reads each buffer in many pieces and matches and
    // their context fall across the pieces' edges; long lines grow its line buffer.
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let mut body = String::new();
    let mut state = 0x2545_f491_u64;
    for number in 0..30_000u32 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        match state % 97 {
            0 => body.push_str(&format!("{number} ParseError at offset {state}\n")),
            1 => body.push_str(&format!("{number} \u{e9}t\u{e9} TimeoutError\r\n")),
            2 if number % 4 == 0 => body.push_str(&"x".repeat(70_000 + (state % 5_000) as usize)),
            _ => body.push_str(&format!("{number} ordinary line {}\n", state % 1_000)),
        }
        if state % 97 == 2 {
            body.push('\n');
        }
    }
    let second = "ParseError first\nplain\nplain\nlast ParseError\n";
    store
        .load(
            vec![text("a.log", &body), text("b.log", second)],
            &small_chunks(),
            &mut keep_going,
        )
        .unwrap();
    for pattern in [r"[A-Z][a-z]+Error\b", "Timeout", r"line 99\b", r"Error\r?$"] {
        for (before, after) in [(0, 0), (2, 1), (0, 3)] {
            let options = GrepOptions {
                before,
                after,
                ..GrepOptions::default()
            };
            let (lines, summary) = grep_lines(&store, pattern, &options);
            // The reference sees lines without their `\r`, as grep prints them and marks them.
            let regex = regex::Regex::new(pattern).unwrap();
            let mut expected = grep_reference(&body.replace("\r\n", "\n"), &regex, before, after);
            let first_count = expected.iter().filter(|line| line.contains(':')).count();
            if first_count > 0 {
                expected.push(format!("end a.log {first_count}"));
            }
            let second_lines = grep_reference(second, &regex, before, after);
            let second_count = second_lines
                .iter()
                .filter(|line| line.contains(':'))
                .count();
            if second_count > 0 {
                if first_count > 0 && before + after > 0 {
                    expected.push("--".to_owned());
                }
                expected.extend(second_lines);
                expected.push(format!("end b.log {second_count}"));
            }
            assert!(
                first_count > 10,
                "{pattern}: the corpus has too few matches"
            );
            assert_eq!(lines, expected, "{pattern} with context {before},{after}");
            assert_eq!(
                summary.matched_lines,
                (first_count + second_count) as u64,
                "{pattern}"
            );
        }
    }
}

#[test]
fn grep_keeps_matches_within_a_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    store
        .load(
            vec![text("w", "done\r\nnot done yet\r\nalmost\ndone\n")],
            &small_chunks(),
            &mut keep_going,
        )
        .unwrap();
    // As ripgrep without `--crlf`: `$` is at the `\n`, so a CRLF line needs `\r?$`.
    let (lines, _) = grep_lines(&store, "done$", &GrepOptions::default());
    assert_eq!(lines, ["4:[done]", "end w 1"]);
    let (lines, _) = grep_lines(&store, r"done\r?$", &GrepOptions::default());
    assert_eq!(lines, ["1:[done]", "4:[done]", "end w 2"]);
    // `\s` does not reach into the next line, and an explicit line break is refused.
    let (spaces, _) = grep_lines(&store, r"almost\s*", &GrepOptions::default());
    assert_eq!(spaces, ["3:[almost]", "end w 1"]);
    let refused = store
        .grep("yet\nalmost", &GrepOptions::default(), &mut |_| {
            ControlFlow::Continue(())
        })
        .unwrap_err();
    assert!(matches!(refused, Error::Regex(_)), "{refused:?}");
}

#[test]
fn deleting_removes_text_chunks_and_index_entries() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    store
        .load(
            vec![text("a", "apple\n"), text("b", "banana\n")],
            &small_chunks(),
            &mut keep_going,
        )
        .unwrap();
    let deleted = store.delete(&["a".to_owned()]).unwrap();
    assert_eq!(deleted[0].name, "a");
    assert!(matches!(store.buffer("a"), Err(Error::UnknownBuffer(_))));
    assert!(
        store
            .search(&SearchRequest::new("apple"))
            .unwrap()
            .hits
            .is_empty()
    );
    assert_eq!(store.status().unwrap().indexed_chunks, 1);
}

#[test]
fn concurrent_writers_wait_for_each_other() {
    let dir = tempfile::tempdir().unwrap();
    Store::open(dir.path()).unwrap();
    let handles: Vec<_> = (0..2)
        .map(|writer| {
            let path = dir.path().to_owned();
            std::thread::spawn(move || {
                let mut store = Store::open(&path).unwrap();
                for round in 0..3 {
                    let name = format!("w{writer}-{round}");
                    store
                        .load(
                            vec![text(&name, &format!("writer{writer} round{round}\n"))],
                            &small_chunks(),
                            &mut keep_going,
                        )
                        .unwrap();
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.list().unwrap().len(), 6);
    assert_eq!(store.status().unwrap().indexed_chunks, 6);
}

#[test]
fn binary_files_are_skipped_with_a_reason_and_latin1_is_loaded_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("in");
    std::fs::create_dir(&files).unwrap();
    std::fs::write(files.join("good.txt"), "fine\n").unwrap();
    std::fs::write(files.join("blob.bin"), b"\x00\x01\x02").unwrap();
    std::fs::write(files.join("latin1.txt"), b"caf\xe9\n").unwrap();
    std::fs::write(files.join("ignored.log"), "secret\n").unwrap();
    std::fs::write(files.join(".gitignore"), "*.log\n").unwrap();
    let sources = rlm_store::collect_sources(&[files]).unwrap();
    let mut store = Store::open(dir.path().join("store")).unwrap();
    let report = store
        .load(sources, &small_chunks(), &mut keep_going)
        .unwrap();
    let loaded: Vec<(&str, &[String])> = report
        .loaded
        .iter()
        .map(|b| (b.name.rsplit('/').next().unwrap(), &b.notes[..]))
        .collect();
    assert_eq!(
        loaded,
        [
            ("good.txt", &[][..]),
            (
                "latin1.txt",
                &["invalid UTF-8: 1 sequence(s), first at byte 3; stored with replacement characters"
                    .to_owned()][..]
            )
        ]
    );
    let reasons: Vec<&str> = report.skipped.iter().map(|s| s.reason.as_str()).collect();
    assert_eq!(reasons, ["binary file (NUL bytes)"]);
    let latin1 = store.buffer(&report.loaded[1].name).unwrap();
    assert_eq!(store.text(&latin1).unwrap(), "caf\u{FFFD}\n");
}

#[test]
fn a_buffer_is_found_by_a_unique_suffix_and_an_ambiguous_one_lists_candidates() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    store
        .load(
            vec![
                text("/home/me/project/src/app.py", "alpha\n"),
                text("/home/me/project/tests/app.py", "beta\n"),
                text("/home/me/project/README.md", "gamma\n"),
            ],
            &small_chunks(),
            &mut keep_going,
        )
        .unwrap();
    assert_eq!(
        store.buffer("README.md").unwrap().name,
        "/home/me/project/README.md"
    );
    assert_eq!(
        store.buffer("src/app.py").unwrap().name,
        "/home/me/project/src/app.py"
    );
    // A suffix matches whole path components only.
    assert!(matches!(
        store.buffer("pp.py"),
        Err(Error::UnknownBuffer(_))
    ));
    let ambiguous = store.buffer("app.py").unwrap_err();
    assert!(
        matches!(&ambiguous, Error::AmbiguousBuffer { matches: 2, .. }),
        "{ambiguous:?}"
    );
    assert_eq!(
        ambiguous.to_string(),
        "\"app.py\" matches 2 buffers: /home/me/project/src/app.py, /home/me/project/tests/app.py"
    );
    // Search and grep filters resolve names the same way.
    let mut request = SearchRequest::new("alpha");
    request.buffers = vec!["src/app.py".into()];
    assert_eq!(store.search(&request).unwrap().hits.len(), 1);
}

#[test]
fn delete_takes_a_directory_or_a_glob() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let names = |store: &Store| -> Vec<String> {
        store.list().unwrap().into_iter().map(|b| b.name).collect()
    };
    store
        .load(
            vec![
                text("src/a.rs", "alpha\n"),
                text("src/deep/b.rs", "b\n"),
                text("docs/c.md", "c\n"),
                text("docs/d.txt", "d\n"),
                text("srcx/e.rs", "e\n"),
            ],
            &small_chunks(),
            &mut keep_going,
        )
        .unwrap();
    let deleted = store.delete(&["src".into()]).unwrap();
    assert_eq!(deleted.len(), 2);
    assert_eq!(names(&store), ["docs/c.md", "docs/d.txt", "srcx/e.rs"]);
    store.delete(&["*.md".into()]).unwrap();
    assert_eq!(names(&store), ["docs/d.txt", "srcx/e.rs"]);
    assert!(matches!(
        store.delete(&["nothing/here".into()]),
        Err(Error::UnknownBuffer(_))
    ));
    assert!(
        store
            .search(&SearchRequest::new("alpha"))
            .unwrap()
            .hits
            .is_empty()
    );
}

#[test]
fn reloading_a_directory_removes_buffers_of_deleted_files() {
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("in");
    std::fs::create_dir_all(files.join("sub")).unwrap();
    std::fs::write(files.join("kept.txt"), "kept words\n").unwrap();
    std::fs::write(files.join("sub/gone.txt"), "vanishing words\n").unwrap();
    let outside = dir.path().join("outside.txt");
    std::fs::write(&outside, "outside words\n").unwrap();
    let mut store = Store::open(dir.path().join("store")).unwrap();
    let mut sources = rlm_store::collect_sources(std::slice::from_ref(&files)).unwrap();
    sources.extend(rlm_store::collect_sources(std::slice::from_ref(&outside)).unwrap());
    store
        .load(sources, &small_chunks(), &mut keep_going)
        .unwrap();
    std::fs::remove_file(files.join("sub/gone.txt")).unwrap();
    std::fs::remove_file(&outside).unwrap();
    let mut removed_events = 0;
    let report = store
        .load_and_prune(
            rlm_store::collect_sources(std::slice::from_ref(&files)).unwrap(),
            &[files],
            &small_chunks(),
            &mut |event| {
                if let LoadEvent::Removed(_) = event {
                    removed_events += 1;
                }
                ControlFlow::Continue(())
            },
        )
        .unwrap();
    assert_eq!(removed_events, 1);
    assert_eq!(report.removed.len(), 1);
    assert!(report.removed[0].ends_with("sub/gone.txt"));
    assert_eq!(report.unchanged.len(), 1);
    // Only files under the re-loaded directory follow the file system.
    assert_eq!(store.list().unwrap().len(), 2);
    let hits = |query: &str| store.search(&SearchRequest::new(query)).unwrap().hits.len();
    assert_eq!(
        (hits("vanishing"), hits("kept"), hits("outside")),
        (0, 1, 1)
    );
}

#[test]
fn a_snippet_shows_the_line_that_matched_with_the_terms_marked() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let log = "INFO cache warmed\nDEBUG cache hit\ndef getUserProfileCache(id):\n";
    store
        .load(
            vec![
                text("app.log", log),
                text("other.log", "cache cache cache\n"),
            ],
            &ChunkOptions::default(),
            &mut keep_going,
        )
        .unwrap();
    let outcome = store
        .search(&SearchRequest::new("getUserProfileCache"))
        .unwrap();
    let hit = &outcome.hits[0];
    assert_eq!(hit.buffer, "app.log");
    assert_eq!(hit.snippet, "def getUserProfileCache(id):");
    let marked: Vec<&str> = hit
        .highlights
        .iter()
        .map(|range| &hit.snippet[range.clone()])
        .collect();
    assert_eq!(marked, ["getUserProfileCache"]);
}

/// Chunks that score the same come back in chunk-id order, also when the limit cuts through
/// them and they sit in different index segments (one per load here; tantivy would order
/// them by segment, which differs between two loads of the same files).
#[test]
fn equal_scores_are_ordered_by_chunk_id_across_segments() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    for index in 0..8 {
        store
            .load(
                vec![text(&format!("part{index}.log"), "token refresh failed\n")],
                &ChunkOptions::default(),
                &mut keep_going,
            )
            .unwrap();
    }
    let mut request = SearchRequest::new("refresh");
    let all: Vec<i64> = store
        .search(&request)
        .unwrap()
        .hits
        .iter()
        .map(|hit| hit.chunk_id)
        .collect();
    let mut sorted = all.clone();
    sorted.sort_unstable();
    assert_eq!(all.len(), 8);
    assert_eq!(all, sorted, "equal scores in chunk-id order");
    request.limit = 3;
    let first: Vec<i64> = store
        .search(&request)
        .unwrap()
        .hits
        .iter()
        .map(|hit| hit.chunk_id)
        .collect();
    assert_eq!(first, sorted[..3], "the cut keeps the lowest ids");
}

/// Every way of asking for the best hits agrees with one full ranking: any limit takes its
/// prefix, and a buffer or path filter takes the filtered ranking's prefix. The chunks tie in
/// large groups (a few words, repeated) and sit in several index segments, so the cut falls
/// inside ties and the pruned top-k loop must let through what can still tie its worst.
#[test]
fn every_limit_and_filter_takes_a_prefix_of_one_total_ranking() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let words = ["alpha", "beta", "gamma", "delta"];
    let mut state = 7_u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        (state >> 33) as usize
    };
    for load in 0..6 {
        let sources = (0..4)
            .map(|file| {
                let lines: String = (0..30)
                    .map(|_| {
                        let line: Vec<&str> = (0..4).map(|_| words[next() % words.len()]).collect();
                        format!("{}\n", line.join(" "))
                    })
                    .collect();
                let name = if file % 2 == 0 {
                    format!("logs/run{load}/app{file}.log")
                } else {
                    format!("src/dir{load}/mod{file}.rs")
                };
                text(&name, &lines)
            })
            .collect();
        store
            .load(sources, &small_chunks(), &mut keep_going)
            .unwrap();
    }
    let ranked = |request: &SearchRequest| -> Vec<(i64, f64, String)> {
        store
            .search(request)
            .unwrap()
            .hits
            .into_iter()
            .map(|hit| (hit.chunk_id, hit.score, hit.buffer))
            .collect()
    };
    for query in ["alpha", "alpha beta", "gamma delta beta"] {
        let mut request = SearchRequest::new(query);
        request.limit = 100_000;
        let full = ranked(&request);
        assert!(full.len() > 100, "{query}: {} hits", full.len());
        for pair in full.windows(2) {
            let ((a, a_score, _), (b, b_score, _)) = (&pair[0], &pair[1]);
            assert!(
                a_score > b_score || (a_score == b_score && a < b),
                "{query}: {a} ({a_score}) before {b} ({b_score})"
            );
        }
        let ties = full
            .windows(2)
            .filter(|pair| pair[0].1 == pair[1].1)
            .count();
        assert!(ties > full.len() / 2, "{query}: only {ties} ties");
        for limit in [1, 2, 5, 10, 17, 50, full.len() - 1] {
            request.limit = limit;
            assert_eq!(ranked(&request), full[..limit], "{query}, top {limit}");
        }
        /// Whether a buffer name is one a glob keeps.
        type Keeps = fn(&str) -> bool;
        let filters: [(&str, Keeps); 4] = [
            ("logs/*", |name| name.starts_with("logs/")),
            ("*.rs", |name| name.ends_with(".rs")),
            ("*/run3/*", |name| name.contains("/run3/")),
            ("*n*/app0*", |name| name.contains("/app0")),
        ];
        for (glob, keeps) in filters {
            let expected: Vec<_> = full.iter().filter(|hit| keeps(&hit.2)).cloned().collect();
            assert!(!expected.is_empty(), "{glob}");
            for limit in [1, 3, 10, expected.len()] {
                let mut filtered = SearchRequest::new(query);
                filtered.limit = limit;
                filtered.path_glob = Some(glob.to_owned());
                assert_eq!(
                    ranked(&filtered),
                    expected[..limit],
                    "{query}, {glob}, top {limit}"
                );
            }
        }
        let buffers = ["src/dir2/mod3.rs", "logs/run4/app0.log"];
        let expected: Vec<_> = full
            .iter()
            .filter(|hit| buffers.contains(&hit.2.as_str()))
            .cloned()
            .collect();
        let mut filtered = SearchRequest::new(query);
        filtered.limit = 5;
        filtered.buffers = buffers.iter().map(|&name| name.to_owned()).collect();
        assert_eq!(
            ranked(&filtered),
            expected[..5.min(expected.len())],
            "{query}, buffers"
        );
    }
}

#[test]
fn chunks_of_each_lists_the_same_chunks_as_one_query_per_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    // 40 buffers (past the one-pass threshold), each of a few small chunks.
    let sources = (0..40)
        .map(|n| {
            let lines: String = (0..n % 4 + 1)
                .map(|line| format!("buffer {n} line {line} with some words to chunk\n"))
                .collect();
            text(&format!("f{n:02}.txt"), &lines)
        })
        .collect();
    store
        .load(sources, &small_chunks(), &mut keep_going)
        .unwrap();
    let all = store.list().unwrap();
    assert_eq!(all.len(), 40);
    let one_by_one = |buffers: &[rlm_store::BufferInfo]| -> Vec<rlm_store::ChunkInfo> {
        buffers
            .iter()
            .flat_map(|buffer| store.chunks_of(buffer).unwrap())
            .collect()
    };
    // Many buffers, in an order that is not their ids', one listed twice; then a few.
    let mut many: Vec<_> = all.iter().rev().cloned().collect();
    many.push(all[3].clone());
    let few = &all[5..8];
    for buffers in [&many[..], few, &all[..], &[]] {
        let expected = one_by_one(buffers);
        assert_eq!(store.chunks_of_each(buffers).unwrap(), expected);
    }
    assert!(one_by_one(&many).len() > 41, "several chunks per buffer");
}

#[test]
fn a_filtered_search_equals_the_unfiltered_search_then_filtered() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let sources: Vec<Source> = (0..60)
        .map(|i| {
            let folder = ["src", "logs", "docs/api"][i % 3];
            let body: String = (0..4)
                .map(|line| format!("needle {} haystack {}\n\n", "x ".repeat((i + line) % 7), i))
                .collect();
            text(&format!("{folder}/file{i:02}.txt"), &body)
        })
        .collect();
    store
        .load(sources, &small_chunks(), &mut keep_going)
        .unwrap();
    // Files whose names say nothing of where they are: a glob on the directory matches their
    // paths only.
    let on_disk = dir.path().join("disk");
    std::fs::create_dir_all(on_disk.join("deep")).unwrap();
    let mut files = Vec::new();
    for i in 0..6 {
        let folder = if i % 2 == 0 {
            on_disk.join("deep")
        } else {
            on_disk.clone()
        };
        let path = folder.join(format!("f{i}.txt"));
        std::fs::write(&path, format!("needle haystack on disk {i}\n")).unwrap();
        files.push(Source::File {
            path,
            name: format!("plain{i}"),
        });
    }
    store.load(files, &small_chunks(), &mut keep_going).unwrap();
    let deep = format!("{}/*", on_disk.join("deep").display());
    let mut everything = SearchRequest::new("needle haystack");
    everything.limit = 10_000;
    let all = store.search(&everything).unwrap().hits;
    let cases: [(&[&str], Option<&str>); 8] = [
        (&[], Some("logs/*")),
        (&[], Some("*/api/*")),
        (&[], Some("*file1?.txt")),
        (&["src/file03.txt", "file04.txt"], None),
        (&["src/file03.txt", "logs/file04.txt"], Some("logs/*")),
        (&[], Some("nothing/*")),
        (&[], Some(deep.as_str())),
        (&[], Some("plain*")),
    ];
    for (names, glob) in cases {
        let names: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
        let allowed: Vec<String> = store
            .filter_buffers(&names, glob)
            .unwrap()
            .into_iter()
            .map(|buffer| buffer.name)
            .collect();
        let mut request = SearchRequest::new("needle haystack");
        request.limit = 7;
        request.buffers = names.clone();
        request.path_glob = glob.map(str::to_owned);
        let filtered: Vec<i64> = store
            .search(&request)
            .unwrap()
            .hits
            .iter()
            .map(|hit| hit.chunk_id)
            .collect();
        let expected: Vec<i64> = all
            .iter()
            .filter(|hit| allowed.contains(&hit.buffer))
            .take(7)
            .map(|hit| hit.chunk_id)
            .collect();
        assert_eq!(filtered, expected, "{names:?} {glob:?}");
    }
}

#[test]
fn a_file_over_the_buffer_limit_is_skipped_with_how_to_load_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path().join("store")).unwrap();
    // SQLite as this workspace builds it holds values of up to 2 GiB, not its default 1 GB.
    assert!(
        store.buffer_ceiling() > 2_147_000_000,
        "{}",
        store.buffer_ceiling()
    );
    assert_eq!(store.max_buffer_bytes(), store.buffer_ceiling());
    let big = dir.path().join("big.log");
    // Sparse: the size is checked before anything is read.
    std::fs::File::create(&big)
        .unwrap()
        .set_len(store.buffer_ceiling() + 1)
        .unwrap();
    let sources = rlm_store::collect_sources(&[big]).unwrap();
    let report = store
        .load(sources, &small_chunks(), &mut keep_going)
        .unwrap();
    assert!(report.loaded.is_empty());
    let reason = &report.skipped[0].reason;
    let ceiling = store.buffer_ceiling();
    assert!(
        reason.contains(&format!("{ceiling}-byte buffer limit")) && reason.contains("split -C 1G"),
        "{reason}"
    );
}

#[test]
fn a_lowered_buffer_limit_skips_larger_files_and_pipes_and_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path().join("store")).unwrap();
    let ceiling = store.buffer_ceiling();
    for absurd in [0, ceiling + 1, u64::MAX] {
        let result = store.set_max_buffer_bytes(absurd);
        assert!(
            matches!(result, Err(Error::BufferLimit { requested, .. }) if requested == absurd),
            "{absurd}: {result:?}"
        );
    }
    assert_eq!(store.max_buffer_bytes(), ceiling);
    store.set_max_buffer_bytes(100).unwrap();
    let fits = dir.path().join("fits.txt");
    std::fs::write(&fits, "a".repeat(99) + "\n").unwrap();
    let over = dir.path().join("over.txt");
    std::fs::write(&over, "a".repeat(100) + "\n").unwrap();
    let mut sources = rlm_store::collect_sources(&[fits, over]).unwrap();
    sources.push(Source::reader(
        "pipe",
        std::io::Cursor::new(vec![b'b'; 101]),
    ));
    let report = store
        .load(sources, &small_chunks(), &mut keep_going)
        .unwrap();
    let loaded: Vec<&str> = report.loaded.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(loaded.len(), 1, "{loaded:?}");
    assert!(loaded[0].ends_with("fits.txt"), "{loaded:?}");
    assert_eq!(report.skipped.len(), 2, "{:?}", report.skipped);
    for skipped in &report.skipped {
        assert!(
            skipped.reason.contains(&format!(
                "100-byte limit set for this load (a buffer can hold up to {ceiling} bytes)"
            )),
            "{skipped:?}"
        );
    }
}

#[test]
fn unique_tokens_are_found_whole_and_by_part() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let digest = "3f9c0d2e1b4a77c2aa01b2c3d4e5f60718293a4b5c6d7e8f9012345678abcdef";
    let uuid = "550e8400-e29b-41d4-a716-44665544a000";
    let base64 = "dGhpcyBpc3RyaW5nMTIzNDU2";
    let text_of = format!(
        "upload done digest={digest}\n\nrequest {uuid} failed\n\nkey {base64} rotated\n\n\
         fn test_2024_11_27_regression() {{}}\n\nother line\n"
    );
    store
        .load(
            vec![text("log.txt", &text_of)],
            &ChunkOptions::default(),
            &mut keep_going,
        )
        .unwrap();
    for (query, line) in [
        (digest, digest),
        (uuid, uuid),
        ("550e8400", uuid),
        ("44665544a000", uuid),
        ("550E8400", uuid),
        (base64, base64),
        ("test_2024_11_27_regression", "test_2024_11_27_regression"),
        ("regression", "test_2024_11_27_regression"),
    ] {
        let found = store.search(&SearchRequest::new(query)).unwrap();
        assert_eq!(found.hits.len(), 1, "{query}: {:?}", found.hits);
        assert!(
            found.hits[0].snippet.contains(line),
            "{query}: {:?}",
            found.hits
        );
    }
    // grep finds them in the stored text too.
    let summary = store
        .grep(digest, &GrepOptions::default(), &mut |_| {
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(summary.matched_lines, 1);
}

/// Base64 lines (a mail attachment) between prose: each line is found by search through each
/// identifier of 8+ characters and as a whole, by grep through any piece; its chunks are whole
/// lines on character boundaries, not "sentences".
#[test]
fn a_base64_attachment_is_found_by_search_and_grep() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    const BASE64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let lines: Vec<String> = (0..40)
        .map(|_| {
            (0..76)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    BASE64[(state % 64) as usize] as char
                })
                .collect()
        })
        .collect();
    let body = format!(
        "Grüße, the report is attached. See below.\n\n{}\n\nBest regards, Zoë\n",
        lines.join("\n")
    );
    let options = ChunkOptions {
        strategy: Strategy::Structure,
        size: 400,
        ..ChunkOptions::default()
    };
    store
        .load(vec![text("mail.eml", &body)], &options, &mut keep_going)
        .unwrap();
    let buffer = store.buffer("mail.eml").unwrap();
    for chunk in store.chunks_of(&buffer).unwrap() {
        let (start, end) = (chunk.bytes.start as usize, chunk.bytes.end as usize);
        assert!(body.is_char_boundary(start) && body.is_char_boundary(end));
        // Every chunk ends at a line end: the attachment's are whole lines.
        assert!(body[start..end].ends_with('\n'), "{:?}", &body[start..end]);
    }
    let mut asked = 0;
    for line in lines.iter().step_by(7) {
        let identifiers = line.split(['+', '/']).filter(|piece| piece.len() >= 8);
        for query in identifiers.chain([line.as_str()]) {
            let found = store.search(&SearchRequest::new(query)).unwrap();
            assert!(
                found.hits.iter().any(|hit| hit.snippet.contains(query)),
                "{query}: {:?}",
                found.hits
            );
            asked += 1;
        }
        // grep finds any piece, however short.
        let short = &line[30..34];
        let (matched, _) = grep_lines(&store, &regex::escape(short), &GrepOptions::default());
        assert!(
            matched
                .iter()
                .any(|found| found.contains(&format!("[{short}]"))),
            "{short}"
        );
    }
    assert!(asked > 6);
    for word in ["report", "regards", "Zoë"] {
        let found = store.search(&SearchRequest::new(word)).unwrap();
        assert_eq!(found.hits.len(), 1, "{word}");
    }
}

/// A hex id of 8 characters sharing `token`'s bucket.
fn bucket_neighbour(token: &str) -> String {
    let wanted = rlm_store::tokenizer::bucket(token);
    (0u32..)
        .map(|n| format!("{:08x}", n.wrapping_mul(2_654_435_761) | 0x1000_0000))
        .find(|candidate| {
            candidate != token
                && rlm_context::words::is_hex_id(candidate)
                && rlm_store::tokenizer::bucket(candidate) == wanted
        })
        .unwrap()
}

#[test]
fn tokens_sharing_a_bucket_do_not_answer_for_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let stored = "c0ffee42";
    let neighbour = bucket_neighbour(stored);
    let absent_neighbour = bucket_neighbour(&neighbour);
    assert_ne!(absent_neighbour, stored);
    let filler: String = (0..40)
        .map(|n| format!("line {n} of padding\n\n"))
        .collect();
    store
        .load(
            vec![text("a.log", &format!("{filler}request {stored} ok\n"))],
            &small_chunks(),
            &mut keep_going,
        )
        .unwrap();
    let found = store.search(&SearchRequest::new(stored)).unwrap();
    assert_eq!(found.hits.len(), 1, "{:?}", found.hits);
    // Same bucket, not in the text: no hit.
    let neighbours = store.search(&SearchRequest::new(&neighbour)).unwrap();
    assert!(
        neighbours.hits.is_empty(),
        "{neighbour}: {:?}",
        neighbours.hits
    );
    // With a plain word beside it, only chunks holding one of the words are hits.
    let mixed = store
        .search(&SearchRequest::new(format!("{neighbour} padding")))
        .unwrap();
    assert!(!mixed.hits.is_empty());
    assert!(
        mixed.hits.iter().all(|hit| hit.snippet.contains("padding")),
        "{:?}",
        mixed.hits
    );
}

/// A `--path` glob of 300 nested braces made globset panic inside search and grep; it is
/// refused with an input error everywhere a glob reaches the store: search, grep, buffer
/// selection, and a load's include globs.
#[test]
fn a_glob_nested_too_deep_is_an_error_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path().join("store")).unwrap();
    store
        .load(
            vec![text("a.txt", "alpha\n")],
            &small_chunks(),
            &mut keep_going,
        )
        .unwrap();
    let glob = format!("{}a{}", "{".repeat(300), "}".repeat(300));
    let too_complex = |err: Error| {
        assert!(matches!(err, Error::GlobTooComplex { .. }), "{err:?}");
    };
    let mut request = SearchRequest::new("alpha");
    request.path_glob = Some(glob.clone());
    too_complex(store.search(&request).unwrap_err());
    let options = GrepOptions {
        path_glob: Some(glob.clone()),
        ..GrepOptions::default()
    };
    too_complex(
        store
            .grep("alpha", &options, &mut |_| ControlFlow::Continue(()))
            .unwrap_err(),
    );
    too_complex(store.select_buffers(&glob).unwrap_err());
    let walked = rlm_store::WalkOptions {
        include: vec![glob],
        ..rlm_store::WalkOptions::default()
    };
    too_complex(rlm_store::collect_sources_with(&[dir.path().to_path_buf()], &walked).unwrap_err());
}

/// A store opened within a root reads a load's files from the root: a directory swapped for a
/// link out after the files were found (as another process could between the walk and the
/// reads) is refused, not read.
#[test]
fn a_load_within_a_root_refuses_a_file_swapped_out_after_it_was_found() {
    let dir = tempfile::tempdir().unwrap();
    let root_dir = dir.path().join("root");
    std::fs::create_dir_all(root_dir.join("docs")).unwrap();
    std::fs::write(root_dir.join("docs/a.md"), "inside text\n").unwrap();
    std::fs::create_dir_all(dir.path().join("secret")).unwrap();
    std::fs::write(dir.path().join("secret/a.md"), "outside text\n").unwrap();
    let root = rlm_context::root::FileRoot::new(&root_dir).unwrap();
    let mut store = Store::open_within(root_dir.join(".rlm"), &root).unwrap();
    let sources = rlm_store::collect_sources(&[root_dir.join("docs")]).unwrap();
    // The swap, after the walk found docs/a.md.
    std::fs::rename(root_dir.join("docs"), root_dir.join("old")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("secret"), root_dir.join("docs")).unwrap();
    let err = store
        .load(sources, &ChunkOptions::default(), &mut keep_going)
        .unwrap_err();
    assert!(matches!(err, Error::OutsideRoot(_)), "{err:?}");
    assert!(store.list().unwrap().is_empty(), "nothing was loaded");
    // Put back, the same sources load.
    std::fs::remove_file(root_dir.join("docs")).unwrap();
    std::fs::rename(root_dir.join("old"), root_dir.join("docs")).unwrap();
    let sources = rlm_store::collect_sources(&[root_dir.join("docs")]).unwrap();
    store
        .load(sources, &ChunkOptions::default(), &mut keep_going)
        .unwrap();
    assert_eq!(store.list().unwrap().len(), 1);
}
