//! `chunk`: preview how a file would be chunked, without storing anything.

use std::io::Read as _;

use anyhow::Context as _;
use rlm_context::chunk;

use crate::error::{AppError, input_error};
use crate::requests::ChunkRequest;
use crate::settings::store::chunk_options;
use crate::{Context, Outcome};

/// Characters of each chunk kept for a preview.
const PREVIEW_CHARS: usize = 60;

/// What `rlm chunk --json` prints: one record per chunk, in order.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChunkRecord {
    /// One chunk of the file.
    Chunk {
        index: usize,
        strategy: chunk::Strategy,
        /// Byte range `[start, end)` in the file.
        bytes: [usize; 2],
        /// First and last line, 1-based.
        lines: [u64; 2],
        /// The CSV header repeated before the chunk, when one is.
        header_bytes: Option<[usize; 2]>,
        /// Characters of the chunk's own text (a repeated CSV header is counted apart).
        chars: usize,
        header_chars: Option<usize>,
        /// The chunk's first characters, controls as spaces, for a person (not in JSON).
        #[serde(skip)]
        #[schemars(skip)]
        preview: String,
    },
}

/// The chunks `request`'s file would be stored as.
pub fn chunk(request: &ChunkRequest, context: &Context) -> anyhow::Result<Outcome<ChunkRecord>> {
    let options = chunk_options(&request.chunking)?;
    let (bytes, name) = if request.path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        context
            .stdin("chunk")?
            .read_to_end(&mut bytes)
            .context("cannot read stdin")?;
        (bytes, request.name.clone())
    } else {
        let bytes = std::fs::read(&request.path).map_err(|err| {
            AppError::input(
                anyhow::Error::new(err).context(format!("cannot read {}", request.path.display())),
            )
        })?;
        (
            bytes,
            request
                .name
                .clone()
                .or_else(|| Some(request.path.to_string_lossy().into_owned())),
        )
    };
    let text = String::from_utf8(bytes).map_err(|_| {
        input_error(format!(
            "{} is not valid UTF-8 text",
            request.path.display()
        ))
    })?;
    let chunking = chunk::chunk(&text, name.as_deref(), &options).map_err(AppError::input)?;
    let records = chunking
        .chunks
        .iter()
        .enumerate()
        .map(|(index, chunk)| {
            let body = &text[chunk.range.clone()];
            ChunkRecord::Chunk {
                index,
                strategy: chunking.strategy,
                bytes: [chunk.range.start, chunk.range.end],
                lines: [chunk.start_line, chunk.end_line],
                header_bytes: chunk.header.as_ref().map(|h| [h.start, h.end]),
                chars: body.chars().count(),
                header_chars: chunk
                    .header
                    .as_ref()
                    .map(|h| text[h.clone()].chars().count()),
                preview: body
                    .chars()
                    .take(PREVIEW_CHARS)
                    .map(|c| if c.is_control() { ' ' } else { c })
                    .collect(),
            }
        })
        .collect();
    Ok(Outcome::success(records))
}
