//! Every environment variable `rlm` reads, in one place.

/// Log filter override (tracing `EnvFilter` syntax).
pub const RUST_LOG: &str = "RUST_LOG";
/// Disable colour (any non-empty value), per no-color.org.
pub const NO_COLOR: &str = "NO_COLOR";
/// Base directory for the user configuration file.
pub const XDG_CONFIG_HOME: &str = "XDG_CONFIG_HOME";
/// Fallback for the user configuration directory.
pub const HOME: &str = "HOME";
/// Explicit configuration file, same as `--config`.
pub const RLM_CONFIG: &str = "RLM_CONFIG";
/// Store directory, same as `--store` (default `.rlm` in the current directory).
pub const RLM_STORE: &str = "RLM_STORE";
/// Base directory for user data; models live in `$XDG_DATA_HOME/rlm/models`.
pub const XDG_DATA_HOME: &str = "XDG_DATA_HOME";
/// Directory of imported embedding models (overrides `[embed] models_dir`).
pub const RLM_MODELS_DIR: &str = "RLM_MODELS_DIR";
/// Name of the embedding model to use (overrides `[embed] model`).
pub const RLM_EMBED_MODEL: &str = "RLM_EMBED_MODEL";
/// onnxruntime shared library for ONNX models (overrides `[embed] runtime` and the import).
pub const RLM_ONNXRUNTIME: &str = "RLM_ONNXRUNTIME";
