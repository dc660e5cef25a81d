//! `status`: sizes, counts and index state of the store.

use rlm_store::{IndexHealth, StoreStatus};

use crate::error::store_error;
use crate::requests::StatusRequest;
use crate::settings::{Sources, StoreSettings};
use crate::{Context, ExitStatus, Outcome};

/// What `rlm status --json` prints: one record.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StatusRecord {
    /// The store's sizes, counts and index state.
    Status(StoreStatus),
}

/// The store's status; failed when the index is out of step with the chunks (searches would
/// miss text), so scripts notice.
pub fn status(
    sources: &Sources,
    _request: &StatusRequest,
    _context: &Context,
) -> anyhow::Result<Outcome<StatusRecord>> {
    let store = StoreSettings::resolve(sources)?.open_existing()?;
    let status = store.status().map_err(store_error)?;
    let ending = match status.index_health {
        IndexHealth::OutOfStep { .. } => ExitStatus::Failed,
        IndexHealth::UpToDate | IndexHealth::Pending { .. } => ExitStatus::Success,
    };
    Ok(Outcome::ended(vec![StatusRecord::Status(status)], ending))
}
