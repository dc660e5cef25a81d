//! How much one answer may carry when a front end holds it whole (an MCP tool result, a
//! Python list): a ceiling in bytes of JSON and in records, applied while the records are
//! produced, and a cursor that asks for the rest.
//!
//! The command line streams its records to stdout and has no ceiling
//! ([`ReplyLimit::UNLIMITED`]); the MCP server and the Python package answer within
//! [`ReplyLimit::DEFAULT`] unless their operator sets another. A [`Page`] takes records in
//! order: those before the cursor are counted and dropped unserialized, the rest are kept
//! while they fit, and the first that does not fit ends the page, its position becoming the
//! next cursor. A record larger than a whole page is kept alone, its longest text cut, and
//! says how many bytes it left out. The page's note says what was left out and how to ask
//! for it.

use std::ops::ControlFlow;

use serde::Serialize;
use serde_json::Value;

use crate::error::input_error;
use crate::{ExitStatus, Outcome};

/// The most one answer carries: bytes of its records' JSON, and records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyLimit {
    /// Bytes of the records' JSON (one line each); with `text_copy`, of both copies.
    pub bytes: usize,
    /// Records.
    pub records: usize,
    /// The records also go as one JSON string (an MCP result's text beside its structured
    /// content): each counts twice, the second time as escaped in that string.
    pub text_copy: bool,
}

impl ReplyLimit {
    /// 1 MiB of JSON, 10,000 records: what an agent can read, far below what a server holds.
    pub const DEFAULT: Self = Self {
        bytes: 1 << 20,
        records: 10_000,
        text_copy: false,
    };
    /// No ceiling: for a front end that streams records out as they come.
    pub const UNLIMITED: Self = Self {
        bytes: usize::MAX,
        records: usize::MAX,
        text_copy: false,
    };
    /// The smallest ceiling accepted: a page must hold a record's frame and some text.
    pub const MIN_BYTES: usize = 1024;

    /// A ceiling of `bytes` (at least [`Self::MIN_BYTES`]) and the default record count.
    pub fn bytes(bytes: usize) -> anyhow::Result<Self> {
        if bytes < Self::MIN_BYTES {
            return Err(input_error(format!(
                "a reply ceiling of {bytes} bytes is too small: at least {} bytes",
                Self::MIN_BYTES
            ))
            .into());
        }
        Ok(Self {
            bytes,
            ..Self::DEFAULT
        })
    }

    /// This ceiling, counting the records' copy as text too.
    #[must_use]
    pub fn with_text_copy(mut self) -> Self {
        self.text_copy = true;
        self
    }

    /// Whether answers are unbounded.
    pub fn is_unlimited(&self) -> bool {
        self.bytes == usize::MAX && self.records == usize::MAX
    }

    /// What `record` takes of an answer: its JSON and a line break, and with `text_copy`
    /// both again as escaped in a JSON string.
    pub fn cost<T: Serialize + ?Sized>(&self, record: &T) -> usize {
        if self.text_copy {
            let (raw, escaped) = json_lens(record);
            raw + 1 + escaped + 2
        } else {
            json_len(record) + 1
        }
    }
}

impl Default for ReplyLimit {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// One page of records: what the cursor skips, what fits, where the next page starts.
#[derive(Debug)]
pub struct Page {
    limit: ReplyLimit,
    /// Records before the cursor.
    skip: u64,
    /// Ties a cursor to the request it continues.
    check: u32,
    /// Records offered so far, skipped ones included.
    offered: u64,
    bytes: usize,
    records: Vec<Value>,
    /// Position of the first record left out, once one was.
    next: Option<u64>,
    /// Records left out whole, when the page was cut from records already made.
    left_out: Option<(u64, u64)>,
}

impl Page {
    /// A page under `limit` starting at `cursor` (from a page of the same `request`; none for
    /// the first). A cursor of another request, or not one at all, is an input error.
    pub fn new(
        limit: ReplyLimit,
        cursor: Option<&str>,
        request: &impl Serialize,
    ) -> anyhow::Result<Self> {
        let check = fingerprint(request);
        let skip = match cursor {
            None => 0,
            Some(text) => parse_cursor(text, check)?,
        };
        Ok(Self {
            limit,
            skip,
            check,
            offered: 0,
            bytes: 0,
            records: Vec::new(),
            next: None,
            left_out: None,
        })
    }

    /// Whether the next record offered is before the cursor (and will be dropped: the caller
    /// need not make it).
    pub fn skips_next(&self) -> bool {
        self.offered < self.skip
    }

