//! `rlm list`: the stored buffers.

use std::io::Write as _;
use std::process::ExitCode;

use crate::cli::{GlobalArgs, ListArgs};
use crate::error::store_error;
use crate::output::{self, human_bytes};
use crate::settings::{Sources, StoreSettings};

pub fn run(global: &GlobalArgs, sources: &Sources, args: ListArgs) -> anyhow::Result<ExitCode> {
    let store = StoreSettings::resolve(&args.location, sources).open_existing()?;
    let buffers = store.list().map_err(store_error)?;
    if global.json {
        output::print_json(&buffers)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = output::stdout();
    for buffer in &buffers {
        writeln!(
            out,
            "{:>6}  {:<40} {:>10} {:>8} lines {:>6} chunks  {}",
            buffer.id,
            buffer.name,
            human_bytes(buffer.bytes),
            buffer.lines,
            buffer.chunks,
            buffer.strategy
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
