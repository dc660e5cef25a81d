//! Blocks read by a second thread while the caller scans the previous one.
//!
//! The kernel's copy in `read()` is about as long as the whole of `wc -l` and, on one thread,
//! comes on top of the scan. [`with_read_ahead`] moves the reads to a scoped thread that fills
//! a few recycled buffers ahead of the scan, so with a free core the pass takes about as long as
//! the longer of the two rather than their sum. With no free core it is a loss (the threads take
//! turns and each block moves between caches): see `BENCHMARKS.md`. The reading thread also works
//! out each block's [`BlockFacts`] (its line and character counts and whether it is valid UTF-8)
//! after reading it, work taken off the scan, the slower side. The blocks are those
//! [`BlockReader`] gives: the same [`BlockSource::fill`] cuts them, and the bytes an unfinished
//! UTF-8 sequence leaves at a block's end are moved to the start of the next buffer.
//!
//! [`BlockReader`]: crate::scan::BlockReader

use std::io::{self, Read};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread;

use crate::scan::{Block, BlockFacts, BlockSource, Blocks, MIN_BLOCK_SIZE};

/// Whether a second thread would have a core to itself: the process may use more than one CPU
/// and, where Linux says how many tasks are runnable right now (the fourth field of
/// `/proc/loadavg`, this thread included), fewer than that many are. With every core busy the
/// read-ahead is a loss (JSON array 2.29× `wc -l` on one thread against 2.50× with the thread,
/// `BENCHMARKS.md`). The count is of one instant and of the whole machine, so a short burst of
/// other work can tip it either way; it costs a read of a small in-memory file, a few
/// microseconds against the milliseconds of a file worth reading ahead.
pub(crate) fn a_core_is_free() -> bool {
    let cpus = thread::available_parallelism().map_or(1, std::num::NonZero::get);
    if cpus < 2 {
        return false;
    }
    match std::fs::read_to_string("/proc/loadavg") {
        Ok(loadavg) => runnable_tasks(&loadavg).is_none_or(|runnable| runnable < cpus),
        // Not Linux, or no procfs: nothing says the cores are busy.
        Err(_) => true,
    }
}

/// The runnable tasks in the text of `/proc/loadavg`: `0.85 1.82 2.76 4/95 26463` has 4.
fn runnable_tasks(loadavg: &str) -> Option<usize> {
    let (runnable, _) = loadavg.split_whitespace().nth(3)?.split_once('/')?;
    runnable.parse().ok()
}

/// Buffers in flight: one being scanned, one being filled, one ready, so neither side waits on
/// the other's jitter. Each is a block, so memory use stays a few blocks whatever the input.
const BUFFERS: usize = 3;

/// A block the reading thread filled.
struct FilledBlock {
    buffer: Vec<u8>,
    /// Where the block ends in `buffer` (the rest of the buffer is not part of it).
    end: usize,
    last: bool,
    facts: BlockFacts,
}

/// What the reading thread sends: a block, the end of the input (`None`), or the read's error.
type Message = io::Result<Option<FilledBlock>>;

/// Runs `consume` on the blocks of `reader`, read by a second thread `BUFFERS` blocks ahead at
/// most. Errors of the reads reach `consume` through [`Blocks::next_block`], and a reading thread
/// that panics is an error too; the thread has ended when this returns.
pub(crate) fn with_read_ahead<R, T>(
    reader: R,
    block_size: usize,
    consume: impl FnOnce(&mut ReadAheadBlocks) -> io::Result<T>,
) -> io::Result<T>
where
    R: Read + Send,
{
    let block_size = block_size.max(MIN_BLOCK_SIZE);
    thread::scope(|scope| {
        let (filled_sender, filled) = sync_channel(BUFFERS);
        let (recycle, recycled) = sync_channel(BUFFERS);
        let reading = thread::Builder::new()
            .name("rlm-read-ahead".to_owned())
            .spawn_scoped(scope, move || {
                read_blocks(reader, block_size, &filled_sender, &recycled);
            })?;
        let mut blocks = ReadAheadBlocks {
            filled,
            recycle,
            current: None,
            ended: false,
        };
        let result = consume(&mut blocks);
        // Hang up first: a thread still reading (if `consume` stopped early) then stops at its
        // next send or wait for a buffer instead of waiting for a reader that is gone.
        drop(blocks);
        match reading.join() {
            Ok(()) => result,
            Err(_panic) => result.and(Err(io::Error::other("the read-ahead thread panicked"))),
        }
    })
}

