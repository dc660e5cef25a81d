//! `rlm load`: read, chunk, store and index files.

use std::io::{IsTerminal as _, Write as _};
use std::ops::ControlFlow;
use std::process::ExitCode;
use std::time::Instant;

use rlm_store::{LoadEvent, Source};

use crate::cli::{GlobalArgs, LoadArgs};
use crate::error::{input_error, store_error};
use crate::output::{self, human_bytes, neutralize};
use crate::settings::{EmbeddingSettings, LoadSettings, Sources};

pub fn run(global: &GlobalArgs, sources: &Sources, args: LoadArgs) -> anyhow::Result<ExitCode> {
    let settings = LoadSettings::resolve(&args, sources)?;
    let mut inputs = Vec::new();
    for path in &args.paths {
        if path.as_os_str() == "-" {
            inputs.push(Source::reader("stdin", std::io::stdin()));
        } else {
            inputs.extend(
                rlm_store::collect_sources(std::slice::from_ref(path)).map_err(store_error)?,
            );
        }
    }
    if let Some(name) = &settings.name {
        if inputs.len() != 1 {
            return Err(input_error(format!(
                "--name needs exactly one file or stdin, but {} sources were given",
                inputs.len()
            ))
            .into());
        }
        inputs[0].rename(name.clone());
    }
    rlm_store::release_freed_memory_promptly();
    let mut store = settings.store.open()?;
    let started = Instant::now();
    let live = !global.quiet && std::io::stderr().is_terminal();
    let mut stderr = anstream::stderr();
    let mut callback = |event: LoadEvent<'_>| {
        match event {
            LoadEvent::Reading { index, total, name } if live => {
                let name = neutralize(name);
                let _ = write!(stderr, "\r\x1b[Kloading {}/{total} {name}", index + 1);
            }
            LoadEvent::Streaming { name, bytes, total } if live => {
                let name = neutralize(name);
                let _ = write!(
                    stderr,
                    "\r\x1b[Kloading {name} {} of {}",
                    human_bytes(bytes),
                    human_bytes(total)
                );
            }
            LoadEvent::Skipped(skipped) if !global.quiet => {
                let _ = writeln!(
                    stderr,
                    "\r\x1b[Knote: skipped {}: {}",
                    neutralize(&skipped.name),
                    neutralize(&skipped.reason.to_string())
                );
            }
            LoadEvent::Indexing(step) if live => {
                let _ = write!(
                    stderr,
                    "\r\x1b[Kindexing {}/{} chunks",
                    step.chunks, step.total
                );
            }
            _ => {}
        }
        ControlFlow::Continue(())
    };
    let report = store
        .load(inputs, &settings.chunking, &mut callback)
        .map_err(store_error)?;
    if live {
        let _ = write!(stderr, "\r\x1b[K");
    }
    if global.json {
        output::print_record("load", &report)?;
    } else if !global.quiet {
        let bytes: u64 = report.loaded.iter().map(|b| b.bytes).sum();
        let chunks: u64 = report.loaded.iter().map(|b| b.chunks).sum();
        let _ = writeln!(
            stderr,
            "loaded {} buffer(s), {}, {chunks} chunks; {} unchanged, {} skipped ({:.1}s)",
            report.loaded.len(),
            human_bytes(bytes),
            report.unchanged.len(),
            report.skipped.len(),
            started.elapsed().as_secs_f64()
        );
    }
    if settings.embed && !report.loaded.is_empty() {
        let embedding = EmbeddingSettings::resolve(settings.embedding_model.as_deref(), sources)?;
        embed_after_load(global, &mut store, &embedding)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Embeds the new chunks when a fast (static) model is available. The dense tier runs at tens
/// of chunks per second, so it is left to an explicit `rlm embed`.
fn embed_after_load(
    global: &GlobalArgs,
    store: &mut rlm_store::Store,
    embedding: &EmbeddingSettings,
) -> anyhow::Result<()> {
    let Some(embedder) = embedding.open_embedder()? else {
        tracing::debug!("no embedding model imported; chunks are searchable with BM25 only");
        return Ok(());
    };
    if embedder.kind() != rlm_embed::ModelKind::Static {
        if !global.quiet {
            let mut stderr = anstream::stderr();
            let _ = writeln!(
                stderr,
                "note: {} is a dense model (tens of chunks/s); run `rlm embed` to compute vectors",
                embedder.model_id()
            );
        }
        return Ok(());
    }
    super::embed::embed_chunks(global, store, embedder.as_ref(), false)?;
    Ok(())
}