    /// Offers the next record in order: `Break` once the page is full (the record is not
    /// kept, and the next page starts with it). `cut` makes a smaller version of the record
    /// (its text at most the given bytes) and says how many bytes it left out, for a record
    /// too large for any page: without it the whole record is serialized, then cut as JSON.
    pub fn offer<R: Serialize + ?Sized>(
        &mut self,
        record: &R,
        cut: Option<&dyn Fn(usize) -> (Value, usize)>,
    ) -> anyhow::Result<ControlFlow<()>> {
        let position = self.offered;
        self.offered += 1;
        if position < self.skip {
            return Ok(ControlFlow::Continue(()));
        }
        let size = self.limit.cost(record);
        let full = self.records.len() >= self.limit.records;
        if !full && self.bytes.saturating_add(size) <= self.limit.bytes {
            self.bytes += size;
            self.records.push(serde_json::to_value(record)?);
            return Ok(ControlFlow::Continue(()));
        }
        if full || !self.records.is_empty() {
            self.next = Some(position);
            return Ok(ControlFlow::Break(()));
        }
        // Alone and still too large: kept cut, so the caller always moves on.
        let room = self.limit.bytes.saturating_sub(1);
        let (value, left_out) = match cut {
            Some(cut) => cut(room),
            None => (serde_json::to_value(record)?, 0),
        };
        let value = cut_to_fit(value, left_out, room, &self.limit);
        self.bytes += self.limit.cost(&value);
        self.records.push(value);
        Ok(ControlFlow::Continue(()))
    }

