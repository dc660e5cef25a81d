//! Counting rows a whole 64-byte chunk at a time, from its masks alone, for a caller that only
//! counts the rows with content (`inspect`): no quote or newline is visited on its own.
//!
//! Chunks without quotes, outside a quoted field, only end rows. In a chunk with quotes, the
//! running parity of its quotes (one carry-less multiplication in the SIMD kernels) marks the
//! bytes inside quoted fields on the assumption that every quote opens or closes one. That holds
//! when each quote the parity takes for an opening one stands where [`RowSplitter`] opens or
//! reopens a field: at a field's start, or right after a closing quote (`""`). A chunk where one
//! does not (`27" wide`), or where a quoted field reaches [`QUOTED_FIELD_LIMIT`], is left to the
//! byte-by-byte reader, which every path here is tested against.

use super::{OpenField, QUOTED_FIELD_LIMIT, RowSplitter};
use crate::bitmask::CsvMasks;

/// What [`RowSplitter`] carries from chunk to chunk of a block, kept in registers while it
/// counts chunks in bulk: a copy of its row state, written back before anything else reads the
/// rows.
#[derive(Debug, Clone, Copy)]
pub(super) struct ChunkWalk {
    /// Where the chunk starts in the block.
    pub(super) chunk_start: usize,
    /// The bytes after the last quote or newline so far hold content not yet noted.
    pub(super) content_pending: bool,
    /// Rows with content counted in bulk.
    pub(super) counted: u64,
    pub(super) row_has_content: bool,
    pub(super) row_start: u64,
    pub(super) newlines: u64,
}

impl ChunkWalk {
    /// Counts the rows with content that end in a chunk without quotes read outside a quoted
    /// field, in a block that starts at offset `base`.
    #[inline(always)]
    pub(super) fn count_plain_rows(&mut self, masks: &CsvMasks, base: u64) {
        self.row_has_content |= self.content_pending;
        self.content_pending = false;
        self.count_rows(masks.newline, masks, base);
    }

    /// Counts the rows with content that end at `row_ends` (the chunk's newlines outside
    /// quoted fields), with the chunk's content noted in the row state.
    #[inline(always)]
    fn count_rows(&mut self, row_ends: u64, masks: &CsvMasks, base: u64) {
        self.newlines += u64::from(masks.newline.count_ones());
        if row_ends == 0 {
            self.row_has_content |= masks.whitespace != !0;
            return;
        }
        let (content_ends, content_after) =
            lines_with_content(row_ends, masks.whitespace, 1, self.row_has_content);
        let last_end = 63 - row_ends.leading_zeros();
        self.row_has_content = content_after;
        self.row_start = base + self.chunk_start as u64 + u64::from(last_end) + 1;
        self.counted += u64::from(content_ends.count_ones());
    }
}

/// Of the line ends `ends` (all at or above `start`), those whose line holds a byte that is not
/// whitespace, for lines that start at `start` (one bit) and after each end, the first having
/// had content before `start` if `carried`; and whether the bytes after the last end hold
/// content (from `start` if there is no end).
#[inline(always)]
fn lines_with_content(ends: u64, whitespace: u64, start: u64, carried: bool) -> (u64, bool) {
    let from_start = start.wrapping_neg();
    if ends == 0 {
        return (0, carried || !whitespace & from_start != 0);
    }
    // Adding a line's start bit to the whitespace that is not a line end carries to the first
    // byte that is not: content, or the end of a blank line. Those landings come in the order of
    // the lines.
    let spaces = whitespace & !ends;
    let landings = spaces.wrapping_add(ends << 1 | start) & !spaces;
    let mut blank = landings & ends;
    // The first line may have had content before `start`.
    let first = landings & landings.wrapping_neg();
    blank &= !(first & 0u64.wrapping_sub(u64::from(carried)));
    let last_end = 63 - ends.leading_zeros();
    let after_last = (!0u64).checked_shl(last_end + 1).unwrap_or(0);
    (ends & !blank, !whitespace & after_last != 0)
}

