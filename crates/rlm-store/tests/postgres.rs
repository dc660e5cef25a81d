//! The PostgreSQL store against a real server: the same scenario on both backends gives the
//! same answers, many writers converge, and bad input (an unreachable server, a wrong
//! password, a missing privilege or extension, a connection dropped mid-load, a newer schema)
//! is a clear error that leaves nothing half-written.
//!
//! The server is `scripts/postgres-test-server`'s (started by `scripts/test`), named by
//! `RLM_TEST_POSTGRES_URL`. Without it these tests skip with a notice; with it set, a server
//! that cannot be used fails them. Each test works in a schema of its own.
#![cfg(feature = "postgres")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::ops::ControlFlow;

use rlm_context::chunk::{ChunkOptions, Strategy};
use rlm_embed::{Embedder, ModelId, ModelKind};
use rlm_store::{
    BufferInfo, Error, GrepLine, GrepOptions, SearchMode, SearchRequest, Source, Store,
    StoreLocation,
};

/// The test server's URL, or `None` (with a notice) when none was started.
fn server() -> Option<String> {
    match std::env::var("RLM_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            eprintln!(
                "notice: RLM_TEST_POSTGRES_URL is unset; skipping the PostgreSQL store tests \
                 (scripts/test starts a server)"
            );
            None
        }
    }
}

/// The location of a fresh schema for `test` on the test server (dropped first if left over).
fn location(url: &str, test: &str) -> StoreLocation {
    let schema = format!("t_{test}_{}", std::process::id());
    let url = with_parameter(url, "schema", &schema);
    let location = StoreLocation::parse(&url).unwrap();
    sql(
        &location,
        &format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"),
    );
    location
}

fn with_parameter(url: &str, key: &str, value: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}{key}={value}")
}

/// Runs `statements` on the test server as its superuser (a client of our own, not rlm's).
fn sql(location: &StoreLocation, statements: &str) {
    let mut client = admin(location);
    client.batch_execute(statements).unwrap();
}

fn admin(location: &StoreLocation) -> postgres::Client {
    let StoreLocation::Postgres(_) = location else {
        panic!("{location:?}")
    };
    let url = std::env::var("RLM_TEST_POSTGRES_URL").unwrap();
    // The URL as the server's own client library reads it, without rlm's parameters.
    postgres::Client::connect(&url, postgres::NoTls)
        .expect("RLM_TEST_POSTGRES_URL is set, but its server cannot be reached")
}

fn keep_going(_: rlm_store::LoadEvent<'_>) -> ControlFlow<()> {
    ControlFlow::Continue(())
}

const DIMENSION: usize = 32;

/// A deterministic bag-of-words embedder standing in for a model.
#[derive(Debug)]
struct BagOfWords {
    id: ModelId,
}

impl Embedder for BagOfWords {
    fn model_id(&self) -> &ModelId {
        &self.id
    }
    fn kind(&self) -> ModelKind {
        ModelKind::Static
    }
    fn dimension(&self) -> usize {
        DIMENSION
    }
    fn max_tokens(&self) -> usize {
        512
    }
    fn embed(&self, texts: &[&str]) -> rlm_embed::Result<Vec<Vec<f32>>> {
        Ok(texts
            .iter()
            .map(|text| {
                let mut vector = vec![0.0f32; DIMENSION];
                for word in rlm_context::words::index_terms(text) {
                    let bucket = word
                        .bytes()
                        .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
                    vector[(bucket % DIMENSION as u64) as usize] += 1.0;
                }
                let norm = vector.iter().map(|v| v * v).sum::<f32>().sqrt();
                if norm > 0.0 {
                    vector.iter_mut().for_each(|v| *v /= norm);
                }
                vector
            })
            .collect())
    }
}

fn embedder() -> BagOfWords {
    BagOfWords {
        id: ModelId::from_stored("bag@000000000000".to_owned()),
    }
}

