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
//! replays what is left when it opens the store. While index work is queued, searches are
//! restricted to buffer ids that exist in SQLite, so a replaced or deleted buffer's leftover
//! documents are never returned (with none queued, every document is live), and a buffer
//! replaced by a new load gets a new id.
//!
//! # Concurrency
//! Writers (load, delete, index replay) take an exclusive lock on `DIR/lock` and wait for it, so
//! two `rlm load` processes run one after the other instead of failing. SQLite runs in WAL mode
//! with a busy timeout, so readers never block writers.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rlm_context::root::FileRoot;
use rusqlite::{Connection, ErrorCode, OpenFlags};
use serde::Serialize;

use crate::error::{Error, Result, io};
use crate::index::{Bm25Index, Bm25Writer, IndexedBuffer};
use crate::leftovers;
use crate::schema;

/// The database file in a store directory.
pub(crate) const DATABASE: &str = "store.sqlite";

/// The BM25 index directory in a store directory.
pub(crate) const INDEX: &str = "bm25";

/// How long a command waits for SQLite locks held by another process.
const BUSY_TIMEOUT: Duration = Duration::from_secs(120);

/// The page size of a new database. A buffer's text past its first page is a chain of overflow
/// pages that `rlm grep` streams with one read each: 16 KiB pages make a quarter of the reads of
/// SQLite's 4 KiB (10-30% less time for a literal pattern, whose search is mostly those reads)
/// and a quarter of the hops to reach a chunk's offset. The cost is the unused tail of each
/// text's last page: +5.6% on a corpus of 18 KB source files, +0.2% on 1 MB logs (64 KiB pages
/// cost +29% on small files). Stores made before keep their 4 KiB pages and work the same.
const PAGE_BYTES: i64 = 16 * 1024;

/// How much of the database file SQLite may memory-map for reading.
pub(crate) const MMAP_BYTES: i64 = 1 << 31;

/// An open store directory: `store.sqlite` (buffers, text, chunks) and `bm25/` (tantivy).
#[derive(Debug)]
pub(crate) struct LocalStore {
    pub(crate) dir: PathBuf,
    pub(crate) connection: Connection,
    pub(crate) index: Bm25Index,
    /// Set once [`Store::ensure_index_in_step`] has passed: this process's own writes keep the
    /// index in step, so repeated searches count the chunks once.
    pub(crate) index_checked: AtomicBool,
    /// The largest buffer a load stores ([`Store::set_max_buffer_bytes`]).
    pub(crate) buffer_limit: BufferLimit,
}

/// Bytes of SQLite's value limit left to the rest of a text's record (its header is a few
/// bytes), so a text of exactly [`BufferLimit::ceiling`] bytes still fits.
const RECORD_HEADROOM: u64 = 64;

/// How large a buffer's text may be: what the load allows, and what SQLite can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BufferLimit {
    /// Sources larger than this are skipped.
    pub max: u64,
    /// The most this build's SQLite holds in one value, less the record's header.
    pub ceiling: u64,
}

impl BufferLimit {
    /// The limit of `connection`'s SQLite, asked at run time: 2,147,483,576 bytes when built
    /// with this workspace's `.cargo/config.toml`, 999,999,936 with SQLite's default.
    pub(crate) fn of(connection: &Connection) -> Result<Self> {
        let length = connection.limit(rusqlite::limits::Limit::SQLITE_LIMIT_LENGTH)?;
        let ceiling = u64::try_from(length)
            .unwrap_or(0)
            .saturating_sub(RECORD_HEADROOM);
        Ok(Self {
            max: ceiling,
            ceiling,
        })
    }
}

/// Events reported while the BM25 index catches up with SQLite.
#[derive(Debug, Clone, Copy)]
pub struct IndexProgress {
    /// Chunks added to the index so far in this pass.
    pub chunks: u64,
    /// Chunks to add in this pass.
    pub total: u64,
}

