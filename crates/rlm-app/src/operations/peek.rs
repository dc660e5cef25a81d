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
    },
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

/// Reads the part of a buffer `args` names: a chunk, a line range or a byte range.
pub fn peek(
    sources: &Sources,
    args: &PeekRequest,
    _context: &Context,
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
    let (buffer, text, range) = if let Some(id) = args.chunk {
        let chunk = store.chunk(id).map_err(store_error)?;
        let text = store.chunk_text(id).map_err(store_error)?;
        let range = PeekRange {
            chunk: Some(chunk.id),
            lines: Some([chunk.start_line, chunk.end_line]),
            bytes: Some([chunk.bytes.start, chunk.bytes.end]),
        };
        (chunk.buffer, text, range)
    } else {
        let Some(name) = args.buffer.as_deref() else {
            return Err(input_error("peek needs a buffer (name or id) or a chunk id").into());
        };
        let buffer = store.buffer(name).map_err(store_error)?;
        if let Some(lines) = &args.lines {
            let (first, last) = parse_range(lines, "lines")?;
            let first = first.unwrap_or(1);
            let last = last.unwrap_or(buffer.lines.max(1));
            if first == 0 || last < first {
                return Err(input_error(format!(
                    "line range {first}:{last} is empty or starts at 0 (lines count from 1)"
                ))
                .into());
            }
            let text = store
                .read_lines(&buffer, first, last)
                .map_err(store_error)?;
            let range = PeekRange {
                lines: Some([first, last]),
                ..PeekRange::default()
            };
            (buffer.name, text, range)
        } else {
            let (start, end) = parse_range(args.bytes.as_deref().unwrap_or(":"), "bytes")?;
            let start = start.unwrap_or(0);
            let end = end.unwrap_or(buffer.bytes);
            if start > end {
                return Err(input_error(format!("byte range {start}:{end} is reversed")).into());
            }
            // Past the end is clamped, as --lines is.
            let (start, end) = (start.min(buffer.bytes), end.min(buffer.bytes));
            let text = store.read_bytes(&buffer, start..end).map_err(store_error)?;
            let range = PeekRange {
                bytes: Some([start, end]),
                ..PeekRange::default()
            };
            (buffer.name, text, range)
        }
    };
    Ok(Outcome::success(vec![PeekRecord::Text {
        buffer,
        range,
        text,
    }]))
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
