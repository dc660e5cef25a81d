//! Byte classes of 64-byte chunks as bitmasks (bit `i` stands for byte `i` of the chunk): the
//! first stage of the JSON and CSV structure scans, which then work on whole chunks with integer
//! arithmetic instead of visiting bytes one by one.
//!
//! On x86_64 with AVX2 (checked at run time) each class costs two compares and two mask moves
//! per chunk; elsewhere a plain loop gives the same masks, and the tests hold the two to each other.

/// Bytes per chunk: one bit of a `u64` each.
pub(crate) const CHUNK: usize = 64;

/// The bytes a JSON structure scan looks at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct JsonMasks {
    pub quote: u64,
    pub backslash: u64,
    /// `{` and `[`.
    pub open: u64,
    /// `}` and `]`.
    pub close: u64,
    pub comma: u64,
    pub colon: u64,
    /// What `u8::is_ascii_whitespace` accepts: space, tab, line feed, form feed, carriage return.
    pub whitespace: u64,
}

/// The bytes a CSV row scan looks at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CsvMasks {
    pub quote: u64,
    pub newline: u64,
    /// As in [`JsonMasks::whitespace`].
    pub whitespace: u64,
}

/// Calls `visit` with the masks of each whole chunk of `bytes`, in order, until it returns
/// `false`; returns the number of chunks it accepted.
///
/// `visit` is inlined into the SIMD loop, so its arithmetic is compiled for the same CPU features
/// (`popcnt`, `bmi1` besides AVX2).
#[inline]
pub(crate) fn visit_json_chunks(bytes: &[u8], visit: impl FnMut(&JsonMasks) -> bool) -> usize {
    let (chunks, _) = bytes.as_chunks::<CHUNK>();
    #[cfg(target_arch = "x86_64")]
    let visit = match avx2::visit_json_chunks(chunks, visit) {
        Ok(accepted) => return accepted,
        Err(visit) => visit,
    };
    visit_all(chunks, portable::json_chunk, visit)
}

/// As [`visit_json_chunks`], for CSV.
#[inline]
pub(crate) fn visit_csv_chunks(bytes: &[u8], visit: impl FnMut(&CsvMasks) -> bool) -> usize {
    let (chunks, _) = bytes.as_chunks::<CHUNK>();
    #[cfg(target_arch = "x86_64")]
    let visit = match avx2::visit_csv_chunks(chunks, visit) {
        Ok(accepted) => return accepted,
        Err(visit) => visit,
    };
    visit_all(chunks, portable::csv_chunk, visit)
}

#[inline(always)]
fn visit_all<M>(
    chunks: &[[u8; CHUNK]],
    classify: impl Fn(&[u8; CHUNK]) -> M,
    mut visit: impl FnMut(&M) -> bool,
) -> usize {
    chunks
        .iter()
        .take_while(|chunk| visit(&classify(chunk)))
        .count()
}

/// One bit per byte, in a loop: the fallback, and the reference the SIMD version is tested
/// against.
mod portable {
    use super::{CHUNK, CsvMasks, JsonMasks};

    pub(super) fn json_chunk(chunk: &[u8; CHUNK]) -> JsonMasks {
        let mut masks = JsonMasks::default();
        for (index, &byte) in chunk.iter().enumerate() {
            let bit = 1u64 << index;
            match byte {
                b'"' => masks.quote |= bit,
                b'\\' => masks.backslash |= bit,
                b'{' | b'[' => masks.open |= bit,
                b'}' | b']' => masks.close |= bit,
                b',' => masks.comma |= bit,
                b':' => masks.colon |= bit,
                _ if byte.is_ascii_whitespace() => masks.whitespace |= bit,
                _ => {}
            }
        }
        masks
    }

    pub(super) fn csv_chunk(chunk: &[u8; CHUNK]) -> CsvMasks {
        let mut masks = CsvMasks::default();
        for (index, &byte) in chunk.iter().enumerate() {
            let bit = 1u64 << index;
            if byte == b'"' {
                masks.quote |= bit;
            }
            if byte == b'\n' {
                masks.newline |= bit;
            }
            if byte.is_ascii_whitespace() {
                masks.whitespace |= bit;
            }
        }
        masks
    }
}

