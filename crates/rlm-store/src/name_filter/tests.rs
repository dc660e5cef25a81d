//! Filtered searches against unfiltered ones, over a new index and ones written before the
//! buffer names, or their components, were indexed.
#![allow(clippy::unwrap_used)]
use std::collections::HashSet;
use std::ops::ControlFlow;
use std::path::Path;

use rlm_context::chunk::{ChunkOptions, Strategy};
use rusqlite::OpenFlags;

use crate::index::{Bm25Index, BufferFields};
use crate::store::LocalStore;
use crate::store::{INDEX, add_buffer, open_database};
use crate::{SearchHit, SearchRequest, Source};

const WORDS: &[&str] = &[
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    "kilo", "lima",
];

fn options() -> ChunkOptions {
    // Small fixed chunks, so buffers have several.
    ChunkOptions {
        strategy: Strategy::Fixed,
        size: 80,
        ..ChunkOptions::default()
    }
}

fn text(seed: usize) -> String {
    let mut state = (seed as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut text = String::new();
    for word in 0..(20 + seed % 40) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        text.push_str(WORDS[(state % WORDS.len() as u64) as usize]);
        text.push(if word % 9 == 8 { '\n' } else { ' ' });
    }
    text
}

fn load(store: &mut LocalStore, sources: Vec<Source>) {
    store
        .load(sources, &options(), &mut |_| ControlFlow::Continue(()))
        .unwrap();
}

/// A store of 600 files (names relative, paths absolute) in `logs/`, `src/dNN/` and
/// `docs/`, plus text buffers (no path) whose names test the edges of a prefix, loaded in
/// several batches (several segments) with some files then changed (deleted documents).
fn corpus(dir: &Path, files: &Path) -> LocalStore {
    let mut store = LocalStore::open(dir).unwrap();
    let names: Vec<String> = (0..600)
        .map(|index| match index % 10 {
            0 => format!("logs/app{index:03}.log"),
            1..=7 => format!("src/d{:02}/file{index:03}.txt", index % 23),
            _ => format!("docs/page{index:03}.md"),
        })
        .collect();
    for batch in names.chunks(150) {
        let sources = batch
            .iter()
            .map(|name| {
                let path = files.join(name);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                let seed = name.bytes().map(usize::from).sum::<usize>() + name.len();
                std::fs::write(&path, text(seed)).unwrap();
                Source::File {
                    path,
                    name: name.clone(),
                }
            })
            .collect();
        load(&mut store, sources);
    }
    let edges = [
        "logs",
        "logs/",
        "logs0",
        "logs.txt",
        "log",
        "logs/a\nb.log",
        "logs/é.log",
        "élan",
    ];
    let sources = edges
        .iter()
        .enumerate()
        .map(|(index, name)| Source::Text {
            name: (*name).to_owned(),
            text: text(1000 + index),
        })
        .collect();
    load(&mut store, sources);
    // Changed files replace their buffers: their old documents are deleted.
    let changed: Vec<Source> = names
        .iter()
        .step_by(7)
        .map(|name| {
            let path = files.join(name);
            std::fs::write(&path, text(name.len() * 31 + 7)).unwrap();
            Source::File {
                path,
                name: name.clone(),
            }
        })
        .collect();
    load(&mut store, changed);
    store
}

