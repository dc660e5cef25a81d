//! The store's buffers and chunks as `rlm://buffer/ID` and `rlm://chunk/ID` resources, listed
//! in pages: each buffer followed by its chunks, in the store's order, `page_size` entries a
//! page, the cursor being the position of the next entry.

use rlm_store::{BufferInfo, Store};
use rmcp::model::{ListResourcesResult, ReadResourceResult, Resource, ResourceContents};

use rlm_app::error::store_error;

const BUFFER: &str = "rlm://buffer/";
const CHUNK: &str = "rlm://chunk/";

/// One page of resources starting at `cursor` (a position; none for the first page).
pub fn list(
    store: &Store,
    cursor: Option<&str>,
    page_size: usize,
) -> anyhow::Result<ListResourcesResult> {
    let start: u64 = match cursor {
        None => 0,
        Some(text) => text.parse().map_err(|_| {
            rlm_app::error::input_error(format!(
                "invalid cursor {text:?}: pass the nextCursor of the previous page"
            ))
        })?,
    };
    let buffers = store.list().map_err(store_error)?;
    let mut page = Vec::with_capacity(page_size);
    // Each buffer takes 1 + chunks positions; skip whole buffers before the cursor.
    let mut position = 0u64;
    for buffer in &buffers {
        let span = 1 + buffer.chunks;
        if position + span <= start {
            position += span;
            continue;
        }
        if position >= start {
            page.push(buffer_resource(buffer));
        }
        position += 1;
        if page.len() == page_size {
            break;
        }
        for chunk in store.chunks_of(buffer).map_err(store_error)? {
            if position >= start {
                let name = format!(
                    "{} lines {}-{}",
                    buffer.name, chunk.start_line, chunk.end_line
                );
                page.push(
                    Resource::new(format!("{CHUNK}{}", chunk.id), name)
                        .with_mime_type("text/plain")
                        .with_size(chunk.bytes.end - chunk.bytes.start),
                );
            }
            position += 1;
            if page.len() == page_size {
                break;
            }
        }
        if page.len() == page_size {
            break;
        }
    }
    let total: u64 = buffers.iter().map(|buffer| 1 + buffer.chunks).sum();
    let mut result = ListResourcesResult::with_all_items(page);
    result.next_cursor = (position < total).then(|| position.to_string());
    Ok(result)
}

fn buffer_resource(buffer: &BufferInfo) -> Resource {
    let mut resource = Resource::new(format!("{BUFFER}{}", buffer.id), buffer.name.clone())
        .with_mime_type("text/plain")
        .with_size(buffer.bytes)
        .with_description(format!(
            "{} lines, {} chunks ({})",
            buffer.lines, buffer.chunks, buffer.strategy
        ));
    if let Some(path) = &buffer.path {
        resource = resource.with_title(path.clone());
    }
    resource
}

/// The text of the buffer or chunk `uri` names, when it fits in `limit`; a larger one is
/// refused (a resource cannot be paged), naming the peek that reads it in parts.
pub fn read(
    store: &Store,
    uri: &str,
    limit: rlm_app::ReplyLimit,
) -> anyhow::Result<ReadResourceResult> {
    let id = |prefix: &str| -> Option<i64> { uri.strip_prefix(prefix)?.parse().ok() };
    let too_large = |what: String, bytes: u64, peek: String| -> anyhow::Error {
        rlm_app::AppError::input(anyhow::anyhow!(
            "{what} is {}, more than one answer carries ({})",
            rlm_app::text::human_bytes(bytes),
            rlm_app::text::human_bytes(limit.bytes as u64)
        ))
        .with_hint(format!("read it in parts with the peek tool: {peek}"))
        .into()
    };
    // Room for the JSON around the text.
    let room = limit.bytes.saturating_sub(1024) as u64;
    let text = if let Some(id) = id(CHUNK) {
        let chunk = store.chunk(id).map_err(store_error)?;
        let bytes = chunk.bytes.end - chunk.bytes.start;
        if bytes > room {
            let peek = format!(
                "{{\"buffer\": {:?}, \"bytes\": \"{}:{}\"}}",
                chunk.buffer, chunk.bytes.start, chunk.bytes.end
            );
            return Err(too_large(format!("chunk {id}"), bytes, peek));
        }
        store.chunk_text(id).map_err(store_error)?
    } else if let Some(id) = id(BUFFER) {
        let buffers = store.list().map_err(store_error)?;
        let Some(buffer) = buffers.iter().find(|buffer| buffer.id == id) else {
            return Err(rlm_app::error::input_error(format!("no buffer with id {id}")).into());
        };
        if buffer.bytes > room {
            let peek = format!("{{\"buffer\": {:?}, \"lines\": \"1:1000\"}}", buffer.name);
            return Err(too_large(
                format!("buffer {:?}", buffer.name),
                buffer.bytes,
                peek,
            ));
        }
        store.text(buffer).map_err(store_error)?
    } else {
        return Err(rlm_app::error::input_error(format!(
            "unknown resource {uri:?}: rlm serves rlm://buffer/ID and rlm://chunk/ID"
        ))
        .into());
    };
    Ok(ReadResourceResult::new(vec![
        ResourceContents::text(text, uri).with_mime_type("text/plain"),
    ]))
}
