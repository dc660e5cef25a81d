//! `rlm view`: a run's trajectory as one self-contained HTML page; prints its path.

use std::io::Write as _;
use std::process::ExitCode;

use rlm_app::operations::view::ViewRecord;
use rlm_app::requests::ViewRequest;

use super::Run;
use crate::output;

pub fn run(run: &Run<'_>, request: ViewRequest) -> anyhow::Result<ExitCode> {
    let outcome = rlm_app::operations::view(&run.sources, &request, &run.context)?;
    run.print_notes(&outcome);
    if run.global.json {
        run.print_json(&outcome)?;
        return run.exit(outcome);
    }
    let mut out = output::stdout();
    for ViewRecord::View { path, .. } in &outcome.records {
        writeln!(out, "{}", output::for_stdout(&path.display().to_string()))?;
    }
    out.flush()?;
    run.exit(outcome)
}