/// A corpus with what the backends could disagree on: code, prose, a CSV (chunks with a
/// header), a log of many segments with a line longer than a segment, a digest (a bucket
/// term), non-ASCII text, and a NUL byte.
fn corpus(dir: &std::path::Path) -> Vec<Source> {
    let files = [
        (
            "src/app.py",
            "import logging\nlog = logging.getLogger(__name__)\n\ndef connect(host, retries=3):\n    \"\"\"Connect to the database host, retry on timeout.\"\"\"\n    return socket.create_connection(host)\n".repeat(3),
        ),
        (
            "docs/guide.md",
            "# Guide\n\nThe connection pool retries on timeout.\n\n## Logging\n\nUse getLogger for each module; the logger writes to stderr.\n\nÜber-long résumé: naïve café.\n".to_owned(),
        ),
        (
            "data/users.csv",
            (0..200)
                .map(|i| format!("{i},user{i},{}\n", if i % 7 == 0 { "timeout" } else { "ok" }))
                .fold("id,name,state\n".to_owned(), |mut text, line| {
                    text.push_str(&line);
                    text
                }),
        ),
        (
            "logs/service.log",
            (0..3000)
                .map(|i| {
                    let level = if i % 13 == 0 { "ERROR" } else { "INFO" };
                    format!(
                        "2024-05-0{} {level} request {i} took {} ms digest 3f9c0d2e1b4a77c2aa01b2c3d4e5f{i:05}\n",
                        i % 9 + 1,
                        i * 7 % 1000
                    )
                })
                .collect::<String>()
                + &format!("{}needle-in-a-long-line\n", "x".repeat(70_000)),
        ),
    ];
    let mut sources = Vec::new();
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        let mut source = Source::File {
            path: path.clone(),
            name: name.to_owned(),
        };
        source.rename(name);
        sources.push(source);
    }
    sources.push(Source::Text {
        name: "notes/with-nul.txt".into(),
        text: "before\0after the nul byte\nconnection line two\n".into(),
    });
    sources
}

/// Both stores loaded with the same corpus.
fn both(test: &str) -> Option<(tempfile::TempDir, Store, Store)> {
    let url = server()?;
    let dir = tempfile::tempdir().unwrap();
    let mut local = Store::open(dir.path().join("store")).unwrap();
    let location = location(&url, test);
    let mut remote = Store::open_at(&location, None).unwrap();
    let options = ChunkOptions {
        strategy: Strategy::Auto,
        size: 300,
        ..ChunkOptions::default()
    };
    let files = dir.path().join("files");
    let local_report = local
        .load(corpus(&files), &options, &mut keep_going)
        .unwrap();
    let remote_report = remote
        .load(corpus(&files), &options, &mut keep_going)
        .unwrap();
    assert_eq!(
        serde_json::to_value(&local_report).unwrap(),
        serde_json::to_value(&remote_report).unwrap()
    );
    Some((dir, local, remote))
}

fn listing(store: &Store) -> Vec<serde_json::Value> {
    without_load_times(store.list().unwrap())
}

/// Buffers as JSON without `loaded_at`: the two stores load a second apart on a busy machine.
fn without_load_times(buffers: Vec<BufferInfo>) -> Vec<serde_json::Value> {
    buffers
        .into_iter()
        .map(|buffer| {
            let mut value = serde_json::to_value(buffer).unwrap();
            value.as_object_mut().unwrap().remove("loaded_at");
            value
        })
        .collect()
}

fn searched(store: &Store, request: &SearchRequest, embedder: Option<&dyn Embedder>) -> String {
    let outcome = store.search_with(request, embedder).unwrap();
    let hits: Vec<String> = outcome
        .hits
        .iter()
        .map(|hit| {
            format!(
                "{}:{}-{} {:.9} {} {:?}",
                hit.buffer, hit.start_line, hit.end_line, hit.score, hit.snippet, hit.highlights
            )
        })
        .collect();
    format!(
        "{:?} {:?}\n{}",
        outcome.mode,
        outcome.notice,
        hits.join("\n")
    )
}

