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
    /// Its whole text, or as much as one answer holds (`rest` then says where the rest is).
    Text {
        buffer: String,
        text: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        rest: Option<super::peek::PeekRest>,
    },
}

/// The buffer, its chunks and its text, as `request` asks.
pub fn show(
    sources: &Sources,
    request: &ShowRequest,
    context: &Context,
) -> anyhow::Result<Outcome<ShowRecord>> {
    let store = StoreSettings::resolve(sources)?.open_existing()?;
    let buffer = store.buffer(&request.buffer).map_err(store_error)?;
    let chunks = if request.chunks {
        store.chunks_of(&buffer).map_err(store_error)?
    } else {
        Vec::new()
    };
    // No more of the text than one answer holds is read: a quarter of it, so that escaped
    // and sent twice (MCP's text and structured content) it still fits.
    let room = match context.reply.text_copy {
        true => context.reply.bytes / 4,
        false => context.reply.bytes.saturating_sub(1024),
    }
    .max(64) as u64;
    let text = if request.text {
        Some(super::peek::bytes_within(
            &store,
            &buffer,
            0,
            buffer.bytes,
            room,
        )?)
    } else {
        None
    };
    let name = buffer.name.clone();
    let mut records = vec![ShowRecord::Buffer(buffer)];
    records.extend(chunks.into_iter().map(ShowRecord::Chunk));
    let mut notes = Vec::new();
    records.extend(text.map(|(text, rest)| {
        notes.extend(rest.as_ref().map(|rest| rest.note(context.reply.bytes)));
        ShowRecord::Text {
            buffer: name,
            text,
            rest,
        }
    }));
    let mut outcome = Outcome::success(records);
    outcome.notes = notes;
    Ok(outcome)
}