/// Whether the BM25 index holds the stored chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum IndexHealth {
    /// Every chunk is indexed, nothing else is.
    UpToDate,
    /// A writer queued index work that is not applied yet (during a load, or after a killed
    /// one until the next process opens the store).
    Pending {
        /// Buffers with queued work.
        buffers: u64,
    },
    /// The index and the chunks disagree: the index was deleted, replaced or damaged.
    /// `rlm reindex` ([`LocalStore::reindex`]) rebuilds it.
    OutOfStep {
        /// Documents in the index.
        indexed: u64,
        /// Chunks in SQLite.
        chunks: u64,
    },
}

impl LocalStore {
    /// Opens (creating if needed) the store in `dir`, applies schema migrations, and, when no
    /// other writer is running, replays unfinished index work and removes temporary files left
    /// by a killed writer.
    ///
    /// A directory holding a damaged store is not taken for a new one: an empty (0-byte) or
    /// foreign `store.sqlite`, a database without the store marker, or a missing database
    /// beside an index is [`Error::Damaged`], and nothing is written. An index that cannot be
    /// read is [`Error::IndexDamaged`] ([`LocalStore::reindex`] rebuilds it).
    pub fn open(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref().to_owned();
        std::fs::create_dir_all(&dir).map_err(io("cannot create store directory", &dir))?;
        if !dir.join(DATABASE).exists() {
            create_database(&dir)?;
        }
        let connection = open_database(&dir, OpenFlags::SQLITE_OPEN_READ_WRITE)?;
        let index_path = dir.join(INDEX);
        let index = Bm25Index::open(&index_path).map_err(|source| Error::IndexDamaged {
            path: index_path,
            source: Box::new(source),
        })?;
        let buffer_limit = BufferLimit::of(&connection)?;
        let mut store = Self {
            dir,
            connection,
            index,
            index_checked: AtomicBool::new(false),
            buffer_limit,
        };
        let has_leftovers = !leftovers::find(&store.dir, Some(&store.index)).is_empty();
        if (store.pending_index_work()? > 0 || has_leftovers)
            && let Some(_lock) = try_lock(&store.dir)?
        {
            // Under the lock no writer is running, so every temporary file is stale. Listed
            // again: a writer may have committed the segments seen above before letting go.
            leftovers::remove(&leftovers::find(&store.dir, Some(&store.index)));
            store.sync_index(&mut |_| {})?;
        }
        Ok(store)
    }

    /// [`LocalStore::open`] for a store that must lie within `root`: the directory and every file
    /// and link in it and in `bm25/` (and SQLite's `-wal`/`-shm` beside the database a link
    /// leads to) must resolve inside the root, or [`Error::OutsideRoot`] names the first that
    /// does not, before anything is opened or created.
    pub fn open_within(dir: impl AsRef<Path>, root: &FileRoot) -> Result<Self> {
        let dir = dir.as_ref();
        check_within(dir, root)?;
        Self::open(dir)
    }

    /// The store directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Blocks until this process is the only writer of the store.
    pub(crate) fn write_lock(&self) -> Result<File> {
        lock(&self.dir)
    }

    /// Whether the BM25 index holds exactly the stored chunks. Cheap: two counts.
    pub fn index_health(&self) -> Result<IndexHealth> {
        let pending = self.pending_index_work()?;
        if pending > 0 {
            return Ok(IndexHealth::Pending { buffers: pending });
        }
        let chunks: u64 = self
            .connection
            .query_row("SELECT COUNT(*) FROM chunks", [], |row| row.get(0))?;
        let indexed = self.index.document_count()?;
        Ok(if indexed == chunks {
            IndexHealth::UpToDate
        } else {
            IndexHealth::OutOfStep { indexed, chunks }
        })
    }

