//! A buffer's text in the database, written and read in pieces.
//!
//! A buffer's text is a run of 1 MiB pieces, each a row of `buffer_pieces` whose key is the
//! buffer's id and the piece's number ([`piece_key`]); every piece but the last is full. SQLite
//! keeps a value past its first page as a chain of overflow pages, and reaching an offset walks
//! that chain from its start: with the whole text as one value, reading the last lines of a
//! 1.2 GB buffer walked 73,000 pages (0.1 s, and through the memory map every one of them
//! stayed resident: 1.2 GB of RSS to print 100 bytes). With pieces, any offset is one key
//! lookup and a walk of at most 64 pages.
//!
//! Buffers stored before pieces (schema version 5 and older) keep their text as one value in
//! `buffer_text` and are read through the same calls.

use rusqlite::blob::Blob;
use rusqlite::{Connection, MAIN_DB, OptionalExtension as _};

use crate::error::{Error, Result};
use crate::page_reader::PageReader;

/// Bytes in every piece but a text's last.
pub(crate) const PIECE_BYTES: usize = 1 << 20;

/// Bits of a piece's key that number the piece within its buffer (`schema.rs` spells out
/// the same shift as `16777216` in the trigger that deletes a buffer's pieces).
const PIECE_BITS: u32 = 24;

/// The key of piece `piece` of buffer `buffer_id`: 2^24 pieces (16 TiB) per buffer. Buffer ids
/// are row ids SQLite counts up from 1, so they stay far below the 2^39 the key leaves them.
pub(crate) fn piece_key(buffer_id: i64, piece: u64) -> i64 {
    (buffer_id << PIECE_BITS) | piece as i64
}

/// Writes a buffer's text as pieces, in order: whole pieces as they fill, the rest on
/// [`TextWriter::finish`]. Holds at most one piece.
pub(crate) struct TextWriter<'c> {
    connection: &'c Connection,
    buffer_id: i64,
    pieces: u64,
    pending: Vec<u8>,
}

impl<'c> TextWriter<'c> {
    pub(crate) fn new(connection: &'c Connection, buffer_id: i64) -> Self {
        Self {
            connection,
            buffer_id,
            pieces: 0,
            pending: Vec::new(),
        }
    }

    /// Appends `bytes` to the text.
    pub(crate) fn write(&mut self, mut bytes: &[u8]) -> Result<()> {
        if !self.pending.is_empty() {
            let take = (PIECE_BYTES - self.pending.len()).min(bytes.len());
            self.pending.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.pending.len() < PIECE_BYTES {
                return Ok(());
            }
            let full = std::mem::take(&mut self.pending);
            self.insert(&full)?;
            self.pending = full;
            self.pending.clear();
        }
        while bytes.len() >= PIECE_BYTES {
            let (piece, rest) = bytes.split_at(PIECE_BYTES);
            self.insert(piece)?;
            bytes = rest;
        }
        self.pending.extend_from_slice(bytes);
        Ok(())
    }

    /// Writes the last piece (an empty text is one empty piece).
    pub(crate) fn finish(mut self) -> Result<()> {
        if !self.pending.is_empty() || self.pieces == 0 {
            let last = std::mem::take(&mut self.pending);
            self.insert(&last)?;
        }
        Ok(())
    }

    fn insert(&mut self, piece: &[u8]) -> Result<()> {
        self.connection
            .prepare_cached("INSERT INTO buffer_pieces (id, text) VALUES (?1, ?2)")?
            .execute(rusqlite::params![
                piece_key(self.buffer_id, self.pieces),
                piece
            ])?;
        self.pieces += 1;
        Ok(())
    }
}

/// Writes `bytes` as the text of buffer `buffer_id`.
pub(crate) fn write_text(connection: &Connection, buffer_id: i64, bytes: &[u8]) -> Result<()> {
    let mut writer = TextWriter::new(connection, buffer_id);
    writer.write(bytes)?;
    writer.finish()
}

/// How a buffer's text is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// `pieces` rows of `buffer_pieces`.
    Pieces { pieces: u64, length: u64 },
    /// One row of `buffer_text` (a store made before pieces).
    Whole { length: u64 },
}