/// The reading thread: fills buffers (new ones up to `BUFFERS`, then the ones handed back) and
/// sends them until the input ends, a read fails, or the consumer hangs up.
fn read_blocks<R: Read>(
    reader: R,
    block_size: usize,
    filled: &SyncSender<Message>,
    recycled: &Receiver<Vec<u8>>,
) {
    let mut source = BlockSource::new(reader);
    // The unfinished UTF-8 sequence at the end of the last block (at most 3 bytes).
    let mut carry = Vec::with_capacity(4);
    let mut allocated = 0;
    loop {
        let mut buffer = match recycled.try_recv() {
            Ok(buffer) => buffer,
            Err(_) if allocated < BUFFERS => {
                allocated += 1;
                vec![0; block_size]
            }
            Err(_) => match recycled.recv() {
                Ok(buffer) => buffer,
                // The consumer hung up.
                Err(_) => return,
            },
        };
        buffer[..carry.len()].copy_from_slice(&carry);
        let message = match source.fill(&mut buffer, carry.len()) {
            Ok(Some(block)) => {
                carry.clear();
                carry.extend_from_slice(&buffer[block.end..block.len]);
                let facts = BlockFacts::of(&buffer[..block.end]);
                Ok(Some(FilledBlock {
                    buffer,
                    end: block.end,
                    last: block.last,
                    facts,
                }))
            }
            Ok(None) => Ok(None),
            Err(err) => Err(err),
        };
        let more = matches!(message, Ok(Some(_)));
        if filled.send(message).is_err() || !more {
            return;
        }
    }
}

/// The consuming side of [`with_read_ahead`].
pub(crate) struct ReadAheadBlocks {
    filled: Receiver<Message>,
    recycle: SyncSender<Vec<u8>>,
    /// The block handed out last; its buffer goes back to the reading thread on the next call.
    current: Option<FilledBlock>,
    /// The end of the input was reached.
    ended: bool,
}

impl Blocks for ReadAheadBlocks {
    fn next_block(&mut self) -> io::Result<Option<Block<'_>>> {
        if let Some(block) = self.current.take() {
            // The channel has room for every buffer there is, so it is never full; if the
            // reading thread has ended the buffer is dropped, and the receive below says why.
            let _ = self.recycle.try_send(block.buffer);
        }
        if self.ended {
            return Ok(None);
        }
        match self.filled.recv() {
            Ok(Ok(Some(block))) => {
                let block = self.current.insert(block);
                Ok(Some(Block {
                    bytes: &block.buffer[..block.end],
                    last: block.last,
                    facts: Some(block.facts),
                }))
            }
            Ok(Ok(None)) => {
                self.ended = true;
                Ok(None)
            }
            Ok(Err(err)) => Err(err),
            // The thread hung up without saying the input ended: it panicked, or a read failed
            // and this is being called again.
            Err(_) => Err(io::Error::other(
                "the read-ahead thread stopped before the end of the input",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::BlockReader;

    /// Every block and its last-block flag, then what the call after the end returned.
    type Transcript = (Vec<(Vec<u8>, bool)>, Option<(Vec<u8>, bool)>);

    /// Also checks that facts sent with a block are the block's.
    fn transcript(blocks: &mut impl Blocks) -> io::Result<Transcript> {
        let mut seen = Vec::new();
        while let Some(block) = blocks.next_block()? {
            if let Some(facts) = block.facts {
                assert_eq!(facts, BlockFacts::of(block.bytes));
            }
            seen.push((block.bytes.to_vec(), block.last));
        }
        let after_end = blocks
            .next_block()?
            .map(|block| (block.bytes.to_vec(), block.last));
        Ok((seen, after_end))
    }

    fn plain(reader: impl Read, block_size: usize) -> io::Result<Transcript> {
        transcript(&mut BlockReader::new(reader, block_size))
    }

    fn threaded(reader: impl Read + Send, block_size: usize) -> io::Result<Transcript> {
        with_read_ahead(reader, block_size, transcript)
    }

    /// Hands out `steps` bytes at a time in turn, with an `Interrupted` before every other read.
    struct Jerky<'a> {
        rest: &'a [u8],
        steps: &'a [usize],
        reads: usize,
    }

    impl Read for Jerky<'_> {
        fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
            self.reads += 1;
            if self.reads.is_multiple_of(2) {
                return Err(io::ErrorKind::Interrupted.into());
            }
            let step = self.steps[self.reads % self.steps.len()];
            let n = step.min(buffer.len()).min(self.rest.len());
            buffer[..n].copy_from_slice(&self.rest[..n]);
            self.rest = &self.rest[n..];
            Ok(n)
        }
    }

