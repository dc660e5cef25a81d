//! `rlm delete`: remove buffers (their text, chunks and index entries).

use std::io::Write as _;
use std::process::ExitCode;

use super::store_common::{open_existing_store, store_error};
use crate::cli::{DeleteArgs, GlobalArgs};
use crate::output;

pub fn run(global: &GlobalArgs, args: DeleteArgs) -> anyhow::Result<ExitCode> {
    let mut store = open_existing_store(&args.location)?;
    let deleted = store.delete(&args.buffers).map_err(store_error)?;
    if global.json {
        output::print_json(&deleted)?;
    } else if !global.quiet {
        let mut stderr = anstream::stderr();
        for buffer in &deleted {
            let _ = writeln!(stderr, "deleted {} ({} chunks)", buffer.name, buffer.chunks);
        }
    }
    Ok(ExitCode::SUCCESS)
}