fn grepped(store: &Store, pattern: &str, options: &GrepOptions) -> String {
    let mut out = String::new();
    let summary = store
        .grep(pattern, options, &mut |line| {
            out.push_str(&match line {
                GrepLine::Match {
                    buffer,
                    line,
                    text,
                    matches,
                } => format!("{buffer}:{line}:{text} {matches:?}\n"),
                GrepLine::Context { buffer, line, text } => format!("{buffer}-{line}-{text}\n"),
                GrepLine::Break => "--\n".to_owned(),
                GrepLine::End {
                    buffer,
                    matched_lines,
                } => format!("end {buffer} {matched_lines}\n"),
            });
            ControlFlow::Continue(())
        })
        .unwrap();
    format!(
        "{out}{} lines in {} buffers",
        summary.matched_lines, summary.matched_buffers
    )
}

const QUERIES: &[&str] = &[
    "connection",
    "logger",
    "timeout retry",
    "getLogger",
    "ERROR request",
    "3f9c0d2e1b4a77c2aa01b2c3d4e5f00026",
    "résumé café",
    "user42",
    "nothing_matches_this",
];

fn compare_searches(
    local: &Store,
    remote: &Store,
    embedder: Option<&dyn Embedder>,
    mode: SearchMode,
) {
    for query in QUERIES {
        for (limit, glob, buffers) in [
            (10, None, vec![]),
            (3, None, vec![]),
            (10, Some("*.py"), vec![]),
            (5, Some("logs/*"), vec![]),
            (10, Some("*/guide*"), vec![]),
            (
                10,
                None,
                vec!["data/users.csv".to_owned(), "src/app.py".to_owned()],
            ),
        ] {
            let request = SearchRequest {
                mode,
                limit,
                path_glob: glob.map(str::to_owned),
                buffers,
                ..SearchRequest::new(*query)
            };
            assert_eq!(
                searched(local, &request, embedder),
                searched(remote, &request, embedder),
                "{mode:?} {query:?} limit {limit} glob {glob:?}"
            );
        }
    }
}

fn compare_greps(local: &Store, remote: &Store) {
    for (pattern, options) in [
        ("connect", GrepOptions::default()),
        (
            "TIMEOUT",
            GrepOptions {
                ignore_case: true,
                ..GrepOptions::default()
            },
        ),
        (
            "time.*out",
            GrepOptions {
                before: 1,
                after: 2,
                ..GrepOptions::default()
            },
        ),
        (r"\bretry\b", GrepOptions::default()),
        (
            "ERROR",
            GrepOptions {
                max_count: Some(3),
                ..GrepOptions::default()
            },
        ),
        (
            "a.b",
            GrepOptions {
                fixed_strings: true,
                ..GrepOptions::default()
            },
        ),
        (
            "needle-in-a-long-line",
            GrepOptions {
                lines_only: true,
                ..GrepOptions::default()
            },
        ),
        ("after the nul", GrepOptions::default()),
        (
            "naïve|Über",
            GrepOptions {
                word: true,
                ..GrepOptions::default()
            },
        ),
        (
            "request 29[0-9]9 took",
            GrepOptions {
                before: 2,
                after: 2,
                ..GrepOptions::default()
            },
        ),
        (
            "user1[0-9]",
            GrepOptions {
                path_glob: Some("data/*".into()),
                ..GrepOptions::default()
            },
        ),
    ] {
        assert_eq!(
            grepped(local, pattern, &options),
            grepped(remote, pattern, &options),
            "grep {pattern:?} {options:?}"
        );
    }
}

