//! `rlm peek`: part of a buffer by lines, bytes or chunk id.

use std::io::Write as _;
use std::process::ExitCode;

use crate::cli::{GlobalArgs, PeekArgs};
use crate::error::{CliError, input_error, store_error};
use crate::output;
use crate::settings::{Sources, StoreSettings};

pub fn run(global: &GlobalArgs, sources: &Sources, args: PeekArgs) -> anyhow::Result<ExitCode> {
    let store = StoreSettings::resolve(&args.location, sources).open_existing()?;
    let (buffer_name, text, description) = if let Some(id) = args.chunk {
        let chunk = store.chunk(id).map_err(store_error)?;
        let text = store.chunk_text(id).map_err(store_error)?;
        let description = serde_json::json!({
            "chunk": chunk.id, "lines": [chunk.start_line, chunk.end_line],
            "bytes": [chunk.bytes.start, chunk.bytes.end],
        });
        (chunk.buffer, text, description)
    } else {
        let name = args.buffer.as_deref().unwrap_or_default();
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
            (
                buffer.name,
                text,
                serde_json::json!({ "lines": [first, last] }),
            )
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
            (
                buffer.name,
                text,
                serde_json::json!({ "bytes": [start, end] }),
            )
        }
    };
    if global.json {
        output::print_json(&serde_json::json!({
            "type": "text", "buffer": buffer_name, "range": description, "text": text,
        }))?;
    } else {
        // Buffer text is data: byte-exact into a pipe, neutralised on a terminal.
        let mut out = output::raw_stdout();
        out.write_all(output::for_stdout(&text).as_bytes())?;
        if !text.is_empty() && !text.ends_with('\n') {
            writeln!(out)?;
        }
        out.flush()?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Parses `A:B`, `A:` or `:B` into optional ends.
fn parse_range(text: &str, what: &str) -> anyhow::Result<(Option<u64>, Option<u64>)> {
    let invalid = || {
        CliError::input(anyhow::anyhow!("invalid {what} range {text:?}"))
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
