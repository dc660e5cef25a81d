//! A damaged store is noticed, reported with what repairs it, and never mistaken for a new one:
//! an empty or foreign database, a missing or corrupt index, temporary files of a killed writer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ops::ControlFlow;
use std::path::Path;

use rlm_context::chunk::ChunkOptions;
use rlm_store::{Check, Error, IndexHealth, LoadEvent, SearchRequest, Source, Store, diagnose};

fn keep_going(_: LoadEvent<'_>) -> ControlFlow<()> {
    ControlFlow::Continue(())
}

/// A store with 20 buffers; returns the number of chunks.
fn filled(dir: &Path) -> u64 {
    let mut store = Store::open(dir).unwrap();
    let sources = (0..20)
        .map(|i| Source::Text {
            name: format!("notes/{i}.md"),
            text: format!("# Note {i}\n\nthe quartz{i} needle is here\n\n## More\n\nfiller text\n"),
        })
        .collect();
    store
        .load(sources, &ChunkOptions::default(), &mut keep_going)
        .unwrap();
    store.status().unwrap().chunks
}

fn problems(checks: &[Check]) -> Vec<&'static str> {
    checks
        .iter()
        .filter(|check| !check.ok)
        .map(|check| check.name)
        .collect()
}

fn hits(store: &Store, query: &str) -> Vec<String> {
    let outcome = store.search(&SearchRequest::new(query)).unwrap();
    outcome.hits.into_iter().map(|hit| hit.buffer).collect()
}

#[test]
fn a_healthy_store_passes_every_check() {
    let dir = tempfile::tempdir().unwrap();
    filled(dir.path());
    let checks = diagnose(dir.path());
    assert!(problems(&checks).is_empty(), "{checks:#?}");
    let names: Vec<_> = checks.iter().map(|check| check.name).collect();
    assert_eq!(
        names,
        [
            "database",
            "integrity",
            "schema version",
            "marker",
            "index queue",
            "bm25 index",
            "vectors",
            "temporary files"
        ]
    );
}

#[test]
fn an_empty_database_file_is_damage_not_a_new_store() {
    let dir = tempfile::tempdir().unwrap();
    filled(dir.path());
    let database = dir.path().join("store.sqlite");
    std::fs::write(&database, b"").unwrap();
    for name in ["store.sqlite-wal", "store.sqlite-shm"] {
        let _ = std::fs::remove_file(dir.path().join(name));
    }

    let error = Store::open(dir.path()).unwrap_err();
    let Error::Damaged { reason, .. } = &error else {
        panic!("{error:?}");
    };
    assert!(reason.contains("empty"), "{reason}");
    // Nothing was written over it.
    assert_eq!(std::fs::metadata(&database).unwrap().len(), 0);
    assert!(matches!(
        Store::reindex(dir.path(), &mut |_| {}),
        Err(Error::Damaged { .. })
    ));
    assert_eq!(problems(&diagnose(dir.path())), ["database"]);
}

#[test]
fn a_missing_database_beside_an_index_is_damage() {
    let dir = tempfile::tempdir().unwrap();
    filled(dir.path());
    std::fs::remove_file(dir.path().join("store.sqlite")).unwrap();
    assert!(matches!(
        Store::open(dir.path()),
        Err(Error::Damaged { .. })
    ));
    assert!(!dir.path().join("store.sqlite").exists());
}

