//! The durable index work queue a load appends to: every stored buffer queues an "add", every
//! replaced one a "delete", in the load's SQLite transaction. The load's own index writer does
//! the same work at once; the queue is what a crash between the two commits leaves for the
//! next writer to replay (see [`crate::Store`]).

use rusqlite::Transaction;

use crate::error::Result;
use crate::index::Bm25Writer;

/// Queues indexing the chunks of buffer `buffer_id`.
pub(super) fn queue_add(transaction: &Transaction<'_>, buffer_id: i64) -> Result<()> {
    transaction.execute(
        "INSERT INTO index_queue (buffer_id, action) VALUES (?1, 'add')",
        [buffer_id],
    )?;
    Ok(())
}

/// Queues removing the documents of buffer `buffer_id`, and removes them through `writer`.
pub(super) fn queue_delete(
    transaction: &Transaction<'_>,
    writer: Option<&Bm25Writer<'_>>,
    buffer_id: i64,
) -> Result<()> {
    transaction.execute(
        "INSERT INTO index_queue (buffer_id, action) VALUES (?1, 'delete')",
        [buffer_id],
    )?;
    if let Some(writer) = writer {
        writer.delete_buffer(buffer_id);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::ops::ControlFlow;

    use rlm_context::chunk::ChunkOptions;

    use crate::SearchRequest;
    use crate::load::stream::Streaming;
    use crate::load::{LoadEvent, Source, write_sources};
    use crate::store::LocalStore;

    #[test]
    fn a_crash_between_sqlite_and_the_index_is_repaired_on_open() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut store = LocalStore::open(dir.path()).unwrap();
            let sources = vec![Source::Text {
                name: "a".into(),
                text: "durable words\n".into(),
            }];
            // Commit SQLite but "crash" before the index is updated.
            write_sources(
                &mut store.connection,
                None,
                sources,
                &ChunkOptions::default(),
                Streaming::default(),
                &std::env::temp_dir(),
                &mut |_| ControlFlow::Continue(()),
            )
            .unwrap();
            let status = store.status().unwrap();
            assert_eq!(
                (
                    status.chunks,
                    status.indexed_chunks,
                    status.pending_index_work
                ),
                (1, 0, 1)
            );
        }
        let store = LocalStore::open(dir.path()).unwrap();
        let status = store.status().unwrap();
        assert_eq!((status.indexed_chunks, status.pending_index_work), (1, 0));
        assert_eq!(
            store
                .search(&SearchRequest::new("durable"))
                .unwrap()
                .hits
                .len(),
            1
        );
    }

    #[test]
    fn replay_skips_adds_whose_buffer_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut store = LocalStore::open(dir.path()).unwrap();
            let options = ChunkOptions::default();
            let mut keep = |_: LoadEvent<'_>| ControlFlow::Continue(());
            // Two committed loads of one name whose index work never ran: the queue holds
            // "add 1", "delete 1", "add 2", and buffer 1 no longer exists.
            for text in ["old words\n", "new words\n"] {
                let sources = vec![Source::Text {
                    name: "a".into(),
                    text: text.into(),
                }];
                write_sources(
                    &mut store.connection,
                    None,
                    sources,
                    &options,
                    Streaming::default(),
                    &std::env::temp_dir(),
                    &mut keep,
                )
                .unwrap();
            }
            assert_eq!(store.status().unwrap().pending_index_work, 3);
        }
        let store = LocalStore::open(dir.path()).unwrap();
        let status = store.status().unwrap();
        assert_eq!(
            (
                status.chunks,
                status.indexed_chunks,
                status.pending_index_work
            ),
            (1, 1, 0)
        );
        let hits = |query: &str| store.search(&SearchRequest::new(query)).unwrap().hits.len();
        assert_eq!((hits("new"), hits("old")), (1, 0));
    }
}
