//! `rlm delete`: remove buffers (their text, chunks and index entries).

use std::io::Write as _;
use std::process::ExitCode;

use serde::Serialize;

use crate::cli::{DeleteArgs, GlobalArgs};
use crate::error::store_error;
use crate::output;
use crate::settings::{Sources, StoreSettings};

pub fn run(global: &GlobalArgs, sources: &Sources, args: DeleteArgs) -> anyhow::Result<ExitCode> {
    let mut store = StoreSettings::resolve(&args.location, sources)?.open_existing()?;
    let deleted = store.delete(&args.buffers).map_err(store_error)?;
    if global.json {
        for buffer in &deleted {
            output::print_json(&DeleteRecord::Deleted(buffer))?;
        }
    } else if !global.quiet {
        let mut stderr = anstream::stderr();
        for buffer in &deleted {
            let name = output::neutralize(&buffer.name);
            let _ = writeln!(stderr, "deleted {name} ({} chunks)", buffer.chunks);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What `rlm delete --json` prints: one record per buffer removed.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum DeleteRecord<'a> {
    Deleted(&'a rlm_store::BufferInfo),
}