#[test]
fn a_foreign_database_or_one_without_the_marker_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let database = dir.path().join("store.sqlite");
    let foreign = rusqlite::Connection::open(&database).unwrap();
    foreign
        .execute_batch("CREATE TABLE accounts (id INTEGER); INSERT INTO accounts VALUES (7);")
        .unwrap();
    drop(foreign);
    assert!(matches!(
        Store::open(dir.path()),
        Err(Error::Damaged { .. })
    ));
    let untouched = rusqlite::Connection::open(&database).unwrap();
    let tables: i64 = untouched
        .query_row("SELECT COUNT(*) FROM sqlite_master", [], |row| row.get(0))
        .unwrap();
    assert_eq!(tables, 1, "the foreign database was changed");
    drop(untouched);

    let dir = tempfile::tempdir().unwrap();
    filled(dir.path());
    let store = rusqlite::Connection::open(dir.path().join("store.sqlite")).unwrap();
    store.execute("DELETE FROM store_marker", []).unwrap();
    drop(store);
    assert!(matches!(
        Store::open(dir.path()),
        Err(Error::Damaged { .. })
    ));
    assert_eq!(problems(&diagnose(dir.path())), ["marker"]);
}

#[test]
fn a_deleted_index_is_reported_and_reindex_rebuilds_it() {
    let dir = tempfile::tempdir().unwrap();
    let chunks = filled(dir.path());
    std::fs::remove_dir_all(dir.path().join("bm25")).unwrap();
    assert_eq!(problems(&diagnose(dir.path())), ["bm25 index"]);

    let mut store = Store::open(dir.path()).unwrap();
    assert_eq!(
        store.index_health().unwrap(),
        IndexHealth::OutOfStep { indexed: 0, chunks }
    );
    assert_eq!(
        store.status().unwrap().index_health,
        IndexHealth::OutOfStep { indexed: 0, chunks }
    );
    // Not an empty result: an error that says the index is out of step.
    let search = store.search(&SearchRequest::new("quartz3"));
    assert!(
        matches!(search, Err(Error::IndexOutOfStep { indexed: 0, .. })),
        "{search:?}"
    );
    let load = store.load(
        vec![Source::Text {
            name: "late.md".into(),
            text: "late\n".into(),
        }],
        &ChunkOptions::default(),
        &mut keep_going,
    );
    assert!(
        matches!(load, Err(Error::IndexOutOfStep { .. })),
        "{load:?}"
    );
    drop(store);

    let report = Store::reindex(dir.path(), &mut |_| {}).unwrap();
    assert_eq!((report.buffers, report.chunks), (20, chunks));
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.index_health().unwrap(), IndexHealth::UpToDate);
    assert_eq!(hits(&store, "quartz3"), ["notes/3.md"]);
    assert!(problems(&diagnose(dir.path())).is_empty());
}

#[test]
fn a_corrupt_index_is_reported_and_reindex_rebuilds_it() {
    let dir = tempfile::tempdir().unwrap();
    filled(dir.path());
    std::fs::write(dir.path().join("bm25/meta.json"), "{ not json").unwrap();

    let error = Store::open(dir.path()).unwrap_err();
    assert!(matches!(error, Error::IndexDamaged { .. }), "{error:?}");
    let checks = diagnose(dir.path());
    assert_eq!(problems(&checks), ["bm25 index"]);
    assert!(checks.iter().any(|check| {
        check
            .fix
            .as_deref()
            .is_some_and(|fix| fix.contains("rlm reindex"))
    }));

    Store::reindex(dir.path(), &mut |_| {}).unwrap();
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(hits(&store, "quartz11"), ["notes/11.md"]);
    assert!(problems(&diagnose(dir.path())).is_empty());
}

#[test]
fn an_index_file_with_a_bad_checksum_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    filled(dir.path());
    let segment_file = std::fs::read_dir(dir.path().join("bm25"))
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|ext| ext == "idx"))
        .unwrap();
    let mut bytes = std::fs::read(&segment_file).unwrap();
    bytes[0] ^= 0xff;
    std::fs::write(&segment_file, bytes).unwrap();
    let checks = diagnose(dir.path());
    assert_eq!(problems(&checks), ["bm25 index"]);
    let index = checks
        .iter()
        .find(|check| check.name == "bm25 index")
        .unwrap();
    assert!(index.detail.contains("checksum"), "{}", index.detail);
}

