//! `rlm load`: read, chunk, store and index files. Progress, skipped files and the closing
//! line come as events (`progress/store.rs`); `--json` prints the load's record.

use std::process::ExitCode;

use rlm_app::requests::LoadRequest;

use super::Run;

pub fn run(run: &Run<'_>, request: LoadRequest) -> anyhow::Result<ExitCode> {
    // Without `--json` the record is not printed: the load counts its buffers, not lists them.
    let context = if run.global.json {
        run.context.clone()
    } else {
        run.context.clone().dropping_records()
    };
    let outcome = rlm_app::operations::load(&run.sources, &request, &context)?;
    if run.global.json {
        run.print_json(&outcome)?;
    }
    run.exit(outcome)
}