impl Shape {
    /// The shape of buffer `buffer_id`'s text; an unknown buffer is [`Error::UnknownBuffer`].
    fn of(connection: &Connection, buffer_id: i64) -> Result<Self> {
        let last: Option<(i64, u64)> = connection
            .prepare_cached(
                "SELECT id, length(text) FROM buffer_pieces WHERE id BETWEEN ?1 AND ?2
                 ORDER BY id DESC LIMIT 1",
            )?
            .query_row(
                [
                    piece_key(buffer_id, 0),
                    piece_key(buffer_id, (1 << PIECE_BITS) - 1),
                ],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()?;
        if let Some((key, last_length)) = last {
            let pieces = (key - piece_key(buffer_id, 0)) as u64 + 1;
            return Ok(Self::Pieces {
                pieces,
                length: (pieces - 1) * PIECE_BYTES as u64 + last_length,
            });
        }
        let whole: Option<u64> = connection
            .prepare_cached("SELECT length(text) FROM buffer_text WHERE buffer_id = ?1")?
            .query_row([buffer_id], |row| row.get(0))
            .optional()?;
        whole
            .map(|length| Self::Whole { length })
            .ok_or_else(|| Error::UnknownBuffer(format!("buffer id {buffer_id} (no stored text)")))
    }

    fn length(self) -> u64 {
        match self {
            Self::Pieces { length, .. } | Self::Whole { length } => length,
        }
    }
}

/// Opens a blob of `table` at `row`, or moves `handle` there (`sqlite3_blob_reopen` costs a
/// fraction of opening a handle, which compiles a statement).
fn blob_at<'c, 'h>(
    connection: &'c Connection,
    handle: &'h mut Option<(i64, Blob<'c>)>,
    table: &str,
    row: i64,
) -> Result<&'h mut Blob<'c>> {
    match handle {
        Some((open, blob)) => {
            if *open != row {
                blob.reopen(row)?;
                *open = row;
            }
            Ok(blob)
        }
        None => {
            let blob = connection.blob_open(MAIN_DB, table, "text", row, true)?;
            Ok(&mut handle.insert((row, blob)).1)
        }
    }
}

/// Ranges of buffers' texts, read with blob handles kept from read to read.
pub(crate) struct TextReader<'c> {
    connection: &'c Connection,
    buffer: Option<(i64, Shape)>,
    piece: Option<(i64, Blob<'c>)>,
    whole: Option<(i64, Blob<'c>)>,
}

impl<'c> TextReader<'c> {
    pub(crate) fn new(connection: &'c Connection) -> Self {
        Self {
            connection,
            buffer: None,
            piece: None,
            whole: None,
        }
    }

    fn shape(&mut self, buffer_id: i64) -> Result<Shape> {
        match self.buffer {
            Some((id, shape)) if id == buffer_id => Ok(shape),
            _ => {
                let shape = Shape::of(self.connection, buffer_id)?;
                self.buffer = Some((buffer_id, shape));
                Ok(shape)
            }
        }
    }

    /// The length of buffer `buffer_id`'s text.
    pub(crate) fn length(&mut self, buffer_id: i64) -> Result<u64> {
        Ok(self.shape(buffer_id)?.length())
    }

    /// Bytes `start..end` of buffer `buffer_id`'s text, both clamped to its length.
    pub(crate) fn read(&mut self, buffer_id: i64, start: u64, end: u64) -> Result<Vec<u8>> {
        let length = self.length(buffer_id)?;
        let end = end.min(length);
        let start = start.min(end);
        let mut bytes = vec![0; (end - start) as usize];
        self.read_exact_at(buffer_id, &mut bytes, start)?;
        Ok(bytes)
    }

    /// Fills `bytes` from offset `at` of buffer `buffer_id`'s text, which must hold them.
    pub(crate) fn read_exact_at(
        &mut self,
        buffer_id: i64,
        mut bytes: &mut [u8],
        mut at: u64,
    ) -> Result<()> {
        match self.shape(buffer_id)? {
            Shape::Whole { .. } => {
                let blob = blob_at(self.connection, &mut self.whole, "buffer_text", buffer_id)?;
                blob.read_at_exact(bytes, at as usize)?;
            }
            Shape::Pieces { .. } => {
                while !bytes.is_empty() {
                    let piece = at / PIECE_BYTES as u64;
                    let offset = (at % PIECE_BYTES as u64) as usize;
                    let count = (PIECE_BYTES - offset).min(bytes.len());
                    let key = piece_key(buffer_id, piece);
                    let blob = blob_at(self.connection, &mut self.piece, "buffer_pieces", key)?;
                    let (now, rest) = std::mem::take(&mut bytes).split_at_mut(count);
                    blob.read_at_exact(now, offset)?;
                    bytes = rest;
                    at += count as u64;
                }
            }
        }
        Ok(())
    }
}

/// Bytes `start..end` of a buffer's text (clamped to its length).
pub(crate) fn read_range(
    connection: &Connection,
    buffer_id: i64,
    start: u64,
    end: u64,
) -> Result<Vec<u8>> {
    TextReader::new(connection).read(buffer_id, start, end)
}

/// A buffer's whole text, streamed piece after piece, each in reads that end where SQLite's
/// pages end ([`PageReader`]), through a [`MapWindow`] when given one.
pub(crate) struct TextStream<'c> {
    connection: &'c Connection,
    buffer_id: i64,
    shape: Shape,
    page_size: usize,
    /// The piece being read (none after a piece failed to open), and its number.
    reader: Option<PageReader<'c>>,
    piece: u64,
    window: Option<&'c MapWindow<'c>>,
}