/// One buffer read every way (text, chunks, lines, bytes, edge ranges included) gives the
/// same on both backends.
fn compare_reads(local: &Store, remote: &Store, buffer: &BufferInfo) {
    let other = remote.buffer(&buffer.name).unwrap();
    assert_eq!(local.text(buffer).unwrap(), remote.text(&other).unwrap());
    let chunks = local.chunks_of(buffer).unwrap();
    assert_eq!(chunks, remote.chunks_of(&other).unwrap(), "{}", buffer.name);
    let ids: Vec<i64> = chunks.iter().map(|chunk| chunk.id).collect();
    assert_eq!(
        local.chunk_texts(&ids).unwrap(),
        remote.chunk_texts(&ids).unwrap()
    );
    for chunk in &chunks {
        assert_eq!(
            local.chunk(chunk.id).unwrap(),
            remote.chunk(chunk.id).unwrap()
        );
    }
    let lines = buffer.lines;
    for (first, last) in [
        (1, 1),
        (1, 3),
        (2, 5),
        (lines, lines),
        (lines.max(2) - 1, lines + 5),
        (0, 1),
        (lines + 2, lines + 3),
        (3, 2),
    ] {
        assert_eq!(
            format!("{:?}", local.read_lines(buffer, first, last)),
            format!("{:?}", remote.read_lines(&other, first, last)),
            "{} lines {first}:{last}",
            buffer.name
        );
    }
    // Within a ceiling: the same text, cut and start; PostgreSQL fetches no segment past it.
    for (first, last) in [(1, lines), (2, lines + 5), (lines, lines)] {
        for max_bytes in [0, 1, 7, 100, 9_000, 70_000, u64::MAX] {
            assert_eq!(
                format!(
                    "{:?}",
                    local.read_lines_within(buffer, first, last, max_bytes)
                ),
                format!(
                    "{:?}",
                    remote.read_lines_within(&other, first, last, max_bytes)
                ),
                "{} lines {first}:{last} within {max_bytes}",
                buffer.name
            );
        }
    }
    for range in [
        0..0,
        0..10,
        5..9000,
        buffer.bytes.saturating_sub(7)..buffer.bytes,
        std::ops::Range { start: 3, end: 2 },
    ] {
        assert_eq!(
            format!("{:?}", local.read_bytes(buffer, range.clone())),
            format!("{:?}", remote.read_bytes(&other, range.clone())),
            "{} bytes {range:?}",
            buffer.name
        );
    }
}

#[test]
fn the_same_scenario_gives_the_same_answers_on_both_backends() {
    let Some((_dir, mut local, mut remote)) = both("scenario") else {
        return;
    };
    assert_eq!(listing(&local), listing(&remote));
    for buffer in local.list().unwrap() {
        compare_reads(&local, &remote, &buffer);
    }
    assert_eq!(
        local.chunks_of_each(&local.list().unwrap()).unwrap(),
        remote.chunks_of_each(&remote.list().unwrap()).unwrap()
    );
    for name in ["app.py", "src/app.py", "1", "*.md", "logs", "nope"] {
        assert_eq!(
            format!("{:?}", local.select_buffers(name).map(|found| found.len())),
            format!("{:?}", remote.select_buffers(name).map(|found| found.len())),
            "{name}"
        );
    }
    compare_searches(&local, &remote, None, SearchMode::Bm25);
    compare_greps(&local, &remote);
    let (a, b) = (local.status().unwrap(), remote.status().unwrap());
    assert_eq!(
        (a.buffers, a.chunks, a.text_bytes),
        (b.buffers, b.chunks, b.text_bytes)
    );
    assert_eq!((b.indexed_chunks, b.pending_index_work), (b.chunks, 0));

    // Vectors: the same vectors, the same semantic and hybrid answers.
    let embedder = embedder();
    let done = local
        .embed(&embedder, false, &mut |_| ControlFlow::Continue(()))
        .unwrap();
    let remote_done = remote
        .embed(&embedder, false, &mut |_| ControlFlow::Continue(()))
        .unwrap();
    assert_eq!(
        (done.done, done.total),
        (remote_done.done, remote_done.total)
    );
    assert_eq!(
        local.embedding_status().unwrap().embedded_chunks,
        remote.embedding_status().unwrap().embedded_chunks
    );
    compare_searches(&local, &remote, Some(&embedder), SearchMode::Semantic);
    compare_searches(&local, &remote, Some(&embedder), SearchMode::Hybrid);

    // A delete, then a reindex, which leaves the local index without deleted documents.
    let deleted = local.delete(&["docs/guide.md".to_owned()]).unwrap();
    assert_eq!(
        without_load_times(deleted),
        without_load_times(remote.delete(&["docs/guide.md".to_owned()]).unwrap())
    );
    assert_eq!(listing(&local), listing(&remote));
    compare_greps(&local, &remote);
    let location = remote.location();
    drop(remote);
    let report = Store::reindex_at(&location, &mut |_| {}).unwrap();
    let remote = Store::open_at(&location, None).unwrap();
    let local_dir = local.dir().to_owned();
    drop(local);
    let local_report = Store::reindex(&local_dir, &mut |_| {}).unwrap();
    assert_eq!(
        (report.buffers, report.chunks),
        (local_report.buffers, local_report.chunks)
    );
    let local = Store::open(&local_dir).unwrap();
    compare_searches(&local, &remote, None, SearchMode::Bm25);
    let checks = rlm_store::diagnose_at(&location);
    assert!(checks.iter().all(|check| check.ok), "{checks:#?}");
}

