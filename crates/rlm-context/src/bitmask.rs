//! Byte classes of 64-byte chunks as bitmasks (bit `i` stands for byte `i` of the chunk): the
//! first stage of the JSON and CSV structure scans, which then work on whole chunks with integer
//! arithmetic instead of visiting bytes one by one.
//!
//! On x86_64 with AVX2 (checked at run time) each class costs two compares and two mask moves
//! per chunk; elsewhere a plain loop gives the same masks, and the tests hold the two to each other.

/// Bytes per chunk: one bit of a `u64` each.
pub(crate) const CHUNK: usize = 64;

/// The bytes a JSON structure scan looks at, and the strings they make.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct JsonMasks {
    /// Quotes that no backslash escapes: each opens or closes a string.
    pub quote: u64,
    pub backslash: u64,
    /// From each opening quote up to (not including) its closing quote, given the
    /// [`StringState`] the chunk starts in.
    pub in_string: u64,
    /// `{` and `[`.
    pub open: u64,
    /// `}` and `]`.
    pub close: u64,
    pub comma: u64,
    pub colon: u64,
    /// What `u8::is_ascii_whitespace` accepts: space, tab, line feed, form feed, carriage return.
    pub whitespace: u64,
}

/// Where a JSON string scan stands at a chunk boundary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct StringState {
    pub in_string: bool,
    /// The previous chunk ended with a backslash that escapes the next byte.
    pub escape: bool,
}

/// Bits at even positions.
const EVEN_BITS: u64 = 0x5555_5555_5555_5555;

/// The bytes a CSV row scan looks at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CsvMasks {
    pub quote: u64,
    pub newline: u64,
    /// As in [`JsonMasks::whitespace`].
    pub whitespace: u64,
}

/// Folds `step` over the masks of each whole chunk of `bytes`, in order, from `start` (the string
/// state and the caller's own) until `step` declines a chunk (returns `None`). Returns the number
/// of chunks accepted and the states after the last of them.
///
/// `step` is inlined into the SIMD loop, so its arithmetic is compiled for the same CPU features
/// (`popcnt`, `bmi1`, `bmi2` besides AVX2), and its state stays in registers.
#[inline]
pub(crate) fn fold_json_chunks<S: Copy>(
    bytes: &[u8],
    start: (StringState, S),
    step: impl FnMut(S, &JsonMasks) -> Option<S>,
) -> (usize, StringState, S) {
    let (chunks, _) = bytes.as_chunks::<CHUNK>();
    #[cfg(target_arch = "x86_64")]
    let step = match avx2::fold_json_chunks(chunks, start, step) {
        Ok(folded) => return folded,
        Err(step) => step,
    };
    fold_all(chunks, start, portable::json_chunk, step)
}

#[inline(always)]
fn fold_all<S: Copy>(
    chunks: &[[u8; CHUNK]],
    (mut strings, mut state): (StringState, S),
    classify: impl Fn(&[u8; CHUNK], StringState) -> (JsonMasks, StringState),
    mut step: impl FnMut(S, &JsonMasks) -> Option<S>,
) -> (usize, StringState, S) {
    for (index, chunk) in chunks.iter().enumerate() {
        let (masks, after) = classify(chunk, strings);
        match step(state, &masks) {
            Some(next) => {
                state = next;
                strings = after;
            }
            None => return (index, strings, state),
        }
    }
    (chunks.len(), strings, state)
}

/// Fills in the unescaped quotes and [`JsonMasks::in_string`] of masks whose `quote` and
/// `backslash` are the chunk's bytes; `prefix_xor` is the running XOR of a mask's bits. Returns
/// the state after the chunk.
#[inline(always)]
fn strings(
    masks: &mut JsonMasks,
    state: StringState,
    prefix_xor: impl Fn(u64) -> u64,
) -> StringState {
    let (escaped, escape) = escaped_bytes(masks.backslash, state.escape);
    masks.quote &= !escaped;
    masks.in_string = prefix_xor(masks.quote) ^ 0u64.wrapping_sub(u64::from(state.in_string));
    StringState {
        in_string: masks.in_string >> 63 == 1,
        escape,
    }
}

/// The bytes escaped by a backslash, given whether the first one is (a backslash ended the
/// previous chunk unpaired); and whether the first byte of the next chunk is.
#[inline(always)]
fn escaped_bytes(backslash: u64, first_escaped: bool) -> (u64, bool) {
    let carried = u64::from(first_escaped);
    // An escaped backslash escapes nothing.
    let backslash = backslash & !carried;
    let after_backslash = backslash << 1 | carried;
    // Within a run of backslashes, every other byte after the run's start is escaped: the odd
    // positions for a run starting at an even position, the even ones otherwise. Adding the
    // start bit of each run that starts at an odd position clears that run and sets the bit
    // after it, so shifting the sum by one marks where the parity flips back for even runs only.
    let odd_starts = backslash & !EVEN_BITS & !after_backslash;
    let (even_runs, carry_out) = odd_starts.overflowing_add(backslash);
    let flipped = even_runs << 1;
    let escaped = (EVEN_BITS ^ flipped) & after_backslash;
    // Only a run of odd length reaching bit 63 leaves a backslash unpaired; runs of odd length
    // start at odd positions when they end at 63, and those are the ones whose sum overflows.
    (escaped, carry_out)
}

