//! Opening a store directory, its write lock, and keeping the BM25 index in step with SQLite.
//!
//! # Consistency between SQLite and tantivy
//! SQLite is the source of truth. A load or delete runs in one SQLite transaction that also
//! appends to `index_queue` ("add buffer 7", "delete buffer 3"). A load feeds the same changes to
//! a tantivy writer while its transaction runs, so indexing overlaps reading and chunking, but
//! commits tantivy only after SQLite has committed; if the transaction fails or is cancelled,
//! the writer is dropped and tantivy discards what it was fed. Once tantivy has committed, the
//! queue rows are removed. Replaying the queue is idempotent (every add deletes the buffer's
//! documents first), so a crash between the two commits is repaired by the next writer, which
//! replays what is left when it opens the store. Searches are always restricted to buffer ids
//! that exist in SQLite, so a replaced or deleted buffer's leftover documents are never returned,
//! and a buffer replaced by a new load gets a new id.
//!
//! # Concurrency
//! Writers (load, delete, index replay) take an exclusive lock on `DIR/lock` and wait for it, so
//! two `rlm load` processes run one after the other instead of failing. SQLite runs in WAL mode
//! with a busy timeout, so readers never block writers.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::Connection;

use crate::error::{Result, io};
use crate::index::Bm25Index;
use crate::schema;

/// How long a command waits for SQLite locks held by another process.
const BUSY_TIMEOUT: Duration = Duration::from_secs(120);

/// How much of the database file SQLite may memory-map for reading.
const MMAP_BYTES: i64 = 1 << 31;

/// An open store directory: `store.sqlite` (buffers, text, chunks) and `bm25/` (tantivy).
#[derive(Debug)]
pub struct Store {
    pub(crate) dir: PathBuf,
    pub(crate) connection: Connection,
    pub(crate) index: Bm25Index,
}

/// Events reported while the BM25 index catches up with SQLite.
#[derive(Debug, Clone, Copy)]
pub struct IndexProgress {
    /// Chunks added to the index so far in this pass.
    pub chunks: u64,
    /// Chunks to add in this pass.
    pub total: u64,
}

impl Store {
    /// Opens (creating if needed) the store in `dir`, applies schema migrations, and replays
    /// unfinished index work left by an interrupted writer when no other writer is running.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref().to_owned();
        std::fs::create_dir_all(&dir).map_err(io("cannot create store directory", &dir))?;
        let mut connection = Connection::open(dir.join("store.sqlite"))?;
        connection.busy_timeout(BUSY_TIMEOUT)?;
        connection.pragma_update(None, "journal_mode", "WAL")?;
        // Reads go through a memory map: a chunk's text is a range of its buffer's blob, and
        // reaching an offset walks the blob's overflow-page chain, which costs a system call
        // per page without the map. SQLite caps the size at its compiled maximum (2 GiB).
        connection.pragma_update(None, "mmap_size", MMAP_BYTES)?;
        connection.pragma_update(None, "synchronous", "NORMAL")?;
        connection.pragma_update(None, "foreign_keys", "ON")?;
        schema::migrate(&mut connection)?;
        let index = Bm25Index::open(&dir.join("bm25"))?;
        let mut store = Self {
            dir,
            connection,
            index,
        };
        if store.pending_index_work()? > 0
            && let Some(_lock) = store.try_write_lock()?
        {
            store.sync_index(&mut |_| {})?;
        }
        Ok(store)
    }

    /// The store directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Blocks until this process is the only writer of the store.
    pub(crate) fn write_lock(&self) -> Result<File> {
        let path = self.dir.join("lock");
        let file = File::create(&path).map_err(io("cannot create", &path))?;
        file.lock().map_err(io("cannot lock", &path))?;
        Ok(file)
    }

    fn try_write_lock(&self) -> Result<Option<File>> {
        let path = self.dir.join("lock");
        let file = File::create(&path).map_err(io("cannot create", &path))?;
        match file.try_lock() {
            Ok(()) => Ok(Some(file)),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(source)) => Err(io("cannot lock", &path)(source)),
        }
    }

    /// Buffers whose index update has not been applied yet.
    pub(crate) fn pending_index_work(&self) -> Result<u64> {
        Ok(self
            .connection
            .query_row("SELECT COUNT(*) FROM index_queue", [], |row| row.get(0))?)
    }

    /// Applies the queued index work (the caller holds the write lock).
    pub(crate) fn sync_index(&mut self, progress: &mut dyn FnMut(IndexProgress)) -> Result<()> {
        // An add whose buffer was deleted or replaced since is only a delete now.
        let queue: Vec<(i64, bool)> = {
            let mut statement = self.connection.prepare(
                "SELECT buffer_id, action = 'add' AND buffer_id IN (SELECT id FROM buffers)
                 FROM index_queue ORDER BY id",
            )?;
            statement
                .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?
        };
        if queue.is_empty() {
            return Ok(());
        }
        let total: u64 = self.connection.query_row(
            "SELECT COUNT(*) FROM chunks WHERE buffer_id IN
                (SELECT buffer_id FROM index_queue WHERE action = 'add')",
            [],
            |row| row.get(0),
        )?;
        let writer = self.index.writer()?;
        let mut done = 0;
        for (buffer_id, add) in &queue {
            writer.delete_buffer(*buffer_id);
            if *add {
                let text = crate::read::buffer_text(&self.connection, *buffer_id)?;
                let mut statement = self.connection.prepare_cached(
                    "SELECT id, start, end FROM chunks WHERE buffer_id = ?1 ORDER BY seq",
                )?;
                let rows = statement.query_map([buffer_id], |row| {
                    Ok((
                        row.get::<_, i64>(0)?,
                        row.get::<_, usize>(1)?,
                        row.get::<_, usize>(2)?,
                    ))
                })?;
                for row in rows {
                    let (chunk_id, start, end) = row?;
                    let body = text.get(start..end).unwrap_or_default();
                    writer.add_chunk(chunk_id, *buffer_id, body)?;
                    done += 1;
                    if done % 1024 == 0 {
                        progress(IndexProgress {
                            chunks: done,
                            total,
                        });
                    }
                }
            }
        }
        writer.commit()?;
        self.index.reload()?;
        progress(IndexProgress {
            chunks: done,
            total,
        });
        self.index_caught_up()
    }

    /// Clears the index queue once the index holds every change in it (the caller holds the
    /// write lock, so no other writer has queued anything since).
    pub(crate) fn index_caught_up(&mut self) -> Result<()> {
        self.connection.execute("DELETE FROM index_queue", [])?;
        // Fold the write-ahead log into the database so the store's size on disk is its data
        // (a big load otherwise leaves a WAL as large as the input until the next checkpoint).
        self.connection
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        Ok(())
    }
}
