//! Integer dot products of one int8 query with many quantized rows kept as records: each a
//! little-endian `f32` scale followed by the row's values as bytes (each the `i8` value's two's
//! complement), as the store's vector file holds them.
//!
//! On x86_64 with AVX2 (checked at run time) four rows are scored at once: each 32 values cost
//! an absolute value, a sign transfer, a byte multiply-add into 16-bit pairs and a widening
//! add, and the four rows' lanes are summed together at the end. Elsewhere, and for the rows
//! and values that do not fill a vector, the plain loop of [`dot`] runs; the tests hold the two
//! to each other. Both are exact, so they give the same integers.

/// Bytes of a record's scale.
pub(crate) const SCALE_BYTES: usize = 4;

/// Appends to `out` the dot product of `query` with each record of `records` (records of
/// `SCALE_BYTES + query.len()` bytes; a shorter tail is ignored).
pub(crate) fn dots(query: &[i8], records: &[u8], out: &mut Vec<i32>) {
    #[cfg(target_arch = "x86_64")]
    if avx2::dots(query, records, out) {
        return;
    }
    portable(query, records, out);
}

/// The fallback, and the reference the SIMD version is tested against.
fn portable(query: &[i8], records: &[u8], out: &mut Vec<i32>) {
    let record_bytes = SCALE_BYTES + query.len();
    out.extend(
        records
            .chunks_exact(record_bytes)
            .map(|record| dot(query, &record[SCALE_BYTES..])),
    );
}

/// Integer dot product of `query` with a row kept as bytes.
pub(crate) fn dot(query: &[i8], row: &[u8]) -> i32 {
    dot_of(query, row, |byte| byte as i8)
}

/// Integer dot product of `query` with a row whose values `value` reads (an `i8` as itself, a
/// byte as its two's complement). Quantized values lie in [-127, 127], so each product fits in
/// i16; multiplying in i16 and widening per block of 16 lets LLVM use 16-bit SIMD multiplies
/// (pmullw/pmaddwd on x86-64) instead of 32-bit ones.
#[inline(always)]
pub(crate) fn dot_of<T: Copy>(query: &[i8], row: &[T], value: impl Fn(T) -> i8) -> i32 {
    let mut total = 0i32;
    let blocks = query.chunks_exact(16).zip(row.chunks_exact(16));
    for (x, y) in blocks {
        let mut block = 0i32;
        for lane in 0..16 {
            block += i32::from(i16::from(x[lane]) * i16::from(value(y[lane])));
        }
        total += block;
    }
    let tail_start = query.len() - query.len() % 16;
    total
        + query[tail_start..]
            .iter()
            .zip(&row[tail_start..])
            .map(|(&x, &y)| i32::from(x) * i32::from(value(y)))
            .sum::<i32>()
}

#[cfg(target_arch = "x86_64")]
#[expect(
    unsafe_code,
    reason = "AVX2 intrinsics: called only after run-time detection, loads only within slices"
)]
mod avx2 {
    use std::arch::x86_64::{
        __m128i, __m256i, _mm_add_epi32, _mm_storeu_si128, _mm256_abs_epi8, _mm256_add_epi32,
        _mm256_castsi256_si128, _mm256_extracti128_si256, _mm256_hadd_epi32, _mm256_loadu_si256,
        _mm256_madd_epi16, _mm256_maddubs_epi16, _mm256_set1_epi16, _mm256_setzero_si256,
        _mm256_sign_epi8,
    };

    use super::{SCALE_BYTES, dot};

    const VECTOR: usize = 32;
    /// Rows scored at once, their lane sums added together in one reduction.
    const ROWS: usize = 4;

    /// [`super::dots`] if the CPU has AVX2 (`false`, with nothing appended, if not).
    #[inline]
    pub(super) fn dots(query: &[i8], records: &[u8], out: &mut Vec<i32>) -> bool {
        if !std::arch::is_x86_feature_detected!("avx2") {
            return false;
        }
        // SAFETY: the CPU has AVX2, checked above.
        unsafe { dots_avx2(query, records, out) };
        true
    }

    #[target_feature(enable = "avx2")]
    fn dots_avx2(query: &[i8], records: &[u8], out: &mut Vec<i32>) {
        let record_bytes = SCALE_BYTES + query.len();
        let (query_vectors, query_tail) = query.as_chunks::<VECTOR>();
        let vector_bytes = query_vectors.len() * VECTOR;
        let mut groups = records.chunks_exact(ROWS * record_bytes);
        for group in groups.by_ref() {
            let mut sums = [_mm256_setzero_si256(); ROWS];
            for (row, sum) in sums.iter_mut().enumerate() {
                let values = &group[row * record_bytes + SCALE_BYTES..(row + 1) * record_bytes];
                *sum = row_sum(query_vectors, &values[..vector_bytes]);
            }
            let mut four = [0i32; ROWS];
            // SAFETY: `four` is 16 bytes; `storeu` has no alignment requirement.
            unsafe { _mm_storeu_si128(four.as_mut_ptr().cast(), add_lanes(sums)) };
            for (row, total) in four.iter_mut().enumerate() {
                if !query_tail.is_empty() {
                    let values = &group[row * record_bytes + SCALE_BYTES..(row + 1) * record_bytes];
                    *total += dot(query_tail, &values[vector_bytes..]);
                }
            }
            out.extend_from_slice(&four);
        }
        super::portable(query, groups.remainder(), out);
    }