fn globs(files: &Path) -> Vec<String> {
    let mut globs: Vec<String> = [
        "logs/*",        // a tenth, a prefix: a range checked in the top-k loop
        "logs/**",       // the same range
        "src/d07/*",     // few, a prefix: listed
        "src/d0[0-4]/*", // a prefix then a class: the prefix's values matched one by one
        "*/d07/*",       // few, no prefix: sampled, all matched, listed
        "*.txt",         // most, a literal suffix: a range of the reversed values
        "*7.txt",        // few, a literal suffix
        "*\nb.log",      // a suffix holding a line break
        "*é.log",        // a non-ASCII suffix
        "*.[tm]?*",      // most, no prefix or suffix: matched as ranking reaches them
        "*[02468].txt",  // half, no prefix
        "{logs,docs}/*", // an alternation
        "log*",          // names sharing the prefix with others
        "logs/?.log",    // nothing but the edge names
        "*é*",           // non-ASCII
        "nothing/*",     // matches nothing
        // Components as terms (few documents hold them, so they are listed by their postings):
        "*/d08/*",            // a component in the middle
        "*/src/d08/*",        // several components, intersected
        "**/d08/*",           // after `**/`
        "*/d08/**",           // before `/**`
        "src/**/file008.txt", // at the start and at the end, around `/**/`
        "*/*/app010.log",     // at the end only (not a literal suffix: `*/*` before it)
        "*/d07/[!/]*.txt",    // before a class holding `/`
        "*/d0[7*]/*",         // the start of a component, then a class holding `*`
        "*[/]d07/*",          // after a class holding `/`: no component (checked alike)
        "*/app01*",           // the start of a component: a range of terms
        "*/file1?7.txt",      // the start of a component at the end
        "*/d0*",              // a range held by too many documents: not used
        "*/logs/*.log",       // a component held by a tenth: not used
        "?ogs/é.log",         // a non-ASCII component
        "?ogs/a\nb.*",        // a component holding a line break
        "*/nothing/*",        // a component no document holds
    ]
    .map(str::to_owned)
    .to_vec();
    // Paths only (names are relative).
    globs.push(format!("{}/docs/*", files.display()));
    globs.push(format!("{}/*7.txt", files.display()));
    globs.push(format!("{}/src/*/file1?7.txt", files.display()));
    globs.push(format!("*{}/src/d08/*", files.display()));
    globs
}

fn hits(store: &LocalStore, query: &str, limit: usize, glob: Option<&str>) -> Vec<SearchHit> {
    let request = SearchRequest {
        limit,
        path_glob: glob.map(str::to_owned),
        ..SearchRequest::new(query)
    };
    store.search(&request).unwrap().hits
}

/// Filtered searches return exactly the unfiltered ranking's hits in the filtered buffers.
fn assert_filters_match_unfiltered(store: &LocalStore, files: &Path) {
    for query in ["alpha", "golf kilo", "bravo delta hotel lima", "juliet"] {
        let everything = hits(store, query, 100_000, None);
        assert!(everything.len() > 500, "{query}: {}", everything.len());
        for glob in globs(files) {
            let wanted: HashSet<String> = store
                .filter_buffers(&[], Some(&glob))
                .unwrap()
                .into_iter()
                .map(|buffer| buffer.name)
                .collect();
            for limit in [1, 10, 100_000] {
                let expected: Vec<(i64, f64)> = everything
                    .iter()
                    .filter(|hit| wanted.contains(&hit.buffer))
                    .take(limit)
                    .map(|hit| (hit.chunk_id, hit.score))
                    .collect();
                let found: Vec<(i64, f64)> = hits(store, query, limit, Some(&glob))
                    .iter()
                    .map(|hit| (hit.chunk_id, hit.score))
                    .collect();
                let ids = |list: &[(i64, f64)]| list.iter().map(|h| h.0).collect::<Vec<_>>();
                assert_eq!(
                    ids(&found),
                    ids(&expected),
                    "{query:?} --path {glob:?} -k {limit}"
                );
                for ((_, found), (_, expected)) in found.iter().zip(&expected) {
                    assert!((found - expected).abs() < 1e-5, "{found} vs {expected}");
                }
            }
        }
    }
}

#[test]
fn the_required_literal_is_in_every_match() {
    let cases = [
        ("*/dir007/*", Some("/dir007/")),
        ("**/tests/*.rs", Some("tests/")),
        ("src/**", Some("src")),
        ("a/**/b.txt", Some("b.txt")),
        ("*.{rs,py}", Some(".")),
        ("[ab]cd*", Some("cd")),
        ("[]x]yz", Some("yz")),
        ("[!]]q?", Some("q")),
        ("a\\*b", None),
        ("*", None),
    ];
    let names = [
        "tests/a.rs",
        "x/tests/b.rs",
        "src",
        "src/",
        "src/a",
        "a/b.txt",
        "a/x/y/b.txt",
        "m.rs",
        "acd",
        "]yz",
        "xyz",
        "qq",
        "q]",
        "zz/dir007/",
        "/dir007/x",
    ];
    for (glob, literal) in cases {
        assert_eq!(super::required_literal(glob).as_deref(), literal, "{glob}");
        let matcher = crate::select::compile_glob(glob).unwrap();
        for name in names {
            if matcher.is_match(name) {
                assert!(
                    literal.is_none_or(|literal| name.contains(literal)),
                    "{glob} {name}"
                );
            }
        }
    }
}

