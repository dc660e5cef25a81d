//! `list`: the stored buffers.

use rlm_store::BufferInfo;

use crate::error::store_error;
use crate::requests::ListRequest;
use crate::settings::{Sources, StoreSettings};
use crate::{Context, Outcome};

/// What `rlm list --json` prints: one record per stored buffer.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BufferRecord {
    /// A stored buffer.
    Buffer(BufferInfo),
}

/// The stored buffers, in id order.
pub fn list(
    sources: &Sources,
    _request: &ListRequest,
    _context: &Context,
) -> anyhow::Result<Outcome<BufferRecord>> {
    let store = StoreSettings::resolve(sources)?.open_existing()?;
    let buffers = store.list().map_err(store_error)?;
    Ok(Outcome::success(
        buffers.into_iter().map(BufferRecord::Buffer).collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_says_its_type_first_then_the_fields_of_what_it_holds() {
        let buffer = BufferInfo {
            id: 7,
            name: "a.txt".to_owned(),
            path: None,
            bytes: 3,
            lines: 1,
            chunks: 1,
            strategy: "text".to_owned(),
            sha256: "ab".to_owned(),
            loaded_at: 0,
        };
        let line = serde_json::to_string(&BufferRecord::Buffer(buffer)).unwrap();
        assert!(
            line.starts_with(r#"{"type":"buffer","id":7,"name":"a.txt","#),
            "{line}"
        );
    }
}
