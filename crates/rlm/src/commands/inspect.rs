//! `rlm inspect`: context metadata for files, stdin or inline text.

use std::io::Write as _;
use std::process::ExitCode;

use rlm_app::operations::inspect::InspectRecord;
use rlm_app::requests::InspectRequest;

use super::Run;

pub fn run(run: &Run<'_>, request: InspectRequest) -> anyhow::Result<ExitCode> {
    let outcome = rlm_app::operations::inspect(&request, &run.context)?;
    if run.global.json {
        run.print_json(&outcome)?;
        return run.exit(outcome);
    }
    let mut out = crate::output::stdout();
    for InspectRecord::Metadata { variable, metadata } in &outcome.records {
        let hint = rlm_context::render_hint(metadata, variable);
        write!(out, "{}", crate::output::for_stdout(&hint))?;
        if metadata.source.is_none() {
            writeln!(out)?;
        }
    }
    out.flush()?;
    run.exit(outcome)
}
