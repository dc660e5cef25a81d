//! The AVX-512 kernel: a chunk is one 64-byte vector, each byte class one compare into a mask
//! register, and the depth a prefix sum of the brackets across the vector, so no bracket is
//! visited on its own.
#![expect(
    unsafe_code,
    reason = "unaligned SIMD loads, and calls into AVX-512 code after run-time detection"
)]

use std::arch::x86_64::{
    __m512i, _mm_setr_epi8, _mm512_add_epi8, _mm512_alignr_epi64, _mm512_broadcast_i32x4,
    _mm512_bslli_epi128, _mm512_cmpeq_epi8_mask, _mm512_loadu_si512, _mm512_mask_blend_epi8,
    _mm512_maskz_set1_epi8, _mm512_or_si512, _mm512_set1_epi8, _mm512_setzero_si512,
    _mm512_shuffle_epi8, _mm512_sub_epi8,
};

use super::avx2::prefix_xor;
use super::structure::{complete, stays_deep};
use super::{CHUNK, CsvMasks, JsonMasks, JsonState};

/// Whether the CPU has what the functions below are compiled for, and is one this kernel is
/// meant for: the first AVX-512 CPUs (Skylake-SP and its successors up to Cascade Lake) lower
/// their clock for 512-bit work, which can cost the rest of the process more than the kernel
/// saves, so VBMI (Ice Lake, Zen 4 and later), which they lack, is asked for too, as simdjson's
/// AVX-512 kernel does. Those CPUs keep the AVX2 kernel.
pub(super) fn supported() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vbmi")
        && super::avx2::supported()
}

/// Folds over `chunks` if the CPU has AVX-512; hands `step` back if it does not.
#[inline]
pub(super) fn fold_json_chunks<S: Copy, F: FnMut(S, &JsonMasks) -> Option<S>>(
    chunks: &[[u8; CHUNK]],
    start: (JsonState, S),
    step: F,
) -> Result<(usize, JsonState, S), F> {
    if !supported() {
        return Err(step);
    }
    // SAFETY: the CPU has the features `fold_json_avx512` is compiled for, checked above.
    Ok(unsafe { fold_json_avx512(chunks, start, step) })
}

/// Folds over `chunks` if the CPU has AVX-512; hands `step` back if it does not.
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
    // SAFETY: the CPU has the features `fold_csv_avx512` is compiled for, checked above.
    Ok(unsafe { fold_csv_avx512(chunks, delimiter, start, step) })
}

#[target_feature(enable = "avx512f,avx512bw,avx2,popcnt,bmi1,bmi2,pclmulqdq")]
fn fold_json_avx512<S: Copy>(
    chunks: &[[u8; CHUNK]],
    start: (JsonState, S),
    step: impl FnMut(S, &JsonMasks) -> Option<S>,
) -> (usize, JsonState, S) {
    super::fold_all(chunks, start, |chunk, state| json_chunk(chunk, state), step)
}

#[target_feature(enable = "avx512f,avx512bw,avx2,popcnt,bmi1,bmi2,pclmulqdq")]
fn fold_csv_avx512<S: Copy>(
    chunks: &[[u8; CHUNK]],
    delimiter: u8,
    start: S,
    step: impl FnMut(S, &CsvMasks) -> S,
) -> S {
    super::fold_classified(chunks, start, |chunk| csv_chunk(chunk, delimiter), step)
}

#[target_feature(enable = "avx512f,avx512bw,popcnt,bmi1,bmi2,pclmulqdq")]
#[inline]
fn json_chunk(chunk: &[u8; CHUNK], state: JsonState) -> Option<(JsonMasks, JsonState)> {
    complete(
        classify_json(load(chunk)),
        state,
        |bits| prefix_xor(bits),
        |depth, opens, closes| depth_one(depth, opens, closes),
    )
}

#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
fn classify_json(bytes: __m512i) -> JsonMasks {
    // `[` and `{` differ only in bit 5, as do `]` and `}`.
    let folded = _mm512_or_si512(bytes, _mm512_set1_epi8(0x20));
    JsonMasks {
        quote: equal(bytes, b'"'),
        backslash: equal(bytes, b'\\'),
        open: equal(folded, b'{'),
        close: equal(folded, b'}'),
        comma: equal(bytes, b','),
        colon: equal(bytes, b':'),
        whitespace: whitespace(bytes),
        in_string: 0,
        depth_one: 0,
    }
}