/// Running XOR: bit `i` of the result is the parity of bits `0..=i`. Six dependent steps; the
/// AVX2 path does it in one carry-less multiplication by all ones.
#[inline(always)]
fn prefix_xor(mut bits: u64) -> u64 {
    for shift in [1, 2, 4, 8, 16, 32] {
        bits ^= bits << shift;
    }
    bits
}

/// Calls `visit` with the masks of each whole chunk of `bytes`, in order, until it returns
/// `false`; returns the number of chunks it accepted.
///
/// `visit` is inlined into the SIMD loop, so its arithmetic is compiled for the same CPU features.
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
    use super::{CHUNK, CsvMasks, JsonMasks, StringState};

    pub(super) fn json_chunk(chunk: &[u8; CHUNK], state: StringState) -> (JsonMasks, StringState) {
        let mut masks = classify_json(chunk);
        let after = super::strings(&mut masks, state, super::prefix_xor);
        (masks, after)
    }

    /// The byte classes alone (`quote` is every quote, `in_string` is left empty).
    pub(super) fn classify_json(chunk: &[u8; CHUNK]) -> JsonMasks {
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
        __m256i, _mm_clmulepi64_si128, _mm_cvtsi128_si64, _mm_set_epi64x, _mm_set1_epi8,
        _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_or_si256,
        _mm256_set1_epi8, _mm256_setr_epi8, _mm256_shuffle_epi8,
    };

    use super::{CHUNK, CsvMasks, JsonMasks, StringState};

    /// A chunk as two 32-byte vectors.
    struct Halves(__m256i, __m256i);

    /// Whether the CPU has what the functions below are compiled for (every CPU with AVX2 has
    /// the others too, but they are separate flags).
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
        start: (StringState, S),
        step: F,
    ) -> Result<(usize, StringState, S), F> {
        if !supported() {
            return Err(step);
        }
        // SAFETY: the CPU has the features `fold_json_avx2` is compiled for, checked above.
        Ok(unsafe { fold_json_avx2(chunks, start, step) })
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

    #[target_feature(enable = "avx2,popcnt,bmi1,bmi2,pclmulqdq")]
    fn fold_json_avx2<S: Copy>(
        chunks: &[[u8; CHUNK]],
        start: (StringState, S),
        step: impl FnMut(S, &JsonMasks) -> Option<S>,
    ) -> (usize, StringState, S) {
        super::fold_all(chunks, start, |chunk, state| json_chunk(chunk, state), step)
    }

    #[target_feature(enable = "avx2,popcnt,bmi1,bmi2")]
    fn visit_csv_avx2(chunks: &[[u8; CHUNK]], visit: impl FnMut(&CsvMasks) -> bool) -> usize {
        super::visit_all(chunks, |chunk| csv_chunk(chunk), visit)
    }

    #[target_feature(enable = "avx2,pclmulqdq")]
    #[inline]
    pub(super) fn json_chunk(chunk: &[u8; CHUNK], state: StringState) -> (JsonMasks, StringState) {
        let mut masks = classify_json(chunk);
        let after = super::strings(&mut masks, state, |bits| prefix_xor(bits));
        (masks, after)
    }

    /// Running XOR as one carry-less multiplication: bit `i` of `bits × 0xFF…FF` (over GF(2))
    /// is the XOR of bits `0..=i`.
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

    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    /// The masks of every chunk of `bytes` by the byte loop, the string state carried along.
    fn portable_masks(bytes: &[u8], mut strings: StringState) -> Vec<(JsonMasks, StringState)> {
        let mut out = Vec::new();
        for chunk in bytes.as_chunks::<CHUNK>().0 {
            let (masks, after) = portable::json_chunk(chunk, strings);
            out.push((masks, after));
            strings = after;
        }
        out
    }

    #[test]
    fn the_dispatched_masks_match_the_byte_loop() {
        let bytes = sample_bytes();
        let chunks = bytes.len() / CHUNK;
        for start in [false, true].map(|in_string| StringState {
            in_string,
            escape: false,
        }) {
            let mut json = Vec::new();
            let (visited, after, ()) = fold_json_chunks(&bytes, (start, ()), |(), masks| {
                json.push(*masks);
                Some(())
            });
            assert_eq!(visited, chunks);
            let reference = portable_masks(&bytes, start);
            assert_eq!(after, reference[chunks - 1].1);
            for (index, (masks, _)) in reference.iter().enumerate() {
                assert_eq!(json[index], *masks, "chunk {index}, start {start:?}");
            }
        }
        let mut csv = Vec::new();
        let visited = visit_csv_chunks(&bytes, |masks| {
            csv.push(*masks);
            true
        });
        assert_eq!(visited, chunks);
        for (index, chunk) in bytes.as_chunks::<CHUNK>().0.iter().enumerate() {
            assert_eq!(csv[index], portable::csv_chunk(chunk), "chunk {index}");
        }
    }

    #[test]
    fn folding_stops_where_the_step_declines() {
        let bytes = sample_bytes();
        let reference = portable_masks(&bytes, StringState::default());
        // The state handed back is the one after the last accepted chunk.
        let step = |seen: u32, _: &JsonMasks| (seen < 2).then_some(seen + 1);
        let folded = fold_json_chunks(&bytes, (StringState::default(), 0), step);
        assert_eq!(folded, (2, reference[1].1, 2));
        // A partial chunk is left alone.
        let start = (StringState::default(), 0);
        assert_eq!(
            fold_json_chunks(&bytes[..63], start, |_, _| Some(1)),
            (0, StringState::default(), 0)
        );
    }

    /// Which bytes are escaped, walking backslashes one at a time.
    fn escaped_by_walking(backslash: u64, mut escape: bool) -> (u64, bool) {
        let mut escaped = 0;
        for index in 0..64 {
            if escape {
                escaped |= 1 << index;
                escape = false;
            } else if backslash >> index & 1 == 1 {
                escape = true;
            }
        }
        (escaped, escape)
    }

    #[test]
    fn escapes_match_a_walk_over_backslash_runs_and_chunk_edges() {
        let mut patterns = vec![
            0,
            !0,
            1,
            1 << 63,
            0b11 << 62,
            0b111 << 61,
            EVEN_BITS,
            !EVEN_BITS,
        ];
        for start in 0..64 {
            for length in 1..=(64 - start).min(6) {
                patterns.push(((1u64 << length) - 1) << start);
                patterns.push((((1u64 << length) - 1) << start) | 0b1011 << 20);
            }
        }
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..2000 {
            let bits = xorshift(&mut state);
            patterns.push(bits & bits.rotate_left(7));
        }
        for backslash in patterns {
            for carry in [false, true] {
                assert_eq!(
                    escaped_bytes(backslash, carry),
                    escaped_by_walking(backslash, carry),
                    "backslashes {backslash:064b}, carry {carry}"
                );
            }
        }
    }

    #[test]
    fn prefix_xor_marks_the_bytes_between_quotes() {
        assert_eq!(prefix_xor(0b1001), 0b0111);
        assert_eq!(prefix_xor(1 << 63), 1 << 63);
        assert_eq!(prefix_xor(0b11), 0b01);
        #[cfg(target_arch = "x86_64")]
        if avx2::supported() {
            let mut state = 0x9E37_79B9_7F4A_7C15u64;
            let mut values = vec![0, !0, 1, 1 << 63, EVEN_BITS];
            values.extend((0..1000).map(|_| xorshift(&mut state)));
            for bits in values {
                // SAFETY: the CPU has the features, checked above.
                #[expect(unsafe_code, reason = "calls AVX2 code after run-time detection")]
                let by_multiplication = unsafe { avx2::prefix_xor(bits) };
                assert_eq!(by_multiplication, prefix_xor(bits), "{bits:064b}");
            }
        }
    }

    /// Whether each byte is inside a string, walking bytes one by one the way the masks see
    /// them: a backslash escapes the next byte, inside a string or not.
    fn in_string_by_walking(bytes: &[u8]) -> Vec<bool> {
        let (mut in_string, mut escape) = (false, false);
        bytes
            .iter()
            .map(|&byte| {
                if escape {
                    escape = false;
                } else if byte == b'\\' {
                    escape = true;
                } else if byte == b'"' {
                    in_string = !in_string;
                }
                // An opening quote is inside its string, a closing quote is not.
                in_string
            })
            .collect()
    }

    #[test]
    fn strings_follow_quotes_and_escapes_across_chunks() {
        let mut state = 0xD1B5_4A32_D192_ED03u64;
        let mut inputs = vec![sample_bytes()];
        for alphabet in [&b"\\\"ab"[..], b"\\\\\"", b"\"\"\\x"] {
            inputs.push(
                (0..64 * 50)
                    .map(|_| alphabet[(xorshift(&mut state) % alphabet.len() as u64) as usize])
                    .collect(),
            );
        }
        for bytes in inputs {
            let walked = in_string_by_walking(&bytes);
            let mut masks = Vec::new();
            fold_json_chunks(&bytes, (StringState::default(), ()), |(), chunk| {
                masks.push(chunk.in_string);
                Some(())
            });
            for (index, &inside) in walked.iter().take(masks.len() * CHUNK).enumerate() {
                let bit = masks[index / CHUNK] >> (index % CHUNK) & 1 == 1;
                assert_eq!(bit, inside, "byte {index}");
            }
        }
    }

    #[test]
    fn the_byte_loop_marks_each_class() {
        let mut chunk = [b'a'; CHUNK];
        chunk[..11].copy_from_slice(b"\"\\{[}],: \x0c\x0b");
        chunk[63] = b'\n';
        let json = portable::classify_json(&chunk);
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
