//! `rlm list`: the stored buffers.

use std::io::Write as _;
use std::process::ExitCode;

use rlm_app::operations::list::BufferRecord;
use rlm_app::requests::ListRequest;

use super::Run;
use crate::output::{self, human_bytes};

pub fn run(run: &Run<'_>, request: ListRequest) -> anyhow::Result<ExitCode> {
    let outcome = rlm_app::operations::list(&run.sources, &request, &run.context)?;
    if run.global.json {
        run.print_json(&outcome)?;
    }
    if outcome.records.is_empty() {
        output::terminal_note(
            run.global.quiet,
            "the store has no buffers (add some with `rlm load`)",
        );
    }
    if run.global.json {
        return run.exit(outcome);
    }
    let mut out = output::stdout();
    // The name, the one column of any width, comes last: the others stay aligned.
    for BufferRecord::Buffer(buffer) in &outcome.records {
        writeln!(
            out,
            "{:>6}  {:>10} {:>8} {:<5} {:>6} {:<6}  {:<9}  {}",
            buffer.id,
            human_bytes(buffer.bytes),
            buffer.lines,
            if buffer.lines == 1 { "line" } else { "lines" },
            buffer.chunks,
            if buffer.chunks == 1 {
                "chunk"
            } else {
                "chunks"
            },
            buffer.strategy,
            output::for_stdout(&buffer.name),
        )?;
    }
    run.exit(outcome)
}
