//! `rlm delete`: remove buffers (their text, chunks and index entries).

use std::io::Write as _;
use std::process::ExitCode;

use rlm_app::operations::delete::DeleteRecord;
use rlm_app::requests::DeleteRequest;

use super::Run;

pub fn run(run: &Run<'_>, request: DeleteRequest) -> anyhow::Result<ExitCode> {
    let outcome = rlm_app::operations::delete(&run.sources, &request, &run.context)?;
    run.print_notes(&outcome);
    if run.global.json {
        run.print_json(&outcome)?;
    } else if !run.global.quiet {
        let mut stderr = anstream::stderr();
        for DeleteRecord::Deleted(buffer) in &outcome.records {
            let name = crate::output::neutralize(&buffer.name);
            let _ = writeln!(stderr, "deleted {name} ({} chunks)", buffer.chunks);
        }
    }
    run.exit(outcome)
}
