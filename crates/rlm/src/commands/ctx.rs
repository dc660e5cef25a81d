//! `rlm ctx ...`: each action prints its report (or JSON); warnings go to stderr.

use std::io::Write as _;
use std::process::ExitCode;

use rlm_app::requests::CtxRequest;

use super::Run;

pub fn run(run: &Run<'_>, request: CtxRequest) -> anyhow::Result<ExitCode> {
    let outcome = rlm_app::operations::ctx(&run.sources, &request, &run.context)?;
    run.print_notes(&outcome);
    if run.global.json {
        run.print_json(&outcome)?;
        return run.exit(outcome);
    }
    let mut out = crate::output::stdout();
    for record in &outcome.records {
        write!(out, "{}", crate::output::for_stdout(&record.text))?;
    }
    out.flush()?;
    run.exit(outcome)
}