impl<'c> TextStream<'c> {
    /// The text of buffer `buffer_id`, in a database of `page_size`-byte pages; `window`, if
    /// given, is `connection`'s and is told of every byte read.
    pub(crate) fn open(
        connection: &'c Connection,
        buffer_id: i64,
        page_size: usize,
        window: Option<&'c MapWindow<'c>>,
    ) -> Result<Self> {
        if let Some(window) = window
            && window.full()
        {
            window.release()?;
        }
        let shape = Shape::of(connection, buffer_id)?;
        let blob = match shape {
            Shape::Pieces { .. } => open_piece(connection, piece_key(buffer_id, 0))?,
            Shape::Whole { .. } => {
                connection.blob_open(MAIN_DB, "buffer_text", "text", buffer_id, true)?
            }
        };
        Ok(Self {
            connection,
            buffer_id,
            shape,
            page_size,
            reader: Some(PageReader::new(blob, page_size)),
            piece: 0,
            window,
        })
    }

    /// The next piece's reader, from `done`'s handle moved to it, or (when the window is full)
    /// a handle opened anew after the window let go of its pages: SQLite keeps its map while
    /// any handle holds a page of it.
    fn next_piece(&mut self, done: PageReader<'c>) -> std::io::Result<PageReader<'c>> {
        self.piece += 1;
        let key = piece_key(self.buffer_id, self.piece);
        let mut blob = done.into_blob();
        match self.window {
            Some(window) if window.full() => {
                drop(blob);
                window.release().map_err(std::io::Error::other)?;
                blob = open_piece(self.connection, key).map_err(std::io::Error::other)?;
            }
            _ => blob.reopen(key).map_err(std::io::Error::other)?,
        }
        Ok(PageReader::new(blob, self.page_size))
    }
}

/// A read-only handle on the piece of `buffer_pieces` keyed `key`.
fn open_piece(connection: &Connection, key: i64) -> rusqlite::Result<rusqlite::blob::Blob<'_>> {
    connection.blob_open(MAIN_DB, "buffer_pieces", "text", key, true)
}