/// Writes the index of the store in `dir` again, its documents carrying only `fields` of their
/// buffers (in batches, so it has several segments), as an older rlm wrote them.
fn rewrite_index(dir: &Path, fields: BufferFields) {
    let connection = open_database(dir, OpenFlags::SQLITE_OPEN_READ_WRITE).unwrap();
    std::fs::remove_dir_all(dir.join(INDEX)).unwrap();
    let index = Bm25Index::open_with_buffer_fields(&dir.join(INDEX), fields).unwrap();
    let mut statement = connection.prepare("SELECT id FROM buffers").unwrap();
    let ids: Vec<i64> = statement
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    for batch in ids.chunks(200) {
        let writer = index.writer().unwrap();
        for &id in batch {
            add_buffer(&connection, &writer, id, &mut |_| {}).unwrap();
        }
        writer.commit().unwrap();
    }
}

/// Per glob and segment of `store`, how many documents the postings of the glob's components
/// listed (`None` where they were not used); each list is checked against every document's
/// name and path matched one by one, deleted documents included.
fn found_by_components(store: &LocalStore, globs: &[&str]) -> Vec<Vec<Option<usize>>> {
    let searcher = store.index.searcher().unwrap();
    globs
        .iter()
        .map(|&glob| {
            let buffer_glob = super::BufferGlob::new(glob).unwrap();
            let matcher = crate::select::compile_glob(glob).unwrap();
            let mut found = Vec::new();
            for segment in searcher.segment_readers() {
                let Some(documents) = buffer_glob.by_components(segment).unwrap() else {
                    found.push(None);
                    continue;
                };
                found.push(Some(documents.len()));
                let mut expected = Vec::new();
                for document in 0..segment.max_doc() {
                    let mut matches = false;
                    for (field, _) in super::COLUMNS {
                        let Some(column) = segment.fast_fields().str(field).unwrap() else {
                            continue;
                        };
                        if let Some(ordinal) = column.ords().first(document) {
                            let mut value = String::new();
                            column.ord_to_str(ordinal, &mut value).unwrap();
                            matches |= matcher.is_match(&value);
                        }
                    }
                    if matches {
                        expected.push(document);
                    }
                }
                assert_eq!(documents, expected, "{glob}");
            }
            found
        })
        .collect()
}

#[test]
fn a_glob_names_the_components_every_match_holds() {
    let cases: [(&str, &[&str], &[&str]); 14] = [
        ("*/dir007/*", &["dir007"], &[]),
        ("src/**/b.txt", &["src", "b.txt"], &[]),
        ("**/tests/*.rs", &["tests"], &[]),
        ("**/tests/**", &["tests"], &[]),
        ("*/dir00*", &[], &["dir00"]),
        ("logs/*.txt", &["logs"], &[]),
        ("*/d[0/]7/x", &["x"], &["d"]),
        ("*[/]d07/*", &[], &[]),
        ("a/{b,c}/x", &["a"], &[]),
        ("{a,b}/x", &[], &[]),
        ("a\\*b/c", &[], &[]),
        ("?ogs/é.log", &["é.log"], &[]),
        ("a,b/c]d/e", &["a,b", "e"], &["c"]),
        ("*//x*", &[], &["x"]),
    ];
    let names = [
        "x/dir007/y",
        "dir007/",
        "/dir007",
        "src/b.txt",
        "src/a/b/b.txt",
        "tests/a.rs",
        "a/tests/b/c.rs",
        "tests",
        "a/tests",
        "q/dir001",
        "dir00",
        "logs/a.txt",
        "logs/a/b.txt",
        "r/d/7/x",
        "r/d07/x",
        "a/d07/x",
        "/d07/",
        "a/b/x",
        "a/c/x",
        "b/x",
        "logs/é.log",
        "a,b/c]d/e",
        "//x",
        "a//xy",
    ];
    let mut matched = 0;
    for (glob, whole, starts) in cases {
        let components = super::GlobComponents::new(glob);
        assert_eq!(components.whole, whole, "{glob}");
        assert_eq!(components.starts, starts, "{glob}");
        let matcher = crate::select::compile_glob(glob).unwrap();
        for name in names {
            if !matcher.is_match(name) {
                continue;
            }
            matched += 1;
            let terms = super::component_terms(name, None);
            for component in whole {
                assert!(terms.contains(component), "{glob} {name}");
            }
            for start in starts {
                assert!(
                    terms.iter().any(|term| term.starts_with(start)),
                    "{glob} {name}"
                );
            }
        }
    }
    assert!(matched >= 20, "{matched}");
}

