//! The quantised vector file (`vectors.int8`): every stored vector as int8 with its scale, kept
//! beside the database so a semantic search reads ~(dimension + 4) bytes a chunk from one file
//! instead of decoding and quantising every embedding row again.
//!
//! The rows are grouped by buffer, so a `--path`/`--buffer` filter reads only its buffers' rows.
//! The file records the vector generation it was built from (`vector_state`, which triggers
//! change with every embedding written or deleted): a file of another generation is stale and
//! ignored. Candidates of the int8 scan are re-scored with their f32 vectors from SQLite, as
//! [`rlm_embed::VectorIndex`] re-scores its own.
//!
//! Layout, little-endian: a 48-byte header (magic, generation, dimension, row count, buffer
//! count, offset of the ids), then the rows (`scale: f32`, `dimension` × `i8`), then one chunk
//! id (`i64`) per row, then the buffer table (`buffer_id: i64`, first row, row count: `u64`).

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufWriter, Seek as _, SeekFrom, Write as _};
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use rlm_embed::{Candidates, QuantizedQuery};
use rusqlite::Connection;

use crate::error::{Error, Result, io};

/// File name in the store directory.
pub(crate) const VECTOR_FILE: &str = "vectors.int8";
/// Name prefix of a vector file being written, renamed over [`VECTOR_FILE`] when complete.
pub(crate) const NEW_VECTOR_FILE_PREFIX: &str = ".vectors-new-";

const MAGIC: &[u8; 8] = b"RLMVEC\x00\x01";
const HEADER_BYTES: u64 = 48;
/// Bytes read per block of rows: small enough to stay in a core's L2 cache while it is scored.
const BLOCK_BYTES: usize = 256 * 1024;
/// Rows a scan thread is started for: below this many one thread scans them all.
const ROWS_PER_THREAD: u64 = 65_536;
/// Scan threads at most.
const MAX_THREADS: usize = 4;

/// An open vector file of the current generation.
#[derive(Debug)]
pub(crate) struct VectorFile {
    path: PathBuf,
    file: File,
    dimension: usize,
    rows: u64,
    ids_offset: u64,
    /// `(buffer_id, first_row, rows)`, by buffer id.
    buffers: Vec<(i64, u64, u64)>,
}

impl VectorFile {
    /// The file in `dir` when it exists, is whole and was built from `generation` with vectors
    /// of `dimension`; `None` otherwise (missing, stale or unreadable: the caller rebuilds).
    pub(crate) fn open(dir: &Path, generation: i64, dimension: usize) -> Option<Self> {
        let path = dir.join(VECTOR_FILE);
        let file = File::open(&path).ok()?;
        let mut header = [0u8; HEADER_BYTES as usize];
        file.read_exact_at(&mut header, 0).ok()?;
        let word = |at: usize| {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(&header[at..at + 8]);
            u64::from_le_bytes(bytes)
        };
        if &header[..8] != MAGIC || word(8) as i64 != generation || word(16) != dimension as u64 {
            return None;
        }
        let (rows, buffer_count, ids_offset) = (word(24), word(32), word(40));
        let row_bytes = 4 + dimension as u64;
        let table_offset = ids_offset.checked_add(rows.checked_mul(8)?)?;
        let length = file.metadata().ok()?.len();
        if ids_offset != HEADER_BYTES.checked_add(rows.checked_mul(row_bytes)?)?
            || length != table_offset.checked_add(buffer_count.checked_mul(24)?)?
        {
            return None;
        }
        let mut table = vec![0u8; usize::try_from(buffer_count * 24).ok()?];
        file.read_exact_at(&mut table, table_offset).ok()?;
        let buffers: Vec<(i64, u64, u64)> = table
            .chunks_exact(24)
            .map(|entry| {
                let field = |at: usize| {
                    let mut bytes = [0u8; 8];
                    bytes.copy_from_slice(&entry[at..at + 8]);
                    u64::from_le_bytes(bytes)
                };
                (field(0) as i64, field(8), field(16))
            })
            .collect();
        let whole = buffers
            .iter()
            .all(|&(_, first, count)| first.checked_add(count).is_some_and(|end| end <= rows));
        whole.then_some(Self {
            path,
            file,
            dimension,
            rows,
            ids_offset,
            buffers,
        })
    }