impl std::io::Read for TextStream<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let Some(reader) = self.reader.as_mut() else {
                return Ok(0);
            };
            let read = reader.read(buffer)?;
            if let Some(window) = self.window {
                window.count(read);
            }
            let last = match self.shape {
                Shape::Pieces { pieces, .. } => self.piece + 1 >= pieces,
                Shape::Whole { .. } => true,
            };
            if read > 0 || buffer.is_empty() || last {
                return Ok(read);
            }
            let Some(done) = self.reader.take() else {
                return Ok(0);
            };
            self.reader = Some(self.next_piece(done)?);
        }
    }
}

/// Reads through SQLite's memory map with the memory they map kept small: after every
/// `limit` bytes read, the map is let go of (every page it had mapped leaves the process's
/// resident memory) and made anew, empty.
///
/// A map reads a page with no system call, where without one SQLite makes a `pread` per
/// page (16 KiB): 100 MB of text is 6,400 calls. But a map keeps each page read resident in
/// the process, so one left alone grows with the store (through it, a search with two hits
/// at the end of a 2.4 GB store held 2.2 GB). SQLite lets go of its map when the map's size
/// is set, if no statement or blob holds a page of it; [`TextStream`] opens its next piece
/// anew when the window is full.
pub(crate) struct MapWindow<'c> {
    connection: &'c Connection,
    limit: usize,
    read: std::cell::Cell<usize>,
}

impl<'c> MapWindow<'c> {
    /// A window over `connection`'s map of at most `limit` bytes read between releases.
    pub(crate) fn new(connection: &'c Connection, limit: usize) -> Self {
        Self {
            connection,
            limit,
            read: std::cell::Cell::new(0),
        }
    }

    fn count(&self, bytes: usize) {
        self.read.set(self.read.get().saturating_add(bytes));
    }

    fn full(&self) -> bool {
        self.read.get() >= self.limit
    }

    /// Lets go of the pages mapped so far (a no-op in SQLite while a page is held).
    pub(crate) fn release(&self) -> Result<()> {
        self.read.set(0);
        self.connection.pragma_update(None, "mmap_size", 0)?;
        self.connection
            .pragma_update(None, "mmap_size", crate::store::MMAP_BYTES)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::Read as _;

    use super::*;

    fn database() -> Connection {
        let mut connection = Connection::open_in_memory().unwrap();
        crate::schema::migrate(&mut connection).unwrap();
        connection
    }

    fn add_buffer(connection: &Connection, name: &str) -> i64 {
        connection
            .execute(
                "INSERT INTO buffers (name, sha256, size, line_count, strategy, chunk_options,
                 loaded_at) VALUES (?1, '', 0, 0, 'lines', '', 0)",
                [name],
            )
            .unwrap();
        connection.last_insert_rowid()
    }

    /// Bytes that differ from piece to piece and from offset to offset.
    fn text(length: usize) -> Vec<u8> {
        (0..length)
            .map(|at| b'a' + ((at / 7 + at / PIECE_BYTES) % 26) as u8)
            .collect()
    }

