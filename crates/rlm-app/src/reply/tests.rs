use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::requests::{GrepRequest, PeekRequest};
use crate::settings::{Environment, Sources};
use crate::{Context, NoEvents, StopHandle};

/// Records of about 100 bytes each.
fn records(count: usize) -> Vec<Value> {
    (0..count)
        .map(|n| json!({ "n": n, "text": format!("{n:>80}") }))
        .collect()
}

/// Every page of `all` under `limit`, following the cursors, and each page's bytes of JSON.
fn pages(all: &[Value], limit: ReplyLimit) -> Vec<(Vec<Value>, usize)> {
    let mut found = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let outcome = Outcome::success(all.to_vec());
        let page = paged(outcome, limit, cursor.as_deref(), &"request").unwrap();
        let bytes = page.records.iter().map(|record| json_len(record) + 1).sum();
        found.push((page.records, bytes));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return found,
        }
        assert!(found.len() < 10_000, "the cursor does not move on");
    }
}

#[test]
fn following_the_cursor_gives_every_record_once_in_order_and_no_page_passes_the_ceiling() {
    let all = records(1_000);
    let limit = ReplyLimit {
        bytes: 4_096,
        records: 30,
        ..ReplyLimit::DEFAULT
    };
    let found = pages(&all, limit);
    assert!(found.len() > 30, "{} pages", found.len());
    for (records, bytes) in &found {
        assert!(*bytes <= 4_096, "{bytes} bytes");
        assert!(records.len() <= 30);
    }
    let joined: Vec<Value> = found.into_iter().flat_map(|(records, _)| records).collect();
    assert_eq!(joined, all);
    // The record count binds too.
    let by_count = pages(
        &all,
        ReplyLimit {
            bytes: usize::MAX,
            records: 7,
            ..ReplyLimit::DEFAULT
        },
    );
    assert_eq!(by_count[0].0.len(), 7);
    assert_eq!(by_count.len(), 1_000usize.div_ceil(7));
}

#[test]
fn a_page_says_what_it_left_out_and_how_to_ask_for_it() {
    let limit = ReplyLimit {
        bytes: 2_000,
        records: 100,
        ..ReplyLimit::DEFAULT
    };
    let page = paged(Outcome::success(records(50)), limit, None, &"q").unwrap();
    let cursor = page.next_cursor.clone().unwrap();
    // A page bounded again (as a front end does with every answer) keeps its cursor.
    let notes = page.notes.clone();
    let again = bounded(page, limit).unwrap();
    assert_eq!(again.next_cursor.as_deref(), Some(cursor.as_str()));
    assert_eq!(again.notes, notes);
    let note = again.notes.last().unwrap();
    assert!(note.contains(&format!("cursor \"{cursor}\"")), "{note}");
    assert!(note.contains("more follow"), "{note}");
    // A run's records cannot be asked for again: what is left out is counted.
    let bounded = bounded(Outcome::success(records(50)), limit).unwrap();
    assert_eq!(bounded.next_cursor, None);
    let kept = bounded.records.len();
    let note = bounded.notes.last().unwrap();
    assert!(
        note.contains(&format!("{} more records left out", 50 - kept)),
        "{note}"
    );
}

#[test]
fn a_record_larger_than_a_page_comes_alone_cut_and_says_how_much_it_left_out() {
    let limit = ReplyLimit::bytes(ReplyLimit::MIN_BYTES).unwrap();
    let huge = json!({ "type": "result", "answer": "é".repeat(100_000), "turns": 3 });
    let small = json!({ "type": "small" });
    let outcome = Outcome::success(vec![huge.clone(), huge, small.clone()]);
    let first = paged(outcome, limit, None, &"q").unwrap();
    assert_eq!(first.records.len(), 1);
    let record = &first.records[0];
    assert!(json_len(record) < limit.bytes, "{}", json_len(record));
    let answer = record["answer"].as_str().unwrap();
    assert!(answer.chars().all(|c| c == 'é') && !answer.is_empty());
    assert_eq!(
        record["cut_bytes"].as_u64().unwrap() as usize + answer.len(),
        200_000
    );
    assert_eq!(record["turns"], 3);
    // The next page goes on after it: the second, cut, and what fits beside it.
    let outcome = Outcome::success(vec![
        json!({}),
        json!({"answer": "x".repeat(100_000)}),
        small.clone(),
    ]);
    let second = paged(outcome, limit, first.next_cursor.as_deref(), &"q").unwrap();
    assert_eq!(second.records.len(), 2);
    assert_eq!(second.records[1], small);
    assert_eq!(second.next_cursor, None);
}

#[test]
fn a_cursor_of_another_request_or_no_cursor_at_all_is_refused() {
    let limit = ReplyLimit {
        bytes: 1_000,
        records: 5,
        ..ReplyLimit::DEFAULT
    };
    let first = paged(Outcome::success(records(20)), limit, None, &"q").unwrap();
    let cursor = first.next_cursor.unwrap();
    let other = paged(
        Outcome::success(records(20)),
        limit,
        Some(&cursor),
        &"other",
    );
    let message = crate::Shown::of(&other.unwrap_err()).plain();
    assert!(message.contains("continues another request"), "{message}");
    for garbage in ["", "12", "x.1", "3.zz", "-1.00000000"] {
        let refused = paged(Outcome::success(records(3)), limit, Some(garbage), &"q");
        let message = crate::Shown::of(&refused.unwrap_err()).plain();
        assert!(message.contains("invalid cursor"), "{garbage:?}: {message}");
    }
    assert!(ReplyLimit::bytes(100).is_err());
}

