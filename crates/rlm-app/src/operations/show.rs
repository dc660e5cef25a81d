//! `show`: one buffer's metadata, optionally its chunks or whole text.

use rlm_store::{BufferInfo, ChunkInfo};

use crate::error::store_error;
use crate::requests::ShowRequest;
use crate::settings::{Sources, StoreSettings};
use crate::{Context, Outcome};

/// What `rlm show --json` prints: the buffer, then each chunk (`--chunks`), then its text
/// (`--text`).
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ShowRecord {
    /// The buffer's metadata.
    Buffer(BufferInfo),
    /// One of its chunks.
    Chunk(ChunkInfo),
    /// Its whole text.
    Text { buffer: String, text: String },
}

/// The buffer, its chunks and its text, as `request` asks.
pub fn show(
    sources: &Sources,
    request: &ShowRequest,
    _context: &Context,
) -> anyhow::Result<Outcome<ShowRecord>> {
    let store = StoreSettings::resolve(sources)?.open_existing()?;
    let buffer = store.buffer(&request.buffer).map_err(store_error)?;
    let chunks = if request.chunks {
        store.chunks_of(&buffer).map_err(store_error)?
    } else {
        Vec::new()
    };
    let text = if request.text {
        Some(store.text(&buffer).map_err(store_error)?)
    } else {
        None
    };
    let name = buffer.name.clone();
    let mut records = vec![ShowRecord::Buffer(buffer)];
    records.extend(chunks.into_iter().map(ShowRecord::Chunk));
    records.extend(text.map(|text| ShowRecord::Text { buffer: name, text }));
    Ok(Outcome::success(records))
}