#[test]
fn long_components_are_cut_alike_in_documents_and_globs() {
    let long = format!("{}é{}", "a".repeat(255), "b".repeat(300));
    let name = format!("x/{long}/y");
    let terms = super::component_terms(&name, Some("/x/z"));
    assert_eq!(terms, ["a".repeat(255).as_str(), "x", "y", "z"]);
    let components = super::GlobComponents::new(&format!("*/{long}/*"));
    assert_eq!(components.whole, ["a".repeat(255)]);
}

#[test]
fn globs_holding_components_list_their_documents_from_the_postings() {
    let dir = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let store = corpus(dir.path(), files.path());
    assert!(store.index.has_path_components());
    // Each glob with the segments it must have been listed in at least.
    let used = [
        ("*/d08/*", 3),
        ("*/src/d08/*", 3),
        ("**/d08/*", 3),
        ("src/**/d08/*.txt", 3),
        ("src/**/file017.txt", 1),
        ("*/*/app010.log", 1),
        ("*/d08/[f*]ile*", 3),
        ("*/app01*", 1),
        // A literal prefix and `*`: a range of values, its documents from the postings.
        ("src/d08/*", 3),
    ];
    let globs: Vec<&str> = used.iter().map(|(glob, _)| *glob).collect();
    for ((glob, least), found) in used.iter().zip(found_by_components(&store, &globs)) {
        let listed = found.iter().filter(|found| found.is_some_and(|n| n > 0));
        assert!(listed.count() >= *least, "{glob}: {found:?}");
    }
    let nothing = found_by_components(&store, &["*/nothing/*"]);
    assert!(
        nothing[0].iter().all(|found| *found == Some(0)),
        "{nothing:?}"
    );
    // A range or a component held by too many documents, or no component: matched as before
    // (but a segment holding none of the components is known to hold no match).
    let unused = [
        "*/d0*",
        "*/logs/*.log",
        "*[/]d07/*",
        "*.[tm]?*",
        "logs/*",
        "*.txt",
    ];
    // The writer's threads spread a load's documents over segments as they come, so a segment
    // may hold few of the many: there the postings may list them (checked against every
    // document above), never more than a listed share of the segment.
    let sizes: Vec<u32> = store
        .index
        .searcher()
        .unwrap()
        .segment_readers()
        .iter()
        .map(tantivy::SegmentReader::max_doc)
        .collect();
    for (glob, found) in unused.iter().zip(found_by_components(&store, &unused)) {
        assert_eq!(found.len(), sizes.len(), "{glob}");
        for (found, size) in found.iter().zip(&sizes) {
            let listed = found.unwrap_or(0) as u64;
            assert!(
                listed <= u64::from(*size) / super::LISTED_SHARE,
                "{glob}: {found:?} of {size}"
            );
        }
        assert!(found.iter().any(Option::is_none), "{glob}: {found:?}");
    }
}

#[test]
fn a_filtered_search_returns_the_unfiltered_hits_of_the_filtered_buffers() {
    let dir = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let store = corpus(dir.path(), files.path());
    assert!(store.index.has_buffer_names());
    assert_filters_match_unfiltered(&store, files.path());
}

#[test]
fn an_index_without_buffer_names_filters_through_the_buffer_table_until_reindexed() {
    let dir = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    drop(corpus(dir.path(), files.path()));
    // The same documents, written as rlm wrote them before the names were indexed.
    rewrite_index(dir.path(), BufferFields::Id);
    let older = |dir: &Path| {
        crate::diagnose(dir)
            .iter()
            .any(|check| check.ok && check.detail.contains("kept no buffer names"))
    };
    assert!(older(dir.path()));
    let mut store = LocalStore::open(dir.path()).unwrap();
    assert!(!store.index.has_buffer_names());
    assert_filters_match_unfiltered(&store, files.path());
    // A load into it keeps its schema.
    load(
        &mut store,
        vec![Source::Text {
            name: "logs/late.log".into(),
            text: text(4242),
        }],
    );
    assert!(!store.index.has_buffer_names());
    assert!(
        hits(&store, "alpha", 100_000, Some("logs/late*"))
            .iter()
            .all(|hit| hit.buffer == "logs/late.log")
    );
    assert_filters_match_unfiltered(&store, files.path());
    drop(store);

    LocalStore::reindex(dir.path(), &mut |_| {}).unwrap();
    assert!(!older(dir.path()));
    let store = LocalStore::open(dir.path()).unwrap();
    assert!(store.index.has_buffer_names());
    assert_filters_match_unfiltered(&store, files.path());
}