    /// Candidate chunk ids of a top-`k` search for `query` among the chunks of `buffers` (all
    /// when `None`), by the int8 scan; the caller re-scores them exactly.
    #[cfg(test)]
    pub(crate) fn candidates(
        self: &Arc<Self>,
        query: &[f32],
        buffers: Option<&[i64]>,
        k: usize,
    ) -> Result<Vec<i64>> {
        Ok(self.candidates_beside(query, buffers, k, || Ok(()))?.0)
    }

    /// [`candidates`](Self::candidates), running `beside` (a hybrid search's BM25 half) on
    /// the calling thread while helper threads start on the scan, which the calling thread
    /// then joins.
    ///
    /// Whoever is running takes the next block, so a query never waits for a thread that has
    /// not started: on a machine whose cores are busy a new thread can wait several
    /// milliseconds for its first turn, and by then the calling thread may have scanned
    /// everything. A helper that starts after the last block is taken has nothing to do.
    pub(crate) fn candidates_beside<T>(
        self: &Arc<Self>,
        query: &[f32],
        buffers: Option<&[i64]>,
        k: usize,
        beside: impl FnOnce() -> Result<T>,
    ) -> Result<(Vec<i64>, T)> {
        let ranges = self.ranges(buffers);
        let total: u64 = ranges.iter().map(|(start, end)| end - start).sum();
        if total == 0 || k == 0 {
            return Ok((Vec::new(), beside()?));
        }
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(MAX_THREADS)
            .min(total.div_ceil(ROWS_PER_THREAD) as usize)
            .max(1);
        let scan = Arc::new(Scan::new(
            Arc::clone(self),
            QuantizedQuery::new(query),
            k,
            blocks(&ranges, self.rows_per_block()),
        ));
        scan.start_helpers(threads - 1);
        let other = match beside() {
            Ok(other) => other,
            Err(error) => {
                scan.stop();
                return Err(error);
            }
        };
        let candidates = scan.finish()?;
        let mut ids = Vec::new();
        let mut bytes = [0u8; 8];
        for position in candidates.into_positions() {
            self.file
                .read_exact_at(&mut bytes, self.ids_offset + position as u64 * 8)
                .map_err(self.read_error())?;
            ids.push(i64::from_le_bytes(bytes));
        }
        Ok((ids, other))
    }

    /// The row ranges of `buffers` (all rows when `None`), adjacent ones joined.
    fn ranges(&self, buffers: Option<&[i64]>) -> Vec<(u64, u64)> {
        let Some(buffers) = buffers else {
            return vec![(0, self.rows)];
        };
        let allowed: HashSet<i64> = buffers.iter().copied().collect();
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        for &(buffer, first, count) in &self.buffers {
            if count == 0 || !allowed.contains(&buffer) {
                continue;
            }
            match ranges.last_mut() {
                Some(last) if last.1 == first => last.1 = first + count,
                _ => ranges.push((first, first + count)),
            }
        }
        ranges
    }

    /// Rows read and scored at once.
    fn rows_per_block(&self) -> u64 {
        (BLOCK_BYTES / (4 + self.dimension)).max(1) as u64
    }

    fn read_error(&self) -> impl Fn(std::io::Error) -> Error + '_ {
        |source| Error::Io {
            action: "cannot read",
            path: self.path.clone(),
            source,
        }
    }
}

/// One query's scan of the vector file, shared by the calling thread and its helpers.
struct Scan {
    file: Arc<VectorFile>,
    query: QuantizedQuery,
    k: usize,
    blocks: Vec<(u64, u64)>,
    /// The next block to take; at or past the end when none is left (or the scan stopped).
    next: AtomicUsize,
    state: Mutex<ScanState>,
    /// Signalled whenever a thread adds what it kept to `state`.
    progress: Condvar,
}

#[derive(Default)]
struct ScanState {
    kept: Option<Candidates>,
    /// Blocks whose rows are in `kept`.
    blocks_done: usize,
    /// The first read error, which ends the scan.
    error: Option<Error>,
    /// A helper's panic, passed on to the calling thread: a scan only reads and scores, so a
    /// panic there is a bug.
    panic: Option<Box<dyn std::any::Any + Send>>,
}

