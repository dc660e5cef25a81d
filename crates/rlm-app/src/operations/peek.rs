//! `peek`: part of a buffer by lines, bytes or chunk id.

use crate::error::{AppError, input_error, store_error};
use crate::requests::PeekRequest;
use crate::settings::{Sources, StoreSettings};
use crate::{Context, Outcome};

/// What `rlm peek --json` prints: one record with the text.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PeekRecord {
    /// Part of a buffer.
    Text {
        /// Buffer name.
        buffer: String,
        /// What was read.
        range: PeekRange,
        text: String,
        /// Where the rest is, when the range asked for was longer than one answer holds.
        #[serde(skip_serializing_if = "Option::is_none")]
        rest: Option<PeekRest>,
    },
}

/// The part of the range asked for that an answer left out, as a peek asks for it (lines
/// `A:B` or bytes `A:B` of `buffer`): pass it back to read on.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct PeekRest {
    pub buffer: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<String>,
}

impl PeekRest {
    /// The note that says where the rest is.
    pub fn note(&self, limit: usize) -> String {
        let range = match (&self.lines, &self.bytes) {
            (Some(lines), _) => format!("lines {lines:?}"),
            (None, Some(bytes)) => format!("bytes {bytes:?}"),
            (None, None) => "the rest".to_owned(),
        };
        format!(
            "note: the text stops at the reply ceiling ({}): peek {range} of {} for the rest",
            crate::text::human_bytes(limit as u64),
            self.buffer
        )
    }
}

/// Which part of a buffer a peek read.
#[derive(Debug, Default, serde::Serialize, schemars::JsonSchema)]
pub struct PeekRange {
    /// The chunk read, when one was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk: Option<i64>,
    /// First and last line, 1-based inclusive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<[u64; 2]>,
    /// Byte range, end exclusive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<[u64; 2]>,
}

/// Reads the part of a buffer `args` names: a chunk, a line range or a byte range; no more of
/// it than the context's reply ceiling holds (the record's `rest` then says where the rest
/// is), and no more than that is read.
pub fn peek(
    sources: &Sources,
    args: &PeekRequest,
    context: &Context,
) -> anyhow::Result<Outcome<PeekRecord>> {
    if args.chunk.is_some()
        && (args.buffer.is_some() || args.lines.is_some() || args.bytes.is_some())
    {
        return Err(input_error("a chunk id names its own buffer and range: give it alone").into());
    }
    if args.lines.is_some() && args.bytes.is_some() {
        return Err(input_error("give a line range or a byte range, not both").into());
    }
    if args.chunk.is_none() && args.lines.is_none() && args.bytes.is_none() {
        return Err(input_error(
            "peek needs what to read: a line range (--lines), a byte range (--bytes) or a \
             chunk id (--chunk)",
        )
        .into());
    }
    let store = StoreSettings::resolve(sources)?.open_existing()?;
    let limit = context.reply;
    // Room for the text within the ceiling; halved while the record, escaped as the front end
    // sends it, would not fit (a text of quotes and tabs grows), so `rest` stays exact.
    let mut room = limit.bytes.saturating_sub(1024).max(64) as u64;
    loop {
        let read = read_part(&store, args, room)?;
        let record = PeekRecord::Text {
            buffer: read.buffer,
            range: read.range,
            text: read.text,
            rest: read.rest,
        };
        if limit.is_unlimited() || limit.cost(&record) + 512 <= limit.bytes || room <= 64 {
            let mut outcome = Outcome::success(Vec::new());
            let PeekRecord::Text { rest, .. } = &record;
            if let Some(rest) = rest {
                outcome.notes.push(rest.note(limit.bytes));
            }
            outcome.records.push(record);
            return Ok(outcome);
        }
        room /= 2;
    }
}

/// The part of a buffer `args` names, at most `room` bytes of it.
fn read_part(store: &rlm_store::Store, args: &PeekRequest, room: u64) -> anyhow::Result<Read> {
    if let Some(id) = args.chunk {
        return read_chunk(store, id, room);
    }
    let Some(name) = args.buffer.as_deref() else {
        return Err(input_error("peek needs a buffer (name or id) or a chunk id").into());
    };
    let buffer = store.buffer(name).map_err(store_error)?;
    match &args.lines {
        Some(lines) => read_lines(store, buffer, lines, room),
        None => read_bytes(store, buffer, args.bytes.as_deref().unwrap_or(":"), room),
    }
}

/// What a peek read: the buffer, the range, the text, and where the rest is.
struct Read {
    buffer: String,
    range: PeekRange,
    text: String,
    rest: Option<PeekRest>,
}

