//! `load`: read, chunk, store and index files.
//!
//! A path that cannot be read, or a file named in the request that cannot be stored (binary,
//! too large), is a problem for that path only: the rest is loaded and the load ends with an
//! input error status. Files found while walking a directory and skipped are told as events
//! (a front end summarises them by reason).

use std::collections::HashSet;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::time::Instant;

use rlm_store::{LoadEvent, LoadReport, Source};

use crate::error::{AppError, input_error, store_error};
use crate::events::Event;
use crate::requests::LoadRequest;
use crate::settings::{EmbedOnLoad, LoadSettings, Sources};
use crate::text::human_bytes;
use crate::{Context, ExitStatus, Outcome};

/// What the command line names: sources, the directories walked, and per-path errors.
struct Collected {
    sources: Vec<Source>,
    /// Names of sources given directly (a file or stdin): skipping one is an error.
    named: HashSet<String>,
    /// Directories walked; their buffers whose files are gone are removed.
    directories: Vec<PathBuf>,
    /// Paths that could not be read.
    errors: Vec<anyhow::Error>,
}

fn collect(paths: &[PathBuf], settings: &LoadSettings, context: &Context) -> Collected {
    let mut collected = Collected {
        sources: Vec::new(),
        named: HashSet::new(),
        directories: Vec::new(),
        errors: Vec::new(),
    };
    for path in paths {
        if path.as_os_str() == "-" {
            let stdin = match context.stdin("load") {
                Ok(stdin) => stdin,
                Err(err) => {
                    collected.errors.push(err);
                    continue;
                }
            };
            let source = Source::reader("stdin", stdin);
            collected.named.insert(source.name().to_owned());
            collected.sources.push(source);
            continue;
        }
        match rlm_store::collect_sources_with(std::slice::from_ref(path), &settings.walk) {
            Ok(found) if path.is_dir() => {
                collected.directories.push(path.clone());
                collected.sources.extend(found);
            }
            Ok(found) => {
                collected
                    .named
                    .extend(found.iter().map(|source| source.name().to_owned()));
                collected.sources.extend(found);
            }
            Err(err) => collected.errors.push(anyhow::Error::new(err)),
        }
    }
    collected
}

/// What `rlm load --json` prints: one record for the whole load.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LoadRecord {
    /// What the load wrote, left alone, skipped and removed.
    Load(LoadReport),
}

