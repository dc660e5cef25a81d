//! The single streaming pass: blocks that end on character boundaries, and the byte, character,
//! line and encoding counts every format needs.
//!
//! Line feeds, CR LF pairs and characters are counted, and the block checked to be UTF-8, in one
//! SIMD pass over a block ([`crate::counts`]); with 1 MiB blocks the passes stay in cache and
//! memory use does not depend on the input size. The blocks come from [`BlockReader`] on the
//! scanning thread, or, for a file of more than a few blocks, from
//! [`crate::read_ahead::with_read_ahead`], whose thread copies the next blocks out of the page
//! cache while this one scans; both cut the blocks with [`BlockSource::fill`].

use std::borrow::Cow;
use std::io::{self, Read};

use crate::counts::ByteCounts;

/// Size of one block of the pass, and of the prefix used for structure.
pub(crate) const BLOCK_SIZE: usize = 1 << 20;

/// Size of the blocks after the first when the scanning thread reads them itself: small enough
/// that the copy out of the page cache and the passes over the block stay in the core's own
/// cache (`inspect` of a JSON array, on a busy machine: a median of 2.2× `wc -l` with 1 MiB
/// blocks, 1.6× with 64–128 KiB; `wc -l` reads 16 KiB at a time). The first block stays
/// [`BLOCK_SIZE`]: it is the prefix the format and structure are read from.
pub(crate) const LATER_BLOCK_SIZE: usize = 128 << 10;

/// A source of blocks that never end inside a UTF-8 sequence (for valid text): [`BlockReader`]
/// on the calling thread, or [`crate::read_ahead::ReadAheadBlocks`] filled by a second thread.
pub(crate) trait Blocks {
    /// The next block, or `None` at the end.
    fn next_block(&mut self) -> io::Result<Option<Block<'_>>>;
}

/// A block of the pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Block<'a> {
    pub bytes: &'a [u8],
    /// The input ended with this block.
    pub last: bool,
    /// The block's [`BlockFacts`], if its reader worked them out.
    pub facts: Option<BlockFacts>,
}

/// What [`TextStats`] and the NDJSON record counter learn from a block by itself, so that the
/// read-ahead thread can work it out right after the read, while the scan is busy with the
/// block before: the scan is the slower side, and the bytes are still in the reading core's
/// cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockFacts {
    /// Its counts, and whether it is valid UTF-8 (it is text by itself: blocks end on
    /// character boundaries).
    pub(crate) counts: ByteCounts,
}

impl BlockFacts {
    pub(crate) fn of(block: &[u8]) -> Self {
        Self {
            counts: crate::counts::count(block),
        }
    }
}

/// Reads a stream as blocks that never end inside a UTF-8 sequence (for valid text).
pub(crate) struct BlockReader<R> {
    source: BlockSource<R>,
    buffer: Vec<u8>,
    /// Bytes held back from the previous block because they began an unfinished sequence.
    carry: usize,
    /// Length of the block handed out last (its bytes start at 0).
    filled: usize,
    /// Bytes read into a block after the first (the held-back tail included).
    later_block_size: usize,
    past_first: bool,
}

impl<R: Read> BlockReader<R> {
    /// A reader whose blocks are all `block_size` long (the tests' reference).
    #[cfg(test)]
    pub(crate) fn new(reader: R, block_size: usize) -> Self {
        Self::with_later_blocks(reader, block_size, block_size)
    }

    /// A reader whose first block is `block_size` long and the others `later_block_size`
    /// (at most `block_size`).
    pub(crate) fn with_later_blocks(reader: R, block_size: usize, later_block_size: usize) -> Self {
        let block_size = block_size.max(MIN_BLOCK_SIZE);
        Self {
            source: BlockSource::new(reader),
            buffer: vec![0; block_size],
            carry: 0,
            filled: 0,
            later_block_size: later_block_size.clamp(MIN_BLOCK_SIZE, block_size),
            past_first: false,
        }
    }
}

