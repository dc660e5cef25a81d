//! The arithmetic every kernel shares once a chunk's byte classes are masks: which quotes are
//! escaped, which bytes are inside strings, which are read at depth 1.

use super::{JsonMasks, JsonState};

/// Bits at even positions.
const EVEN_BITS: u64 = 0x5555_5555_5555_5555;

/// Completes `masks`, whose byte classes are set (`quote` every quote), with the strings and
/// depth the chunk has when it starts in `state`: `prefix_xor` is the running XOR of a mask's
/// bits, `depth_one` as [`depth_one`]. `None` if the depth falls to 0 in the chunk.
#[inline(always)]
pub(super) fn complete(
    mut masks: JsonMasks,
    state: JsonState,
    prefix_xor: impl Fn(u64) -> u64,
    depth_one: impl Fn(usize, u64, u64) -> Option<(u64, usize)>,
) -> Option<(JsonMasks, JsonState)> {
    let (escaped, escape) = escaped_bytes(masks.backslash, state.escape);
    masks.quote &= !escaped;
    masks.in_string = prefix_xor(masks.quote) ^ 0u64.wrapping_sub(u64::from(state.in_string));
    let outside = !masks.in_string;
    let (at_depth_one, depth) =
        depth_one(state.depth, masks.open & outside, masks.close & outside)?;
    masks.depth_one = at_depth_one;
    let after = JsonState {
        in_string: masks.in_string >> 63 == 1,
        escape,
        depth,
    };
    Some((masks, after))
}

/// The bytes escaped by a backslash, given whether the first one is (a backslash ended the
/// previous chunk unpaired); and whether the first byte of the next chunk is.
#[inline(always)]
pub(super) fn escaped_bytes(backslash: u64, first_escaped: bool) -> (u64, bool) {
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
/// SIMD kernels do it in one carry-less multiplication by all ones.
#[inline(always)]
pub(super) fn prefix_xor(mut bits: u64) -> u64 {
    for shift in [1, 2, 4, 8, 16, 32] {
        bits ^= bits << shift;
    }
    bits
}

/// The bytes whose depth (before the byte itself is read) is 1, and the depth after the chunk,
/// given the depth it starts at (at least 1) and its brackets; `None` if the depth falls to 0.
///
/// Only the brackets after which the depth is 1 are found one by one; from each, the bytes up to
/// and including the next bracket are read at depth 1, and one addition marks them all.
#[inline(always)]
pub(super) fn depth_one(depth: usize, opens: u64, closes: u64) -> Option<(u64, usize)> {
    let brackets = opens | closes;
    let closing = closes.count_ones() as usize;
    if stays_deep(depth, opens, closes) {
        return Some((0, depth + opens.count_ones() as usize - closing));
    }
    let mut entries = 0u64;
    let mut after = depth;
    let mut rest = brackets;
    while rest != 0 {
        let bracket = rest & rest.wrapping_neg();
        after = after + 2 * usize::from(opens & bracket != 0) - 1;
        if after == 0 {
            return None;
        }
        // Branch-free: which bracket comes next is as good as random.
        entries |= bracket & 0u64.wrapping_sub(u64::from(after == 1));
        rest ^= bracket;
    }
    Some((depth_one_runs(depth, brackets, entries), after))
}

/// Whether the depth, `depth` where the chunk starts, stays above 1 through the chunk's
/// brackets, by a bound cheaper than the depth of every byte: the closing brackets before the
/// first opening one take the depth down one each, and after that opening bracket the depth is
/// at least one more than the start minus all the closing brackets. Inside records of an array
/// this passes most chunks with a nested value, `{..}` or `[..]`, that opens and closes in them
/// (a bound by the closing brackets alone would not).
#[inline(always)]
pub(super) fn stays_deep(depth: usize, opens: u64, closes: u64) -> bool {
    // Up to and including the first opening bracket (every bit if there is none).
    let to_first_open = opens ^ opens.wrapping_sub(1);
    let before_first_open = (closes & to_first_open).count_ones() as usize;
    let closing = closes.count_ones() as usize;
    depth > before_first_open + 1 && depth > closing
}

/// The bytes read at depth 1, given the brackets after which the depth is 1 (`entries`).
///
/// Each run of depth 1 starts after an entry (or at the chunk's start when `depth` is 1) and ends
/// at the next bracket, which it includes: adding its start bit to the non-bracket bytes carries
/// through the run and stops on that bracket, so the bits that change are the run's. Runs never
/// overlap: the bracket ending one leaves depth 1, so it is no entry.
#[inline(always)]
pub(super) fn depth_one_runs(depth: usize, brackets: u64, entries: u64) -> u64 {
    let starts = entries << 1 | u64::from(depth == 1);
    let others = !brackets;
    others ^ others.wrapping_add(starts)
}