/// A store of `files` in a temporary directory, and sources naming it.
fn store_with(files: &[(&str, String)]) -> (tempfile::TempDir, Sources) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = rlm_store::Store::open(dir.path().join("store")).unwrap();
    let sources: Vec<rlm_store::Source> = files
        .iter()
        .map(|(name, text)| rlm_store::Source::Text {
            name: (*name).to_owned(),
            text: text.clone(),
        })
        .collect();
    store
        .load(sources, &Default::default(), &mut |_| {
            std::ops::ControlFlow::Continue(())
        })
        .unwrap();
    drop(store);
    let env = Environment::from_pairs([("XDG_CONFIG_HOME", dir.path().join("xdg"))]);
    let sources = Sources::new(env, Some(dir.path().to_path_buf()), None)
        .with_store(dir.path().join("store"));
    (dir, sources)
}

fn context(bytes: usize) -> Context {
    Context::new(Arc::new(NoEvents), StopHandle::new())
        .with_reply_limit(ReplyLimit::bytes(bytes).unwrap())
}

fn grep_request(arguments: Value) -> GrepRequest {
    serde_json::from_value(arguments).unwrap()
}

#[test]
fn a_grep_answers_in_pages_that_join_into_the_whole_answer() {
    let text: String = (1..=3_000)
        .map(|n| format!("word {n} of the log\n"))
        .collect();
    let (_dir, sources) = store_with(&[("a.log", text.clone()), ("b.log", text)]);
    let request = grep_request(json!({ "pattern": "word", "context": 1 }));
    let mut whole = Vec::new();
    let unbounded =
        Context::new(Arc::new(NoEvents), StopHandle::new()).with_reply_limit(ReplyLimit::UNLIMITED);
    crate::operations::grep(&sources, &request, &unbounded, true, &mut |line| {
        whole.push(serde_json::to_value(line)?);
        Ok(())
    })
    .unwrap();
    assert!(whole.len() > 6_000);

    let context = context(16_384);
    let mut joined = Vec::new();
    let mut request = request;
    let mut pages = 0;
    loop {
        let page = crate::operations::grep::page(&sources, &request, &context).unwrap();
        let bytes: usize = page.records.iter().map(|r| json_len(r) + 1).sum();
        assert!(bytes <= 16_384, "{bytes}");
        joined.extend(page.records);
        pages += 1;
        match page.next_cursor {
            Some(cursor) => request.cursor = Some(cursor),
            None => break,
        }
    }
    assert!(pages > 10, "{pages}");
    assert_eq!(joined, whole);
}

#[test]
fn a_huge_context_or_a_huge_line_is_bounded() {
    let mut text: String = (1..=20_000).map(|n| format!("line {n}\n")).collect();
    text.push_str(&format!("needle {}\n", "z".repeat(3 << 20)));
    let (_dir, sources) = store_with(&[("a.log", text)]);
    let context = context(1 << 20);
    let wide = grep_request(json!({ "pattern": "needle", "context": 1_000_000_000u64 }));
    let page = crate::operations::grep::page(&sources, &wide, &context).unwrap();
    let bytes: usize = page.records.iter().map(|r| json_len(r) + 1).sum();
    assert!(bytes <= 1 << 20, "{bytes}");
    assert!(
        page.notes[0].contains("context cut to 10,000 lines"),
        "{:?}",
        page.notes
    );
    assert!(page.next_cursor.is_some());

    let long = grep_request(json!({ "pattern": "needle" }));
    let page = crate::operations::grep::page(&sources, &long, &context).unwrap();
    let line = &page.records[0];
    assert_eq!(line["type"], "match");
    let kept = line["text"].as_str().unwrap().len();
    assert!(kept < 1 << 20 && kept > 1 << 19, "{kept}");
    assert_eq!(
        line["cut_bytes"].as_u64().unwrap() as usize + kept,
        7 + (3 << 20)
    );
    assert_eq!(line["matches"], json!([{ "start": 0, "end": 6 }]));

    // A peek of the line is cut too, and says where the rest is.
    let peek: PeekRequest =
        serde_json::from_value(json!({ "buffer": "a.log", "lines": "19990:" })).unwrap();
    let outcome = crate::operations::peek(&sources, &peek, &context).unwrap();
    let record = serde_json::to_value(&outcome.records[0]).unwrap();
    assert_eq!(record["range"]["lines"], json!([19_990, 20_000]));
    assert_eq!(record["rest"]["lines"], "20001:20001");
    let peek: PeekRequest =
        serde_json::from_value(json!({ "buffer": "a.log", "lines": "20001:" })).unwrap();
    let outcome = crate::operations::peek(&sources, &peek, &context).unwrap();
    let record = serde_json::to_value(&outcome.records[0]).unwrap();
    let kept = record["text"].as_str().unwrap().len();
    assert!(kept <= 1 << 20, "{kept}");
    let rest = record["rest"]["bytes"].as_str().unwrap();
    let start: u64 = rest.trim_end_matches(':').parse().unwrap();
    let line_start = (1..=20_000)
        .map(|n| format!("line {n}\n").len() as u64)
        .sum::<u64>();
    assert_eq!(start, line_start + kept as u64);
}
