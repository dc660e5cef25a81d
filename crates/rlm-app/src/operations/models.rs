//! `models import|list|remove`: the embedding models on disk.

use std::path::PathBuf;

use rlm_embed::{ImportOptions, Manifest};

use crate::error::embed_error;
use crate::requests::{ModelsAction, ModelsImportRequest, ModelsRequest};
use crate::settings::{EmbeddingSettings, Sources, env};
use crate::{Context, Outcome};

/// What `rlm models import|list|remove --json` prints: a record per model.
#[derive(Debug, serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ModelRecord {
    /// An imported model's manifest and, in the list, whether it is the default.
    Model {
        #[serde(flatten)]
        manifest: Manifest,
        #[serde(skip_serializing_if = "Option::is_none")]
        default: Option<bool>,
        /// Where it was imported to (`import`; not in JSON).
        #[serde(skip)]
        dir: Option<PathBuf>,
    },
    /// A model directory whose manifest cannot be read (listed as `type: model`).
    #[serde(rename = "model")]
    Unreadable {
        name: String,
        dir: PathBuf,
        problem: String,
    },
    /// A model `remove` deleted.
    Removed { name: String, dir: PathBuf },
}

pub fn models(
    sources: &Sources,
    request: &ModelsRequest,
    context: &Context,
) -> anyhow::Result<Outcome<ModelRecord>> {
    let resolved = EmbeddingSettings::resolve(None, sources)?;
    match &request.action {
        ModelsAction::Import(import) => import_model(&resolved, import, context),
        ModelsAction::List => list(&resolved, context),
        ModelsAction::Remove(remove) => {
            let dir = resolved
                .models_dir
                .remove(&remove.name)
                .map_err(embed_error)?;
            Ok(Outcome::success(vec![ModelRecord::Removed {
                name: remove.name.clone(),
                dir,
            }]))
        }
    }
}

fn import_model(
    resolved: &EmbeddingSettings,
    request: &ModelsImportRequest,
    context: &Context,
) -> anyhow::Result<Outcome<ModelRecord>> {
    context.info(&format!("importing {} ...", request.path.display()));
    let options = ImportOptions::default()
        .with_name(request.name.clone())
        .with_tokenizer(request.tokenizer.clone())
        .with_runtime(request.runtime.clone());
    let manifest = rlm_embed::import(&request.path, resolved.models_dir.root(), &options)
        .map_err(embed_error)?;
    let mut outcome = Outcome::success(Vec::new());
    if manifest.kind == rlm_embed::ModelKind::Onnx && manifest.runtime.is_none() {
        outcome.notes.push(format!(
            "note: no onnxruntime library recorded; set {} or [embed] runtime before use",
            env::RLM_ONNXRUNTIME
        ));
    }
    let dir = resolved.models_dir.root().join(&manifest.name);
    outcome.records.push(ModelRecord::Model {
        manifest,
        default: None,
        dir: Some(dir),
    });
    Ok(outcome)
}

fn list(resolved: &EmbeddingSettings, _context: &Context) -> anyhow::Result<Outcome<ModelRecord>> {
    let models = resolved.models_dir.list().map_err(embed_error)?;
    let default = resolved.model.as_deref();
    let mut outcome = Outcome::success(Vec::new());
    if models.is_empty() {
        outcome.notes.push(format!(
            "no models in {} (import one with `rlm models import PATH`)",
            resolved.models_dir.root().display()
        ));
    }
    for model in models {
        outcome.records.push(match model.manifest {
            Ok(manifest) => ModelRecord::Model {
                default: default.map(|default| manifest.name == default),
                manifest,
                dir: None,
            },
            Err(problem) => ModelRecord::Unreadable {
                name: model.name,
                dir: model.dir,
                problem,
            },
        });
    }
    Ok(outcome)
}
