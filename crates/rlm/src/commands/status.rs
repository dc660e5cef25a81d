//! `rlm status`: sizes, counts and index state of the store.

use std::io::Write as _;
use std::process::ExitCode;

use rlm_app::operations::status::StatusRecord;
use rlm_app::requests::StatusRequest;
use rlm_store::IndexHealth;

use super::Run;
use crate::output::{self, human_bytes};

pub fn run(run: &Run<'_>, request: StatusRequest) -> anyhow::Result<ExitCode> {
    let outcome = rlm_app::operations::status(&run.sources, &request, &run.context)?;
    if run.global.json {
        run.print_json(&outcome)?;
        return run.exit(outcome);
    }
    let mut out = output::stdout();
    for StatusRecord::Status(status) in &outcome.records {
        writeln!(out, "store:          {}", status.dir)?;
        writeln!(out, "buffers:        {}", status.buffers)?;
        writeln!(out, "chunks:         {}", status.chunks)?;
        writeln!(out, "text:           {}", human_bytes(status.text_bytes))?;
        writeln!(
            out,
            "database:       {}",
            human_bytes(status.database_bytes)
        )?;
        writeln!(
            out,
            "bm25 index:     {} ({} chunks)",
            human_bytes(status.index_bytes),
            status.indexed_chunks
        )?;
        let state = match status.index_health {
            IndexHealth::UpToDate => "up to date".to_owned(),
            IndexHealth::Pending { buffers } => {
                format!("{buffers} buffer update(s) pending (applied by the next load)")
            }
            IndexHealth::OutOfStep { indexed, chunks } => {
                format!("OUT OF STEP: {indexed} documents for {chunks} chunks; run `rlm reindex`")
            }
        };
        writeln!(out, "index state:    {state}")?;
        match &status.embedding_model {
            Some(model) => writeln!(
                out,
                "embeddings:     {} of {} chunks ({model})",
                status.embedded_chunks, status.chunks
            )?,
            None => writeln!(out, "embeddings:     none (BM25 only)")?,
        }
        writeln!(out, "schema version: {}", status.schema_version)?;
        if matches!(status.index_health, IndexHealth::OutOfStep { .. }) && !run.global.quiet {
            eprintln!(
                "warning: the search index does not match the stored chunks; `rlm reindex` rebuilds it"
            );
        }
    }
    run.exit(outcome)
}