#[target_feature(enable = "avx512f,avx512bw,pclmulqdq")]
#[inline]
fn csv_chunk(chunk: &[u8; CHUNK], delimiter: u8) -> CsvMasks {
    let bytes = load(chunk);
    let quote = equal(bytes, b'"');
    CsvMasks {
        quote,
        newline: equal(bytes, b'\n'),
        whitespace: whitespace(bytes),
        delimiter: equal(bytes, delimiter),
        quote_parity: prefix_xor(quote),
    }
}

/// As [`super::structure::depth_one`], with the depth at every byte computed at once: the
/// brackets as +1 and -1 bytes, summed from the chunk's start.
#[target_feature(enable = "avx512f,avx512bw,popcnt")]
#[inline]
pub(super) fn depth_one(depth: usize, opens: u64, closes: u64) -> Option<(u64, usize)> {
    let closing = closes.count_ones() as usize;
    let deeper = depth + opens.count_ones() as usize;
    if stays_deep(depth, opens, closes) {
        return Some((0, deeper - closing));
    }
    // Now `depth <= 65`, and every sum of the chunk's steps is within ±64: bytes hold them all.
    let steps = _mm512_mask_blend_epi8(
        closes,
        _mm512_maskz_set1_epi8(opens, 1),
        _mm512_set1_epi8(-1),
    );
    let after = prefix_sum(steps);
    let before = _mm512_sub_epi8(after, steps);
    let depth = depth as i8;
    if _mm512_cmpeq_epi8_mask(after, _mm512_set1_epi8(-depth)) != 0 {
        return None;
    }
    let at_depth_one = _mm512_cmpeq_epi8_mask(before, _mm512_set1_epi8(1 - depth));
    Some((at_depth_one, deeper - closing))
}

/// Byte `i` of the result is the sum of bytes `0..=i` (wrapping).
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
fn prefix_sum(bytes: __m512i) -> __m512i {
    // Within each 16-byte lane, by doubling shifts.
    let mut sums = _mm512_add_epi8(bytes, _mm512_bslli_epi128::<1>(bytes));
    sums = _mm512_add_epi8(sums, _mm512_bslli_epi128::<2>(sums));
    sums = _mm512_add_epi8(sums, _mm512_bslli_epi128::<4>(sums));
    sums = _mm512_add_epi8(sums, _mm512_bslli_epi128::<8>(sums));
    // Then each lane adds the totals of the lanes below it: a lane's total (its last byte) fills
    // the lane, the lanes move up by one, and those sums by one and by two lanes more.
    let totals = _mm512_shuffle_epi8(sums, _mm512_set1_epi8(15));
    let zero = _mm512_setzero_si512();
    let below = _mm512_alignr_epi64::<6>(totals, zero);
    let carried = _mm512_add_epi8(
        _mm512_add_epi8(below, _mm512_alignr_epi64::<6>(below, zero)),
        _mm512_alignr_epi64::<4>(below, zero),
    );
    _mm512_add_epi8(sums, carried)
}

#[target_feature(enable = "avx512f")]
#[inline]
fn load(chunk: &[u8; CHUNK]) -> __m512i {
    // SAFETY: `chunk` is 64 bytes long; `loadu` has no alignment requirement.
    unsafe { _mm512_loadu_si512(chunk.as_ptr().cast()) }
}

#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
fn equal(bytes: __m512i, byte: u8) -> u64 {
    _mm512_cmpeq_epi8_mask(bytes, _mm512_set1_epi8(byte as i8))
}

/// ASCII whitespace by table lookup on the low four bits, as the AVX2 kernel does it.
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
fn whitespace(bytes: __m512i) -> u64 {
    #[rustfmt::skip]
    let table = _mm512_broadcast_i32x4(_mm_setr_epi8(
        0x20, -1, -1, -1, -1, -1, -1, -1, -1, 0x09, 0x0A, -1, 0x0C, 0x0D, -1, 0,
    ));
    _mm512_cmpeq_epi8_mask(_mm512_shuffle_epi8(table, bytes), bytes)
}
