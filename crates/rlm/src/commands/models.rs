//! `rlm models import|list|remove`: manage the embedding models on disk.

use std::io::Write as _;
use std::process::ExitCode;

use rlm_embed::{ImportOptions, Manifest};

use crate::cli::{GlobalArgs, ModelsAction, ModelsRequest, ModelsImportRequest};
use crate::error::embed_error;
use crate::settings::{EmbeddingSettings, Sources, env};

pub fn run(global: &GlobalArgs, sources: &Sources, args: ModelsRequest) -> anyhow::Result<ExitCode> {
    let resolved = EmbeddingSettings::resolve(None, sources)?;
    match args.action {
        ModelsAction::Import(import) => run_import(global, &resolved, import),
        ModelsAction::List => run_list(global, &resolved),
        ModelsAction::Remove(remove) => {
            let dir = resolved
                .models_dir
                .remove(&remove.name)
                .map_err(embed_error)?;
            if global.json {
                crate::output::print_json(&ModelRecord::Removed {
                    name: &remove.name,
                    dir: &dir,
                })?;
            } else {
                writeln!(
                    crate::output::stdout(),
                    "removed {} ({})",
                    remove.name,
                    dir.display()
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn run_import(
    global: &GlobalArgs,
    resolved: &EmbeddingSettings,
    args: ModelsImportRequest,
) -> anyhow::Result<ExitCode> {
    if !global.quiet {
        let path = args.path.display().to_string();
        eprintln!("importing {} ...", crate::output::neutralize(&path));
    }
    let options = ImportOptions::default()
        .with_name(args.name)
        .with_tokenizer(args.tokenizer)
        .with_runtime(args.runtime);
    let manifest =
        rlm_embed::import(&args.path, resolved.models_dir.root(), &options).map_err(embed_error)?;
    if global.json {
        crate::output::print_json(&ModelRecord::Model {
            manifest: &manifest,
            default: None,
        })?;
    } else {
        let mut out = crate::output::stdout();
        writeln!(
            out,
            "imported {} ({}, {} dimensions, id {}) into {}",
            manifest.name,
            manifest.kind,
            manifest.dimension,
            manifest.id,
            resolved.models_dir.root().join(&manifest.name).display()
        )?;
        if manifest.kind == rlm_embed::ModelKind::Onnx && manifest.runtime.is_none() {
            writeln!(
                out,
                "note: no onnxruntime library recorded; set {} or [embed] runtime before use",
                env::RLM_ONNXRUNTIME
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn run_list(global: &GlobalArgs, resolved: &EmbeddingSettings) -> anyhow::Result<ExitCode> {
    let models = resolved.models_dir.list().map_err(embed_error)?;
    let default = resolved.model.as_deref();
    if global.json {
        for model in &models {
            let record = match &model.manifest {
                Ok(manifest) => ModelRecord::Model {
                    manifest,
                    default: default.map(|default| manifest.name == default),
                },
                Err(problem) => ModelRecord::Unreadable {
                    name: &model.name,
                    dir: &model.dir,
                    problem,
                },
            };
            crate::output::print_json(&record)?;
        }
    }
    if models.is_empty() {
        // An empty result is an empty stream: the note goes to stderr (for `--json` only when
        // a person is at the terminal).
        let note = format!(
            "no models in {} (import one with `rlm models import PATH`)",
            resolved.models_dir.root().display()
        );
        if global.json {
            crate::output::terminal_note(global.quiet, &note);
        } else if !global.quiet {
            eprintln!("note: {}", crate::output::neutralize(&note));
        }
    }
    if global.json || models.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = crate::output::stdout();
    writeln!(out, "{:<28} {:<7} {:>5}  ID", "NAME", "KIND", "DIM")?;
    for model in &models {
        let marker = if default == Some(model.name.as_str()) {
            " (default)"
        } else {
            ""
        };
        match &model.manifest {
            Ok(manifest) => writeln!(
                out,
                "{:<28} {:<7} {:>5}  {}{marker}",
                manifest.name, manifest.kind, manifest.dimension, manifest.id
            )?,
            Err(problem) => writeln!(out, "{:<28} unusable: {problem}", model.name)?,
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What `rlm models import|list|remove --json` prints: a record per model.
#[derive(serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ModelRecord<'a> {
    /// An imported model's manifest and, in the list, whether it is the default.
    Model {
        #[serde(flatten)]
        manifest: &'a Manifest,
        #[serde(skip_serializing_if = "Option::is_none")]
        default: Option<bool>,
    },
    /// A model directory whose manifest cannot be read (listed as `type: model`).
    #[serde(rename = "model")]
    Unreadable {
        name: &'a str,
        dir: &'a std::path::Path,
        problem: &'a str,
    },
    /// A model `remove` deleted.
    Removed {
        name: &'a str,
        dir: &'a std::path::Path,
    },
}