    /// Gives its bytes, then fails (or panics) instead of ending.
    struct Failing<'a> {
        rest: &'a [u8],
        panics: bool,
    }

    impl Read for Failing<'_> {
        fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
            if self.rest.is_empty() {
                assert!(!self.panics, "reader panics as the test asks");
                return Err(io::Error::other("disk on fire"));
            }
            let n = buffer.len().min(self.rest.len());
            buffer[..n].copy_from_slice(&self.rest[..n]);
            self.rest = &self.rest[n..];
            Ok(n)
        }
    }

    fn multibyte_text() -> String {
        "aé日🎉\r\n".repeat(40)
    }

    #[test]
    fn blocks_match_the_plain_reader_where_characters_straddle_block_edges() {
        let text = multibyte_text();
        let bytes = text.as_bytes();
        // Odd sizes put each of the 2-, 3- and 4-byte characters across some block edge.
        for block_size in [8, 9, 10, 11, 13, 17, 64, 1 << 20] {
            let expected = plain(bytes, block_size).unwrap();
            assert_eq!(
                threaded(bytes, block_size).unwrap(),
                expected,
                "block {block_size}"
            );
            let joined: Vec<u8> = expected.0.iter().flat_map(|(b, _)| b.clone()).collect();
            assert_eq!(joined, bytes, "block {block_size}");
            for (block, _) in &expected.0 {
                assert!(std::str::from_utf8(block).is_ok(), "block {block_size}");
            }
        }
        // The blocks do end inside characters at these sizes.
        let (blocks, _) = plain(bytes, 10).unwrap();
        assert!(blocks.iter().any(|(block, _)| block.len() < 10));
    }

    #[test]
    fn runnable_tasks_are_the_fourth_field_of_loadavg() {
        assert_eq!(runnable_tasks("0.85 1.82 2.76 4/95 26463\n"), Some(4));
        assert_eq!(runnable_tasks("3.37 2.35 2.88 12/118 27017"), Some(12));
        assert_eq!(runnable_tasks("0.85 1.82 2.76"), None);
        assert_eq!(runnable_tasks("0.85 1.82 2.76 x/95 1"), None);
        assert_eq!(runnable_tasks(""), None);
    }

    #[test]
    fn empty_input_gives_no_block() {
        assert_eq!(threaded(&b""[..], 16).unwrap(), (Vec::new(), None));
        assert_eq!(plain(&b""[..], 16).unwrap(), (Vec::new(), None));
    }

    #[test]
    fn input_of_exactly_one_block_is_one_block_not_flagged_last() {
        // A full buffer does not know the input ended; the next call says so.
        let bytes = b"0123456789abcdef";
        let expected = (vec![(bytes.to_vec(), false)], None);
        assert_eq!(plain(&bytes[..], 16).unwrap(), expected);
        assert_eq!(threaded(&bytes[..], 16).unwrap(), expected);
        let shorter = (vec![(bytes[..15].to_vec(), true)], None);
        assert_eq!(threaded(&bytes[..15], 16).unwrap(), shorter);
    }

    #[test]
    fn short_and_interrupted_reads_give_the_same_blocks() {
        let text = multibyte_text();
        let bytes = text.as_bytes();
        let steps = [1, 3, 7, 2, 64, 5];
        for block_size in [8, 11, 32] {
            let expected = plain(bytes, block_size).unwrap();
            let jerky = |reads| Jerky {
                rest: bytes,
                steps: &steps,
                reads,
            };
            assert_eq!(plain(jerky(0), block_size).unwrap(), expected);
            assert_eq!(threaded(jerky(0), block_size).unwrap(), expected);
            assert_eq!(threaded(jerky(1), block_size).unwrap(), expected);
        }
    }

    #[test]
    fn a_read_error_mid_stream_surfaces_after_the_blocks_before_it() {
        let text = multibyte_text();
        let reader = || Failing {
            rest: text.as_bytes(),
            panics: false,
        };
        for reading in [plain(reader(), 10), threaded(reader(), 10)] {
            let err = reading.unwrap_err();
            assert_eq!(err.to_string(), "disk on fire");
        }
        // The blocks before the error arrive, and the call after it fails rather than waits.
        with_read_ahead(reader(), 10, |blocks| {
            let mut bytes = 0;
            let err = loop {
                match blocks.next_block() {
                    Ok(Some(block)) => bytes += block.bytes.len(),
                    Ok(None) => panic!("the input has no end"),
                    Err(err) => break err,
                }
            };
            assert_eq!(err.to_string(), "disk on fire");
            assert!(bytes + 3 >= text.len(), "{bytes} of {}", text.len());
            assert!(blocks.next_block().is_err());
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn a_panicking_reader_is_an_error_not_a_hang() {
        let text = multibyte_text();
        let reader = Failing {
            rest: text.as_bytes(),
            panics: true,
        };
        let err = threaded(reader, 10).unwrap_err();
        assert!(err.to_string().contains("read-ahead thread"), "{err}");
    }

    #[test]
    fn stopping_early_ends_the_reading_thread() {
        // Many blocks: the reading thread is waiting for a buffer when the consumer stops.
        let text = multibyte_text().repeat(100);
        let first = with_read_ahead(text.as_bytes(), 16, |blocks| {
            Ok(blocks.next_block()?.map(|block| block.bytes.to_vec()))
        })
        .unwrap();
        let (expected, _) = plain(text.as_bytes(), 16).unwrap();
        assert_eq!(first, Some(expected[0].0.clone()));
    }
}