#[test]
fn temporary_files_of_a_killed_writer_are_reported_then_removed_at_open() {
    let dir = tempfile::tempdir().unwrap();
    filled(dir.path());
    let spool = dir.path().join(".reader-4242-0.spool");
    std::fs::write(&spool, vec![b'x'; 4096]).unwrap();
    let half_built = dir.path().join(".bm25-reindex-4242");
    std::fs::create_dir(&half_built).unwrap();
    std::fs::write(half_built.join("meta.json"), "{}").unwrap();
    let orphan = dir.path().join("bm25/0123456789abcdef0123456789abcdef.idx");
    std::fs::write(&orphan, b"segment of a commit that never happened").unwrap();
    let not_ours = dir.path().join("notes.spool");
    std::fs::write(&not_ours, "keep").unwrap();

    let checks = diagnose(dir.path());
    assert_eq!(problems(&checks), ["temporary files"]);
    let temporary = checks.iter().find(|check| !check.ok).unwrap();
    assert!(
        temporary.detail.starts_with("3 file(s)"),
        "{}",
        temporary.detail
    );

    // While another writer holds the lock, its files may be in use: nothing is removed.
    let lock = std::fs::File::create(dir.path().join("lock")).unwrap();
    lock.lock().unwrap();
    drop(Store::open(dir.path()).unwrap());
    assert!(spool.exists() && half_built.exists() && orphan.exists());
    assert!(
        problems(&diagnose(dir.path())).is_empty(),
        "a running writer's files"
    );
    drop(lock);

    let store = Store::open(dir.path()).unwrap();
    assert!(!spool.exists() && !half_built.exists() && !orphan.exists());
    assert!(not_ours.exists());
    assert_eq!(hits(&store, "quartz7"), ["notes/7.md"]);
    assert!(problems(&diagnose(dir.path())).is_empty());
}

#[test]
fn doctor_does_not_create_or_change_anything() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nothing-here");
    assert_eq!(problems(&diagnose(&missing)), ["database"]);
    assert!(!missing.exists());
}

/// An index whose last commit records a format only a newer rlm writes was reported as
/// "written by an older rlm", searched with this rlm's terms and written to in its format. Now
/// it is named as newer: searches and loads refuse it (leaving it untouched), `rlm doctor`
/// reports it, and `rlm reindex` rebuilds it in this rlm's format.
#[test]
fn an_index_from_a_newer_rlm_is_named_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    filled(dir.path());
    {
        let index = tantivy::Index::open_in_dir(dir.path().join("bm25")).unwrap();
        let mut writer: tantivy::IndexWriter = index.writer(15_000_000).unwrap();
        let mut commit = writer.prepare_commit().unwrap();
        commit.set_payload("rlm-index-format 3");
        commit.commit().unwrap();
    }
    let newer = |err: Error| {
        assert!(matches!(err, Error::IndexTooNew { .. }), "{err:?}");
        assert!(
            err.to_string()
                .contains("written by a newer rlm (format `rlm-index-format 3`)"),
            "{err}"
        );
    };
    let mut store = Store::open(dir.path()).unwrap();
    newer(store.search(&SearchRequest::new("needle")).unwrap_err());
    let more = vec![Source::Text {
        name: "more.md".into(),
        text: "another needle\n".into(),
    }];
    newer(
        store
            .load(more, &ChunkOptions::default(), &mut keep_going)
            .unwrap_err(),
    );
    let checks = diagnose(dir.path());
    let bm25 = checks
        .iter()
        .find(|check| check.name == "bm25 index")
        .unwrap();
    assert!(!bm25.ok, "{bm25:?}");
    assert!(bm25.detail.contains("newer rlm"), "{bm25:?}");
    assert!(!bm25.detail.contains("older rlm"), "{bm25:?}");
    // The database is the source of truth: a rebuild in this rlm's format searches again.
    drop(store);
    Store::reindex(dir.path(), &mut |_| {}).unwrap();
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(hits(&store, "quartz3"), ["notes/3.md"]);
}
