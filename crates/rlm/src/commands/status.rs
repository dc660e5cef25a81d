//! `rlm status`: sizes, counts and index state of the store.

use std::io::Write as _;
use std::process::ExitCode;

use rlm_store::{IndexHealth, StoreStatus};
use serde::Serialize;

use crate::cli::{GlobalArgs, StatusArgs};
use crate::error::store_error;
use crate::output::{self, human_bytes};
use crate::settings::{Sources, StoreSettings};

pub fn run(global: &GlobalArgs, sources: &Sources, args: StatusArgs) -> anyhow::Result<ExitCode> {
    let store = StoreSettings::resolve(&args.location, sources)?.open_existing()?;
    let status = store.status().map_err(store_error)?;
    if global.json {
        output::print_json(&StatusRecord::Status(&status))?;
        return Ok(exit_code(&status.index_health));
    }
    let mut out = output::stdout();
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
    if matches!(status.index_health, IndexHealth::OutOfStep { .. }) && !global.quiet {
        eprintln!(
            "warning: the search index does not match the stored chunks; `rlm reindex` rebuilds it"
        );
    }
    Ok(exit_code(&status.index_health))
}

/// 1 when the index is out of step with the chunks (searches would miss text), so scripts notice.
fn exit_code(health: &IndexHealth) -> ExitCode {
    match health {
        IndexHealth::OutOfStep { .. } => ExitCode::from(crate::error::EXIT_FAILED),
        IndexHealth::UpToDate | IndexHealth::Pending { .. } => ExitCode::SUCCESS,
    }
}

/// What `rlm status --json` prints: one record.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StatusRecord<'a> {
    Status(&'a StoreStatus),
}