#[test]
fn an_index_without_path_components_matches_every_name_until_reindexed() {
    let dir = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    drop(corpus(dir.path(), files.path()));
    // The same documents, written as rlm wrote them before the components were indexed.
    rewrite_index(dir.path(), BufferFields::Names);
    let older = |dir: &Path| {
        crate::diagnose(dir)
            .iter()
            .any(|check| check.ok && check.detail.contains("kept no path components"))
    };
    assert!(older(dir.path()));
    let mut store = LocalStore::open(dir.path()).unwrap();
    assert!(store.index.has_buffer_names());
    assert!(!store.index.has_path_components());
    assert!(store.index.searcher().unwrap().segment_readers().len() > 1);
    let found = found_by_components(&store, &["*/d08/*"]);
    assert!(found[0].iter().all(Option::is_none), "{found:?}");
    assert_filters_match_unfiltered(&store, files.path());
    // A load into it keeps its schema.
    load(
        &mut store,
        vec![Source::Text {
            name: "late/d08/late.log".into(),
            text: text(4243),
        }],
    );
    assert!(!store.index.has_path_components());
    assert!(
        hits(&store, "alpha", 100_000, Some("*/d08/late*"))
            .iter()
            .all(|hit| hit.buffer == "late/d08/late.log")
    );
    assert_filters_match_unfiltered(&store, files.path());
    drop(store);

    LocalStore::reindex(dir.path(), &mut |_| {}).unwrap();
    assert!(!older(dir.path()));
    let store = LocalStore::open(dir.path()).unwrap();
    assert!(store.index.has_path_components());
    assert_filters_match_unfiltered(&store, files.path());
}

/// A glob most buffers match is checked after ranking (the unfiltered top hits, checked in
/// order); when the best hits lie in the buffers it rules out, that list holds too few of its
/// matches and the search falls back to checking inside the ranking loop. Both give the
/// unfiltered ranking's hits in the matching buffers.
#[test]
fn a_glob_most_buffers_match_is_checked_after_ranking_or_in_the_loop_alike() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = LocalStore::open(dir.path()).unwrap();
    // Nine in ten buffers under `keep/` mention the word once; the rest, under `skip/`,
    // mention it in every chunk, so they hold the unfiltered ranking's best hits.
    let sources = (0..200)
        .map(|index| {
            let (name, text) = if index % 10 == 0 {
                (
                    format!("skip/s{index:03}.txt"),
                    "zulu zulu alpha\n".repeat(12),
                )
            } else {
                (
                    format!("keep/k{index:03}.txt"),
                    format!("zulu {}", text(index)),
                )
            };
            Source::Text { name, text }
        })
        .collect();
    load(&mut store, sources);
    let everything = hits(&store, "zulu", 100_000, None);
    let best: Vec<&str> = everything
        .iter()
        .take(40)
        .map(|hit| hit.buffer.as_str())
        .collect();
    assert!(
        best.iter().all(|name| name.starts_with("skip/")),
        "{best:?}"
    );
    let outcomes = || super::VERIFIED_OUTCOMES.with(std::cell::Cell::get);
    for glob in ["*ee*/*", "*k[0-9]*"] {
        let before = outcomes();
        for limit in [1, 5, 10, 60, 100_000] {
            let expected: Vec<i64> = everything
                .iter()
                .filter(|hit| hit.buffer.starts_with("keep/"))
                .take(limit)
                .map(|hit| hit.chunk_id)
                .collect();
            let found: Vec<i64> = hits(&store, "zulu", limit, Some(glob))
                .iter()
                .map(|hit| hit.chunk_id)
                .collect();
            assert_eq!(found, expected, "--path {glob:?} -k {limit}");
        }
        // Every limit but the last fell short (the whole list, 100,000 deep, is complete).
        let after = outcomes();
        assert_eq!((after.0 - before.0, after.1 - before.1), (1, 4), "{glob:?}");
    }
    // Where the best hits match too (every buffer does), the list checked is the answer.
    let before = outcomes();
    let expected: Vec<i64> = everything.iter().take(10).map(|hit| hit.chunk_id).collect();
    let found: Vec<i64> = hits(&store, "zulu", 10, Some("*[ep]/*"))
        .iter()
        .map(|hit| hit.chunk_id)
        .collect();
    assert_eq!(found, expected);
    assert_eq!(outcomes().0, before.0 + 1);
}