    fn pieces_of(connection: &Connection, buffer_id: i64) -> Vec<(i64, usize)> {
        connection
            .prepare("SELECT id, length(text) FROM buffer_pieces WHERE id >> 24 = ?1 ORDER BY id")
            .unwrap()
            .query_map([buffer_id], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    #[test]
    fn a_text_is_full_pieces_then_the_rest_however_it_is_written() {
        let connection = database();
        let length = 2 * PIECE_BYTES + 12_345;
        let stored = text(length);
        let whole = add_buffer(&connection, "whole");
        write_text(&connection, whole, &stored).unwrap();
        // Written in uneven steps, some larger than a piece.
        let steps = add_buffer(&connection, "steps");
        let mut writer = TextWriter::new(&connection, steps);
        let mut at = 0;
        for step in [1, 999_999, PIECE_BYTES + 3, 70_000].iter().cycle() {
            let end = (at + step).min(length);
            writer.write(&stored[at..end]).unwrap();
            at = end;
            if at == length {
                break;
            }
        }
        writer.finish().unwrap();
        for id in [whole, steps] {
            let expected = vec![
                (piece_key(id, 0), PIECE_BYTES),
                (piece_key(id, 1), PIECE_BYTES),
                (piece_key(id, 2), 12_345),
            ];
            assert_eq!(pieces_of(&connection, id), expected);
            let mut reader = TextReader::new(&connection);
            assert_eq!(reader.length(id).unwrap(), length as u64);
            assert_eq!(reader.read(id, 0, u64::MAX).unwrap(), stored);
        }
        // Exactly one piece, and an empty text (one empty piece).
        for length in [PIECE_BYTES, 0] {
            let id = add_buffer(&connection, &format!("of {length}"));
            write_text(&connection, id, &text(length)).unwrap();
            assert_eq!(pieces_of(&connection, id), vec![(piece_key(id, 0), length)]);
            assert_eq!(
                TextReader::new(&connection).length(id).unwrap(),
                length as u64
            );
        }
    }

    #[test]
    fn ranges_across_pieces_and_past_the_end_are_read_as_from_one_text() {
        let connection = database();
        let length = 3 * PIECE_BYTES + 100;
        let stored = text(length);
        let id = add_buffer(&connection, "a");
        write_text(&connection, id, &stored).unwrap();
        let other = add_buffer(&connection, "b");
        write_text(&connection, other, b"other text").unwrap();
        let mut reader = TextReader::new(&connection);
        let piece = PIECE_BYTES as u64;
        let ranges = [
            (0, 10),
            (piece - 3, piece + 3),
            (piece, piece),
            (piece - 1, 3 * piece + 1),
            (3 * piece + 90, 3 * piece + 200),
            (5 * piece, 6 * piece),
            (10, 5),
        ];
        for (start, end) in ranges {
            let end_in = (end as usize).min(length);
            let start_in = (start as usize).min(end_in);
            assert_eq!(
                reader.read(id, start, end).unwrap(),
                stored[start_in..end_in],
                "{start}..{end}"
            );
            // Moving to another buffer and back keeps the handles right.
            assert_eq!(reader.read(other, 6, 10).unwrap(), b"text");
        }
        assert!(matches!(
            reader.read(id + 10, 0, 1),
            Err(Error::UnknownBuffer(_))
        ));
    }

    #[test]
    fn a_stream_gives_the_whole_text_for_any_read_size() {
        let connection = database();
        let length = 2 * PIECE_BYTES + 5_000;
        let stored = text(length);
        let id = add_buffer(&connection, "a");
        write_text(&connection, id, &stored).unwrap();
        for size in [1, 4093, 65_536, 3 * PIECE_BYTES] {
            let mut stream = TextStream::open(&connection, id, 4096, None).unwrap();
            let mut read = Vec::new();
            let mut buffer = vec![0; size];
            loop {
                let count = stream.read(&mut buffer).unwrap();
                if count == 0 {
                    break;
                }
                read.extend_from_slice(&buffer[..count]);
            }
            assert!(read == stored, "size {size}: {} bytes read", read.len());
        }
        // An empty text.
        let empty = add_buffer(&connection, "empty");
        write_text(&connection, empty, b"").unwrap();
        let mut read = Vec::new();
        TextStream::open(&connection, empty, 4096, None)
            .unwrap()
            .read_to_end(&mut read)
            .unwrap();
        assert!(read.is_empty());
    }

    #[test]
    fn a_text_stored_whole_before_pieces_reads_the_same() {
        let connection = database();
        let stored = text(PIECE_BYTES + 777);
        let id = add_buffer(&connection, "old");
        connection
            .execute(
                "INSERT INTO buffer_text (buffer_id, text) VALUES (?1, ?2)",
                rusqlite::params![id, stored],
            )
            .unwrap();
        let mut reader = TextReader::new(&connection);
        assert_eq!(reader.length(id).unwrap(), stored.len() as u64);
        let piece = PIECE_BYTES as u64;
        assert_eq!(
            reader.read(id, piece - 5, piece + 5).unwrap(),
            stored[PIECE_BYTES - 5..PIECE_BYTES + 5]
        );
        let mut read = Vec::new();
        TextStream::open(&connection, id, 4096, None)
            .unwrap()
            .read_to_end(&mut read)
            .unwrap();
        assert!(read == stored);
    }

    #[test]
    fn a_load_stores_its_text_in_pieces() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = crate::store::LocalStore::open(dir.path()).unwrap();
        let body = String::from_utf8(text(2 * PIECE_BYTES + 1)).unwrap();
        let source = crate::Source::Text {
            name: "big.txt".into(),
            text: body.clone(),
        };
        store
            .load(
                vec![source],
                &rlm_context::chunk::ChunkOptions::default(),
                &mut |_| std::ops::ControlFlow::Continue(()),
            )
            .unwrap();
        let id = store.buffer("big.txt").unwrap().id;
        let lengths: Vec<usize> = pieces_of(&store.connection, id)
            .into_iter()
            .map(|(_, length)| length)
            .collect();
        assert_eq!(lengths, [PIECE_BYTES, PIECE_BYTES, 1]);
        let whole: i64 = store
            .connection
            .query_row("SELECT count(*) FROM buffer_text", [], |row| row.get(0))
            .unwrap();
        assert_eq!(whole, 0);
        assert_eq!(store.text(&store.buffer("big.txt").unwrap()).unwrap(), body);
    }

    #[test]
    fn deleting_a_buffer_deletes_its_pieces_and_no_other() {
        let connection = database();
        let (a, b) = (add_buffer(&connection, "a"), add_buffer(&connection, "b"));
        write_text(&connection, a, &text(PIECE_BYTES + 1)).unwrap();
        write_text(&connection, b, &text(10)).unwrap();
        connection
            .execute("DELETE FROM buffers WHERE id = ?1", [a])
            .unwrap();
        assert!(pieces_of(&connection, a).is_empty());
        assert_eq!(pieces_of(&connection, b), vec![(piece_key(b, 0), 10)]);
    }

    /// Resident bytes of this process's mappings of `path` (`/proc/self/smaps`).
    fn mapped_resident(path: &std::path::Path) -> usize {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let wanted = path.to_str().unwrap();
        let mut ours = false;
        let mut total = 0;
        for line in smaps.lines() {
            if line
                .split_whitespace()
                .next()
                .is_some_and(|first| first.contains('-'))
            {
                ours = line.ends_with(wanted);
            } else if ours && let Some(kb) = line.strip_prefix("Rss:") {
                total += kb
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<usize>()
                    .unwrap()
                    * 1024;
            }
        }
        total
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_map_window_keeps_what_a_stream_maps_near_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("window.sqlite");
        let mut connection = Connection::open(&path).unwrap();
        crate::schema::migrate(&mut connection).unwrap();
        let id = add_buffer(&connection, "big");
        let stored = text(8 * PIECE_BYTES + 5);
        write_text(&connection, id, &stored).unwrap();
        connection
            .pragma_update(None, "mmap_size", crate::store::MMAP_BYTES)
            .unwrap();
        let limit = 256 << 10;
        // Reads through the map, the window let go of every `limit` bytes or never.
        let read = |window: Option<&MapWindow<'_>>| {
            if let Some(window) = window {
                window.release().unwrap();
            }
            let mut stream = TextStream::open(&connection, id, 4096, window).unwrap();
            let (mut text, mut most) = (Vec::new(), 0);
            let mut block = vec![0; 64 << 10];
            loop {
                let read = stream.read(&mut block).unwrap();
                if read == 0 {
                    break;
                }
                text.extend_from_slice(&block[..read]);
                most = most.max(mapped_resident(&path));
            }
            (text, most)
        };
        let window = MapWindow::new(&connection, limit);
        let (windowed, windowed_most) = read(Some(&window));
        assert!(
            windowed == stored,
            "the text read through the window differs"
        );
        // The window is let go of between pieces: at most a piece past the limit stays.
        assert!(
            windowed_most <= limit + PIECE_BYTES + (64 << 10),
            "{windowed_most} bytes mapped"
        );
        let (whole, whole_most) = read(None);
        assert!(whole == stored);
        assert!(
            whole_most > 4 * PIECE_BYTES,
            "the map alone kept {whole_most} bytes"
        );
    }
}
