//! `doctor`: every check of the store, each with its fix; failed when something is wrong.

use crate::requests::DoctorRequest;
use crate::settings::{Sources, StoreSettings};
use crate::{Context, ExitStatus, Outcome};

/// What `rlm doctor --json` prints: each check, then a summary.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum DoctorRecord {
    /// One check, with its fix when it found a problem.
    Check(rlm_store::Check),
    /// The store looked at and how many checks found a problem.
    Summary { store: String, problems: usize },
}

/// Every check of the store. Read-only: a damaged store is looked at, never opened for
/// writing or created.
pub fn doctor(
    sources: &Sources,
    _request: &DoctorRequest,
    _context: &Context,
) -> anyhow::Result<Outcome<DoctorRecord>> {
    let settings = StoreSettings::resolve(sources)?;
    let checks = rlm_store::diagnose_at(&settings.location);
    let problems = checks.iter().filter(|check| !check.ok).count();
    let mut records: Vec<DoctorRecord> = checks.into_iter().map(DoctorRecord::Check).collect();
    records.push(DoctorRecord::Summary {
        store: settings.location.to_string(),
        problems,
    });
    let ending = if problems == 0 {
        ExitStatus::Success
    } else {
        ExitStatus::Failed
    };
    Ok(Outcome::ended(records, ending))
}
