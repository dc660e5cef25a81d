//! `rlm load`: read, chunk, store and index files. Progress, skipped files and the closing
//! line come as events (`progress/store.rs`); `--json` prints the load's record.

use std::process::ExitCode;

use rlm_app::requests::LoadRequest;

use super::Run;

pub fn run(run: &Run<'_>, request: LoadRequest) -> anyhow::Result<ExitCode> {
    let outcome = rlm_app::operations::load(&run.sources, &request, &run.context)?;
    if run.global.json {
        run.print_json(&outcome)?;
    }
    run.exit(outcome)
}