#[test]
fn two_machines_loading_the_same_files_converge_on_one_copy() {
    let Some(url) = server() else {
        return;
    };
    let location = location(&url, "converge");
    Store::open_at(&location, None).unwrap();
    let threads: Vec<_> = (0..4)
        .map(|writer| {
            let location = location.clone();
            std::thread::spawn(move || {
                let mut store = Store::open_at(&location, None).unwrap();
                for round in 0..6 {
                    // Half the writers load one version of a file, half another.
                    let version = (writer + round) % 2;
                    let sources = (0..5)
                        .map(|file| Source::Text {
                            name: format!("shared/{file}.txt"),
                            text: format!("version {version} of file {file}\nshared words\n"),
                        })
                        .collect();
                    store
                        .load(sources, &ChunkOptions::default(), &mut keep_going)
                        .unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let store = Store::open_at(&location, None).unwrap();
    let names: Vec<String> = store.list().unwrap().into_iter().map(|b| b.name).collect();
    assert_eq!(
        names,
        (0..5)
            .map(|f| format!("shared/{f}.txt"))
            .collect::<Vec<_>>()
    );
    let status = store.status().unwrap();
    assert_eq!((status.chunks, status.indexed_chunks), (5, 5));
    let hits = store.search(&SearchRequest::new("shared")).unwrap().hits;
    assert_eq!(hits.len(), 5);
    let checks = rlm_store::diagnose_at(&location);
    assert!(checks.iter().all(|check| check.ok), "{checks:#?}");
}

#[test]
fn a_connection_dropped_mid_load_stores_nothing_and_says_to_rerun() {
    let Some(url) = server() else {
        return;
    };
    let location = location(&url, "dropped");
    let StoreLocation::Postgres(mut tagged) = location.clone() else {
        panic!()
    };
    tagged.application_name = Some("rlm_drop_test".into());
    let tagged = StoreLocation::Postgres(tagged);
    let mut store = Store::open_at(&tagged, None).unwrap();
    let sources: Vec<Source> = (0..6)
        .map(|file| Source::Text {
            name: format!("f{file}.txt"),
            text: format!("file {file}\n").repeat(5000),
        })
        .collect();
    let mut seen = 0;
    let result = store.load(sources, &ChunkOptions::default(), &mut |event| {
        if let rlm_store::LoadEvent::Loaded(_) = event {
            seen += 1;
            if seen == 3 {
                sql(
                    &location,
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                     WHERE application_name = 'rlm_drop_test'",
                );
            }
        }
        ControlFlow::Continue(())
    });
    let error = result.unwrap_err();
    let text = format!(
        "{error}: {}",
        std::error::Error::source(&error)
            .map(ToString::to_string)
            .unwrap_or_default()
    );
    assert!(matches!(error, Error::Postgres { .. }), "{error:?}");
    assert!(text.contains("nothing") && text.contains("lost"), "{text}");
    let store = Store::open_at(&location, None).unwrap();
    assert!(store.list().unwrap().is_empty());
    assert_eq!(store.status().unwrap().indexed_chunks, 0);
}

#[test]
fn bad_servers_passwords_privileges_and_schemas_are_clear_errors() {
    let Some(url) = server() else {
        return;
    };
    let StoreLocation::Postgres(base) = location(&url, "bad") else {
        panic!()
    };
    // Nothing listens on port 1.
    let mut unreachable = base.clone();
    unreachable.ports = vec![1];
    unreachable.connect_timeout = Some(5);
    let error = Store::open_at(&StoreLocation::Postgres(unreachable), None).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("cannot reach the PostgreSQL server"),
        "{error}"
    );

    let mut wrong = base.clone();
    wrong.set_password("not-the-password-2468".into());
    let error = Store::open_at(&StoreLocation::Postgres(wrong), None).unwrap_err();
    let text = format!("{error} {:?}", error);
    assert!(
        error.to_string().contains("refused the password"),
        "{error}"
    );
    assert!(!text.contains("not-the-password-2468"), "{text}");

    // A user who may not create schemas in the database.
    sql(
        &StoreLocation::Postgres(base.clone()),
        "DROP ROLE IF EXISTS rlm_lowly; CREATE ROLE rlm_lowly LOGIN PASSWORD 'lowly-pw-1357'",
    );
    let mut lowly = base.clone();
    lowly.user = "rlm_lowly".into();
    lowly.set_password("lowly-pw-1357".into());
    let error = Store::open_at(&StoreLocation::Postgres(lowly.clone()), None).unwrap_err();
    assert!(
        error.to_string().contains("may not create schema"),
        "{error}"
    );
    assert!(!Store::exists_at(&StoreLocation::Postgres(lowly)).unwrap());

    // A schema written by a newer rlm.
    let location = StoreLocation::Postgres(base.clone());
    Store::open_at(&location, None).unwrap();
    sql(
        &location,
        &format!("UPDATE \"{}\".store_meta SET version = 99", base.schema),
    );
    let error = Store::open_at(&location, None).unwrap_err();
    assert!(
        matches!(error, Error::SchemaTooNew { found: 99, .. }),
        "{error:?}"
    );
}

#[test]
fn without_pgvector_semantic_search_scans_and_says_so_and_bm25_works() {
    let Some(url) = server() else {
        return;
    };
    let StoreLocation::Postgres(base) = location(&url, "novector") else {
        panic!()
    };
    // The owner of a database of its own, not a superuser: pg_trgm is trusted, pgvector not.
    let admin_location = StoreLocation::Postgres(base.clone());
    let mut client = admin(&admin_location);
    // One statement a call: DROP DATABASE may not run in a transaction block.
    for statement in [
        "DROP DATABASE IF EXISTS rlm_novector",
        "DROP ROLE IF EXISTS rlm_owner",
        "CREATE ROLE rlm_owner LOGIN PASSWORD 'owner-pw-8642'",
        "CREATE DATABASE rlm_novector OWNER rlm_owner",
    ] {
        client.batch_execute(statement).unwrap();
    }
    let mut owner = base.clone();
    owner.user = "rlm_owner".into();
    owner.database = "rlm_novector".into();
    owner.set_password("owner-pw-8642".into());
    let location = StoreLocation::Postgres(owner);
    let mut store = Store::open_at(&location, None).unwrap();
    let dir = tempfile::tempdir().unwrap();
    store
        .load(
            corpus(dir.path()),
            &ChunkOptions::default(),
            &mut keep_going,
        )
        .unwrap();
    assert!(
        !store
            .search(&SearchRequest::new("connection"))
            .unwrap()
            .hits
            .is_empty()
    );
    let embedder = embedder();
    store
        .embed(&embedder, false, &mut |_| ControlFlow::Continue(()))
        .unwrap();
    let request = SearchRequest {
        mode: SearchMode::Semantic,
        ..SearchRequest::new("database connection")
    };
    let outcome = store.search_with(&request, Some(&embedder)).unwrap();
    assert_eq!(outcome.mode, SearchMode::Semantic);
    assert!(
        outcome
            .notice
            .unwrap()
            .contains("pgvector is not installed")
    );
    assert!(!outcome.hits.is_empty());
    let checks = rlm_store::diagnose_at(&location);
    let pgvector = checks
        .iter()
        .find(|check| check.name == "pgvector")
        .unwrap();
    assert!(
        !pgvector.ok && pgvector.detail.contains("missing"),
        "{checks:#?}"
    );
    drop(store);
    client
        .batch_execute("DROP DATABASE rlm_novector WITH (FORCE)")
        .unwrap();
}

#[test]
fn a_store_copied_to_postgres_and_back_answers_as_the_original() {
    let Some(url) = server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut original = Store::open(dir.path().join("original")).unwrap();
    let options = ChunkOptions {
        size: 250,
        ..ChunkOptions::default()
    };
    original
        .load(corpus(&dir.path().join("files")), &options, &mut keep_going)
        .unwrap();
    let embedder = embedder();
    original
        .embed(&embedder, false, &mut |_| ControlFlow::Continue(()))
        .unwrap();
    let mut shared = Store::open_at(&location(&url, "copy"), None).unwrap();
    let mut batches = 0;
    let report = original
        .copy_into(&mut shared, &mut |_, _| {
            batches += 1;
            ControlFlow::Continue(())
        })
        .unwrap();
    let status = original.status().unwrap();
    assert_eq!(
        (report.copied, report.chunks, report.vectors, batches),
        (status.buffers, status.chunks, status.embedded_chunks, 1)
    );
    let mut back = Store::open(dir.path().join("back")).unwrap();
    shared
        .copy_into(&mut back, &mut |_, _| ControlFlow::Continue(()))
        .unwrap();
    // A copy numbers its buffers and chunks anew, in name order.
    let without_ids = |store: &Store| -> Vec<serde_json::Value> {
        let mut listed = listing(store);
        for buffer in &mut listed {
            buffer.as_object_mut().unwrap().remove("id");
        }
        listed
    };
    // Its chunks tie as the original's do, but ties go by chunk id: hits compared as sets.
    let ties_aside = |store: &Store, mode: SearchMode, query: &str| -> Vec<String> {
        let request = SearchRequest {
            mode,
            limit: 50,
            ..SearchRequest::new(query)
        };
        let mut hits: Vec<String> = searched(store, &request, Some(&embedder))
            .lines()
            .map(str::to_owned)
            .collect();
        hits.sort();
        hits
    };
    for copy in [&shared, &back] {
        assert_eq!(without_ids(&original), without_ids(copy));
        for query in QUERIES {
            for mode in [SearchMode::Bm25, SearchMode::Semantic] {
                assert_eq!(
                    ties_aside(&original, mode, query),
                    ties_aside(copy, mode, query),
                    "{mode:?} {query}"
                );
            }
        }
        compare_greps(&original, copy);
    }
    // Copying again finds every buffer there already.
    let again = original
        .copy_into(&mut shared, &mut |_, _| ControlFlow::Continue(()))
        .unwrap();
    assert_eq!((again.copied, again.unchanged), (0, status.buffers));
}
