//! Which embedding model to use: `--model`, then `RLM_EMBED_MODEL` / `RLM_MODELS_DIR` /
//! `RLM_ONNXRUNTIME`, then the `[embed]` configuration section, then the models directory
//! under `$XDG_DATA_HOME/rlm`.
//!
//! Store commands (`rlm load`, `rlm embed`, `rlm search`) resolve these only when they need a
//! model, and call [`EmbeddingSettings::open_embedder`] once; `rlm models` uses the directory.

use std::path::PathBuf;

use anyhow::Context as _;
use rlm_embed::{Embedder, LoadOptions, ModelsDir};

use super::{Sources, catalog, env};
use crate::error::{AppError, embed_error};

/// The `[embed]` section with environment and flag overrides applied.
#[derive(Debug, Clone)]
pub struct EmbeddingSettings {
    pub models_dir: ModelsDir,
    /// Model name to use; `None` picks the only imported model.
    pub model: Option<String>,
    /// onnxruntime library that overrides the one recorded at import.
    pub runtime: Option<PathBuf>,
}

impl EmbeddingSettings {
    /// `model_flag` is a command's `--model`; it wins over the environment and the files.
    pub fn resolve(model_flag: Option<&str>, sources: &Sources) -> anyhow::Result<Self> {
        let root = catalog::EMBED_MODELS_DIR
            .read(sources)?
            .value
            .ok_or_else(|| {
                AppError::input(anyhow::anyhow!("no models directory: HOME is not set"))
                    .with_hint(format!("set {} or [embed] models_dir", env::RLM_MODELS_DIR))
            })?;
        let model = catalog::EMBED_MODEL
            .resolve(model_flag.map(str::to_owned), sources)?
            .value;
        Ok(Self {
            models_dir: ModelsDir::new(root),
            model,
            runtime: catalog::EMBED_RUNTIME.read(sources)?.value,
        })
    }

    /// Loads the chosen model, or `Ok(None)` when no model is imported (the caller falls back
    /// to BM25 and says so once).
    pub fn open_embedder(&self) -> anyhow::Result<Option<Box<dyn Embedder>>> {
        let dir = self
            .models_dir
            .resolve(self.model.as_deref())
            .map_err(embed_error)?;
        let Some(dir) = dir else {
            return Ok(None);
        };
        let options = LoadOptions::default().with_runtime(self.runtime.clone());
        let embedder = rlm_embed::load_with(&dir, &options)
            .map_err(embed_error)
            .with_context(|| format!("failed to load embedding model {}", dir.display()))?;
        Ok(Some(embedder))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::tests::Layout;

    #[test]
    fn flag_beats_env_beats_files_beats_data_dir() {
        let layout = Layout::new(
            Some("[embed]\nmodel = 'user'\nmodels_dir = '/user/models'\n"),
            Some("[embed]\nmodel = 'project'\n"),
        );
        let data = layout.path("data");
        let sources = layout.sources(&[("XDG_DATA_HOME", data.to_str().unwrap())]);
        let settings = EmbeddingSettings::resolve(None, &sources).unwrap();
        assert_eq!(settings.model.as_deref(), Some("project"));
        assert_eq!(
            settings.models_dir.root(),
            std::path::Path::new("/user/models")
        );

        let sources = layout.sources(&[("RLM_EMBED_MODEL", "env"), ("RLM_MODELS_DIR", "/env")]);
        let settings = EmbeddingSettings::resolve(None, &sources).unwrap();
        assert_eq!(settings.model.as_deref(), Some("env"));
        assert_eq!(settings.models_dir.root(), std::path::Path::new("/env"));
        let settings = EmbeddingSettings::resolve(Some("flag"), &sources).unwrap();
        assert_eq!(settings.model.as_deref(), Some("flag"));

        let bare = Layout::new(None, None);
        let sources = bare.sources(&[("XDG_DATA_HOME", data.to_str().unwrap())]);
        let settings = EmbeddingSettings::resolve(None, &sources).unwrap();
        assert_eq!(settings.model, None);
        assert_eq!(settings.models_dir.root(), data.join("rlm/models"));
    }
}
