//! `rlm doctor`: every check of a store directory, read-only.
//!
//! [`diagnose`] opens nothing for writing and creates nothing, so it can look at a store that
//! [`Store::open`](crate::Store::open) refuses. Each [`Check`] says what was found and, for a
//! problem, what repairs it.

use std::fs::File;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};
use serde::Serialize;

use crate::index;
use crate::leftovers;
use crate::schema;
use crate::store::{DATABASE, INDEX, open_database};
use crate::tokenizer::IndexFormat;

/// One check of a store and its outcome.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Check {
    /// What was checked, e.g. "bm25 index".
    pub name: &'static str,
    /// Whether it is healthy.
    pub ok: bool,
    /// What was found.
    pub detail: String,
    /// For a problem, what repairs it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    pub(crate) fn ok(name: &'static str, detail: impl Into<String>) -> Self {
        Self {
            name,
            ok: true,
            detail: detail.into(),
            fix: None,
        }
    }

    /// Healthy, with something the user may want to do (`fix`): a resumable state, not
    /// damage.
    pub(crate) fn resumable(
        name: &'static str,
        detail: impl Into<String>,
        next: impl Into<String>,
    ) -> Self {
        Self {
            name,
            ok: true,
            detail: detail.into(),
            fix: Some(next.into()),
        }
    }

    pub(crate) fn problem(
        name: &'static str,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self {
            name,
            ok: false,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }
}

const REINDEX: &str = "run `rlm reindex` to rebuild it from the stored text";

/// Runs every check on the store at `location`: [`diagnose`] for a directory; for PostgreSQL,
/// the connection, the server's version and encoding, the schema version and marker, the
/// extensions (pgvector, pg_trgm), the BM25 statistics against the chunks, and the vectors.
pub fn diagnose_at(location: &crate::StoreLocation) -> Vec<Check> {
    match location {
        crate::StoreLocation::Directory(dir) => diagnose(dir),
        #[cfg(feature = "postgres")]
        crate::StoreLocation::Postgres(postgres) => crate::postgres::diagnose(postgres),
        #[cfg(not(feature = "postgres"))]
        crate::StoreLocation::Postgres(_) => vec![Check::problem(
            "database",
            format!("{location} needs the postgres backend, which this build leaves out"),
            "use an rlm built with the `postgres` feature",
        )],
    }
}

/// Runs every check on the store in `dir`: the database file, SQLite's `quick_check`, the
/// schema version, the store marker, queued index work, the BM25 index (present, checksums,
/// document count against the chunk count), vectors against chunks for the recorded model,
/// and temporary files left by a killed writer. Checks that need the database are skipped
/// when it cannot be opened.
pub fn diagnose(dir: impl AsRef<Path>) -> Vec<Check> {
    let dir = dir.as_ref();
    let mut checks = Vec::new();
    let database = dir.join(DATABASE);
    let has_index = dir.join(INDEX).join("meta.json").is_file();
    if !database.exists() {
        checks.push(if has_index {
            Check::problem(
                "database",
                "store.sqlite is missing but bm25/ holds an index: the buffers are gone",
                "restore store.sqlite from a backup, or move the directory aside and load again",
            )
        } else {
            Check::problem(
                "database",
                format!("no store in {}", dir.display()),
                "`rlm load PATH` creates one, or pass --store DIR",
            )
        });
        return checks;
    }
    let connection = match open_database(dir, OpenFlags::SQLITE_OPEN_READ_ONLY) {
        Ok(connection) => connection,
        Err(error) => {
            checks.push(Check::problem(
                "database",
                describe(&error),
                "restore store.sqlite from a backup, or move the directory aside and load again; \
                 rlm does not overwrite it",
            ));
            return checks;
        }
    };
    checks.push(Check::ok("database", "store.sqlite opens"));
    checks.push(integrity(&connection));
    let version: i64 = connection
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap_or_default();
    checks.push(schema_version(version));
    checks.push(if version < schema::MARKER_VERSION {
        Check::ok("marker", "older store; the next write adds the marker")
    } else if schema::has_marker(&connection) {
        Check::ok("marker", "present")
    } else {
        Check::problem(
            "marker",
            "store.sqlite lacks the rlm store marker",
            "this is not an rlm store, or its metadata was damaged: restore it from a backup",
        )
    });
    let writer_running = writer_running(dir);
    let count = |sql: &str| -> u64 { connection.query_row(sql, [], |row| row.get(0)).unwrap_or(0) };
    let chunks = count("SELECT COUNT(*) FROM chunks");
    let pending = count("SELECT COUNT(*) FROM index_queue");
    checks.push(match (pending, writer_running) {
        (0, _) => Check::ok("index queue", "empty"),
        (_, true) => Check::ok(
            "index queue",
            format!("{pending} buffer update(s) queued by a running writer"),
        ),
        (_, false) => Check::problem(
            "index queue",
            format!("{pending} buffer update(s) left by an interrupted write"),
            "any command that opens the store (e.g. `rlm status`) applies them",
        ),
    });
    let (index_check, live_segments) = bm25(dir, chunks, pending);
    checks.push(index_check);
    checks.push(vectors(&connection, chunks));
    checks.push(temporary_files(dir, live_segments.as_ref(), writer_running));
    checks
}

