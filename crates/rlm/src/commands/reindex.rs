//! `rlm reindex`: rebuild the BM25 index from the stored text, then fill in missing vectors
//! when the store's embedding model is available.

use std::process::ExitCode;

use rlm_app::requests::ReindexRequest;

use super::Run;

pub fn run(run: &Run<'_>, request: ReindexRequest) -> anyhow::Result<ExitCode> {
    let outcome = rlm_app::operations::reindex(&run.sources, &request, &run.context)?;
    if run.global.json {
        run.print_json(&outcome)?;
    }
    run.exit(outcome)
}
