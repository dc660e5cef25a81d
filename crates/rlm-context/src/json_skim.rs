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
//! walk ([`skim_chunk`] returns `None`). The escapes and the in-string mask come with the chunk's
//! masks ([`crate::bitmask::fold_json_chunks`]), which carry the string state between chunks.

use crate::bitmask::JsonMasks;

/// What the byte walk would know at a chunk boundary, besides the string state the chunk masks
/// carry ([`crate::bitmask::StringState`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SkimState {
    /// Nesting depth, at least 1 (inside the top-level array).
    pub depth: usize,
    /// A comma at depth 1 was followed only by whitespace so far: the next other byte, unless
    /// structural, starts an element.
    pub awaiting_value: bool,
    /// Elements of the top-level array seen so far.
    pub elements: u64,
}

/// The state after `masks`' chunk, or `None` when the chunk must be walked byte by byte.
#[inline(always)]
pub(crate) fn skim_chunk(state: SkimState, masks: &JsonMasks) -> Option<SkimState> {
    let in_string = masks.in_string;
    if masks.backslash & !in_string != 0 {
        return None;
    }
    let outside = !in_string;
    let opens = masks.open & outside;
    let commas = masks.comma & outside;
    let (at_depth_one, depth) = depth_one(state.depth, opens, masks.close & outside)?;
    let string_starts = masks.quote & in_string;
    let commas_at_one = commas & at_depth_one;
    let (scalar_starts, awaiting_value) = scalar_starts(commas_at_one, state.awaiting_value, masks);
    let elements = u64::from(((string_starts | opens) & at_depth_one).count_ones())
        + u64::from(scalar_starts.count_ones());
    Some(SkimState {
        depth,
        awaiting_value,
        elements: state.elements + elements,
    })
}

/// The bytes whose depth (before the byte itself is read) is 1, and the depth after the chunk;
/// `None` if the depth falls to 0, which only the walk handles (the end of the array, or more
/// closing brackets than opening ones).
///
/// Only the brackets after which the depth is 1 are found one by one; from each, the bytes up to
/// and including the next bracket are read at depth 1, and one addition marks them all.
#[inline(always)]
fn depth_one(depth: usize, opens: u64, closes: u64) -> Option<(u64, usize)> {
    let brackets = opens | closes;
    let closing = closes.count_ones() as usize;
    if depth > closing + 1 {
        // Too deep for the closing brackets here to reach depth 1.
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
    // Each run of depth 1 starts after an entry (or at the chunk's start) and ends at the next
    // bracket, which it includes: adding its start bit to the non-bracket bytes carries through
    // the run and stops on that bracket, so the bits that change are the run's. Runs never
    // overlap: the bracket ending one leaves depth 1, so it is no entry.
    let starts = entries << 1 | u64::from(depth == 1);
    let others = !brackets;
    Some((others ^ others.wrapping_add(starts), after))
}

/// Elements that are scalars: the first byte after a depth-1 comma, whitespace skipped, that is
/// not structural. Returns them and whether the chunk ends still looking for that byte.
#[inline(always)]
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

    /// [`depth_one`] byte by byte.
    fn depth_one_by_walking(mut depth: usize, opens: u64, closes: u64) -> Option<(u64, usize)> {
        let mut mask = 0;
        for index in 0..64 {
            if depth == 1 {
                mask |= 1 << index;
            }
            if opens >> index & 1 == 1 {
                depth += 1;
            } else if closes >> index & 1 == 1 {
                depth -= 1;
                if depth == 0 {
                    return None;
                }
            }
        }
        Some((mask, depth))
    }

    #[test]
    fn depth_one_matches_a_walk_over_random_brackets() {
        let mut state = 0x853C_49E6_748F_EA9Bu64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for case in 0..20_000 {
            // Sparse to dense brackets, adjacent ones, and ones at both chunk edges.
            let brackets = match case % 4 {
                0 => next() & next() & next(),
                1 => next() & next(),
                2 => next(),
                _ => (next() & next()) | 1 | 1 << 63,
            };
            let opens = brackets & next();
            let closes = brackets & !opens;
            let depth = 1 + (next() % 6) as usize;
            assert_eq!(
                depth_one(depth, opens, closes),
                depth_one_by_walking(depth, opens, closes),
                "depth {depth}, opens {opens:064b}, closes {closes:064b}"
            );
        }
    }
}