fn integrity(connection: &Connection) -> Check {
    let rows: rusqlite::Result<Vec<String>> = connection
        .prepare("PRAGMA quick_check")
        .and_then(|mut statement| statement.query_map([], |row| row.get(0))?.collect());
    match rows {
        Ok(rows) if rows == ["ok"] => Check::ok("integrity", "SQLite quick_check: ok"),
        Ok(rows) => Check::problem(
            "integrity",
            format!("SQLite quick_check: {}", rows.join("; ")),
            "restore store.sqlite from a backup, or move the directory aside and load again",
        ),
        Err(error) => Check::problem(
            "integrity",
            format!("SQLite quick_check failed: {error}"),
            "restore store.sqlite from a backup, or move the directory aside and load again",
        ),
    }
}

fn schema_version(version: i64) -> Check {
    use std::cmp::Ordering;
    match version.cmp(&schema::VERSION) {
        Ordering::Equal => Check::ok("schema version", format!("{version}")),
        Ordering::Less => Check::ok(
            "schema version",
            format!(
                "{version}; the next write migrates it to {}",
                schema::VERSION
            ),
        ),
        Ordering::Greater => Check::problem(
            "schema version",
            format!(
                "{version}, newer than this rlm understands ({})",
                schema::VERSION
            ),
            "use the rlm that wrote this store (or a newer one)",
        ),
    }
}

fn bm25(
    dir: &Path,
    chunks: u64,
    pending: u64,
) -> (Check, Option<std::collections::HashSet<String>>) {
    const NAME: &str = "bm25 index";
    let inspection = match index::inspect(&dir.join(INDEX)) {
        Ok(Some(inspection)) => inspection,
        Ok(None) => {
            let detail = format!("missing (the store has {chunks} chunks)");
            return (Check::problem(NAME, detail, REINDEX), None);
        }
        Err(error) => {
            let detail = format!("cannot be read: {}", describe(&error));
            return (Check::problem(NAME, detail, REINDEX), None);
        }
    };
    let check = if let Err(recorded) = &inspection.format {
        Check::problem(
            NAME,
            format!(
                "written by a newer rlm (format `{recorded}`); this rlm neither searches nor \
                 writes it"
            ),
            "use the rlm that wrote it (or a newer one), or `rlm reindex` to rebuild it from \
             the database in this rlm's format",
        )
    } else if !inspection.corrupted.is_empty() {
        let files: Vec<String> = inspection
            .corrupted
            .iter()
            .map(|path| path.display().to_string())
            .collect();
        Check::problem(
            NAME,
            format!("files fail their checksum: {}", files.join(", ")),
            REINDEX,
        )
    } else if pending == 0 && inspection.documents != chunks {
        Check::problem(
            NAME,
            format!(
                "holds {} documents but the store has {chunks} chunks",
                inspection.documents
            ),
            REINDEX,
        )
    } else {
        let documents = inspection.documents;
        match older_index_note(&inspection) {
            Some(why) => Check::ok(
                NAME,
                format!(
                    "{documents} documents, checksums ok; written by an older rlm, which {why}"
                ),
            ),
            None => Check::ok(NAME, format!("{documents} documents, checksums ok")),
        }
    };
    (check, Some(inspection.live_segments))
}

