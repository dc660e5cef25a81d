//! The byte counts every format pays for — line feeds, CR LF pairs, character starts, line
//! starts that need a closer look — and whether the block is valid UTF-8, in one pass over a
//! block instead of one pass each.
//!
//! On x86_64 with AVX2 (checked at run time) each 32 bytes cost a few compares into byte
//! counters, summed every 255 rounds (a batch). The rare things are only noted in the pass and
//! counted after it: CR LF pairs are looked for only in a block that has a CR, and characters
//! counted and UTF-8 validated only in the batches that have a byte above ASCII (text that is
//! mostly ASCII then costs no validation pass: an all-ASCII batch is valid and cuts the block
//! into pieces that are valid each or not at all). Elsewhere `bytecount`, `memchr` and
//! `simdutf8` count in separate passes, and the tests hold the two to each other.

/// What [`count`] finds in a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ByteCounts {
    /// `\n` bytes.
    pub newlines: u64,
    /// `\r\n` pairs inside the block.
    pub crlf: u64,
    /// Bytes that are not UTF-8 continuation bytes (`0x80..=0xBF`): the characters of valid UTF-8.
    pub char_starts: u64,
    /// Line feeds followed, inside the block, by a byte outside `0x21..=0x7F` (a space, a
    /// control character, a byte above ASCII). The line after any other line feed starts with
    /// a byte that is not whitespace, so it is not blank:
    /// [`crate::records::LineRecordCounter`] counts the records of a block without unsure line
    /// starts from its line feeds alone.
    pub unsure_line_starts: u64,
    /// The block is valid UTF-8 by itself.
    pub valid_utf8: bool,
}

/// Counts `block`'s line feeds, CR LF pairs, character starts and unsure line starts, and
/// checks that it is UTF-8.
pub(crate) fn count(block: &[u8]) -> ByteCounts {
    #[cfg(target_arch = "x86_64")]
    if let Some(counts) = avx512::count(block) {
        return counts;
    }
    #[cfg(target_arch = "x86_64")]
    if let Some(counts) = avx2::count(block) {
        return counts;
    }
    portable(block)
}

/// The fallback, and the reference the SIMD version is tested against.
fn portable(block: &[u8]) -> ByteCounts {
    ByteCounts {
        newlines: bytecount::count(block, b'\n') as u64,
        crlf: portable_pairs(block),
        char_starts: bytecount::num_chars(block) as u64,
        unsure_line_starts: portable_unsure_line_starts(block),
        valid_utf8: simdutf8::basic::from_utf8(block).is_ok(),
    }
}

fn portable_pairs(block: &[u8]) -> u64 {
    // Two CR LF pairs never overlap, so counting matches counts pairs.
    memchr::memmem::find_iter(block, b"\r\n").count() as u64
}

/// Line feeds followed in `bytes` by a byte outside `0x21..=0x7F`.
fn portable_unsure_line_starts(bytes: &[u8]) -> u64 {
    let unsure = |pair: &[u8]| pair[0] == b'\n' && !(b'!'..=0x7F).contains(&pair[1]);
    bytes.windows(2).filter(|pair| unsure(pair)).count() as u64
}

/// Whether a block is valid UTF-8, validating only the runs of batches with bytes above
/// ASCII: ASCII bytes are characters by themselves, so the block is valid exactly when
/// each run between all-ASCII stretches is.
#[cfg(target_arch = "x86_64")]
#[derive(Default)]
struct Utf8Check {
    /// Where the run of batches above ASCII in progress started.
    run_start: Option<usize>,
    invalid: bool,
}

#[cfg(target_arch = "x86_64")]
impl Utf8Check {
    pub(crate) fn above_ascii(&mut self, start: usize) {
        self.run_start.get_or_insert(start);
    }

    /// An all-ASCII stretch starts at `start`: the run before it, if any, ends there.
    pub(crate) fn ascii(&mut self, block: &[u8], start: usize) {
        if let Some(run_start) = self.run_start.take() {
            self.check(&block[run_start..start]);
        }
    }

    pub(crate) fn finish(mut self, block: &[u8]) -> bool {
        self.ascii(block, block.len());
        !self.invalid
    }

    fn check(&mut self, run: &[u8]) {
        self.invalid = self.invalid || simdutf8::basic::from_utf8(run).is_err();
    }
}