impl RowSplitter {
    /// Counts the rows of `walk`'s chunk (with quotes, or inside a quoted field) of a block
    /// that starts at offset `base`, from its masks: see the module's documentation for when it
    /// can. Returns `false`, having changed nothing, when it cannot.
    #[inline(always)]
    pub(super) fn count_quoted_rows(
        &mut self,
        walk: &mut ChunkWalk,
        masks: &CsvMasks,
        block: &[u8],
        base: u64,
    ) -> bool {
        let at = base + walk.chunk_start as u64;
        let previous = match walk.chunk_start {
            0 => self.last_byte,
            start => block.get(start - 1).copied(),
        };
        let open_before = self.open.is_some();
        let closed_before = matches!(&self.closed, Some((closed, _)) if closed + 1 == at);
        // The field that may go on in this chunk: open, or reopened by a quote at its start.
        let carried = match (&self.open, &self.closed) {
            (Some(field), _) => Some(field),
            (None, Some((_, field))) if closed_before => Some(field),
            _ => None,
        };
        if carried.is_some_and(|field| field.opened + QUOTED_FIELD_LIMIT <= at + 63) {
            return false;
        }
        // Bit `i` of `inside`: in a quoted field after byte `i`; of `before`: before it.
        let inside = masks.quote_parity ^ 0u64.wrapping_sub(u64::from(open_before));
        let before = inside << 1 | u64::from(open_before);
        let opening = masks.quote & !before;
        let closing = masks.quote & before;
        let at_field_start = previous.is_none_or(|byte| byte == b'\n' || byte == self.delimiter);
        let field_starts = (masks.newline | masks.delimiter) << 1 | u64::from(at_field_start);
        let after_closing = closing << 1 | u64::from(closed_before);
        if opening & !(field_starts | after_closing) != 0 {
            return false;
        }
        let ends_in_field = inside >> 63 == 1 || closing >> 63 == 1;
        let last_field = if ends_in_field {
            let fresh = opening & field_starts;
            match last_field(carried.copied(), fresh, masks, at, walk) {
                Some(field) => Some(field),
                None => return false,
            }
        } else {
            None
        };
        walk.row_has_content |= walk.content_pending;
        walk.content_pending = false;
        walk.count_rows(masks.newline & !inside, masks, base);
        if inside >> 63 == 1 {
            self.open = last_field;
        } else if open_before {
            self.open = None;
        }
        if let Some(field) = last_field.filter(|_| closing >> 63 == 1) {
            self.closed = Some((at + 63, field));
        }
        true
    }
}

/// The quoted field a chunk starting at offset `at` ends in (or ends by closing): the last one
/// to open at a field start in it (`fresh`), or else the `carried` one, with the lines it
/// gained in the chunk. From its opening to the chunk's end the field is open but for a
/// closing quote followed at once by one that reopens it, so every newline there is one of its
/// lines.
#[inline(always)]
fn last_field(
    carried: Option<OpenField>,
    fresh: u64,
    masks: &CsvMasks,
    at: u64,
    walk: &ChunkWalk,
) -> Option<OpenField> {
    let (mut field, start) = if fresh != 0 {
        let bit = 63 - fresh.leading_zeros();
        let below = (1u64 << bit) - 1;
        let field = OpenField {
            opened: at + u64::from(bit),
            opened_line: walk.newlines + u64::from((masks.newline & below).count_ones()) + 1,
            first_line_end: None,
            content_lines: 0,
            line_has_content: true,
        };
        (field, 1u64 << bit)
    } else {
        let mut field = carried?;
        field.line_has_content |= walk.content_pending;
        (field, 1)
    };
    let ends = masks.newline & start.wrapping_neg();
    let (mut content_ends, content_after) =
        lines_with_content(ends, masks.whitespace, start, field.line_has_content);
    if ends != 0 && field.first_line_end.is_none() {
        // The first line of a field is its row's; the lines after it are counted.
        let first = ends & ends.wrapping_neg();
        field.first_line_end = Some(at + u64::from(first.trailing_zeros()) + 1);
        content_ends &= !first;
    }
    field.content_lines += u64::from(content_ends.count_ones());
    field.line_has_content = content_after;
    Some(field)
}
