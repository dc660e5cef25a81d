//! The models directory: one sub-directory per imported model, named after the model.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::manifest::Manifest;

/// The `[embed]` section of the rlm configuration.
///
/// ```toml
/// [embed]
/// model = "tokenlearn-static-model"   # default model name; optional when only one is imported
/// models_dir = "/data/rlm/models"     # overrides $XDG_DATA_HOME/rlm/models
/// runtime = "/opt/onnxruntime/libonnxruntime.so"  # overrides the library recorded at import
/// load_auto_limit_mb = 16             # `rlm load` embeds by itself only up to this much new text
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct EmbedSettings {
    /// Name of the model to use by default.
    pub model: Option<String>,
    /// Where imported models live.
    pub models_dir: Option<PathBuf>,
    /// onnxruntime shared library to use for ONNX models.
    pub runtime: Option<PathBuf>,
    /// `rlm load` embeds new chunks unasked only when it loaded at most this many MiB of text.
    pub load_auto_limit_mb: Option<u64>,
}

/// One entry of [`ModelsDir::list`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct InstalledModel {
    /// Directory name.
    pub name: String,
    /// The model directory.
    pub dir: PathBuf,
    /// The manifest, or why it could not be read (the directory is then unusable).
    pub manifest: std::result::Result<Manifest, String>,
}

/// A directory holding imported models.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelsDir {
    root: PathBuf,
}

impl ModelsDir {
    /// Uses `root` (it need not exist yet; [`crate::import`] creates it).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Every model directory, sorted by name; hidden entries (imports in progress) are skipped.
    pub fn list(&self) -> Result<Vec<InstalledModel>> {
        let entries = match std::fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(err) => return Err(Error::io(&self.root, err)),
        };
        let mut models = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|err| Error::io(&self.root, err))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let dir = entry.path();
            if name.starts_with('.') || !dir.is_dir() {
                continue;
            }
            let manifest = Manifest::read(&dir).map_err(|err| err.to_string());
            models.push(InstalledModel {
                name,
                dir,
                manifest,
            });
        }
        models.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(models)
    }

    /// The directory of the model called `name`.
    pub fn model_dir(&self, name: &str) -> Result<PathBuf> {
        validate_name(name)?;
        let dir = self.root.join(name);
        if dir.is_dir() {
            Ok(dir)
        } else {
            Err(Error::UnknownModel {
                name: name.to_owned(),
                dir: self.root.clone(),
            })
        }
    }

    /// Picks the model to use: `configured` if given (it must exist); otherwise the only
    /// imported model. `Ok(None)` when none is imported, so the caller can fall back to BM25.
    /// Several models and none configured is an error naming them.
    pub fn resolve(&self, configured: Option<&str>) -> Result<Option<PathBuf>> {
        if let Some(name) = configured {
            return self.model_dir(name).map(Some);
        }
        let usable: Vec<InstalledModel> = self
            .list()?
            .into_iter()
            .filter(|model| model.manifest.is_ok())
            .collect();
        match usable.as_slice() {
            [] => Ok(None),
            [only] => Ok(Some(only.dir.clone())),
            several => Err(Error::AmbiguousModel {
                names: several.iter().map(|model| model.name.clone()).collect(),
            }),
        }
    }

    /// Deletes the model called `name` and returns the removed directory.
    pub fn remove(&self, name: &str) -> Result<PathBuf> {
        let dir = self.model_dir(name)?;
        // Refuse to delete a directory this crate did not create.
        Manifest::read(&dir)?;
        std::fs::remove_dir_all(&dir).map_err(|err| Error::io(&dir, err))?;
        Ok(dir)
    }
}

/// Model names become directory names: keep them boring.
pub(crate) fn validate_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 100
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidName {
            name: name.to_owned(),
        })
    }
}