/// Chunk `id`, or as much of it as `room` bytes hold (then without a CSV header).
fn read_chunk(store: &rlm_store::Store, id: i64, room: u64) -> anyhow::Result<Read> {
    let chunk = store.chunk(id).map_err(store_error)?;
    let range = PeekRange {
        chunk: Some(chunk.id),
        lines: Some([chunk.start_line, chunk.end_line]),
        bytes: Some([chunk.bytes.start, chunk.bytes.end]),
    };
    if chunk.bytes.end - chunk.bytes.start <= room {
        let text = store.chunk_text(id).map_err(store_error)?;
        return Ok(Read {
            buffer: chunk.buffer,
            range,
            text,
            rest: None,
        });
    }
    let buffer = store.buffer(&chunk.buffer).map_err(store_error)?;
    let (text, rest) = bytes_within(store, &buffer, chunk.bytes.start, chunk.bytes.end, room)?;
    Ok(Read {
        buffer: buffer.name,
        range,
        text,
        rest,
    })
}

/// Lines `A:B` of `buffer`, whole lines up to `room` bytes (a first line longer than that in
/// part).
fn read_lines(
    store: &rlm_store::Store,
    buffer: rlm_store::BufferInfo,
    lines: &str,
    room: u64,
) -> anyhow::Result<Read> {
    let (first, last) = parse_range(lines, "lines")?;
    let first = first.unwrap_or(1);
    let last = last.unwrap_or(buffer.lines.max(1));
    if first == 0 || last < first {
        return Err(input_error(format!(
            "line range {first}:{last} is empty or starts at 0 (lines count from 1)"
        ))
        .into());
    }
    let read = store
        .read_lines_within(&buffer, first, last, room)
        .map_err(store_error)?;
    let mut text = read.text;
    let mut shown = last;
    let mut rest = None;
    if read.cut {
        match text.rfind('\n') {
            Some(at) => {
                text.truncate(at + 1);
                shown = first + text.matches('\n').count() as u64 - 1;
                rest = Some(PeekRest {
                    buffer: buffer.name.clone(),
                    lines: Some(format!("{}:{last}", shown + 1)),
                    bytes: None,
                });
            }
            // One line longer than the room: its start, and where the rest of it begins.
            None => {
                shown = first;
                rest = Some(PeekRest {
                    buffer: buffer.name.clone(),
                    lines: None,
                    bytes: read
                        .start
                        .map(|start| format!("{}:", start + text.len() as u64)),
                });
            }
        }
    }
    Ok(Read {
        range: PeekRange {
            lines: Some([first, shown]),
            ..PeekRange::default()
        },
        buffer: buffer.name,
        text,
        rest,
    })
}

/// Bytes `A:B` of `buffer`, at most `room` of them.
fn read_bytes(
    store: &rlm_store::Store,
    buffer: rlm_store::BufferInfo,
    bytes: &str,
    room: u64,
) -> anyhow::Result<Read> {
    let (start, end) = parse_range(bytes, "bytes")?;
    let start = start.unwrap_or(0);
    let end = end.unwrap_or(buffer.bytes);
    if start > end {
        return Err(input_error(format!("byte range {start}:{end} is reversed")).into());
    }
    // Past the end is clamped, as --lines is.
    let (start, end) = (start.min(buffer.bytes), end.min(buffer.bytes));
    let (text, rest) = bytes_within(store, &buffer, start, end, room)?;
    let shown = rest.as_ref().map_or(end, |_| start + text.len() as u64);
    Ok(Read {
        range: PeekRange {
            bytes: Some([start, shown.max(start)]),
            ..PeekRange::default()
        },
        buffer: buffer.name,
        text,
        rest,
    })
}

/// Bytes `start..end` of `buffer`, or their first `room` (ending on a character), and where
/// the rest is.
pub(crate) fn bytes_within(
    store: &rlm_store::Store,
    buffer: &rlm_store::BufferInfo,
    start: u64,
    end: u64,
    room: u64,
) -> anyhow::Result<(String, Option<PeekRest>)> {
    if end - start <= room {
        let text = store.read_bytes(buffer, start..end).map_err(store_error)?;
        return Ok((text, None));
    }
    // Three bytes short, so that widening the range to whole characters stays within it.
    let stop = start + room.saturating_sub(3).max(1);
    let mut text = store.read_bytes(buffer, start..stop).map_err(store_error)?;
    // The store widens a cut character to its end; the text then reads on from there.
    let shown = start + text.len() as u64;
    if shown >= end {
        return Ok((text, None));
    }
    text.shrink_to_fit();
    let rest = PeekRest {
        buffer: buffer.name.clone(),
        lines: None,
        bytes: Some(format!("{shown}:{end}")),
    };
    Ok((text, Some(rest)))
}

/// Parses `A:B`, `A:` or `:B` into optional ends.
fn parse_range(text: &str, what: &str) -> anyhow::Result<(Option<u64>, Option<u64>)> {
    let invalid = || {
        AppError::input(anyhow::anyhow!("invalid {what} range {text:?}"))
            .with_hint(format!("write --{what} A:B, A: or :B with whole numbers"))
    };
    let (start, end) = text.split_once(':').ok_or_else(invalid)?;
    let parse = |part: &str| -> anyhow::Result<Option<u64>> {
        if part.is_empty() {
            Ok(None)
        } else {
            part.trim().parse().map(Some).map_err(|_| invalid().into())
        }
    };
    Ok((parse(start)?, parse(end)?))
}
