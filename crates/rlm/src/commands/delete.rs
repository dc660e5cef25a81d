//! `rlm delete`: remove buffers (their text, chunks and index entries).

use std::io::Write as _;
use std::process::ExitCode;

use crate::cli::{DeleteArgs, GlobalArgs};
use crate::error::store_error;
use crate::output;
use crate::settings::{Sources, StoreSettings};

pub fn run(global: &GlobalArgs, sources: &Sources, args: DeleteArgs) -> anyhow::Result<ExitCode> {
    let mut store = StoreSettings::resolve(&args.location, sources).open_existing()?;
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
