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

/// Deletes the buffers `request` names. A name that names no buffer is an error (nothing is
/// deleted); a glob or a directory that matches nothing is a note, and the other patterns'
/// buffers are deleted.
pub fn delete(
    sources: &Sources,
    request: &DeleteRequest,
    _context: &Context,
) -> anyhow::Result<Outcome<DeleteRecord>> {
    let mut store = StoreSettings::resolve(sources)?.open_existing()?;
    let mut matching = Vec::new();
    let mut notes = Vec::new();
    for pattern in &request.buffers {
        match store.select_buffers(pattern) {
            Ok(_) => matching.push(pattern.clone()),
            Err(rlm_store::Error::UnknownBuffer(_)) if is_pattern(pattern) => {
                notes.push(format!("note: no buffer matches `{pattern}`"));
            }
            Err(err) => return Err(store_error(err)),
        }
    }
    if matching.is_empty() {
        let patterns: Vec<String> = request.buffers.iter().map(|p| format!("`{p}`")).collect();
        return Err(crate::error::AppError::input(anyhow::anyhow!(
            "no buffer matches {}",
            patterns.join(", ")
        ))
        .with_hint("`rlm list` shows the stored buffers")
        .into());
    }
    let deleted = store.delete(&matching).map_err(store_error)?;
    Ok(Outcome {
        notes,
        ..Outcome::success(deleted.into_iter().map(DeleteRecord::Deleted).collect())
    })
}

/// Whether `pattern` is a glob (or could name a directory of buffers) rather than one name.
fn is_pattern(pattern: &str) -> bool {
    pattern.contains(['*', '?', '[', '{'])
}
