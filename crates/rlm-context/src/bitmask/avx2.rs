//! The AVX2 kernel: a chunk as two 32-byte vectors, two compares and two mask moves per byte
//! class.
#![expect(
    unsafe_code,
    reason = "unaligned SIMD loads, and calls into AVX2 code after run-time detection"
)]

use std::arch::x86_64::{
    __m256i, _mm_clmulepi64_si128, _mm_cvtsi128_si64, _mm_set_epi64x, _mm_set1_epi8,
    _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_or_si256, _mm256_set1_epi8,
    _mm256_setr_epi8, _mm256_shuffle_epi8,
};

use super::structure::{complete, depth_one};
use super::{CHUNK, CsvMasks, JsonMasks, JsonState};

/// A chunk as two 32-byte vectors.
struct Halves(__m256i, __m256i);

/// Whether the CPU has what the functions below are compiled for (every CPU with AVX2 has the
/// others too, but they are separate flags).
pub(super) fn supported() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("popcnt")
        && std::arch::is_x86_feature_detected!("bmi1")
        && std::arch::is_x86_feature_detected!("bmi2")
        && std::arch::is_x86_feature_detected!("pclmulqdq")
}

/// Folds over `chunks` if the CPU has AVX2; hands `step` back if it does not.
#[inline]
pub(super) fn fold_json_chunks<S: Copy, F: FnMut(S, &JsonMasks) -> Option<S>>(
    chunks: &[[u8; CHUNK]],
    start: (JsonState, S),
    step: F,
) -> Result<(usize, JsonState, S), F> {
    if !supported() {
        return Err(step);
    }
    // SAFETY: the CPU has the features `fold_json_avx2` is compiled for, checked above.
    Ok(unsafe { fold_json_avx2(chunks, start, step) })
}

/// Folds over `chunks` if the CPU has AVX2; hands `step` back if it does not.
#[inline]
pub(super) fn fold_csv_chunks<S: Copy, F: FnMut(S, &CsvMasks) -> S>(
    chunks: &[[u8; CHUNK]],
    delimiter: u8,
    start: S,
    step: F,
) -> Result<S, F> {
    if !supported() {
        return Err(step);
    }
    // SAFETY: the CPU has the features `fold_csv_avx2` is compiled for, checked above.
    Ok(unsafe { fold_csv_avx2(chunks, delimiter, start, step) })
}

#[target_feature(enable = "avx2,popcnt,bmi1,bmi2,pclmulqdq")]
fn fold_json_avx2<S: Copy>(
    chunks: &[[u8; CHUNK]],
    start: (JsonState, S),
    step: impl FnMut(S, &JsonMasks) -> Option<S>,
) -> (usize, JsonState, S) {
    super::fold_all(chunks, start, |chunk, state| json_chunk(chunk, state), step)
}

#[target_feature(enable = "avx2,popcnt,bmi1,bmi2,pclmulqdq")]
fn fold_csv_avx2<S: Copy>(
    chunks: &[[u8; CHUNK]],
    delimiter: u8,
    start: S,
    step: impl FnMut(S, &CsvMasks) -> S,
) -> S {
    super::fold_classified(chunks, start, |chunk| csv_chunk(chunk, delimiter), step)
}

#[target_feature(enable = "avx2,popcnt,bmi1,bmi2,pclmulqdq")]
#[inline]
fn json_chunk(chunk: &[u8; CHUNK], state: JsonState) -> Option<(JsonMasks, JsonState)> {
    complete(
        classify_json(chunk),
        state,
        |bits| prefix_xor(bits),
        depth_one,
    )
}

/// Running XOR as one carry-less multiplication: bit `i` of `bits × 0xFF…FF` (over GF(2)) is the
/// XOR of bits `0..=i`.
#[target_feature(enable = "pclmulqdq")]
#[inline]
pub(super) fn prefix_xor(bits: u64) -> u64 {
    let product = _mm_clmulepi64_si128(_mm_set_epi64x(0, bits as i64), _mm_set1_epi8(-1), 0);
    _mm_cvtsi128_si64(product) as u64
}

#[target_feature(enable = "avx2")]
#[inline]
fn classify_json(chunk: &[u8; CHUNK]) -> JsonMasks {
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
        in_string: 0,
        depth_one: 0,
    }
}

#[target_feature(enable = "avx2,pclmulqdq")]
#[inline]
fn csv_chunk(chunk: &[u8; CHUNK], delimiter: u8) -> CsvMasks {
    let halves = load(chunk);
    let quote = equal(&halves, b'"');
    CsvMasks {
        quote,
        newline: equal(&halves, b'\n'),
        whitespace: whitespace(&halves),
        delimiter: equal(&halves, delimiter),
        quote_parity: prefix_xor(quote),
    }
}

#[target_feature(enable = "avx2")]
#[inline]
fn load(chunk: &[u8; CHUNK]) -> Halves {
    // SAFETY: `chunk` is 64 bytes long, so the 32 bytes at 0 and at 32 are in bounds; `loadu`
    // has no alignment requirement.
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

/// ASCII whitespace by table lookup on the low four bits: each whitespace byte has its own low
/// nibble, and the table holds, per nibble, the one byte that is whitespace there (or a byte
/// with another low nibble, which never matches). Bytes from 0x80 look up zero.
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