impl<R: Read> Blocks for BlockReader<R> {
    /// Fills the buffer as far as the input allows.
    fn next_block(&mut self) -> io::Result<Option<Block<'_>>> {
        // Move the held-back tail of the previous block to the front.
        if self.filled > 0 {
            let end = self.filled + self.carry;
            self.buffer.copy_within(self.filled..end, 0);
        }
        let size = if self.past_first {
            self.later_block_size
        } else {
            self.buffer.len()
        };
        self.past_first = true;
        let Some(filled) = self.source.fill(&mut self.buffer[..size], self.carry)? else {
            self.filled = 0;
            self.carry = 0;
            return Ok(None);
        };
        self.filled = filled.end;
        self.carry = filled.len - filled.end;
        Ok(Some(Block {
            bytes: &self.buffer[..filled.end],
            last: filled.last,
            facts: None,
        }))
    }
}

/// The smallest block: room for the longest UTF-8 sequence held back and more.
pub(crate) const MIN_BLOCK_SIZE: usize = 8;

/// Reading a block from a stream, the part both [`Blocks`] share.
pub(crate) struct BlockSource<R> {
    reader: R,
    at_eof: bool,
}

/// A buffer [`BlockSource::fill`] filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Filled {
    /// Bytes in the buffer, the carried ones included.
    pub len: usize,
    /// Where the block ends: before an unfinished UTF-8 sequence at the tail, unless the input
    /// ended. The bytes from here to `len` start the next block.
    pub end: usize,
    /// The input ended while filling this block.
    pub last: bool,
}

impl<R: Read> BlockSource<R> {
    pub(crate) fn new(reader: R) -> Self {
        Self {
            reader,
            at_eof: false,
        }
    }

    /// Fills `buffer` after its first `carried` bytes (the previous block's held-back tail)
    /// until it is full or the input ends; `None` when there is nothing left. Reads interrupted
    /// by a signal are retried.
    pub(crate) fn fill(&mut self, buffer: &mut [u8], carried: usize) -> io::Result<Option<Filled>> {
        let mut len = carried;
        while len < buffer.len() && !self.at_eof {
            match self.reader.read(&mut buffer[len..]) {
                Ok(0) => self.at_eof = true,
                Ok(n) => len += n,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err),
            }
        }
        if len == 0 {
            return Ok(None);
        }
        let end = if self.at_eof {
            len
        } else {
            char_boundary_before(&buffer[..len])
        };
        Ok(Some(Filled {
            len,
            end,
            last: self.at_eof,
        }))
    }
}

/// The end of `bytes` minus an unfinished UTF-8 sequence at its tail, if there is one.
pub(crate) fn char_boundary_before(bytes: &[u8]) -> usize {
    let len = bytes.len();
    for back in 1..=3.min(len) {
        let byte = bytes[len - back];
        if byte & 0xC0 != 0x80 {
            let needed = utf8_sequence_length(byte);
            return if needed > back { len - back } else { len };
        }
    }
    len
}

fn utf8_sequence_length(lead: u8) -> usize {
    match lead {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    }
}

/// Counts gathered over the whole input.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TextStats {
    pub bytes: u64,
    /// Characters as a lossy UTF-8 decoder sees them (an invalid sequence counts once).
    pub chars: u64,
    pub newlines: u64,
    pub crlf: u64,
    pub invalid_sequences: u64,
    pub first_invalid_offset: Option<u64>,
    pub last_byte: Option<u8>,
}

impl TextStats {
    /// Lines as a person counts them: a last line without a newline still counts.
    pub(crate) fn lines(&self) -> u64 {
        match self.last_byte {
            None => 0,
            Some(b'\n') => self.newlines,
            Some(_) => self.newlines + 1,
        }
    }