/// How far ahead of the vector being counted the SIMD kernels ask for the bytes. The counts
/// are the first pass over a block, so its bytes come from memory (a mapped file's page cache),
/// not from a cache; a vector's few compares are done long before the next line arrives, and
/// the hardware's own prefetcher does not run far enough ahead of so short a loop. Asked for
/// 4 KiB ahead, the pass over a 128 MB JSON array took 9 ms instead of 22 (AVX-512, 2026-12-07).
#[cfg(target_arch = "x86_64")]
const PREFETCH_DISTANCE: usize = 4096;

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefetch_ahead<const N: usize>(vector: &[u8; N]) {
    // SAFETY: a prefetch is a hint: it never faults, whatever the address (past the block's
    // end, or an unmapped page, it is dropped).
    #[expect(unsafe_code, reason = "the prefetch intrinsic is unsafe to call")]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            vector.as_ptr().wrapping_add(PREFETCH_DISTANCE).cast(),
        );
    }
}

#[cfg(target_arch = "x86_64")]
#[expect(
    unsafe_code,
    reason = "unaligned SIMD loads, and calls into AVX-512 code after run-time detection"
)]
mod avx512 {
    use std::arch::x86_64::{
        __m512i, _mm512_cmpeq_epi8_mask, _mm512_cmplt_epi8_mask, _mm512_loadu_si512,
        _mm512_movepi8_mask, _mm512_set1_epi8,
    };

    use super::{ByteCounts, Utf8Check};

    const VECTOR: usize = 64;
    /// Vectors of a batch: the stretch whose bytes above ASCII are checked as UTF-8 together.
    const BATCH: usize = 128;

    /// Counts `block` if the CPU runs the AVX-512 structure kernel (the same CPUs:
    /// [`crate::bitmask::avx512_supported`]).
    #[inline]
    pub(super) fn count(block: &[u8]) -> Option<ByteCounts> {
        if !crate::bitmask::avx512_supported() {
            return None;
        }
        // SAFETY: the CPU has the features `count_avx512` is compiled for, checked above.
        Some(unsafe { count_avx512(block) })
    }

    /// One load a vector: every class is a compare into a mask register, counted by `popcnt`;
    /// the line feed before a vector's first byte is carried from the previous vector's mask.
    #[target_feature(enable = "avx512f,avx512bw,popcnt")]
    fn count_avx512(block: &[u8]) -> ByteCounts {
        let (vectors, tail) = block.as_chunks::<VECTOR>();
        let line_feed = _mm512_set1_epi8(b'\n' as i8);
        let carriage_return = _mm512_set1_epi8(b'\r' as i8);
        // As signed bytes, the bytes outside 0x21..=0x7F are those below 0x21, and the
        // continuation bytes 0x80..=0xBF those below -64 (0xC0).
        let first_sure = _mm512_set1_epi8(b'!' as i8);
        let first_lead = _mm512_set1_epi8(-64);
        let mut counts = ByteCounts {
            newlines: 0,
            crlf: 0,
            char_starts: 0,
            unsure_line_starts: 0,
            valid_utf8: true,
        };
        let mut returns = 0u64;
        let mut line_feed_before = 0u64;
        let mut utf8 = Utf8Check::default();
        for (index, batch) in vectors.chunks(BATCH).enumerate() {
            let mut above_ascii = 0u64;
            for vector in batch {
                super::prefetch_ahead(vector);
                let bytes = load(vector);
                let line_feeds = _mm512_cmpeq_epi8_mask(bytes, line_feed);
                counts.newlines += u64::from(line_feeds.count_ones());
                let after_line_feed = line_feeds << 1 | line_feed_before;
                line_feed_before = line_feeds >> 63;
                let unsure = after_line_feed & _mm512_cmplt_epi8_mask(bytes, first_sure);
                counts.unsure_line_starts += u64::from(unsure.count_ones());
                returns |= _mm512_cmpeq_epi8_mask(bytes, carriage_return);
                let high = _mm512_movepi8_mask(bytes);
                above_ascii |= high;
                if high != 0 {
                    let continuations = _mm512_cmplt_epi8_mask(bytes, first_lead);
                    counts.char_starts += u64::from(64 - continuations.count_ones());
                } else {
                    counts.char_starts += 64;
                }
            }
            let start = index * BATCH * VECTOR;
            if above_ascii != 0 {
                utf8.above_ascii(start);
            } else {
                utf8.ascii(block, start);
            }
        }
        let tail_start = block.len() - tail.len();
        let rest = super::portable(tail);
        counts.newlines += rest.newlines;
        counts.char_starts += rest.char_starts;
        // The tail's line starts, the one at its first byte included.
        counts.unsure_line_starts +=
            super::portable_unsure_line_starts(&block[tail_start.saturating_sub(1)..]);
        if tail.is_ascii() {
            utf8.ascii(block, tail_start);
        } else {
            utf8.above_ascii(tail_start);
        }
        counts.valid_utf8 = utf8.finish(block);
        // Most files have no CR at all, and then no pairs to look for.
        if returns != 0 || tail.contains(&b'\r') {
            counts.crlf = super::portable_pairs(block);
        }
        counts
    }