    /// Records kept so far.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether nothing is kept yet.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The page as an outcome ended with `status`: its records, the cursor of the next page
    /// when one was left out, and a note saying what was left out.
    pub fn finish(self, status: ExitStatus) -> Outcome<Value> {
        let mut outcome = Outcome::ended(Vec::new(), status);
        let kept = self.records.len();
        let limit = self.limit;
        outcome.records = self.records;
        if let Some((records, bytes)) = self.left_out {
            outcome.notes.push(format!(
                "note: the answer stops at the reply ceiling ({}, {}): {} left out ({}); \
                 they are not kept, so ask for less",
                crate::text::human_bytes(limit.bytes as u64),
                crate::text::count(limit.records as u64, "record"),
                crate::text::count(records, "more record"),
                crate::text::human_bytes(bytes),
            ));
        } else if let Some(next) = self.next {
            let cursor = format!("{next}.{:08x}", self.check);
            outcome.notes.push(format!(
                "note: the answer stops at the reply ceiling ({}, {}) after {}; more follow: \
                 call again with cursor \"{cursor}\"",
                crate::text::human_bytes(limit.bytes as u64),
                crate::text::count(limit.records as u64, "record"),
                crate::text::count(self.skip + kept as u64, "record"),
            ));
            outcome.next_cursor = Some(cursor);
        } else if self.skip > 0 && kept == 0 {
            outcome
                .notes
                .push("note: nothing follows this cursor: the answer ended before".to_owned());
        }
        outcome
    }
}

/// `outcome`'s records within `limit`, from `cursor` on (for a request that can be asked
/// again: a list, a search); its notes, status and error kept.
pub fn paged<R: Serialize>(
    outcome: Outcome<R>,
    limit: ReplyLimit,
    cursor: Option<&str>,
    request: &impl Serialize,
) -> anyhow::Result<Outcome<Value>> {
    let mut page = Page::new(limit, cursor, request)?;
    for record in &outcome.records {
        if page.offer(record, None)?.is_break() {
            break;
        }
    }
    Ok(carry(page.finish(outcome.status), outcome))
}

/// `outcome`'s records within `limit`, for an operation that cannot be asked again for the
/// rest (a run, a load): what does not fit is counted and said.
pub fn bounded<R: Serialize>(
    outcome: Outcome<R>,
    limit: ReplyLimit,
) -> anyhow::Result<Outcome<Value>> {
    let mut page = Page::new(limit, None, &())?;
    let mut records = outcome.records.iter();
    for record in records.by_ref() {
        if page.offer(record, None)?.is_break() {
            // The record that did not fit, and every one after it.
            let rest = std::iter::once(&outcome.records[page.offered as usize - 1]).chain(records);
            let (count, bytes) = rest.fold((0, 0), |(count, bytes), record| {
                (count + 1, bytes + json_len(record) as u64 + 1)
            });
            page.left_out = Some((count, bytes));
            break;
        }
    }
    Ok(carry(page.finish(outcome.status), outcome))
}

/// `page` with the notes, the error and the cursor of the outcome it was made from (its own
/// notes last; its own cursor first).
fn carry<R>(mut page: Outcome<Value>, from: Outcome<R>) -> Outcome<Value> {
    let mut notes = from.notes;
    notes.append(&mut page.notes);
    page.notes = notes;
    page.error = from.error;
    page.next_cursor = page.next_cursor.or(from.next_cursor);
    page
}

/// Bytes of `value` as compact JSON, counted without being written anywhere.
pub fn json_len<T: Serialize + ?Sized>(value: &T) -> usize {
    json_lens(value).0
}

/// Bytes of `value` as compact JSON, and of that JSON as escaped in a JSON string.
fn json_lens<T: Serialize + ?Sized>(value: &T) -> (usize, usize) {
    struct Count {
        raw: usize,
        escaped: usize,
    }
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.raw += bytes.len();
            self.escaped += bytes
                .iter()
                .map(|&byte| match byte {
                    b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
                    0..0x20 => 6,
                    _ => 1,
                })
                .sum::<usize>();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count { raw: 0, escaped: 0 };
    // Writing to a counter fails only if the value cannot be serialized (a map with keys that
    // are not strings): none of the records are such.
    let _ = serde_json::to_writer(&mut count, value);
    (count.raw, count.escaped)
}

/// `value` with its longest strings cut until it takes at most `room` bytes, and `cut_bytes`
/// saying how many bytes of text were left out (`left_out` already were).
fn cut_to_fit(mut value: Value, mut left_out: usize, room: usize, limit: &ReplyLimit) -> Value {
    let mut current = limit.cost(&value);
    // Each pass cuts the longest string by what is over (plus the note's room); a few passes
    // at most, since escapes make a string's JSON at most six times its bytes.
    for _ in 0..16 {
        let over = (current + 40).saturating_sub(room);
        if over == 0 {
            break;
        }
        let Some(text) = longest_string(&mut value) else {
            break;
        };
        let keep = floor_char_boundary(text, text.len().saturating_sub(over));
        left_out += text.len() - keep;
        text.truncate(keep);
        current = limit.cost(&value);
    }
    if let Value::Object(object) = &mut value {
        object.insert("cut_bytes".to_owned(), Value::from(left_out as u64));
    }
    value
}

/// The longest string anywhere in `value`.
fn longest_string(value: &mut Value) -> Option<&mut String> {
    match value {
        Value::String(text) => Some(text),
        Value::Array(items) => items
            .iter_mut()
            .filter_map(longest_string)
            .max_by_key(|text| text.len()),
        Value::Object(object) => object
            .values_mut()
            .filter_map(longest_string)
            .max_by_key(|text| text.len()),
        _ => None,
    }
}

/// The largest char boundary of `text` at or below `at`.
pub fn floor_char_boundary(text: &str, at: usize) -> usize {
    if at >= text.len() {
        return text.len();
    }
    (0..=at)
        .rev()
        .find(|&index| text.is_char_boundary(index))
        .unwrap_or(0)
}

/// A 32-bit FNV-1a hash of the request as JSON, its `cursor` left out.
fn fingerprint(request: &impl Serialize) -> u32 {
    let mut value = serde_json::to_value(request).unwrap_or(Value::Null);
    if let Value::Object(object) = &mut value {
        object.remove("cursor");
    }
    let text = value.to_string();
    text.bytes().fold(0x811c_9dc5_u32, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
}

/// The records a cursor skips, if it is one of a page of the request `check` stands for.
fn parse_cursor(text: &str, check: u32) -> anyhow::Result<u64> {
    let invalid = || {
        crate::AppError::input(anyhow::anyhow!(
            "invalid cursor {:?}",
            rlm_context::one_line(text)
        ))
        .with_hint("pass the cursor a page gave, with the same other arguments")
    };
    let (skip, hash) = text.split_once('.').ok_or_else(invalid)?;
    let skip: u64 = skip.parse().map_err(|_| invalid())?;
    let hash = u32::from_str_radix(hash, 16).map_err(|_| invalid())?;
    if hash != check {
        return Err(crate::AppError::input(anyhow::anyhow!(
            "this cursor continues another request (other arguments)"
        ))
        .with_hint("pass a cursor with the arguments of the call that gave it, or none")
        .into());
    }
    Ok(skip)
}

#[cfg(test)]
mod tests;