    /// [`Error::IndexOutOfStep`] unless the index holds the stored chunks (or is catching up
    /// with work another writer queued).
    pub(crate) fn ensure_index_in_step(&self) -> Result<()> {
        if self.index_checked.load(Ordering::Relaxed) {
            return Ok(());
        }
        match self.index_health()? {
            IndexHealth::OutOfStep { indexed, chunks } => {
                Err(Error::IndexOutOfStep { indexed, chunks })
            }
            IndexHealth::UpToDate => {
                self.index_checked.store(true, Ordering::Relaxed);
                Ok(())
            }
            IndexHealth::Pending { .. } => Ok(()),
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
                let before = done;
                done += add_buffer(&self.connection, &writer, *buffer_id, &mut |chunks| {
                    progress(IndexProgress {
                        chunks: before + chunks,
                        total,
                    });
                })?;
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

/// Adds every chunk of a buffer to `writer`; returns how many. `progress` gets the running
/// count every 1024 chunks.
pub(crate) fn add_buffer(
    connection: &Connection,
    writer: &Bm25Writer<'_>,
    buffer_id: i64,
    progress: &mut dyn FnMut(u64),
) -> Result<u64> {
    let text = crate::read::buffer_text(connection, buffer_id)?;
    let (name, path): (String, Option<String>) = connection
        .prepare_cached("SELECT name, path FROM buffers WHERE id = ?1")?
        .query_row([buffer_id], |row| Ok((row.get(0)?, row.get(1)?)))?;
    let buffer = IndexedBuffer {
        id: buffer_id,
        name: &name,
        path: path.as_deref(),
    };
    let mut statement = connection
        .prepare_cached("SELECT id, start, end FROM chunks WHERE buffer_id = ?1 ORDER BY seq")?;
    let rows = statement.query_map([buffer_id], |row| {
        Ok((
            row.get::<_, i64>(0)?,
            row.get::<_, usize>(1)?,
            row.get::<_, usize>(2)?,
        ))
    })?;
    let mut done = 0;
    for row in rows {
        let (chunk_id, start, end) = row?;
        let body = text.get(start..end).unwrap_or_default();
        writer.add_chunk(chunk_id, &buffer, body)?;
        done += 1;
        if done % 1024 == 0 {
            progress(done);
        }
    }
    Ok(done)
}

/// [`Error::OutsideRoot`] unless `dir`, its entries, the entries of its index directory and
/// the database's journal files resolve inside `root`.
fn check_within(dir: &Path, root: &FileRoot) -> Result<()> {
    let outside = Error::OutsideRoot;
    root.check(dir).map_err(outside)?;
    for folder in [dir.to_owned(), dir.join(INDEX)] {
        // A missing store is created inside the (checked) directory; a missing index too.
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries {
            let entry = entry.map_err(io("cannot list", &folder))?;
            root.check(&entry.path()).map_err(outside)?;
        }
    }
    // SQLite puts its journals beside the file a linked database resolves to.
    let database = root.check(&dir.join(DATABASE)).map_err(outside)?;
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut journal = database.clone().into_os_string();
        journal.push(suffix);
        root.check(Path::new(&journal)).map_err(outside)?;
    }
    Ok(())
}

/// Blocks until this process holds the store's write lock (`DIR/lock`).
pub(crate) fn lock(dir: &Path) -> Result<File> {
    let path = dir.join("lock");
    let file = File::create(&path).map_err(io("cannot create", &path))?;
    file.lock().map_err(io("cannot lock", &path))?;
    Ok(file)
}

/// The store's write lock, or `None` when another writer holds it.
pub(crate) fn try_lock(dir: &Path) -> Result<Option<File>> {
    let path = dir.join("lock");
    let file = File::create(&path).map_err(io("cannot create", &path))?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(source)) => Err(io("cannot lock", &path)(source)),
    }
}

/// Creates `store.sqlite` with the current schema and marker: built under a temporary name and
/// renamed into place under the write lock, so an interrupted creation never leaves an empty or
/// half-made database where a store is expected.
fn create_database(dir: &Path) -> Result<()> {
    let _lock = lock(dir)?;
    let database = dir.join(DATABASE);
    if database.exists() {
        return Ok(());
    }
    if dir.join(INDEX).join("meta.json").exists() {
        return Err(damaged(
            dir,
            "store.sqlite is missing but bm25/ holds a search index: the buffers are gone",
        ));
    }
    let temporary = dir.join(format!(
        "{}{}.sqlite",
        leftovers::NEW_DATABASE_PREFIX,
        std::process::id()
    ));
    let _ = std::fs::remove_file(&temporary);
    let mut connection = Connection::open(&temporary)?;
    // Before the first table: a database's page size is fixed once it holds one.
    connection.pragma_update(None, "page_size", PAGE_BYTES)?;
    connection.pragma_update(None, "foreign_keys", "ON")?;
    schema::migrate(&mut connection)?;
    connection.close().map_err(|(_, error)| error)?;
    std::fs::rename(&temporary, &database).map_err(io("cannot create", &database))?;
    Ok(())
}

