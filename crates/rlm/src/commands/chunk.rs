//! `rlm chunk`: preview chunking of a file without storing anything.

use std::io::{Read as _, Write as _};
use std::process::ExitCode;

use anyhow::Context as _;
use rlm_context::chunk;

use crate::cli::{ChunkRequest, GlobalArgs};
use crate::error::input_error;
use crate::output;
use crate::settings::store::chunk_options;

/// Characters of each chunk shown in the text preview.
const PREVIEW_CHARS: usize = 60;

pub fn run(global: &GlobalArgs, args: ChunkRequest) -> anyhow::Result<ExitCode> {
    let options = chunk_options(&args.chunking)?;
    let (bytes, name) = if args.path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .context("cannot read stdin")?;
        (bytes, args.name.clone())
    } else {
        let bytes = std::fs::read(&args.path).map_err(|err| {
            crate::error::AppError::input(
                anyhow::Error::new(err).context(format!("cannot read {}", args.path.display())),
            )
        })?;
        (
            bytes,
            args.name
                .clone()
                .or_else(|| Some(args.path.to_string_lossy().into_owned())),
        )
    };
    let text = String::from_utf8(bytes)
        .map_err(|_| input_error(format!("{} is not valid UTF-8 text", args.path.display())))?;
    let chunking =
        chunk::chunk(&text, name.as_deref(), &options).map_err(crate::error::AppError::input)?;
    let mut out = output::stdout();
    if global.json {
        for (index, chunk) in chunking.chunks.iter().enumerate() {
            let record = ChunkRecord::Chunk {
                index,
                strategy: chunking.strategy,
                bytes: [chunk.range.start, chunk.range.end],
                lines: [chunk.start_line, chunk.end_line],
                header_bytes: chunk.header.as_ref().map(|h| [h.start, h.end]),
                // The same count the text preview shows: the chunk's own text; a repeated
                // CSV header is counted apart.
                chars: text[chunk.range.clone()].chars().count(),
                header_chars: chunk
                    .header
                    .as_ref()
                    .map(|h| text[h.clone()].chars().count()),
            };
            output::write_json(&mut out, &record)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{} ({})",
        output::count(chunking.chunks.len() as u64, "chunk"),
        chunking.strategy
    )?;
    for (index, chunk) in chunking.chunks.iter().enumerate() {
        let body = &text[chunk.range.clone()];
        let preview: String = body
            .chars()
            .take(PREVIEW_CHARS)
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        writeln!(
            out,
            "{index:>5}  lines {:>6}-{:<6} bytes {:>9}..{:<9} {:>6} chars  {}",
            chunk.start_line,
            chunk.end_line,
            chunk.range.start,
            chunk.range.end,
            body.chars().count(),
            preview.trim()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// What `rlm chunk --json` prints: one record per chunk, in order.
#[derive(serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ChunkRecord {
    Chunk {
        index: usize,
        strategy: chunk::Strategy,
        /// Byte range `[start, end)` in the file.
        bytes: [usize; 2],
        /// First and last line, 1-based.
        lines: [u64; 2],
        /// The CSV header repeated before the chunk, when one is.
        header_bytes: Option<[usize; 2]>,
        chars: usize,
        header_chars: Option<usize>,
    },
}
