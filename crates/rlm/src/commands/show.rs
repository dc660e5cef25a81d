//! `rlm show`: one buffer's metadata, optionally its chunks or whole text.

use std::io::Write as _;
use std::process::ExitCode;

use rlm_store::{BufferInfo, ChunkInfo};
use serde::Serialize;

use crate::cli::{GlobalArgs, ShowArgs};
use crate::error::store_error;
use crate::output::{self, human_bytes};
use crate::settings::{Sources, StoreSettings};

pub fn run(global: &GlobalArgs, sources: &Sources, args: ShowArgs) -> anyhow::Result<ExitCode> {
    let store = StoreSettings::resolve(&args.location, sources)?.open_existing()?;
    let buffer = store.buffer(&args.buffer).map_err(store_error)?;
    let chunks = if args.chunks {
        Some(store.chunks_of(&buffer).map_err(store_error)?)
    } else {
        None
    };
    let text = if args.text {
        Some(store.text(&buffer).map_err(store_error)?)
    } else {
        None
    };
    if global.json {
        // JSON Lines: the buffer, then each chunk, then its text, each with a `type`.
        output::print_json(&ShowRecord::Buffer(&buffer))?;
        for chunk in chunks.iter().flatten() {
            output::print_json(&ShowRecord::Chunk(chunk))?;
        }
        if let Some(text) = &text {
            output::print_json(&ShowRecord::Text {
                buffer: &buffer.name,
                text,
            })?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(text) = text {
        let mut out = output::raw_stdout();
        out.write_all(output::for_stdout(&text).as_bytes())?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = output::stdout();
    writeln!(out, "name:     {}", output::for_stdout(&buffer.name))?;
    writeln!(out, "id:       {}", buffer.id)?;
    if let Some(path) = &buffer.path {
        writeln!(out, "path:     {}", output::for_stdout(path))?;
    }
    writeln!(
        out,
        "size:     {} ({} bytes)",
        human_bytes(buffer.bytes),
        buffer.bytes
    )?;
    writeln!(out, "lines:    {}", buffer.lines)?;
    writeln!(out, "chunks:   {} ({})", buffer.chunks, buffer.strategy)?;
    writeln!(out, "sha256:   {}", buffer.sha256)?;
    for chunk in chunks.iter().flatten() {
        writeln!(
            out,
            "  chunk {:>8}  lines {}-{}  bytes {}..{}",
            chunk.id, chunk.start_line, chunk.end_line, chunk.bytes.start, chunk.bytes.end
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// What `rlm show --json` prints: the buffer, then each chunk (`--chunks`), then its text
/// (`--text`).
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ShowRecord<'a> {
    Buffer(&'a BufferInfo),
    Chunk(&'a ChunkInfo),
    Text { buffer: &'a str, text: &'a str },
}
