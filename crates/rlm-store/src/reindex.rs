//! Rebuilding the BM25 index from the text stored in SQLite.

use std::path::Path;

use rusqlite::OpenFlags;
use serde::Serialize;

use crate::error::{Result, io};
use crate::index::Bm25Index;
use crate::leftovers::{self, OLD_INDEX_PREFIX, REINDEX_PREFIX};
use crate::store::{INDEX, IndexProgress, LocalStore, add_buffer, lock, open_database};

/// What [`LocalStore::reindex`] did.
#[derive(Debug, Clone, Copy, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ReindexReport {
    /// Buffers indexed.
    pub buffers: u64,
    /// Chunks indexed (every chunk in the store).
    pub chunks: u64,
}

impl LocalStore {
    /// Rebuilds the BM25 index of the store in `dir` from its stored chunks, replacing whatever
    /// `bm25/` holds (nothing, an index out of step, or one that cannot be read). Works without
    /// opening the old index. Takes the write lock, like a load.
    ///
    /// The new index is built in a temporary directory and swapped in with two renames, so an
    /// interruption leaves the old index in place (or, between the renames, no index, which the
    /// next open reports and another reindex repairs); the temporary directories are removed by
    /// the next writer.
    pub fn reindex(
        dir: impl AsRef<Path>,
        progress: &mut dyn FnMut(IndexProgress),
    ) -> Result<ReindexReport> {
        let dir = dir.as_ref();
        let connection = open_database(dir, OpenFlags::SQLITE_OPEN_READ_WRITE)?;
        let _lock = lock(dir)?;
        // Under the lock every temporary file is stale; segment files in `bm25/` go with it.
        leftovers::remove(&leftovers::find(dir, None));
        let pid = std::process::id();
        let building = dir.join(format!("{REINDEX_PREFIX}{pid}"));
        let index = Bm25Index::open(&building)?;
        let buffers: Vec<i64> = {
            let mut statement = connection.prepare("SELECT id FROM buffers ORDER BY id")?;
            statement
                .query_map([], |row| row.get(0))?
                .collect::<rusqlite::Result<_>>()?
        };
        let total: u64 =
            connection.query_row("SELECT COUNT(*) FROM chunks", [], |row| row.get(0))?;
        let writer = index.writer()?;
        let mut chunks = 0;
        for buffer_id in &buffers {
            let before = chunks;
            chunks += add_buffer(&connection, &writer, *buffer_id, &mut |done| {
                progress(IndexProgress {
                    chunks: before + done,
                    total,
                });
            })?;
        }
        writer.commit()?;
        drop(index);
        progress(IndexProgress { chunks, total });

        let live = dir.join(INDEX);
        let old = dir.join(format!("{OLD_INDEX_PREFIX}{pid}"));
        if live.exists() {
            std::fs::rename(&live, &old).map_err(io("cannot move aside", &live))?;
        }
        std::fs::rename(&building, &live).map_err(io("cannot move into place", &building))?;
        if old.exists() {
            std::fs::remove_dir_all(&old).map_err(io("cannot remove", &old))?;
        }
        // The new index holds every stored chunk, so queued work is done.
        connection.execute("DELETE FROM index_queue", [])?;
        Ok(ReindexReport {
            buffers: buffers.len() as u64,
            chunks,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::tokenizer::IndexFormat;
    use crate::{SearchRequest, Source};

    fn load(store: &mut LocalStore, name: &str, text: &str) {
        let source = Source::Text {
            name: name.into(),
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

    fn hits(store: &LocalStore, query: &str) -> usize {
        store.search(&SearchRequest::new(query)).unwrap().hits.len()
    }

    /// Replaces the store's index with one written as rlm did before bucket terms.
    fn write_older_index(dir: &Path) {
        let connection = open_database(dir, OpenFlags::SQLITE_OPEN_READ_WRITE).unwrap();
        std::fs::remove_dir_all(dir.join(INDEX)).unwrap();
        let index =
            Bm25Index::open_in_format(&dir.join(INDEX), IndexFormat::RandomLeftOut).unwrap();
        let writer = index.writer().unwrap();
        add_buffer(&connection, &writer, 1, &mut |_| {}).unwrap();
        writer.commit().unwrap();
    }

    fn older_index_reported(dir: &Path) -> bool {
        crate::diagnose(dir)
            .iter()
            .any(|check| check.ok && check.detail.contains("older rlm"))
    }

    #[test]
    fn an_older_index_is_searched_and_written_as_before_until_reindexed() {
        let dir = tempfile::tempdir().unwrap();
        let digest = "3f9c0d2e1b4a77c2aa01b2c3d4e5f60718293a4b";
        load(
            &mut LocalStore::open(dir.path()).unwrap(),
            "a.log",
            &format!("digest {digest}\nfn test_2024_11_27_regression() {{}}\n"),
        );
        write_older_index(dir.path());
        assert!(older_index_reported(dir.path()));

        let mut store = LocalStore::open(dir.path()).unwrap();
        // As before: a random-looking term is not indexed, an identifier is found by its parts.
        assert_eq!(hits(&store, digest), 0);
        assert_eq!(hits(&store, "test_2024_11_27_regression"), 1);
        // A load into it keeps its format, so one index never mixes the two.
        load(&mut store, "b.log", "request 550e8400 ok\n");
        assert_eq!(hits(&store, "550e8400"), 1);
        assert_eq!(hits(&store, "request"), 1);
        drop(store);

        LocalStore::reindex(dir.path(), &mut |_| {}).unwrap();
        assert!(!older_index_reported(dir.path()));
        let store = LocalStore::open(dir.path()).unwrap();
        assert_eq!(hits(&store, digest), 1);
        assert_eq!(hits(&store, "550e8400"), 1);
        assert_eq!(hits(&store, "test_2024_11_27_regression"), 1);
    }
}
