//! `rlm reindex`: rebuild the BM25 index from the stored text, then fill in missing vectors
//! when the store's embedding model is available.

use std::io::{IsTerminal as _, Write as _};
use std::process::ExitCode;
use std::time::Instant;

use crate::cli::{GlobalArgs, ReindexArgs};
use crate::commands::embed::{embed_chunks, stored_model_embedder};
use crate::error::store_error;
use crate::output;
use crate::settings::{Sources, StoreSettings};

pub fn run(global: &GlobalArgs, sources: &Sources, args: ReindexArgs) -> anyhow::Result<ExitCode> {
    let settings = StoreSettings::resolve(&args.location, sources)?;
    settings.require_existing()?;
    let started = Instant::now();
    let live = !global.quiet && std::io::stderr().is_terminal();
    let mut stderr = anstream::stderr();
    // Not `open`: the old index may be unreadable, and reindex does not need it.
    let report = rlm_store::Store::reindex_at(&settings.location, &mut |step| {
        if live {
            let _ = write!(
                stderr,
                "\r\x1b[Kindexing {}/{} chunks",
                step.chunks, step.total
            );
        }
    })
    .map_err(|err| {
        store_error(err).context(format!(
            "cannot rebuild the index of the store at {}",
            settings.location
        ))
    })?;
    if live {
        let _ = write!(stderr, "\r\x1b[K");
    }
    if !global.quiet {
        let _ = writeln!(
            stderr,
            "reindexed {} of {} ({:.1}s)",
            output::count(report.chunks, "chunk"),
            output::count(report.buffers, "buffer"),
            started.elapsed().as_secs_f64()
        );
    }
    let mut store = settings.open()?;
    let status = store.embedding_status().map_err(store_error)?;
    let mut vectors = Vectors {
        model: status.model.clone(),
        embedded_chunks: status.embedded_chunks,
    };
    if let Some(model) = status.model.as_deref()
        && status.embedded_chunks < status.chunks
    {
        // Only the model that made the stored vectors can add to them.
        let embedder = stored_model_embedder(args.model.as_deref(), Some(model), sources)?
            .filter(|embedder| embedder.model_id().as_str() == model);
        match embedder {
            Some(embedder) => {
                let progress = embed_chunks(global, &mut store, embedder.as_ref(), false)?;
                vectors.embedded_chunks = status.embedded_chunks + progress.done;
            }
            None => {
                if !global.quiet {
                    let _ = writeln!(
                        stderr,
                        "vectors: {} of {} chunks have one; the model {model} is not available \
                         (import it with `rlm models import`, then run `rlm embed`)",
                        status.embedded_chunks, status.chunks
                    );
                }
            }
        }
    }
    if global.json {
        output::print_json(&ReindexRecord::Reindex {
            report: &report,
            vectors,
        })?;
    }
    Ok(ExitCode::SUCCESS)
}

/// What `rlm reindex --json` prints: one record with what was indexed again.
#[derive(serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ReindexRecord<'a> {
    Reindex {
        #[serde(flatten)]
        report: &'a rlm_store::ReindexReport,
        vectors: Vectors,
    },
}

/// The store's vectors after a reindex: their model and how many chunks have one.
#[derive(serde::Serialize)]
struct Vectors {
    model: Option<String>,
    embedded_chunks: u64,
}
