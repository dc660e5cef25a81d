//! Which embedding model to use: `[embed]` configuration, environment, models directory.
//!
//! Store commands (`rlm load`, `rlm embed`, `rlm search`) call [`open_embedder`] once and hand
//! the `&dyn Embedder` to the store library; `rlm models` uses [`settings`] for the directory.

use std::path::PathBuf;

use anyhow::Context as _;
use rlm_embed::{EmbedSettings, Embedder, Error as EmbedError, LoadOptions, ModelsDir};

use crate::config::LoadedConfig;
use crate::env;
use crate::error::CliError;

/// The `[embed]` section with environment overrides applied.
#[derive(Debug)]
pub struct ResolvedEmbed {
    pub models_dir: ModelsDir,
    /// Model name to use; `None` picks the only imported model.
    pub model: Option<String>,
    /// onnxruntime library that overrides the one recorded at import.
    pub runtime: Option<PathBuf>,
}

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
}

/// Precedence: environment > configuration files > default location.
pub fn settings(config: &LoadedConfig) -> anyhow::Result<ResolvedEmbed> {
    let section: EmbedSettings = config.section("embed")?;
    let root = env_path(env::RLM_MODELS_DIR)
        .or(section.models_dir)
        .or_else(|| {
            ModelsDir::default_root(
                std::env::var_os(env::XDG_DATA_HOME).as_deref(),
                std::env::var_os(env::HOME).as_deref(),
            )
        })
        .ok_or_else(|| {
            CliError::input(anyhow::anyhow!("no models directory: HOME is not set"))
                .with_hint(format!("set {} or [embed] models_dir", env::RLM_MODELS_DIR))
        })?;
    let model = std::env::var(env::RLM_EMBED_MODEL)
        .ok()
        .filter(|value| !value.is_empty())
        .or(section.model);
    Ok(ResolvedEmbed {
        models_dir: ModelsDir::new(root),
        model,
        runtime: env_path(env::RLM_ONNXRUNTIME).or(section.runtime),
    })
}

/// Loads the configured embedding model, or `Ok(None)` when no model is imported (the
/// caller falls back to BM25 and says so once). `name` overrides the configured model.
#[allow(
    dead_code,
    reason = "called by the store commands (rlm load/embed/search)"
)]
pub fn open_embedder(
    config: &LoadedConfig,
    name: Option<&str>,
) -> anyhow::Result<Option<Box<dyn Embedder>>> {
    let resolved = settings(config)?;
    let wanted = name.map(str::to_owned).or(resolved.model);
    let dir = resolved
        .models_dir
        .resolve(wanted.as_deref())
        .map_err(embed_error)?;
    let Some(dir) = dir else {
        return Ok(None);
    };
    let options = LoadOptions::default().with_runtime(resolved.runtime);
    let embedder = rlm_embed::load_with(&dir, &options)
        .map_err(embed_error)
        .with_context(|| format!("failed to load embedding model {}", dir.display()))?;
    Ok(Some(embedder))
}

/// Maps an rlm-embed error to the exit code and hint a user needs.
pub fn embed_error(err: EmbedError) -> anyhow::Error {
    let hint = match &err {
        EmbedError::NoRuntime { .. } => Some(format!(
            "import with --runtime (libonnxruntime.so or the onnxruntime wheel), or set {} or [embed] runtime",
            env::RLM_ONNXRUNTIME
        )),
        EmbedError::FeatureDisabled { feature, .. } => {
            Some(format!("rebuild rlm with `--features {feature}`"))
        }
        EmbedError::AmbiguousModel { .. } => Some(format!(
            "choose one with `model = \"NAME\"` in the [embed] configuration section or {}",
            env::RLM_EMBED_MODEL
        )),
        EmbedError::UnknownModel { .. } => Some("see `rlm models list`".to_owned()),
        EmbedError::AlreadyExists { name, .. } => Some(format!(
            "remove it first (`rlm models remove {name}`) or import under another --name"
        )),
        EmbedError::ModelMismatch { .. } => Some(
            "re-embed with the current model, or select the model that made the stored vectors"
                .to_owned(),
        ),
        _ => None,
    };
    let input = err.is_input_error();
    let mut cli = if input {
        CliError::input(err)
    } else {
        CliError::failed(err)
    };
    if let Some(hint) = hint {
        cli = cli.with_hint(hint);
    }
    cli.into()
}
