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
//! - outside strings, brackets move the depth, which marks the bytes at depth 1;
//! - at depth 1 an element starts at each `"`, `{` or `[`, and at the first byte after a comma
//!   (whitespace skipped) that is not structural: a scalar.
//!
//! This module reproduces the byte walk exactly, malformed input included, with one exception it
//! declines: a backslash outside a string is an ordinary byte to the walk, while the masks would
//! let it escape what follows. Such a chunk, and one where the depth returns to 0, is left to the
//! walk ([`skim_chunk`] returns `None`). The escapes, the in-string mask and the depth-1 mask
//! come with the chunk's masks ([`crate::bitmask::fold_json_chunks`]), which carry the string
//! state and the depth between chunks and stop where the depth would fall to 0.

use crate::bitmask::JsonMasks;

/// What the byte walk would know at a chunk boundary, besides the strings and depth the chunk
/// masks carry ([`crate::bitmask::JsonState`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SkimState {
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
    let at_depth_one = masks.depth_one;
    if at_depth_one == 0 && !state.awaiting_value {
        // Nothing at depth 1 and no value awaited: no element starts here (the usual chunk
        // inside a record; a branch that predicts well either way).
        return Some(state);
    }
    let outside = !in_string;
    let opens = masks.open & outside;
    let string_starts = masks.quote & in_string;
    let commas_at_one = masks.comma & outside & at_depth_one;
    let (scalar_starts, awaiting_value) = scalar_starts(commas_at_one, state.awaiting_value, masks);
    let elements = u64::from(((string_starts | opens) & at_depth_one).count_ones())
        + u64::from(scalar_starts.count_ones());
    Some(SkimState {
        awaiting_value,
        elements: state.elements + elements,
    })
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
