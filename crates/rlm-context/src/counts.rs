//! The byte counts every format pays for — line feeds, CR LF pairs and character starts — in one
//! pass over a block instead of one pass each.
//!
//! On x86_64 with AVX2 (checked at run time) each 32 bytes cost three compares and subtractions
//! into byte counters, summed every 255 rounds; CR LF pairs are looked for only in a block that
//! has a CR. Elsewhere `bytecount` and `memchr` count in three passes, and the tests hold the two
//! to each other.

/// What [`count`] finds in a block.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ByteCounts {
    /// `\n` bytes.
    pub newlines: u64,
    /// `\r\n` pairs inside the block.
    pub crlf: u64,
    /// Bytes that are not UTF-8 continuation bytes (`0x80..=0xBF`): the characters of valid UTF-8.
    pub char_starts: u64,
}

/// Counts `block`'s line feeds, CR LF pairs and character starts.
pub(crate) fn count(block: &[u8]) -> ByteCounts {
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
    }
}

fn portable_pairs(block: &[u8]) -> u64 {
    // Two CR LF pairs never overlap, so counting matches counts pairs.
    memchr::memmem::find_iter(block, b"\r\n").count() as u64
}

#[cfg(target_arch = "x86_64")]
#[expect(
    unsafe_code,
    reason = "unaligned SIMD loads, and calls into AVX2 code after run-time detection"
)]
mod avx2 {
    use std::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_cmpgt_epi8, _mm256_extract_epi64, _mm256_loadu_si256,
        _mm256_sad_epu8, _mm256_set1_epi8, _mm256_setzero_si256, _mm256_sub_epi8,
    };

    use super::ByteCounts;

    const VECTOR: usize = 32;
    /// Rounds a byte counter takes before it could overflow.
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

    #[target_feature(enable = "avx2")]
    fn count_avx2(block: &[u8]) -> ByteCounts {
        let (vectors, tail) = block.as_chunks::<VECTOR>();
        let mut counts = ByteCounts::default();
        let mut carriage_returns = 0;
        for batch in vectors.chunks(ROUNDS) {
            let (newlines, returns, char_starts) = count_vectors(batch);
            counts.newlines += sum(newlines);
            carriage_returns += sum(returns);
            counts.char_starts += sum(char_starts);
        }
        let rest = super::portable(tail);
        counts.newlines += rest.newlines;
        counts.char_starts += rest.char_starts;
        // Most files have no CR at all, and then no pairs to look for.
        if carriage_returns > 0 || tail.contains(&b'\r') {
            counts.crlf = super::portable_pairs(block);
        }
        counts
    }

    /// Byte counters (each lane counts up to 255) of line feeds, carriage returns and
    /// character starts over up to 255 vectors.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn count_vectors(vectors: &[[u8; VECTOR]]) -> (__m256i, __m256i, __m256i) {
        debug_assert!(vectors.len() <= ROUNDS);
        let line_feed = _mm256_set1_epi8(b'\n' as i8);
        let carriage_return = _mm256_set1_epi8(b'\r' as i8);
        // Continuation bytes are 0x80..=0xBF, -128..=-65 as signed bytes.
        let last_continuation = _mm256_set1_epi8(-65);
        let mut newlines = _mm256_setzero_si256();
        let mut returns = _mm256_setzero_si256();
        let mut char_starts = _mm256_setzero_si256();
        for vector in vectors {
            // SAFETY: `vector` is 32 bytes long; `loadu` has no alignment requirement.
            let bytes = unsafe { _mm256_loadu_si256(vector.as_ptr().cast()) };
            // A true compare is -1, so subtracting it counts.
            newlines = _mm256_sub_epi8(newlines, _mm256_cmpeq_epi8(bytes, line_feed));
            returns = _mm256_sub_epi8(returns, _mm256_cmpeq_epi8(bytes, carriage_return));
            char_starts = _mm256_sub_epi8(char_starts, _mm256_cmpgt_epi8(bytes, last_continuation));
        }
        (newlines, returns, char_starts)
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

    #[test]
    fn the_dispatched_counts_match_the_plain_ones() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let alphabet = b"\r\n\r\nab \xc3\xa9\xe2\x82\xac\xff\x80\xbf\xc0";
        // Long enough for several 255-round batches, with every length near a vector's edge.
        let long: Vec<u8> = (0..40_000)
            .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
            .collect();
        let mut inputs: Vec<&[u8]> = vec![b"", b"\r", b"\n", b"\r\n", &long];
        let all_bytes: Vec<u8> = (0..=255u8).cycle().take(2000).collect();
        inputs.push(&all_bytes);
        let crlf_lines = b"line\r\n".repeat(3000);
        inputs.push(&crlf_lines);
        for input in inputs {
            for length in (0..input.len().min(100)).chain([input.len()]) {
                let block = &input[..length];
                assert_eq!(count(block), portable(block), "length {length}");
            }
            // Every alignment of a CR LF pair against the vectors.
            for start in 0..70.min(input.len()) {
                let block = &input[start..];
                assert_eq!(count(block), portable(block), "start {start}");
            }
        }
        let pairs = [b"x".repeat(31), b"\r\n".to_vec(), b"y".repeat(40)].concat();
        assert_eq!(count(&pairs).crlf, 1);
        assert_eq!(count(&pairs).newlines, 1);
    }
}