/// Loads what `request` names, with progress as events. A path that cannot be read, or a named
/// file that cannot be stored, is reported and the rest is loaded, ending with an input error
/// status.
pub fn load(
    sources: &Sources,
    request: &LoadRequest,
    context: &Context,
) -> anyhow::Result<Outcome<LoadRecord>> {
    if request.paths.is_empty() {
        return Err(input_error("load needs at least one path (`-` reads stdin)").into());
    }
    let settings = LoadSettings::resolve(request, sources)?;
    let Collected {
        sources: mut inputs,
        mut named,
        directories,
        errors,
    } = collect(&request.paths, &settings, context);
    let mut failed = !errors.is_empty();
    for err in &errors {
        context.problem(err);
    }
    if let Some(name) = &settings.name {
        if inputs.len() != 1 {
            return Err(input_error(format!(
                "--name needs exactly one file or stdin, but {} sources were given",
                inputs.len()
            ))
            .into());
        }
        if named.remove(inputs[0].name()) {
            named.insert(name.clone());
        }
        inputs[0].rename(name.clone());
    }
    if inputs.is_empty() && failed {
        return Ok(Outcome::ended(Vec::new(), ExitStatus::InputError));
    }
    rlm_store::release_freed_memory_promptly();
    let limit_error = |err| {
        AppError::input(anyhow::Error::new(err))
            .with_hint("leave --max-file-size out for the most one buffer holds")
    };
    if let Some(bytes) = request.max_file_size {
        // Before the store is opened, so a refused flag creates nothing.
        rlm_store::check_max_buffer_bytes(bytes).map_err(limit_error)?;
    }
    let mut store = settings.store.open()?;
    store.set_list_loaded(context.keeps_records);
    if let Some(bytes) = request.max_file_size {
        store.set_max_buffer_bytes(bytes).map_err(limit_error)?;
    }
    let started = Instant::now();
    let mut callback = |event: LoadEvent<'_>| {
        match &event {
            LoadEvent::Skipped(skipped) if named.contains(&skipped.name) => {
                failed = true;
                context.problem(&anyhow::anyhow!(
                    "cannot load {}: {}",
                    skipped.name,
                    skipped.reason
                ));
            }
            LoadEvent::Loaded(buffer) => {
                context.emit(&Event::Load(&event));
                if buffer.replaced && settings.name.is_none() && buffer.name == "stdin" {
                    context.note(
                        "replaced the buffer `stdin` of an earlier load; pass --name NAME to keep both",
                    );
                }
            }
            _ => context.emit(&Event::Load(&event)),
        }
        if context.stop.is_stopped() {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    let report = store
        .load_and_prune(inputs, &directories, &settings.chunking, &mut callback)
        .map_err(store_error)?;
    context.emit(&Event::Loaded {
        report: &report,
        seconds: started.elapsed().as_secs_f64(),
    });
    if settings.embed != EmbedOnLoad::Never && report.totals.buffers > 0 {
        let loaded_bytes = report.totals.bytes;
        embed_after_load(
            context,
            sources,
            &mut store,
            settings.embedding_model.as_deref(),
            settings.embed,
            loaded_bytes,
        )?;
    }
    let status = if failed {
        ExitStatus::InputError
    } else {
        ExitStatus::Success
    };
    Ok(Outcome::ended(vec![LoadRecord::Load(report)], status))
}

/// Embeds the new chunks as `policy` says. Unasked (`Auto`), only a static model embeds, and
/// only a load of at most `max_bytes`: the dense tier runs at tens of chunks per second and a
/// static model at about 1 MiB/s, so a big load would otherwise wait minutes for vectors.
fn embed_after_load(
    context: &Context,
    sources: &Sources,
    store: &mut rlm_store::Store,
    model: Option<&str>,
    policy: EmbedOnLoad,
    loaded_bytes: u64,
) -> anyhow::Result<()> {
    let note = |text: String| context.note(&text);
    if let EmbedOnLoad::Auto { max_bytes } = policy
        && loaded_bytes > max_bytes
    {
        let any_model = crate::settings::EmbeddingSettings::resolve(model, sources)
            .ok()
            .and_then(|settings| settings.models_dir.list().ok())
            .is_some_and(|models| !models.is_empty());
        if any_model {
            note(format!(
                "new chunks are not embedded: this load added {} (over the {} that `rlm load` \
                 embeds by itself); run `rlm embed`, or load with --embed",
                human_bytes(loaded_bytes),
                human_bytes(max_bytes)
            ));
        }
        return Ok(());
    }
    let stored = store.embedding_status().map_err(store_error)?.model;
    let embedder = match super::embed::stored_model_embedder(model, stored.as_deref(), sources) {
        Ok(embedder) => embedder,
        // The load itself succeeded; an unclear model choice only postpones the vectors.
        Err(err) if model.is_none() && policy != EmbedOnLoad::Always => {
            note(format!(
                "new chunks are not embedded: {err}; run `rlm embed --model NAME`"
            ));
            return Ok(());
        }
        Err(err) => return Err(err),
    };
    let Some(embedder) = embedder else {
        if policy == EmbedOnLoad::Always {
            return Err(AppError::input(anyhow::anyhow!(
                "--embed: no embedding model is imported"
            ))
            .with_hint("import one with `rlm models import`, see `rlm models --help`")
            .into());
        }
        tracing::debug!("no embedding model imported; chunks are searchable with BM25 only");
        return Ok(());
    };
    if embedder.kind() != rlm_embed::ModelKind::Static && policy != EmbedOnLoad::Always {
        note(format!(
            "{} is a dense model (tens of chunks/s); run `rlm embed` (or load with --embed) \
             to compute vectors",
            embedder.model_id()
        ));
        return Ok(());
    }
    super::embed::embed_chunks(context, store, embedder.as_ref(), false)?;
    Ok(())
}