    #[target_feature(enable = "avx512f")]
    #[inline]
    fn load(vector: &[u8; VECTOR]) -> __m512i {
        // SAFETY: `vector` is 64 bytes long; `loadu` has no alignment requirement.
        unsafe { _mm512_loadu_si512(vector.as_ptr().cast()) }
    }
}

#[cfg(target_arch = "x86_64")]
#[expect(
    unsafe_code,
    reason = "unaligned SIMD loads, and calls into AVX2 code after run-time detection"
)]
mod avx2 {
    use std::arch::x86_64::{
        __m256i, _mm256_and_si256, _mm256_cmpeq_epi8, _mm256_cmpgt_epi8, _mm256_extract_epi64,
        _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_or_si256, _mm256_sad_epu8,
        _mm256_set1_epi8, _mm256_setzero_si256, _mm256_sub_epi8,
    };

    use super::{ByteCounts, Utf8Check};

    const VECTOR: usize = 32;
    /// Rounds a byte counter takes before it could overflow: the vectors of a batch.
    const ROUNDS: usize = 255;

    /// Counts `block` if the CPU has AVX2.
    #[inline]
    pub(super) fn count(block: &[u8]) -> Option<ByteCounts> {
        if !std::arch::is_x86_feature_detected!("avx2") {
            return None;
        }
        // SAFETY: the CPU has AVX2, checked above.
        Some(unsafe { count_avx2(block) })
    }

    /// The vectors start one byte into the block, so that the 32 bytes before each vector (for
    /// the line starts) are a vector of the block itself; its first byte and the tail are
    /// counted by the portable code.
    #[target_feature(enable = "avx2")]
    fn count_avx2(block: &[u8]) -> ByteCounts {
        let Some((&first, rest)) = block.split_first() else {
            return super::portable(block);
        };
        let (vectors, tail) = rest.as_chunks::<VECTOR>();
        let (before, _) = block.as_chunks::<VECTOR>();
        let mut counts = super::portable(&block[..1]);
        let mut carriage_returns = first == b'\r';
        let mut utf8 = Utf8Check::default();
        if !first.is_ascii() {
            utf8.above_ascii(0);
        }
        for (index, (batch, batch_before)) in vectors
            .chunks(ROUNDS)
            .zip(before.chunks(ROUNDS))
            .enumerate()
        {
            let start = 1 + index * ROUNDS * VECTOR;
            let found = count_vectors(batch, batch_before);
            counts.newlines += sum(found.newlines);
            counts.unsure_line_starts += sum(found.unsure_line_starts);
            carriage_returns |= found.carriage_returns;
            if found.above_ascii {
                counts.char_starts += count_char_starts(batch);
                utf8.above_ascii(start);
            } else {
                counts.char_starts += (batch.len() * VECTOR) as u64;
                utf8.ascii(block, start);
            }
        }
        let tail_start = block.len() - tail.len();
        let rest = super::portable(tail);
        counts.newlines += rest.newlines;
        counts.char_starts += rest.char_starts;
        // The tail's line starts, the one at its first byte included.
        counts.unsure_line_starts += super::portable_unsure_line_starts(&block[tail_start - 1..]);
        if tail.is_ascii() {
            utf8.ascii(block, tail_start);
        } else {
            utf8.above_ascii(tail_start);
        }
        counts.valid_utf8 = utf8.finish(block);
        // Most files have no CR at all, and then no pairs to look for.
        if carriage_returns || tail.contains(&b'\r') {
            counts.crlf = super::portable_pairs(block);
        }
        counts
    }