#[cfg(target_arch = "x86_64")]
#[expect(
    unsafe_code,
    reason = "unaligned SIMD loads, and calls into AVX2 code after run-time detection"
)]
mod avx2 {
    use std::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_or_si256,
        _mm256_set1_epi8, _mm256_setr_epi8, _mm256_shuffle_epi8,
    };

    use super::{CHUNK, CsvMasks, JsonMasks};

    /// A chunk as two 32-byte vectors.
    struct Halves(__m256i, __m256i);

    /// Whether the CPU has what the functions below are compiled for.
    fn supported() -> bool {
        std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("popcnt")
            && std::arch::is_x86_feature_detected!("bmi1")
    }

    /// Visits `chunks` if the CPU has AVX2; hands `visit` back if it does not.
    #[inline]
    pub(super) fn visit_json_chunks<F: FnMut(&JsonMasks) -> bool>(
        chunks: &[[u8; CHUNK]],
        visit: F,
    ) -> Result<usize, F> {
        if !supported() {
            return Err(visit);
        }
        // SAFETY: the CPU has the features `visit_json_avx2` is compiled for, checked above.
        Ok(unsafe { visit_json_avx2(chunks, visit) })
    }

    /// Visits `chunks` if the CPU has AVX2; hands `visit` back if it does not.
    #[inline]
    pub(super) fn visit_csv_chunks<F: FnMut(&CsvMasks) -> bool>(
        chunks: &[[u8; CHUNK]],
        visit: F,
    ) -> Result<usize, F> {
        if !supported() {
            return Err(visit);
        }
        // SAFETY: the CPU has the features `visit_csv_avx2` is compiled for, checked above.
        Ok(unsafe { visit_csv_avx2(chunks, visit) })
    }

    #[target_feature(enable = "avx2,popcnt,bmi1")]
    fn visit_json_avx2(chunks: &[[u8; CHUNK]], visit: impl FnMut(&JsonMasks) -> bool) -> usize {
        super::visit_all(chunks, |chunk| json_chunk(chunk), visit)
    }

    #[target_feature(enable = "avx2,popcnt,bmi1")]
    fn visit_csv_avx2(chunks: &[[u8; CHUNK]], visit: impl FnMut(&CsvMasks) -> bool) -> usize {
        super::visit_all(chunks, |chunk| csv_chunk(chunk), visit)
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    fn json_chunk(chunk: &[u8; CHUNK]) -> JsonMasks {
        let halves = load(chunk);
        // `[` and `{` differ only in bit 5, as do `]` and `}`.
        let folded = Halves(
            _mm256_or_si256(halves.0, _mm256_set1_epi8(0x20)),
            _mm256_or_si256(halves.1, _mm256_set1_epi8(0x20)),
        );
        JsonMasks {
            quote: equal(&halves, b'"'),
            backslash: equal(&halves, b'\\'),
            open: equal(&folded, b'{'),
            close: equal(&folded, b'}'),
            comma: equal(&halves, b','),
            colon: equal(&halves, b':'),
            whitespace: whitespace(&halves),
        }
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    fn csv_chunk(chunk: &[u8; CHUNK]) -> CsvMasks {
        let halves = load(chunk);
        CsvMasks {
            quote: equal(&halves, b'"'),
            newline: equal(&halves, b'\n'),
            whitespace: whitespace(&halves),
        }
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    fn load(chunk: &[u8; CHUNK]) -> Halves {
        // SAFETY: `chunk` is 64 bytes long, so the 32 bytes at 0 and at 32 are in bounds;
        // `loadu` has no alignment requirement.
        unsafe {
            Halves(
                _mm256_loadu_si256(chunk.as_ptr().cast()),
                _mm256_loadu_si256(chunk[32..].as_ptr().cast()),
            )
        }
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    fn equal(halves: &Halves, byte: u8) -> u64 {
        let needle = _mm256_set1_epi8(byte as i8);
        movemask(
            _mm256_cmpeq_epi8(halves.0, needle),
            _mm256_cmpeq_epi8(halves.1, needle),
        )
    }

    /// ASCII whitespace by table lookup on the low four bits: each whitespace byte has its own
    /// low nibble, and the table holds, per nibble, the one byte that is whitespace there (or a
    /// byte with another low nibble, which never matches). Bytes from 0x80 look up zero.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn whitespace(halves: &Halves) -> u64 {
        #[rustfmt::skip]
        let table = _mm256_setr_epi8(
            0x20, -1, -1, -1, -1, -1, -1, -1, -1, 0x09, 0x0A, -1, 0x0C, 0x0D, -1, 0,
            0x20, -1, -1, -1, -1, -1, -1, -1, -1, 0x09, 0x0A, -1, 0x0C, 0x0D, -1, 0,
        );
        movemask(
            _mm256_cmpeq_epi8(_mm256_shuffle_epi8(table, halves.0), halves.0),
            _mm256_cmpeq_epi8(_mm256_shuffle_epi8(table, halves.1), halves.1),
        )
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    fn movemask(low: __m256i, high: __m256i) -> u64 {
        // The sign-extending casts are undone by going through u32.
        let low = u64::from(_mm256_movemask_epi8(low) as u32);
        let high = u64::from(_mm256_movemask_epi8(high) as u32);
        low | high << 32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte value, at every position, plus runs of the interesting ones.
    fn sample_bytes() -> Vec<u8> {
        let mut bytes: Vec<u8> = (0..=255u8).cycle().take(64 * 9).collect();
        bytes.extend(b" \t\n\x0b\x0c\r\"\\{}[],:x\xff\x80".repeat(20));
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        bytes.extend((0..64 * 40).map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        }));
        bytes
    }

    #[test]
    fn the_dispatched_masks_match_the_byte_loop() {
        let bytes = sample_bytes();
        let chunks = bytes.len() / CHUNK;
        let mut json = Vec::new();
        let mut csv = Vec::new();
        let visited = visit_json_chunks(&bytes, |masks| {
            json.push(*masks);
            true
        });
        assert_eq!(visited, chunks);
        let visited = visit_csv_chunks(&bytes, |masks| {
            csv.push(*masks);
            true
        });
        assert_eq!(visited, chunks);
        for (index, chunk) in bytes.as_chunks::<CHUNK>().0.iter().enumerate() {
            assert_eq!(json[index], portable::json_chunk(chunk), "chunk {index}");
            assert_eq!(csv[index], portable::csv_chunk(chunk), "chunk {index}");
        }
        // Visiting stops where the visitor says; a partial chunk is left alone.
        let mut visits = 0;
        let stop_after_two = |_: &JsonMasks| {
            visits += 1;
            visits <= 2
        };
        assert_eq!(visit_json_chunks(&bytes, stop_after_two), 2);
        assert_eq!(visit_json_chunks(&bytes[..63], |_| true), 0);
    }

    #[test]
    fn the_byte_loop_marks_each_class() {
        let mut chunk = [b'a'; CHUNK];
        chunk[..11].copy_from_slice(b"\"\\{[}],: \x0c\x0b");
        chunk[63] = b'\n';
        let json = portable::json_chunk(&chunk);
        assert_eq!(json.quote, 1);
        assert_eq!(json.backslash, 1 << 1);
        assert_eq!(json.open, 0b1100);
        assert_eq!(json.close, 0b11_0000);
        assert_eq!(json.comma, 1 << 6);
        assert_eq!(json.colon, 1 << 7);
        // Vertical tab (0x0b) is not ASCII whitespace to Rust.
        assert_eq!(json.whitespace, 1 << 8 | 1 << 9 | 1 << 63);
        let csv = portable::csv_chunk(&chunk);
        assert_eq!((csv.quote, csv.newline), (1, 1 << 63));
    }
}
