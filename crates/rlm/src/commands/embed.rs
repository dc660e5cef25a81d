//! `rlm embed`: vectors for every stored chunk that has none.

use std::process::ExitCode;

use rlm_app::requests::EmbedRequest;

use super::Run;

pub fn run(run: &Run<'_>, request: EmbedRequest) -> anyhow::Result<ExitCode> {
    let outcome = rlm_app::operations::embed(&run.sources, &request, &run.context)?;
    if run.global.json {
        run.print_json(&outcome)?;
    }
    run.exit(outcome)
}