    /// What [`count_vectors`] finds in a batch: byte counters (each lane counts up to 255) of
    /// line feeds and unsure line starts, and whether any byte is a CR or above ASCII.
    struct BatchCounts {
        newlines: __m256i,
        unsure_line_starts: __m256i,
        carriage_returns: bool,
        above_ascii: bool,
    }

    /// Counts up to 255 vectors; `before` holds the 32 bytes before each vector.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn count_vectors(vectors: &[[u8; VECTOR]], before: &[[u8; VECTOR]]) -> BatchCounts {
        debug_assert!(vectors.len() <= ROUNDS);
        let line_feed = _mm256_set1_epi8(b'\n' as i8);
        let carriage_return = _mm256_set1_epi8(b'\r' as i8);
        // As signed bytes, the bytes outside 0x21..=0x7F are those below 0x21.
        let first_sure = _mm256_set1_epi8(b'!' as i8);
        let mut newlines = _mm256_setzero_si256();
        let mut unsure_line_starts = _mm256_setzero_si256();
        let mut returns = _mm256_setzero_si256();
        let mut all_bytes = _mm256_setzero_si256();
        for (vector, previous) in vectors.iter().zip(before) {
            super::prefetch_ahead(vector);
            // SAFETY: both are 32 bytes long; `loadu` has no alignment requirement.
            let (bytes, previous) = unsafe {
                (
                    _mm256_loadu_si256(vector.as_ptr().cast()),
                    _mm256_loadu_si256(previous.as_ptr().cast()),
                )
            };
            // A true compare is -1, so subtracting it counts.
            newlines = _mm256_sub_epi8(newlines, _mm256_cmpeq_epi8(bytes, line_feed));
            returns = _mm256_or_si256(returns, _mm256_cmpeq_epi8(bytes, carriage_return));
            all_bytes = _mm256_or_si256(all_bytes, bytes);
            let after_line_feed = _mm256_cmpeq_epi8(previous, line_feed);
            let unsure = _mm256_and_si256(after_line_feed, _mm256_cmpgt_epi8(first_sure, bytes));
            unsure_line_starts = _mm256_sub_epi8(unsure_line_starts, unsure);
        }
        BatchCounts {
            newlines,
            unsure_line_starts,
            carriage_returns: _mm256_movemask_epi8(returns) != 0,
            // The sign bit of a byte is set above ASCII.
            above_ascii: _mm256_movemask_epi8(all_bytes) != 0,
        }
    }

    /// Character starts in up to 255 vectors: a second look at a batch with bytes above
    /// ASCII, while it is still in the core's cache.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn count_char_starts(vectors: &[[u8; VECTOR]]) -> u64 {
        debug_assert!(vectors.len() <= ROUNDS);
        // Continuation bytes are 0x80..=0xBF, -128..=-65 as signed bytes.
        let last_continuation = _mm256_set1_epi8(-65);
        let mut char_starts = _mm256_setzero_si256();
        for vector in vectors {
            // SAFETY: `vector` is 32 bytes long; `loadu` has no alignment requirement.
            let bytes = unsafe { _mm256_loadu_si256(vector.as_ptr().cast()) };
            char_starts = _mm256_sub_epi8(char_starts, _mm256_cmpgt_epi8(bytes, last_continuation));
        }
        sum(char_starts)
    }

    /// The sum of the 32 byte counters.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn sum(counters: __m256i) -> u64 {
        let sums = _mm256_sad_epu8(counters, _mm256_setzero_si256());
        [
            _mm256_extract_epi64::<0>(sums),
            _mm256_extract_epi64::<1>(sums),
            _mm256_extract_epi64::<2>(sums),
            _mm256_extract_epi64::<3>(sums),
        ]
        .into_iter()
        .map(|lane| lane as u64)
        .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random_bytes(length: usize, alphabet: &[u8], seed: u64) -> Vec<u8> {
        let mut state = seed;
        (0..length)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                alphabet[(state % alphabet.len() as u64) as usize]
            })
            .collect()
    }

    /// The dispatched counts, and those of each SIMD kernel the CPU runs, against the plain
    /// ones, and validity against the standard library.
    fn assert_counted_as_plain(block: &[u8], what: &str) {
        let counts = count(block);
        let plain = portable(block);
        assert_eq!(counts, plain, "{what}");
        assert_eq!(
            counts.valid_utf8,
            std::str::from_utf8(block).is_ok(),
            "{what}"
        );
        #[cfg(target_arch = "x86_64")]
        for (kernel, counted) in [
            ("AVX2", avx2::count(block)),
            ("AVX-512", avx512::count(block)),
        ] {
            if let Some(counted) = counted {
                assert_eq!(counted, plain, "{kernel}: {what}");
            }
        }
    }

    #[test]
    fn the_dispatched_counts_match_the_plain_ones() {
        let alphabet = b"\r\n\r\nab \t\xc3\xa9\xe2\x82\xac\xff\x80\xbf\xc0\x7f!";
        // Long enough for several 255-round batches, with every length near a vector's edge.
        let long = random_bytes(40_000, alphabet, 0x9E37_79B9_7F4A_7C15);
        let mut inputs: Vec<&[u8]> = vec![b"", b"\r", b"\n", b"\r\n", b"\n\n", b"\n ", &long];
        let all_bytes: Vec<u8> = (0..=255u8).cycle().take(2000).collect();
        inputs.push(&all_bytes);
        let crlf_lines = b"line\r\n".repeat(3000);
        inputs.push(&crlf_lines);
        let blank_lines = b"{\"a\":1}\n\n \n\t\n{}\n\xc3\xa9\n".repeat(900);
        inputs.push(&blank_lines);
        for input in inputs {
            for length in (0..input.len().min(100)).chain([input.len()]) {
                assert_counted_as_plain(&input[..length], &format!("length {length}"));
            }
            // Every alignment of a CR LF pair and a line start against the vectors.
            for start in 0..70.min(input.len()) {
                assert_counted_as_plain(&input[start..], &format!("start {start}"));
            }
        }
        let pairs = [b"x".repeat(31), b"\r\n".to_vec(), b"y".repeat(40)].concat();
        assert_eq!(count(&pairs).crlf, 1);
        assert_eq!(count(&pairs).newlines, 1);
    }

    /// A batch of the AVX2 kernel is 255 vectors of 32 bytes after the block's first byte.
    const BATCH: usize = 255 * 32;
    /// A batch of the AVX-512 kernel is 128 vectors of 64 bytes from the block's start.
    const WIDE_BATCH: usize = 128 * 64;

    #[test]
    fn utf8_is_checked_across_the_edges_of_ascii_batches() {
        let ascii = random_bytes(4 * BATCH + 100, b"ab{}\":,\n 1", 7);
        let sequences: [&[u8]; 6] = [
            b"\xc3\xa9",
            b"\xe2\x82\xac",
            b"\xf0\x9f\x8e\x89",
            b"\xe2\x82",
            b"\x80",
            b"\xed\xa0\x80",
        ];
        // Near the edges of the batches and of the tail: a sequence cut by an edge belongs
        // to two batches, one of which may be all ASCII otherwise.
        let edges = [
            1,
            BATCH + 1,
            2 * BATCH + 1,
            4 * BATCH + 1,
            WIDE_BATCH,
            2 * WIDE_BATCH,
            3 * WIDE_BATCH,
        ];
        for sequence in sequences {
            for edge in edges {
                for shift in 0..6 {
                    let mut block = ascii.clone();
                    let at = (edge + shift).saturating_sub(3).min(block.len() - 4);
                    block[at..at + sequence.len()].copy_from_slice(sequence);
                    assert_counted_as_plain(&block, &format!("{sequence:x?} at {at}"));
                    // The same with a second, valid character far away in another batch.
                    block[3 * BATCH..3 * BATCH + 2].copy_from_slice(b"\xc3\xa9");
                    assert_counted_as_plain(&block, &format!("{sequence:x?} at {at}, é"));
                }
            }
        }
    }

    #[test]
    fn unsure_line_starts_are_the_line_feeds_before_anything_but_visible_ascii() {
        assert_eq!(count(b"a\nb\n{\n").unsure_line_starts, 0);
        assert_eq!(
            count(b"a\n\nb\n \n\t\n\r\n\xc3\xa9\n\x7f").unsure_line_starts,
            5
        );
        let mut long = b"{\"id\":1}\n".repeat(BATCH / 4);
        assert_eq!(count(&long).unsure_line_starts, 0);
        long.extend_from_slice(b"\n");
        long.extend_from_slice(&b"{\"id\":1}\n".repeat(100));
        assert_eq!(count(&long).unsure_line_starts, 1);
    }
}