/// Opens an existing `store.sqlite`, configured, migrated (unless read-only) and checked to be
/// a store: [`Error::Damaged`] for an empty file, a file SQLite cannot read, or a database
/// without the store marker.
pub(crate) fn open_database(dir: &Path, flags: OpenFlags) -> Result<Connection> {
    let path = dir.join(DATABASE);
    let size = std::fs::metadata(&path)
        .map_err(io("cannot open", &path))?
        .len();
    if size == 0 {
        return Err(damaged(
            dir,
            "store.sqlite is empty (0 bytes); the buffers it held are gone",
        ));
    }
    let not_a_store = |error: rusqlite::Error| match error.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
            damaged(dir, "store.sqlite is not a readable SQLite database")
        }
        _ => Error::Database(error),
    };
    let flags = flags | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut connection = Connection::open_with_flags(&path, flags).map_err(not_a_store)?;
    connection.busy_timeout(BUSY_TIMEOUT)?;
    // Checked before `configure`, which switches the file to WAL: a foreign database is left
    // exactly as it was.
    let version: i64 = connection
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(not_a_store)?;
    if version == 0 {
        return Err(damaged(
            dir,
            "store.sqlite holds no rlm schema (an empty or foreign database)",
        ));
    }
    configure(&connection, flags).map_err(not_a_store)?;
    if flags.contains(OpenFlags::SQLITE_OPEN_READ_ONLY) {
        return Ok(connection);
    }
    schema::migrate(&mut connection)?;
    if !schema::has_marker(&connection) {
        return Err(damaged(dir, "store.sqlite lacks the rlm store marker"));
    }
    Ok(connection)
}

fn configure(connection: &Connection, flags: OpenFlags) -> rusqlite::Result<()> {
    if !flags.contains(OpenFlags::SQLITE_OPEN_READ_ONLY) {
        connection.pragma_update(None, "journal_mode", "WAL")?;
    }
    // Reads go through a memory map: a chunk's text is a range of its buffer's blob, and
    // reaching an offset walks the blob's overflow-page chain, which costs a system call
    // per page without the map. SQLite caps the size at its compiled maximum (2 GiB).
    connection.pragma_update(None, "mmap_size", MMAP_BYTES)?;
    connection.pragma_update(None, "synchronous", "NORMAL")?;
    connection.pragma_update(None, "foreign_keys", "ON")?;
    Ok(())
}

