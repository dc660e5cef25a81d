//! The one error type of this crate.

use std::path::PathBuf;

/// Everything that can go wrong while importing, loading or using a model, or searching vectors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file or directory could not be read or written.
    #[error("cannot access {path}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A directory has no `rlm-model.json`: it was never imported.
    #[error("{dir} is not an imported model (no {file})", file = crate::MANIFEST_FILE)]
    NotImported {
        /// The directory that was expected to hold a model.
        dir: PathBuf,
    },

    /// The manifest exists but cannot be understood.
    #[error("invalid model manifest {path}: {reason}")]
    InvalidManifest {
        /// The manifest file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },

    /// A model file is missing, truncated, or does not have the expected layout.
    #[error("corrupt or unsupported model file {path}: {reason}")]
    CorruptModel {
        /// The file that failed to parse.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },

    /// An imported file no longer has the content recorded at import time.
    #[error("model file {path} changed since import (expected sha256 {expected}, found {found})")]
    ChangedSinceImport {
        /// The file that changed.
        path: PathBuf,
        /// Digest recorded in the manifest.
        expected: String,
        /// Digest of the file now.
        found: String,
    },

    /// The thing given to `import` holds no model this crate knows how to use.
    #[error("no usable model in {path}: {reason}")]
    NoModel {
        /// The directory or wheel that was searched.
        path: PathBuf,
        /// What was looked for.
        reason: String,
    },

    /// Two parts of a model (or a query and an index) disagree on the vector dimension.
    #[error("dimension mismatch in {context}: expected {expected}, found {found}")]
    DimensionMismatch {
        /// Where the mismatch was found.
        context: String,
        /// The dimension that was required.
        expected: usize,
        /// The dimension that was seen.
        found: usize,
    },

    /// Vectors made by one model were about to be mixed with another model's.
    #[error(
        "vectors were made by model {stored}, but the current model is {current}; \
         vectors from different models cannot be compared"
    )]
    ModelMismatch {
        /// The model id recorded with the existing vectors.
        stored: String,
        /// The model id of the embedder in use.
        current: String,
    },

    /// The tokenizer failed to load or to encode.
    #[error("tokenizer error in {path}: {reason}")]
    Tokenizer {
        /// The tokenizer file.
        path: PathBuf,
        /// The message of the tokenizers crate.
        reason: String,
    },

    /// The model needs a cargo feature this build was compiled without.
    #[error("{kind} models need rlm built with the `{feature}` cargo feature")]
    FeatureDisabled {
        /// The model kind (e.g. `onnx`).
        kind: &'static str,
        /// The cargo feature that enables it.
        feature: &'static str,
    },

    /// An ONNX model needs the onnxruntime shared library and none is configured.
    #[error("no onnxruntime library configured for model {model}")]
    NoRuntime {
        /// The model id.
        model: String,
    },

    /// onnxruntime failed to load the library, build a session, or run the model.
    #[error("onnxruntime: {reason}")]
    Runtime {
        /// The runtime's message.
        reason: String,
    },

    /// A model name is not valid as a directory name.
    #[error("invalid model name {name:?}: use letters, digits, '-', '_' and '.' only")]
    InvalidName {
        /// The rejected name.
        name: String,
    },

    /// A model with this name is already imported.
    #[error("a model named {name} already exists in {dir}")]
    AlreadyExists {
        /// The model name.
        name: String,
        /// The models directory.
        dir: PathBuf,
    },

    /// No imported model has this name.
    #[error("no model named {name} in {dir}")]
    UnknownModel {
        /// The requested name.
        name: String,
        /// The models directory searched.
        dir: PathBuf,
    },

    /// Several models are imported and none was chosen.
    #[error("{count} models are imported ({names}) and none is chosen", count = names.len(), names = names.join(", "))]
    AmbiguousModel {
        /// The imported model names.
        names: Vec<String>,
    },

    /// Serialized vectors or an index could not be decoded.
    #[error("invalid vector data: {reason}")]
    InvalidVectors {
        /// What is wrong.
        reason: String,
    },
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn corrupt(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        Self::CorruptModel {
            path: path.into(),
            reason: reason.into(),
        }
    }

    /// Whether the error is caused by what the user passed in (a path, a name, a file) rather
    /// than by the machine; the CLI maps these to exit code 2.
    pub fn is_input_error(&self) -> bool {
        !matches!(self, Self::Io { .. } | Self::Runtime { .. })
    }
}

/// Shorthand for this crate's results.
pub type Result<T, E = Error> = std::result::Result<T, E>;
