//! `store copy SRC DST`: a store moved between a directory and PostgreSQL, either way.

use std::ops::ControlFlow;

use crate::error::{input_error, store_error};
use crate::events::Event;
use crate::requests::{StoreAction, StoreRequest};
use crate::settings::{Sources, StoreSettings};
use crate::{Context, Outcome};

/// What `rlm store copy --json` prints.
#[derive(Debug, serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StoreRecord {
    /// What was copied, and what was already there.
    Copied {
        source: String,
        destination: String,
        #[serde(flatten)]
        report: rlm_store::CopyReport,
    },
}

/// Copies every buffer of the source store into the destination (created when missing). A
/// stop request ends it after the batch in hand; what was copied stays.
pub fn store(
    sources: &Sources,
    request: &StoreRequest,
    context: &Context,
) -> anyhow::Result<Outcome<StoreRecord>> {
    let StoreAction::Copy(copy) = &request.action;
    let from = StoreSettings::at(Some(copy.source.clone()), sources)?;
    let into = StoreSettings::at(Some(copy.destination.clone()), sources)?;
    if from.location == into.location {
        return Err(input_error("the source and the destination are the same store").into());
    }
    let source = from.open_existing()?;
    let mut destination = into.open()?;
    let report = source
        .copy_into(&mut destination, &mut |done, total| {
            context.emit(&Event::Copying { done, total });
            if context.stop.is_stopped() {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .map_err(|err| {
            store_error(err).context(format!(
                "cannot copy {} into {} (what was copied stays; run the copy again to finish)",
                from.location, into.location
            ))
        })?;
    Ok(Outcome::success(vec![StoreRecord::Copied {
        source: from.location.to_string(),
        destination: into.location.to_string(),
        report,
    }]))
}
