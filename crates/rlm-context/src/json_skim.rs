//! Counting the elements of a JSON array 64 bytes at a time, for the stretches between the
//! records whose fields are read.
//!
//! [`JsonScanner`](crate::json_scan::JsonScanner) walks bytes one by one, which it must do while
//! it collects field names. Everywhere else it only needs the depth, whether it is inside a
//! string, and how many elements start at depth 1. Those follow from bitmasks of a chunk's
//! quotes, backslashes, brackets, commas and whitespace ([`crate::bitmask`]):
//!
//! - a byte is escaped when an odd run of backslashes precedes it; an unescaped quote toggles
//!   "inside a string", so the in-string mask is the running XOR of the quote mask;
//! - outside strings, brackets move the depth; only they are visited one by one, to mark the
//!   bytes at depth 1;
//! - at depth 1 an element starts at each `"`, `{` or `[`, and at the first byte after a comma
//!   (whitespace skipped) that is not structural: a scalar.
//!
//! This module reproduces the byte walk exactly, malformed input included, with one exception it
//! declines: a backslash outside a string is an ordinary byte to the walk, while the masks would
//! let it escape what follows. Such a chunk, and one where the depth returns to 0, is left to the
//! walk ([`skim_chunk`] returns `None`).

use crate::bitmask::JsonMasks;

/// Bits at even positions.
const EVEN_BITS: u64 = 0x5555_5555_5555_5555;

/// What the byte walk would know at a chunk boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SkimState {
    /// Nesting depth, at least 1 (inside the top-level array).
    pub depth: usize,
    pub in_string: bool,
    /// Inside a string, the previous chunk ended with an unpaired backslash.
    pub escape: bool,
    /// A comma at depth 1 was followed only by whitespace so far: the next other byte, unless
    /// structural, starts an element.
    pub awaiting_value: bool,
}

/// The state after `masks`' chunk and the elements that start in it, or `None` when the chunk
/// must be walked byte by byte.
#[inline]
pub(crate) fn skim_chunk(state: SkimState, masks: &JsonMasks) -> Option<(SkimState, u64)> {
    let (escaped, escape) = escaped_bytes(masks.backslash, state.escape);
    let quotes = masks.quote & !escaped;
    // Set from each opening quote up to (not including) its closing quote.
    let in_string = prefix_xor(quotes) ^ if state.in_string { !0 } else { 0 };
    if masks.backslash & !in_string != 0 {
        return None;
    }
    let outside = !in_string;
    let opens = masks.open & outside;
    let commas = masks.comma & outside;
    let (at_depth_one, depth) = depth_one(state.depth, opens, masks.close & outside)?;
    let string_starts = quotes & in_string;
    let commas_at_one = commas & at_depth_one;
    let (scalar_starts, awaiting_after) = scalar_starts(commas_at_one, state.awaiting_value, masks);
    let elements = u64::from(((string_starts | opens) & at_depth_one).count_ones())
        + u64::from(scalar_starts.count_ones());
    let next = SkimState {
        depth,
        in_string: in_string >> 63 == 1,
        escape,
        awaiting_value: awaiting_after,
    };
    Some((next, elements))
}

/// The bytes escaped by a backslash, given whether the first one is (a backslash ended the
/// previous chunk unpaired); and whether the first byte of the next chunk is.
#[inline]
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

/// Running XOR: bit `i` of the result is the parity of bits `0..=i`.
#[inline]
fn prefix_xor(mut bits: u64) -> u64 {
    for shift in [1, 2, 4, 8, 16, 32] {
        bits ^= bits << shift;
    }
    bits
}

/// The bytes whose depth (before the byte itself is read) is 1, and the depth after the chunk;
/// `None` if the depth falls to 0, which only the walk handles (the end of the array, or more
/// closing brackets than opening ones).
#[inline]
fn depth_one(depth: usize, opens: u64, closes: u64) -> Option<(u64, usize)> {
    let brackets = opens | closes;
    let closing = closes.count_ones() as usize;
    let opening = opens.count_ones() as usize;
    if depth > closing + 1 {
        // Too deep for the closing brackets here to reach depth 1.
        let mask = 0;
        return Some((mask, depth + opening - closing));
    }
    let mut mask = 0u64;
    let mut depth = depth;
    let mut from = 0u32;
    let mut rest = brackets;
    while rest != 0 {
        let at = rest.trailing_zeros();
        // Branch-free: which bracket comes next is as good as random.
        mask |= bits_between(from, at) & 0u64.wrapping_sub(u64::from(depth == 1));
        let open = (opens >> at & 1) as usize;
        depth = depth + 2 * open - 1;
        if depth == 0 {
            return None;
        }
        from = at + 1;
        rest &= rest - 1;
    }
    if depth == 1 && from < 64 {
        mask |= !0 << from;
    }
    Some((mask, depth))
}

/// Bits `from..=to` (both below 64, `from <= to`).
#[inline]
fn bits_between(from: u32, to: u32) -> u64 {
    (!0u64 << from) & (!0u64 >> (63 - to))
}

/// Elements that are scalars: the first byte after a depth-1 comma, whitespace skipped, that is
/// not structural. Returns them and whether the chunk ends still looking for that byte.
#[inline]
fn scalar_starts(commas_at_one: u64, awaiting: bool, masks: &JsonMasks) -> (u64, bool) {
    let after_comma = commas_at_one << 1 | u64::from(awaiting);
    // Adding a bit at the start of a whitespace run carries through the run to the first byte
    // after it; a bit on a non-whitespace byte stays where it is.
    let (sum, carry_out) = masks.whitespace.overflowing_add(after_comma);
    let landed = sum & !masks.whitespace;
    let structural = masks.quote | masks.open | masks.close | masks.comma | masks.colon;
    let still_awaiting = carry_out || commas_at_one >> 63 == 1;
    (landed & !structural, still_awaiting)
}

#[cfg(test)]
mod tests {
    use super::*;

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
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            patterns.push(state & state.rotate_left(7));
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
    }

    #[test]
    fn depth_one_marks_bytes_outside_nested_values() {
        // `,{..},` at depth 1: the `{` is read at depth 1, its contents and `}` deeper.
        let opens = 1 << 2;
        let closes = 1 << 5;
        let (mask, depth) = depth_one(1, opens, closes).unwrap();
        assert_eq!(mask, !(0b111 << 3));
        assert_eq!(depth, 1);
        assert_eq!(depth_one(3, 1, 0), Some((0, 4)));
        assert_eq!(depth_one(1, 0, 1), None);
        assert_eq!(depth_one(2, 0, 1 << 63), Some((0, 1)));
    }
}
