//! A buffer's stored text streamed out of SQLite in reads that end where its pages end.
//!
//! A large text lives in a chain of overflow pages, each starting with the number of the next.
//! SQLite reads a page straight into the caller's memory when the read needs it from its
//! start, but a page that a read only starts gets read again, whole, by the next read; and a
//! read that ends exactly at a page's end leaves the next page's number unknown, so the next
//! read reads that last page again for it (`accessPayload` in `sqlite3.c`). The searcher asks
//! for 64 KiB at a time, which ends inside a page almost every time: with 16 KiB pages, a fifth
//! more bytes were read than stored. Each read here ends one byte into a page instead: that
//! byte costs a read of 5 bytes, and the next read starts in a page whose number is known.

use std::io::Read;

use rusqlite::blob::Blob;

/// A reader of a buffer's stored text.
pub(crate) struct PageReader<'c> {
    blob: Blob<'c>,
    position: usize,
    layout: Layout,
}

impl<'c> PageReader<'c> {
    /// The value `blob` (a row of a table keyed by its row id alone, as `buffer_pieces` and
    /// `buffer_text` are), in a database of `page_size`-byte pages.
    pub(crate) fn new(blob: Blob<'c>, page_size: usize) -> Self {
        let layout = Layout::of(blob.len(), page_size);
        Self {
            blob,
            position: 0,
            layout,
        }
    }

    /// The blob handle, to be moved to another row.
    pub(crate) fn into_blob(self) -> Blob<'c> {
        self.blob
    }
}

impl Read for PageReader<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let end = self.layout.cut(self.position, self.position + buffer.len());
        let read = self.blob.read(&mut buffer[..end - self.position])?;
        self.position += read;
        Ok(read)
    }
}

/// Where a text's pages end, in the text's own offsets. The layout is SQLite's file format
/// ("Cell Payload Overflow Pages" in its documentation): a row's payload (here a record of the
/// row id's `NULL` and the text) keeps a part in the table's leaf page, the rest runs over
/// pages of `usable - 4` bytes each. Were it wrong (another layout), reads would only be
/// slower, never different.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    length: usize,
    /// Where the first overflow page starts (`length` when none).
    first: usize,
    /// Text bytes in an overflow page.
    page: usize,
}

impl Layout {
    fn of(length: usize, page_size: usize) -> Self {
        // No reserved bytes at the end of pages: nothing here sets them.
        let usable = page_size;
        // The header's own length, the row id's serial type (`NULL`: the row id is the key),
        // the text's serial type, which is a varint of `2 * length + 12`.
        let header = 2 + varint_length(2 * length as u64 + 12);
        let payload = header + length;
        let page = usable.saturating_sub(4).max(1);
        let max_local = usable.saturating_sub(35);
        if payload <= max_local {
            return Self {
                length,
                first: length,
                page,
            };
        }
        let min_local = ((usable.saturating_sub(12)) * 32 / 255).saturating_sub(23);
        let spill = min_local + (payload - min_local) % page;
        let local = if spill <= max_local { spill } else { min_local };
        Self {
            length,
            first: local.saturating_sub(header).min(length),
            page,
        }
    }

    /// Where a read from `start` that may go up to `end` stops: one byte past the last page
    /// end that leaves that byte past `start` and not past `end` (or the end of the text),
    /// else `end`.
    fn cut(self, start: usize, end: usize) -> usize {
        let end = end.min(self.length);
        if end == self.length || end <= self.first {
            return end;
        }
        let cut = self.first + (end - self.first - 1) / self.page * self.page + 1;
        if cut > start { cut } else { end }
    }
}

/// The bytes of SQLite's varint for `value`.
fn varint_length(value: u64) -> usize {
    let bits = 64 - value.leading_zeros() as usize;
    bits.div_ceil(7).clamp(1, 9)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use rusqlite::Connection;

    use super::*;

    fn table(page_size: usize) -> Connection {
        let connection = Connection::open_in_memory().unwrap();
        connection
            .pragma_update(None, "page_size", page_size)
            .unwrap();
        // As the store's table (`schema.rs`).
        connection
            .execute_batch(
                "CREATE TABLE buffer_text (buffer_id INTEGER PRIMARY KEY, text BLOB NOT NULL)",
            )
            .unwrap();
        connection
    }

    fn text(length: usize) -> Vec<u8> {
        (0..length).map(|at| b'a' + (at % 26) as u8).collect()
    }

    #[test]
    fn the_layout_is_where_sqlite_puts_the_pages() {
        // SQLite's own account of its pages (`dbstat`): the leaf page keeps the record's
        // header and the text's first part, each overflow page the next part.
        for page_size in [4096, 16384] {
            for length in [100, 4000, 5000, 16000, 16400, 40_000, 1_000_084, 2_500_000] {
                let connection = table(page_size);
                connection
                    .execute("INSERT INTO buffer_text VALUES (1, ?1)", [text(length)])
                    .unwrap();
                let pages: Vec<(String, usize)> = connection
                    .prepare(
                        "SELECT pagetype, payload FROM dbstat WHERE name = 'buffer_text'
                         ORDER BY pageno",
                    )
                    .unwrap()
                    .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
                    .unwrap()
                    .collect::<rusqlite::Result<_>>()
                    .unwrap();
                let layout = Layout::of(length, page_size);
                let header = 2 + varint_length(2 * length as u64 + 12);
                let (kind, local) = &pages[0];
                assert_eq!(kind, "leaf", "{page_size} {length}");
                assert_eq!(local - header, layout.first, "{page_size} {length}");
                let overflow: Vec<usize> = pages[1..].iter().map(|(_, bytes)| *bytes).collect();
                if let Some((last, full)) = overflow.split_last() {
                    assert!(full.iter().all(|bytes| *bytes == layout.page));
                    assert!(*last <= layout.page && *last > 0);
                    assert_eq!(layout.first + full.len() * layout.page + last, length);
                } else {
                    assert_eq!(layout.first, length, "{page_size} {length}");
                }
            }
        }
    }

    #[test]
    fn reads_end_at_page_ends_and_give_the_whole_text() {
        let connection = table(4096);
        let length = 100_000;
        let stored = text(length);
        connection
            .execute("INSERT INTO buffer_text VALUES (7, ?1)", [&stored])
            .unwrap();
        for size in [1, 100, 4092, 5000, 65_536, 200_000] {
            let blob = connection
                .blob_open(rusqlite::MAIN_DB, "buffer_text", "text", 7, true)
                .unwrap();
            let mut reader = PageReader::new(blob, 4096);
            let layout = reader.layout;
            let mut read = Vec::new();
            let mut buffer = vec![0; size];
            loop {
                let count = reader.read(&mut buffer).unwrap();
                if count == 0 {
                    break;
                }
                let end = read.len() + count;
                // Past the leaf's part, a read a page long or more ends a byte into a page.
                if size >= layout.page && end > layout.first && end < length {
                    assert_eq!((end - layout.first) % layout.page, 1, "size {size}");
                }
                read.extend_from_slice(&buffer[..count]);
            }
            assert_eq!(read, stored, "size {size}");
        }
    }

    #[test]
    fn varints_are_seven_bits_a_byte() {
        assert_eq!(varint_length(0), 1);
        assert_eq!(varint_length(127), 1);
        assert_eq!(varint_length(128), 2);
        assert_eq!(varint_length((1 << 21) - 1), 3);
        assert_eq!(varint_length(1 << 21), 4);
    }
}
