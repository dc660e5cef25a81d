//! SQLite schema and migrations.
//!
//! Migrations are an append-only list; `PRAGMA user_version` records how many were applied, and
//! every pending migration runs in one transaction with the version bump, so a crash leaves either
//! the old or the new schema.

use rusqlite::Connection;

use crate::error::{Error, Result};

/// Append-only. Never edit a released entry; add a new one.
const MIGRATIONS: &[&str] = &[
    // 1: buffers, their text (stored once), chunks as ranges, and the index work queue.
    "CREATE TABLE buffers (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL UNIQUE,
        path TEXT,
        sha256 TEXT NOT NULL,
        size INTEGER NOT NULL,
        line_count INTEGER NOT NULL,
        strategy TEXT NOT NULL,
        chunk_options TEXT NOT NULL,
        loaded_at INTEGER NOT NULL
    );
    CREATE TABLE buffer_text (
        buffer_id INTEGER PRIMARY KEY REFERENCES buffers(id) ON DELETE CASCADE,
        text BLOB NOT NULL
    );
    CREATE TABLE chunks (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        buffer_id INTEGER NOT NULL REFERENCES buffers(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        start INTEGER NOT NULL,
        end INTEGER NOT NULL,
        start_line INTEGER NOT NULL,
        end_line INTEGER NOT NULL,
        header_start INTEGER,
        header_end INTEGER
    );
    CREATE INDEX chunks_by_buffer ON chunks(buffer_id, seq);
    CREATE TABLE index_queue (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        buffer_id INTEGER NOT NULL,
        action TEXT NOT NULL CHECK (action IN ('add', 'delete'))
    );",
    // 2: embeddings, one vector per chunk, from the one model recorded in embedding_model.
    "CREATE TABLE embedding_model (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        model_id TEXT NOT NULL,
        dimension INTEGER NOT NULL
    );
    CREATE TABLE embeddings (
        chunk_id INTEGER PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
        vector BLOB NOT NULL
    );",
    // 3: the store marker. A database without it (an empty file, another program's database)
    // is not taken for a new store.
    "CREATE TABLE store_marker (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        format TEXT NOT NULL
    );
    INSERT INTO store_marker (id, format) VALUES (1, 'rlm-store');",
    // 4: a generation of the stored vectors, changed by every insert, update and delete of an
    // embedding (chunk deletes cascade here too), and their count. The quantised vector file
    // (`vectors.int8`) records the generation it was built from, so a search can tell it is
    // current without reading a vector. The first value is random so that a store rebuilt in
    // the same directory does not take an old file for its own.
    "CREATE TABLE vector_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        generation INTEGER NOT NULL,
        vectors INTEGER NOT NULL
    );
    INSERT INTO vector_state (id, generation, vectors)
        VALUES (1, random() >> 8, (SELECT COUNT(*) FROM embeddings));
    CREATE TRIGGER embedding_added AFTER INSERT ON embeddings BEGIN
        UPDATE vector_state SET generation = generation + 1, vectors = vectors + 1 WHERE id = 1;
    END;
    CREATE TRIGGER embedding_removed AFTER DELETE ON embeddings BEGIN
        UPDATE vector_state SET generation = generation + 1, vectors = vectors - 1 WHERE id = 1;
    END;
    CREATE TRIGGER embedding_changed AFTER UPDATE ON embeddings BEGIN
        UPDATE vector_state SET generation = generation + 1 WHERE id = 1;
    END;",
    // 5: buffers by path, so a `--path` glob with a literal prefix reads only the buffers whose
    // name or path starts with it (names have their unique index already).
    "CREATE INDEX buffers_by_path ON buffers(path);",
    // 6: new buffers' text in 1 MiB pieces (`text.rs`), keyed by buffer id * 2^24 + piece
    // number, so that reaching an offset does not walk a whole text's overflow pages. Buffers
    // stored before keep `buffer_text`. The key has no foreign key to cascade; the trigger
    // deletes a buffer's pieces with it.
    "CREATE TABLE buffer_pieces (
        id INTEGER PRIMARY KEY,
        text BLOB NOT NULL
    );
    CREATE TRIGGER buffer_pieces_deleted AFTER DELETE ON buffers BEGIN
        DELETE FROM buffer_pieces
            WHERE id BETWEEN old.id * 16777216 AND old.id * 16777216 + 16777215;
    END;",
];

/// The value of `store_marker.format` in every rlm store.
pub(crate) const MARKER: &str = "rlm-store";

/// The schema version that added the marker; older stores get it when next opened.
pub(crate) const MARKER_VERSION: i64 = 3;

/// Schema version this build writes.
pub(crate) const VERSION: i64 = MIGRATIONS.len() as i64;

/// Whether the database carries the store marker (false when the table or row is missing).
pub(crate) fn has_marker(connection: &Connection) -> bool {
    connection
        .query_row("SELECT format FROM store_marker WHERE id = 1", [], |row| {
            row.get::<_, String>(0)
        })
        .is_ok_and(|format| format == MARKER)
}

/// Applies pending migrations in one transaction. The caller has checked that the database is
/// a store (version above 0) or is creating one.
pub(crate) fn migrate(connection: &mut Connection) -> Result<()> {
    // Check without a write transaction first, so readers never wait for a running load.
    let current: i64 = connection.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if current == MIGRATIONS.len() as i64 {
        return Ok(());
    }
    let transaction =
        connection.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let version: i64 = transaction.pragma_query_value(None, "user_version", |row| row.get(0))?;
    let supported = MIGRATIONS.len() as i64;
    if version > supported {
        return Err(Error::SchemaTooNew {
            found: version,
            supported,
        });
    }
    for migration in MIGRATIONS.iter().skip(version as usize) {
        transaction.execute_batch(migration)?;
    }
    if version < supported {
        transaction.pragma_update(None, "user_version", supported)?;
    }
    transaction.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn migrating_twice_is_a_no_op_and_newer_schemas_are_refused() {
        let mut connection = Connection::open_in_memory().unwrap();
        migrate(&mut connection).unwrap();
        migrate(&mut connection).unwrap();
        let version: i64 = connection
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .unwrap();
        assert_eq!(version, MIGRATIONS.len() as i64);
        assert!(has_marker(&connection));
        connection.execute("DELETE FROM store_marker", []).unwrap();
        assert!(!has_marker(&connection));
        connection.pragma_update(None, "user_version", 99).unwrap();
        assert!(matches!(
            migrate(&mut connection),
            Err(Error::SchemaTooNew { found: 99, .. })
        ));
    }
}