    /// Eight 32-bit partial sums of the products of `query` and `values` (as long as `query`'s
    /// whole vectors).
    ///
    /// `maddubs` multiplies unsigned by signed bytes, so the row's absolute values (as unsigned:
    /// -128 becomes 128) meet the query's values with the row's signs moved onto them. The
    /// query lies in [-127, 127], so each pair of products is at most 2 × 128 × 127 = 32,512
    /// and the 16-bit sums never saturate: the result is exact.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn row_sum(query: &[[i8; VECTOR]], values: &[u8]) -> __m256i {
        let ones = _mm256_set1_epi16(1);
        let mut sum = _mm256_setzero_si256();
        for (query, values) in query.iter().zip(values.as_chunks::<VECTOR>().0) {
            // SAFETY: both are 32 bytes long; `loadu` has no alignment requirement.
            let (query, values) = unsafe {
                (
                    _mm256_loadu_si256(query.as_ptr().cast()),
                    _mm256_loadu_si256(values.as_ptr().cast()),
                )
            };
            let pairs =
                _mm256_maddubs_epi16(_mm256_abs_epi8(values), _mm256_sign_epi8(query, values));
            sum = _mm256_add_epi32(sum, _mm256_madd_epi16(pairs, ones));
        }
        sum
    }

    /// The total of each of four rows' eight lanes, in row order.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn add_lanes([a, b, c, d]: [__m256i; ROWS]) -> __m128i {
        // Each 128-bit half now holds the four rows' sums of that half's lanes.
        let halves = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
        _mm_add_epi32(
            _mm256_castsi256_si128(halves),
            _mm256_extracti128_si256::<1>(halves),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records of `rows` rows of `dimension` pseudo-random bytes, every byte value included
    /// (-128 too, which quantizing never writes but a file could hold).
    fn records(rows: usize, dimension: usize, seed: u64) -> Vec<u8> {
        let mut state = seed | 1;
        let mut bytes = Vec::new();
        for row in 0..rows {
            bytes.extend((row as f32 * 0.5).to_le_bytes());
            for _ in 0..dimension {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                bytes.push((state >> 24) as u8);
            }
        }
        bytes
    }

    fn query(dimension: usize, seed: u64) -> Vec<i8> {
        let mut state = seed | 1;
        (0..dimension)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                // The range quantizing writes: [-127, 127].
                (((state >> 24) % 255) as i32 - 127) as i8
            })
            .collect()
    }

    #[test]
    fn the_dispatched_dots_match_the_plain_ones() {
        for dimension in [1, 7, 16, 31, 32, 33, 64, 100, 384] {
            for rows in [0, 1, 3, 4, 5, 9, 64] {
                let query = query(dimension, dimension as u64 * 31 + rows as u64);
                let mut records = records(rows, dimension, dimension as u64 ^ 0xABCD);
                // A partial record at the end is not scored.
                records.extend([1, 2, 3]);
                let (mut dispatched, mut plain) = (Vec::new(), Vec::new());
                dots(&query, &records, &mut dispatched);
                portable(&query, &records, &mut plain);
                assert_eq!(dispatched.len(), rows, "dimension {dimension}, rows {rows}");
                assert_eq!(dispatched, plain, "dimension {dimension}, rows {rows}");
            }
        }
    }

    #[test]
    fn extreme_values_are_exact() {
        let dimension = 64;
        let record_bytes = SCALE_BYTES + dimension;
        for (query_value, row_value) in [(127_i8, -128_i8), (-127, -128), (-127, 127), (127, 127)] {
            let query = vec![query_value; dimension];
            let mut records = Vec::new();
            for _ in 0..5 {
                records.extend(1.0_f32.to_le_bytes());
                records.extend(std::iter::repeat_n(row_value as u8, dimension));
            }
            assert_eq!(records.len(), 5 * record_bytes);
            let mut found = Vec::new();
            dots(&query, &records, &mut found);
            let expected = dimension as i32 * i32::from(query_value) * i32::from(row_value);
            assert_eq!(found, vec![expected; 5], "{query_value} x {row_value}");
        }
    }
}
