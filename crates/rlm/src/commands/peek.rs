//! `rlm peek`: part of a buffer by lines, bytes or chunk id.

use std::io::Write as _;
use std::process::ExitCode;

use rlm_app::operations::peek::PeekRecord;
use rlm_app::requests::PeekRequest;

use super::Run;
use crate::output;

pub fn run(run: &Run<'_>, request: PeekRequest) -> anyhow::Result<ExitCode> {
    let outcome = rlm_app::operations::peek(&run.sources, &request, &run.context)?;
    if run.global.json {
        run.print_json(&outcome)?;
        return run.exit(outcome);
    }
    for PeekRecord::Text { text, .. } in &outcome.records {
        // Buffer text is data: byte-exact into a pipe, neutralised on a terminal.
        let mut out = output::raw_stdout();
        out.write_all(output::for_stdout(text).as_bytes())?;
        if !text.is_empty() && !text.ends_with('\n') {
            writeln!(out)?;
        }
        out.flush()?;
    }
    run.exit(outcome)
}
