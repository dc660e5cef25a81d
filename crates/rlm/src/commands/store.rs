//! `rlm store copy SRC DST`: a store moved between a directory and PostgreSQL, either way.

use std::io::Write as _;
use std::process::ExitCode;

use rlm_app::operations::store::StoreRecord;
use rlm_app::requests::StoreRequest;

use super::Run;

pub fn run(run: &Run<'_>, request: StoreRequest) -> anyhow::Result<ExitCode> {
    let outcome = rlm_app::operations::store(&run.sources, &request, &run.context)?;
    if run.global.json {
        run.print_json(&outcome)?;
    } else if !run.global.quiet {
        for StoreRecord::Copied {
            source,
            destination,
            report,
        } in &outcome.records
        {
            writeln!(
                crate::output::stdout(),
                "copied {} buffers ({} chunks, {} vectors) from {source} into {destination}; {} already there",
                report.copied,
                report.chunks,
                report.vectors,
                report.unchanged
            )?;
        }
    }
    run.exit(outcome)
}