impl Scan {
    fn new(
        file: Arc<VectorFile>,
        query: QuantizedQuery,
        k: usize,
        blocks: Vec<(u64, u64)>,
    ) -> Self {
        Self {
            file,
            query,
            k,
            blocks,
            next: AtomicUsize::new(0),
            state: Mutex::new(ScanState::default()),
            progress: Condvar::new(),
        }
    }

    /// Starts up to `count` helper threads (fewer if the system refuses one: the calling
    /// thread scans whatever they do not).
    fn start_helpers(self: &Arc<Self>, count: usize) {
        for _ in 0..count {
            let scan = Arc::clone(self);
            let started = std::thread::Builder::new()
                .name("rlm-vector-scan".into())
                .spawn(move || {
                    let outcome =
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| scan.work()));
                    if let Err(panic) = outcome {
                        scan.stop();
                        scan.lock().panic.get_or_insert(panic);
                        scan.progress.notify_all();
                    }
                });
            if started.is_err() {
                break;
            }
        }
    }

    /// Takes blocks until none is left, then adds what it kept to the shared state.
    fn work(&self) {
        let row_bytes = 4 + self.file.dimension;
        let mut block = vec![0u8; self.file.rows_per_block() as usize * row_bytes];
        let mut scores = Vec::with_capacity(self.file.rows_per_block() as usize);
        let mut kept = Candidates::for_top(self.k);
        let mut done = 0;
        let mut failed = None;
        while let Some(&(start, end)) = self.blocks.get(self.next.fetch_add(1, Ordering::Relaxed)) {
            let bytes = &mut block[..(end - start) as usize * row_bytes];
            if let Err(error) = self
                .file
                .file
                .read_exact_at(bytes, HEADER_BYTES + start * row_bytes as u64)
            {
                failed = Some(self.file.read_error()(error));
                self.stop();
                break;
            }
            scores.clear();
            self.query.score_records(bytes, &mut scores);
            kept.offer_scores(&scores, start as usize);
            done += 1;
        }
        let mut state = self.lock();
        match &mut state.kept {
            Some(all) => all.merge(kept),
            None => state.kept = Some(kept),
        }
        state.blocks_done += done;
        if let Some(error) = failed {
            state.error.get_or_insert(error);
        }
        drop(state);
        self.progress.notify_all();
    }

    /// Leaves the blocks not yet taken untaken.
    fn stop(&self) {
        self.next.store(self.blocks.len(), Ordering::Relaxed);
    }

    /// Scans on the calling thread too, then waits for the blocks helpers took and returns
    /// everything kept. Which thread scored a block does not matter: [`Candidates`] keeps the
    /// same set whatever the order and split.
    fn finish(&self) -> Result<Candidates> {
        self.work();
        let mut state = self.lock();
        loop {
            if let Some(panic) = state.panic.take() {
                drop(state);
                std::panic::resume_unwind(panic);
            }
            if let Some(error) = state.error.take() {
                return Err(error);
            }
            if state.blocks_done >= self.blocks.len() {
                return Ok(state
                    .kept
                    .take()
                    .unwrap_or_else(|| Candidates::for_top(self.k)));
            }
            state = self
                .progress
                .wait(state)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ScanState> {
        // Nothing panics while holding the lock; a poisoned one still holds whole counts.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Cuts `ranges` of rows into blocks of at most `rows_per_block` rows, in order.
fn blocks(ranges: &[(u64, u64)], rows_per_block: u64) -> Vec<(u64, u64)> {
    let mut blocks = Vec::new();
    for &(mut start, end) in ranges {
        while start < end {
            let stop = end.min(start + rows_per_block);
            blocks.push((start, stop));
            start = stop;
        }
    }
    blocks
}

/// Writes the vector file of `connection`'s current vectors (a temporary name renamed into
/// place). The caller holds the store's write lock, so no vector changes meanwhile.
pub(crate) fn write(dir: &Path, connection: &Connection, dimension: usize) -> Result<()> {
    let temporary = dir.join(format!("{NEW_VECTOR_FILE_PREFIX}{}", std::process::id()));
    let result = write_to(&temporary, connection, dimension);
    if result.is_err() {
        let _ = std::fs::remove_file(&temporary);
        return result;
    }
    let target = dir.join(VECTOR_FILE);
    std::fs::rename(&temporary, &target).map_err(io("cannot rename into place", &target))
}

fn write_to(path: &Path, connection: &Connection, dimension: usize) -> Result<()> {
    let generation: i64 = connection.query_row(
        "SELECT generation FROM vector_state WHERE id = 1",
        [],
        |row| row.get(0),
    )?;
    let file = File::create(path).map_err(io("cannot create", path))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let failed = |source| Error::Io {
        action: "cannot write",
        path: path.to_owned(),
        source,
    };
    out.write_all(&[0u8; HEADER_BYTES as usize])
        .map_err(&failed)?;
    let mut statement = connection.prepare(
        "SELECT c.buffer_id, e.chunk_id, e.vector FROM embeddings e JOIN chunks c ON c.id = e.chunk_id
         ORDER BY c.buffer_id, e.chunk_id",
    )?;
    let mut rows = statement.query([])?;
    let mut ids: Vec<i64> = Vec::new();
    let mut buffers: Vec<(i64, u64, u64)> = Vec::new();
    let mut quantized = Vec::with_capacity(dimension);
    while let Some(row) = rows.next()? {
        let buffer: i64 = row.get(0)?;
        let chunk: i64 = row.get(1)?;
        let bytes = row.get_ref(2)?.as_blob().map_err(rusqlite::Error::from)?;
        let vector = rlm_embed::vector_from_bytes(bytes, dimension)?;
        if vector.iter().any(|x| !x.is_finite()) {
            return Err(rlm_embed::Error::InvalidVectors {
                reason: format!("vector for id {chunk} holds NaN or infinity"),
            }
            .into());
        }
        quantized.clear();
        let scale = rlm_embed::quantize(&vector, &mut quantized);
        out.write_all(&scale.to_le_bytes()).map_err(&failed)?;
        let values: Vec<u8> = quantized.iter().map(|&value| value as u8).collect();
        out.write_all(&values).map_err(&failed)?;
        let position = ids.len() as u64;
        match buffers.last_mut() {
            Some(last) if last.0 == buffer => last.2 += 1,
            _ => buffers.push((buffer, position, 1)),
        }
        ids.push(chunk);
    }
    for id in &ids {
        out.write_all(&id.to_le_bytes()).map_err(&failed)?;
    }
    for &(buffer, first, count) in &buffers {
        for value in [buffer as u64, first, count] {
            out.write_all(&value.to_le_bytes()).map_err(&failed)?;
        }
    }
    let rows = ids.len() as u64;
    let mut header = Vec::with_capacity(HEADER_BYTES as usize);
    header.extend_from_slice(MAGIC);
    for value in [
        generation as u64,
        dimension as u64,
        rows,
        buffers.len() as u64,
        HEADER_BYTES + rows * (4 + dimension as u64),
    ] {
        header.extend_from_slice(&value.to_le_bytes());
    }
    let mut file = out
        .into_inner()
        .map_err(|error| failed(error.into_error()))?;
    file.seek(SeekFrom::Start(0)).map_err(&failed)?;
    file.write_all(&header).map_err(&failed)?;
    file.sync_all().map_err(&failed)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const GENERATION: i64 = 7;
    const DIMENSION: usize = 8;

    /// A vector file of `rows` pseudo-random rows in three buffers (ids 1, 2, 3), written in
    /// the layout the module doc gives; the chunk id of row `r` is `10 r`.
    fn vector_file(dir: &Path, rows: u64) -> VectorFile {
        let row_bytes = 4 + DIMENSION as u64;
        let ids_offset = HEADER_BYTES + rows * row_bytes;
        let mut bytes = MAGIC.to_vec();
        for word in [GENERATION as u64, DIMENSION as u64, rows, 3, ids_offset] {
            bytes.extend(word.to_le_bytes());
        }
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        for _ in 0..rows {
            bytes.extend(0.01_f32.to_le_bytes());
            for _ in 0..DIMENSION {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                bytes.push(state as u8);
            }
        }
        for row in 0..rows {
            bytes.extend((row as i64 * 10).to_le_bytes());
        }
        let (first, second) = (rows / 3, rows / 2);
        for (buffer, start, count) in [
            (1, 0, first),
            (2, first, second),
            (3, first + second, rows - first - second),
        ] {
            bytes.extend(i64::to_le_bytes(buffer));
            bytes.extend(u64::to_le_bytes(start));
            bytes.extend(u64::to_le_bytes(count));
        }
        std::fs::write(dir.join(VECTOR_FILE), bytes).unwrap();
        VectorFile::open(dir, GENERATION, DIMENSION).unwrap()
    }

    #[test]
    fn blocks_cover_the_ranges_in_order() {
        assert_eq!(
            blocks(&[(0, 5), (9, 10), (12, 19)], 3),
            [(0, 3), (3, 5), (9, 10), (12, 15), (15, 18), (18, 19)]
        );
        assert!(blocks(&[], 3).is_empty());
    }

    /// Chunk ids of the rows `candidates` kept, sorted (row `r` holds chunk `10 r`).
    fn ids_of(candidates: Candidates) -> Vec<i64> {
        let mut ids: Vec<i64> = candidates
            .into_positions()
            .into_iter()
            .map(|row| row as i64 * 10)
            .collect();
        ids.sort_unstable();
        ids
    }

    #[test]
    fn threads_taking_blocks_keep_what_one_pass_keeps() {
        let dir = tempfile::tempdir().unwrap();
        // Enough rows for several threads (where the machine has the cores) and many blocks.
        let rows = 5 * ROWS_PER_THREAD;
        let file = Arc::new(vector_file(dir.path(), rows));
        let query: Vec<f32> = (0..DIMENSION).map(|i| (i as f32 - 3.5) / 4.0).collect();
        let quantized = QuantizedQuery::new(&query);
        let (first, second) = (rows / 3, rows / 2);
        for (buffers, ranges) in [
            (None, vec![(0, rows)]),
            (
                Some(&[1_i64, 3][..]),
                vec![(0, first), (first + second, rows)],
            ),
            (Some(&[2_i64][..]), vec![(first, first + second)]),
        ] {
            assert_eq!(file.ranges(buffers), ranges);
            for k in [1, 10, 100] {
                let mut one_pass = Candidates::for_top(k);
                for (start, end) in &ranges {
                    for row in *start..*end {
                        let mut record = vec![0u8; 4 + DIMENSION];
                        file.file
                            .read_exact_at(&mut record, HEADER_BYTES + row * (4 + DIMENSION as u64))
                            .unwrap();
                        let scale =
                            f32::from_le_bytes([record[0], record[1], record[2], record[3]]);
                        one_pass.offer(quantized.score_bytes(&record[4..], scale), row as usize);
                    }
                }
                let expected = ids_of(one_pass);
                let mut found = file.candidates(&query, buffers, k).unwrap();
                found.sort_unstable();
                assert_eq!(found, expected, "{buffers:?}, k {k}");
                // The calling thread alone (as when no helper gets a core before it is done),
                // and beside three helpers.
                for helpers in [0, 3] {
                    let scan = Arc::new(Scan::new(
                        Arc::clone(&file),
                        quantized.clone(),
                        k,
                        blocks(&ranges, file.rows_per_block()),
                    ));
                    scan.start_helpers(helpers);
                    let kept = scan.finish().unwrap();
                    assert_eq!(
                        ids_of(kept),
                        expected,
                        "{buffers:?}, k {k}, {helpers} helpers"
                    );
                }
            }
        }
    }

    #[test]
    fn beside_runs_on_the_calling_thread_and_its_error_ends_the_search() {
        let dir = tempfile::tempdir().unwrap();
        let file = Arc::new(vector_file(dir.path(), 3 * ROWS_PER_THREAD));
        let query = vec![0.5; DIMENSION];
        let caller = std::thread::current().id();
        let (mut ids, ran_on) = file
            .candidates_beside(&query, None, 10, || Ok(std::thread::current().id()))
            .unwrap();
        assert_eq!(ran_on, caller);
        let mut alone = file.candidates(&query, None, 10).unwrap();
        ids.sort_unstable();
        alone.sort_unstable();
        assert_eq!(ids.len(), 40);
        assert_eq!(ids, alone);
        let failed = file.candidates_beside(&query, None, 10, || -> Result<()> {
            Err(Error::UnknownChunk(7))
        });
        assert!(matches!(failed, Err(Error::UnknownChunk(7))), "{failed:?}");
        // Nothing to scan: `beside` still runs.
        let (ids, value) = file
            .candidates_beside(&query, Some(&[]), 10, || Ok(42))
            .unwrap();
        assert!(ids.is_empty());
        assert_eq!(value, 42);
    }
}
