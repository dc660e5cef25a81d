//! `rlm load`: read, chunk, store and index files.
//!
//! A path that cannot be read, or a file named on the command line that cannot be stored
//! (binary, too large), is an error for that path only: the rest is loaded and the command
//! exits 2. Files found while walking a directory and skipped are summarised by reason (`-v`
//! lists them).

use std::collections::{BTreeMap, HashSet};
use std::io::{IsTerminal as _, Write};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use rlm_store::{LoadEvent, LoadReport, Source};

use super::Outcome;
use crate::cli::{GlobalArgs, LoadRequest};
use crate::error::{AppError, EXIT_USAGE, input_error, store_error};
use crate::output::{self, count, human_bytes, neutralize};
use crate::settings::{EmbedOnLoad, LoadSettings, Sources};

/// Skipped files of one reason named one by one; more are counted (`-v` names them all).
const SKIPS_NAMED: usize = 3;

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

fn collect(paths: &[PathBuf], settings: &LoadSettings) -> Collected {
    let mut collected = Collected {
        sources: Vec::new(),
        named: HashSet::new(),
        directories: Vec::new(),
        errors: Vec::new(),
    };
    for path in paths {
        if path.as_os_str() == "-" {
            let source = Source::reader("stdin", std::io::stdin());
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
#[derive(Debug, serde::Serialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LoadRecord {
    /// What the load wrote, left alone, skipped and removed.
    Load(LoadReport),
}

pub fn run(global: &GlobalArgs, sources: &Sources, args: LoadRequest) -> anyhow::Result<ExitCode> {
    let outcome = execute(global, sources, &args)?;
    if global.json {
        for record in &outcome.records {
            output::print_json(record)?;
        }
    }
    Ok(outcome.code)
}

/// Loads what `args` names, with progress and the closing summary on stderr as `global`
/// says. A path that cannot be read, or a named file that cannot be stored, is reported and
/// the rest is loaded, with exit code 2.
pub fn execute(
    global: &GlobalArgs,
    sources: &Sources,
    args: &LoadRequest,
) -> anyhow::Result<Outcome<LoadRecord>> {
    let settings = LoadSettings::resolve(args, sources)?;
    let Collected {
        sources: mut inputs,
        mut named,
        directories,
        errors,
    } = collect(&args.paths, &settings);
    let mut failed = !errors.is_empty();
    for err in &errors {
        let _ = crate::error::report(err);
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
        return Ok(Outcome {
            code: ExitCode::from(EXIT_USAGE),
            ..Outcome::success(Vec::new())
        });
    }
    rlm_store::release_freed_memory_promptly();
    let limit_error = |err| {
        AppError::input(anyhow::Error::new(err))
            .with_hint("leave --max-file-size out for the most one buffer holds")
    };
    if let Some(bytes) = args.max_file_size {
        // Before the store is opened, so a refused flag creates nothing.
        rlm_store::check_max_buffer_bytes(bytes).map_err(limit_error)?;
    }
    let mut store = settings.store.open()?;
    if let Some(bytes) = args.max_file_size {
        store.set_max_buffer_bytes(bytes).map_err(limit_error)?;
    }
    let started = Instant::now();
    let live = !global.quiet && std::io::stderr().is_terminal();
    // Progress lines are redrawn in place on a terminal only.
    let clear = if live { "\r\x1b[K" } else { "" };
    let verbose = global.verbose > 0 && !global.quiet;
    let mut skipped_by_reason: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut stderr = anstream::stderr();
    let mut callback = |event: LoadEvent<'_>| {
        match event {
            LoadEvent::Reading { index, total, name } if live => {
                let name = neutralize(name);
                let _ = write!(stderr, "{clear}loading {}/{total} {name}", index + 1);
            }
            LoadEvent::Streaming { name, bytes, total } if live => {
                let name = neutralize(name);
                let _ = write!(
                    stderr,
                    "{clear}loading {name} {} of {}",
                    human_bytes(bytes),
                    human_bytes(total)
                );
            }
            LoadEvent::Skipped(skipped) if named.contains(&skipped.name) => {
                failed = true;
                let _ = write!(stderr, "{clear}");
                let _ = crate::error::report(&anyhow::anyhow!(
                    "cannot load {}: {}",
                    neutralize(&skipped.name),
                    skipped.reason
                ));
            }
            LoadEvent::Skipped(skipped) if verbose => {
                let _ = writeln!(
                    stderr,
                    "{clear}note: skipped {}: {}",
                    neutralize(&skipped.name),
                    skipped.reason
                );
            }
            LoadEvent::Skipped(skipped) => {
                skipped_by_reason
                    .entry(skipped.reason.clone())
                    .or_default()
                    .push(skipped.name.clone());
            }
            LoadEvent::Loaded(buffer) if !global.quiet => {
                for note in &buffer.notes {
                    let _ = writeln!(stderr, "{clear}note: {}: {note}", neutralize(&buffer.name));
                }
                if buffer.replaced && settings.name.is_none() && buffer.name == "stdin" {
                    let _ = writeln!(
                        stderr,
                        "{clear}note: replaced the buffer `stdin` of an earlier load; \
                         pass --name NAME to keep both"
                    );
                }
            }
            LoadEvent::Removed(name) if verbose => {
                let name = neutralize(name);
                let _ = writeln!(stderr, "{clear}note: removed {name}: its file is gone");
            }
            LoadEvent::Indexing(step) if live => {
                let _ = write!(
                    stderr,
                    "{clear}indexing {}/{} chunks",
                    step.chunks, step.total
                );
            }
            _ => {}
        }
        ControlFlow::Continue(())
    };
    let report = store
        .load_and_prune(inputs, &directories, &settings.chunking, &mut callback)
        .map_err(store_error)?;
    let _ = write!(stderr, "{clear}");
    if !global.quiet {
        print_skips(&mut stderr, &skipped_by_reason);
    }
    if !global.json && !global.quiet {
        print_summary(&mut stderr, &report, started.elapsed());
    }
    if settings.embed != EmbedOnLoad::Never && !report.loaded.is_empty() {
        let loaded_bytes = report.loaded.iter().map(|b| b.bytes).sum();
        embed_after_load(
            global,
            sources,
            &mut store,
            settings.embedding_model.as_deref(),
            settings.embed,
            loaded_bytes,
        )?;
    }
    Ok(Outcome {
        code: if failed {
            ExitCode::from(EXIT_USAGE)
        } else {
            ExitCode::SUCCESS
        },
        ..Outcome::success(vec![LoadRecord::Load(report)])
    })
}

/// The files skipped without a note of their own, by reason: named when few, counted when many.
fn print_skips(stderr: &mut impl Write, skipped_by_reason: &BTreeMap<String, Vec<String>>) {
    for (reason, names) in skipped_by_reason {
        if names.len() <= SKIPS_NAMED {
            for name in names {
                let name = neutralize(name);
                let _ = writeln!(stderr, "note: skipped {name}: {reason}");
            }
        } else {
            let _ = writeln!(
                stderr,
                "note: skipped {}: {reason} (-v lists them)",
                count(names.len() as u64, "file")
            );
        }
    }
}

/// The closing line of a load: what was loaded, left, skipped and removed, and how long it took.
fn print_summary(stderr: &mut impl Write, report: &LoadReport, took: std::time::Duration) {
    let bytes: u64 = report.loaded.iter().map(|b| b.bytes).sum();
    let chunks: u64 = report.loaded.iter().map(|b| b.chunks).sum();
    let removed = if report.removed.is_empty() {
        String::new()
    } else {
        format!(", {} removed (files gone)", report.removed.len())
    };
    let _ = writeln!(
        stderr,
        "loaded {}, {}, {}; {} unchanged, {} skipped{removed} ({:.1}s)",
        count(report.loaded.len() as u64, "buffer"),
        human_bytes(bytes),
        count(chunks, "chunk"),
        report.unchanged.len(),
        report.skipped.len(),
        took.as_secs_f64()
    );
}

/// Embeds the new chunks as `policy` says. Unasked (`Auto`), only a static model embeds, and
/// only a load of at most `max_bytes`: the dense tier runs at tens of chunks per second and a
/// static model at about 1 MiB/s, so a big load would otherwise wait minutes for vectors.
fn embed_after_load(
    global: &GlobalArgs,
    sources: &Sources,
    store: &mut rlm_store::Store,
    model: Option<&str>,
    policy: EmbedOnLoad,
    loaded_bytes: u64,
) -> anyhow::Result<()> {
    let note = |text: String| {
        if !global.quiet {
            let mut stderr = anstream::stderr();
            let _ = writeln!(stderr, "note: {text}");
        }
    };
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
    super::embed::embed_chunks(global, store, embedder.as_ref(), false)?;
    Ok(())
}