/// What an index written by an older rlm lacks and costs, if it is one (`rlm reindex` mends it).
fn older_index_note(inspection: &index::IndexInspection) -> Option<&'static str> {
    if inspection.format == Ok(IndexFormat::RandomLeftOut) {
        Some(
            "left digests and other random-looking tokens out and kept no buffer names, so \
             `--path` filters read the buffer table (`rlm reindex` rebuilds it with both)",
        )
    } else if !inspection.buffer_names {
        Some(
            "kept no buffer names, so `--path` filters read the buffer table and are slower on \
             many buffers (`rlm reindex` rebuilds it with them)",
        )
    } else if !inspection.path_components {
        Some(
            "kept no path components, so a `--path` glob with neither a literal prefix nor \
             suffix (`*/tests/*`) matches every buffer name and is slower on many buffers \
             (`rlm reindex` rebuilds it with them)",
        )
    } else {
        None
    }
}

fn vectors(connection: &Connection, chunks: u64) -> Check {
    const NAME: &str = "vectors";
    let model: Option<(String, i64)> = connection
        .query_row(
            "SELECT model_id, dimension FROM embedding_model WHERE id = 1",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .ok();
    let Some((model, dimension)) = model else {
        return Check::ok(NAME, "none (BM25 only)");
    };
    let counts: rusqlite::Result<(u64, u64)> = connection.query_row(
        "SELECT COUNT(*), COUNT(*) FILTER (WHERE length(vector) != ?1) FROM embeddings",
        [dimension * 4],
        |row| Ok((row.get(0)?, row.get(1)?)),
    );
    match counts {
        Err(error) => Check::problem(
            NAME,
            format!("cannot count the vectors: {error}"),
            "run `rlm embed --reset` to compute them again",
        ),
        Ok((_, malformed)) if malformed > 0 => Check::problem(
            NAME,
            format!("{malformed} vector(s) are not {dimension} numbers long ({model})"),
            "run `rlm embed --reset` to compute them again",
        ),
        // An embedding cut short (or new chunks loaded since) is a state `rlm embed` resumes
        // from, not damage.
        Ok((embedded, _)) if embedded < chunks => Check::resumable(
            NAME,
            format!("{embedded} of {chunks} chunks have a vector so far ({model})"),
            "run `rlm embed` (or `rlm reindex`) with the model available to embed the rest",
        ),
        Ok((embedded, _)) => Check::ok(NAME, format!("{embedded} of {chunks} chunks ({model})")),
    }
}

fn temporary_files(
    dir: &Path,
    live_segments: Option<&std::collections::HashSet<String>>,
    writer_running: bool,
) -> Check {
    const NAME: &str = "temporary files";
    let found = leftovers::find_with(dir, live_segments);
    if found.is_empty() {
        return Check::ok(NAME, "none");
    }
    let bytes: u64 = found.iter().map(|leftover| leftover.bytes).sum();
    if writer_running {
        return Check::ok(
            NAME,
            format!(
                "{} file(s), {bytes} bytes, in use by a running writer",
                found.len()
            ),
        );
    }
    let names: Vec<String> = found
        .iter()
        .map(|leftover| leftover.path.display().to_string())
        .collect();
    Check::problem(
        NAME,
        format!(
            "{} file(s), {bytes} bytes, left by a killed writer: {}",
            found.len(),
            names.join(", ")
        ),
        "any command that opens the store (e.g. `rlm status`) removes them",
    )
}

/// Whether another process holds the write lock (checked without creating the lock file).
fn writer_running(dir: &Path) -> bool {
    let Ok(file) = File::open(dir.join("lock")) else {
        return false;
    };
    matches!(file.try_lock(), Err(std::fs::TryLockError::WouldBlock))
}

/// An error and its causes on one line.
pub(crate) fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        cause = inner.source();
    }
    text
}
