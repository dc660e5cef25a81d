//! `rlm chunk`: preview chunking of a file without storing anything.

use std::io::Write as _;
use std::process::ExitCode;

use rlm_app::operations::chunk::ChunkRecord;
use rlm_app::requests::ChunkRequest;

use super::Run;
use crate::output;

pub fn run(run: &Run<'_>, request: ChunkRequest) -> anyhow::Result<ExitCode> {
    let outcome = rlm_app::operations::chunk(&request, &run.context)?;
    if run.global.json {
        run.print_json(&outcome)?;
        return run.exit(outcome);
    }
    let mut out = output::stdout();
    let strategy = outcome
        .records
        .first()
        .map(|ChunkRecord::Chunk { strategy, .. }| strategy.to_string());
    writeln!(
        out,
        "{} ({})",
        output::count(outcome.records.len() as u64, "chunk"),
        strategy.unwrap_or_else(|| "no text".to_owned())
    )?;
    for ChunkRecord::Chunk {
        index,
        bytes,
        lines,
        chars,
        preview,
        ..
    } in &outcome.records
    {
        writeln!(
            out,
            "{index:>5}  lines {:>6}-{:<6} bytes {:>9}..{:<9} {:>6} chars  {}",
            lines[0],
            lines[1],
            bytes[0],
            bytes[1],
            chars,
            preview.trim()
        )?;
    }
    run.exit(outcome)
}