fn damaged(dir: &Path, reason: &str) -> Error {
    Error::Damaged {
        dir: dir.to_owned(),
        reason: reason.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_new_database_has_large_pages_and_an_old_one_keeps_its_own() {
        let page_size = |connection: &Connection| -> i64 {
            connection
                .pragma_query_value(None, "page_size", |row| row.get(0))
                .unwrap()
        };
        let dir = tempfile::tempdir().unwrap();
        stored(dir.path(), "# a\n\nsome text\n");
        let store = LocalStore::open(dir.path()).unwrap();
        assert_eq!(page_size(&store.connection), PAGE_BYTES);
        // A store made with SQLite's default pages still opens, loads and reads as before.
        let old = tempfile::tempdir().unwrap();
        stored(old.path(), "# a\n\nsome text\n");
        let database = old.path().join(DATABASE);
        let connection = Connection::open(&database).unwrap();
        connection
            .pragma_update(None, "journal_mode", "DELETE")
            .unwrap();
        connection.pragma_update(None, "page_size", 4096).unwrap();
        connection.execute_batch("VACUUM").unwrap();
        assert_eq!(page_size(&connection), 4096);
        drop(connection);
        stored(old.path(), &"line of the old store\n".repeat(2000));
        let store = LocalStore::open(old.path()).unwrap();
        assert_eq!(page_size(&store.connection), 4096);
        let buffer = store.buffer("a.md").unwrap();
        assert!(
            store
                .text(&buffer)
                .unwrap()
                .starts_with("line of the old store")
        );
    }

    /// A store with one buffer in `dir`.
    fn stored(dir: &Path, text: &str) {
        let mut store = LocalStore::open(dir).unwrap();
        let source = crate::Source::Text {
            name: "a.md".into(),
            text: text.into(),
        };
        store
            .load(
                vec![source],
                &rlm_context::chunk::ChunkOptions::default(),
                &mut |_| std::ops::ControlFlow::Continue(()),
            )
            .unwrap();
    }

    #[test]
    fn a_store_within_a_root_refuses_files_linked_out_of_it() {
        let scratch = tempfile::tempdir().unwrap();
        let (root_dir, outside) = (scratch.path().join("root"), scratch.path().join("outside"));
        stored(&outside, "the outside secret\n");
        std::fs::create_dir(&root_dir).unwrap();
        let root = FileRoot::new(&root_dir).unwrap();

        stored(&root_dir.join("plain"), "inside\n");
        let store = LocalStore::open_within(root_dir.join("plain"), &root).unwrap();
        assert_eq!(
            store
                .search(&crate::SearchRequest::new("inside"))
                .unwrap()
                .hits
                .len(),
            1
        );
        assert!(LocalStore::open_within(root_dir.join("new"), &root).is_ok());

        // Each link out of the root, alone in an otherwise empty store directory.
        for (name, target) in [
            (DATABASE, outside.join(DATABASE)),
            (INDEX, outside.join(INDEX)),
            ("lock", outside.join("lock")),
        ] {
            let dir = root_dir.join(format!("linked-{name}"));
            std::fs::create_dir(&dir).unwrap();
            std::os::unix::fs::symlink(&target, dir.join(name)).unwrap();
            let refused = LocalStore::open_within(&dir, &root).unwrap_err();
            assert!(
                matches!(&refused, Error::OutsideRoot(outside) if outside.path == dir.join(name)),
                "{name}: {refused:?}"
            );
        }
        // A link among the index's files, and a store directory that is itself a link.
        let dir = root_dir.join("linked-segment");
        stored(&dir, "inside\n");
        std::os::unix::fs::symlink(
            outside.join(INDEX).join("meta.json"),
            dir.join("bm25/x.idx"),
        )
        .unwrap();
        assert!(matches!(
            LocalStore::open_within(&dir, &root),
            Err(Error::OutsideRoot(_))
        ));
        std::os::unix::fs::symlink(&outside, root_dir.join("linked-store")).unwrap();
        assert!(matches!(
            LocalStore::open_within(root_dir.join("linked-store"), &root),
            Err(Error::OutsideRoot(_))
        ));
    }

    #[test]
    fn segment_files_of_a_write_that_never_committed_are_removed_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = LocalStore::open(dir.path()).unwrap();
        let source = crate::Source::Text {
            name: "kept.md".into(),
            text: "the kept needle\n".into(),
        };
        store
            .load(
                vec![source],
                &rlm_context::chunk::ChunkOptions::default(),
                &mut |_| std::ops::ControlFlow::Continue(()),
            )
            .unwrap();
        let writer = store.index.writer().unwrap();
        for id in 0..500 {
            writer
                .add_chunk(
                    10_000 + id,
                    &IndexedBuffer {
                        id: 9_999,
                        name: "killed.md",
                        path: None,
                    },
                    "text of a load that was killed",
                )
                .unwrap();
        }
        writer.flush_without_commit().unwrap();
        let orphans = leftovers::find(dir.path(), Some(&store.index));
        assert!(!orphans.is_empty());
        assert!(
            orphans
                .iter()
                .all(|orphan| orphan.path.starts_with(dir.path().join(INDEX)))
        );
        drop(store);

        let store = LocalStore::open(dir.path()).unwrap();
        assert!(leftovers::find(dir.path(), Some(&store.index)).is_empty());
        assert!(orphans.iter().all(|orphan| !orphan.path.exists()));
        let outcome = store.search(&crate::SearchRequest::new("needle")).unwrap();
        assert_eq!(outcome.hits[0].buffer, "kept.md");
    }
}