    /// Counts `block`, given its `facts`.
    pub(crate) fn feed(&mut self, block: &[u8], facts: BlockFacts) {
        if block.is_empty() {
            return;
        }
        let offset = self.bytes;
        self.bytes += block.len() as u64;
        let counts = facts.counts;
        self.newlines += counts.newlines;
        self.crlf += counts.crlf;
        if self.last_byte == Some(b'\r') && block[0] == b'\n' {
            self.crlf += 1;
        }
        self.last_byte = block.last().copied();
        if counts.valid_utf8 {
            self.chars += counts.char_starts;
        } else {
            self.count_invalid_chars(block, offset);
        }
    }

    /// Counts the characters of a block that is not valid UTF-8, and its invalid sequences.
    fn count_invalid_chars(&mut self, block: &[u8], offset: u64) {
        let mut rest = block;
        let mut consumed = 0u64;
        loop {
            match std::str::from_utf8(rest) {
                Ok(_) => {
                    self.chars += count_char_starts(rest);
                    return;
                }
                Err(err) => {
                    let valid = err.valid_up_to();
                    self.chars += count_char_starts(&rest[..valid]) + 1;
                    self.invalid_sequences += 1;
                    self.first_invalid_offset
                        .get_or_insert(offset + consumed + valid as u64);
                    let skip = valid + err.error_len().unwrap_or(rest.len() - valid);
                    consumed += skip as u64;
                    rest = &rest[skip..];
                    if rest.is_empty() {
                        return;
                    }
                }
            }
        }
    }
}

/// `bytes` as text, invalid sequences replaced: like `String::from_utf8_lossy`, but valid input
/// (the usual case) is checked with SIMD, several times faster on a 1 MiB prefix.
pub(crate) fn lossy(bytes: &[u8]) -> Cow<'_, str> {
    match simdutf8::basic::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// Characters in valid UTF-8: every byte that is not a continuation byte starts one.
fn count_char_starts(valid: &[u8]) -> u64 {
    bytecount::num_chars(valid) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats_in_blocks(input: &[u8], block_size: usize) -> TextStats {
        let mut reader = BlockReader::new(input, block_size);
        let mut stats = TextStats::default();
        while let Some(block) = reader.next_block().unwrap() {
            stats.feed(block.bytes, BlockFacts::of(block.bytes));
        }
        stats
    }

    #[test]
    fn counts_do_not_depend_on_block_boundaries() {
        let text = "héllo wörld\r\n日本語のテキスト\nlast line without newline 🎉".repeat(7);
        let whole = stats_in_blocks(text.as_bytes(), 1 << 20);
        assert_eq!(whole.chars, text.chars().count() as u64);
        assert_eq!(whole.bytes, text.len() as u64);
        assert_eq!(whole.crlf, 7);
        for block_size in [8, 9, 10, 13, 64] {
            assert_eq!(
                stats_in_blocks(text.as_bytes(), block_size),
                whole,
                "block {block_size}"
            );
        }
    }

    #[test]
    fn invalid_sequences_are_counted_like_a_lossy_decoder() {
        let bytes = b"ok \xff\xfe then \xe2\x82 cut \xe2\x82\xac euro";
        let stats = stats_in_blocks(bytes, 1 << 20);
        let lossy = String::from_utf8_lossy(bytes);
        assert_eq!(stats.chars, lossy.chars().count() as u64);
        assert_eq!(stats.invalid_sequences, 3);
        assert_eq!(stats.first_invalid_offset, Some(3));
        assert_eq!(stats_in_blocks(bytes, 8), stats);
    }

    #[test]
    fn lines_count_a_final_line_without_newline() {
        assert_eq!(stats_in_blocks(b"", 64).lines(), 0);
        assert_eq!(stats_in_blocks(b"a", 64).lines(), 1);
        assert_eq!(stats_in_blocks(b"a\n", 64).lines(), 1);
        assert_eq!(stats_in_blocks(b"a\nb", 64).lines(), 2);
        assert_eq!(stats_in_blocks(b"\n\n", 64).lines(), 2);
    }
}
