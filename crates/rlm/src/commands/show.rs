//! `rlm show`: one buffer's metadata, optionally its chunks or whole text.

use std::io::Write as _;
use std::process::ExitCode;

use rlm_app::operations::show::ShowRecord;
use rlm_app::requests::ShowRequest;

use super::Run;
use crate::output::{self, human_bytes};

pub fn run(run: &Run<'_>, request: ShowRequest) -> anyhow::Result<ExitCode> {
    let outcome = rlm_app::operations::show(&run.sources, &request, &run.context)?;
    if run.global.json {
        // JSON Lines: the buffer, then each chunk, then its text, each with a `type`.
        run.print_json(&outcome)?;
        return run.exit(outcome);
    }
    if let Some(ShowRecord::Text { text, .. }) = outcome.records.last() {
        let mut out = output::raw_stdout();
        out.write_all(output::for_stdout(text).as_bytes())?;
        out.flush()?;
        return run.exit(outcome);
    }
    let mut out = output::stdout();
    for record in &outcome.records {
        match record {
            ShowRecord::Buffer(buffer) => {
                writeln!(out, "name:     {}", output::for_stdout(&buffer.name))?;
                writeln!(out, "id:       {}", buffer.id)?;
                if let Some(path) = &buffer.path {
                    writeln!(out, "path:     {}", output::for_stdout(path))?;
                }
                writeln!(
                    out,
                    "size:     {} ({} bytes)",
                    human_bytes(buffer.bytes),
                    buffer.bytes
                )?;
                writeln!(out, "lines:    {}", buffer.lines)?;
                writeln!(out, "chunks:   {} ({})", buffer.chunks, buffer.strategy)?;
                writeln!(out, "sha256:   {}", buffer.sha256)?;
            }
            ShowRecord::Chunk(chunk) => writeln!(
                out,
                "  chunk {:>8}  lines {}-{}  bytes {}..{}",
                chunk.id, chunk.start_line, chunk.end_line, chunk.bytes.start, chunk.bytes.end
            )?,
            ShowRecord::Text { .. } => {}
        }
    }
    run.exit(outcome)
}
