//! `reindex`: rebuild the BM25 index from the stored text, then fill in missing vectors when
//! the store's embedding model is available.

use std::time::Instant;

use crate::error::store_error;
use crate::events::Event;
use crate::operations::embed::{embed_chunks, stored_model_embedder};
use crate::requests::ReindexRequest;
use crate::settings::{Sources, StoreSettings};
use crate::text::count;
use crate::{Context, Outcome};

/// What `rlm reindex --json` prints: one record with what was indexed again.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ReindexRecord {
    /// Chunks and buffers indexed, and the store's vectors afterwards.
    Reindex {
        #[serde(flatten)]
        report: rlm_store::ReindexReport,
        vectors: Vectors,
    },
}

/// The store's vectors after a reindex: their model and how many chunks have one.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct Vectors {
    pub model: Option<String>,
    pub embedded_chunks: u64,
}

/// Rebuilds the index, then embeds the chunks without a vector when the model that made the
/// others is here.
pub fn reindex(
    sources: &Sources,
    request: &ReindexRequest,
    context: &Context,
) -> anyhow::Result<Outcome<ReindexRecord>> {
    let settings = StoreSettings::resolve(sources)?;
    settings.require_existing()?;
    let started = Instant::now();
    // Not `open`: the old index may be unreadable, and reindex does not need it.
    let report = rlm_store::Store::reindex_at(&settings.location, &mut |step| {
        context.emit(&Event::Indexing(step));
    })
    .map_err(|err| {
        store_error(err).context(format!(
            "cannot rebuild the index of the store at {}",
            settings.location
        ))
    })?;
    context.info(&format!(
        "reindexed {} of {} ({:.1}s)",
        count(report.chunks, "chunk"),
        count(report.buffers, "buffer"),
        started.elapsed().as_secs_f64()
    ));
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
        let embedder = stored_model_embedder(request.model.as_deref(), Some(model), sources)?
            .filter(|embedder| embedder.model_id().as_str() == model);
        match embedder {
            Some(embedder) => {
                let progress = embed_chunks(context, &mut store, embedder.as_ref(), false)?;
                vectors.embedded_chunks = status.embedded_chunks + progress.done;
            }
            None => context.info(&format!(
                "vectors: {} of {} chunks have one; the model {model} is not available \
                 (import it with `rlm models import`, then run `rlm embed`)",
                status.embedded_chunks, status.chunks
            )),
        }
    }
    Ok(Outcome::success(vec![ReindexRecord::Reindex {
        report,
        vectors,
    }]))
}
