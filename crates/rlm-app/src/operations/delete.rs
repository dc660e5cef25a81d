//! `delete`: remove buffers (their text, chunks and index entries).

use crate::error::store_error;
use crate::requests::DeleteRequest;
use crate::settings::{Sources, StoreSettings};
use crate::{Context, Outcome};

/// What `rlm delete --json` prints: one record per buffer removed.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum DeleteRecord {
    /// A buffer that is gone.
    Deleted(rlm_store::BufferInfo),
}

/// Deletes the buffers `request` names.
pub fn delete(
    sources: &Sources,
    request: &DeleteRequest,
    _context: &Context,
) -> anyhow::Result<Outcome<DeleteRecord>> {
    let mut store = StoreSettings::resolve(sources)?.open_existing()?;
    let deleted = store.delete(&request.buffers).map_err(store_error)?;
    Ok(Outcome::success(
        deleted.into_iter().map(DeleteRecord::Deleted).collect(),
    ))
}
