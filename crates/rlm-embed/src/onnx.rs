//! The dense tier: a MiniLM-class encoder in ONNX, run by onnxruntime (feature `onnx`).
//!
//! onnxruntime is opened from a shared library path (`ort` with `load-dynamic`), never
//! downloaded. One library per process: the first model loaded decides which. Texts are
//! tokenized with `[CLS] … [SEP]`, truncated to `max_tokens`, run in length-sorted
//! sub-batches (less padding), mean-pooled over the attention mask, and L2-normalized.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ort::environment::Environment;
use ort::session::builder::GraphOptimizationLevel;
use ort::session::{Session, SessionInputValue};
use ort::value::Tensor;
use tokenizers::Tokenizer;

use crate::error::{Error, Result};
use crate::manifest::{Manifest, ModelId, ModelKind};
use crate::pooling::{clip, normalize};
use crate::{Embedder, LoadOptions};

/// Files of an imported ONNX model.
pub(crate) const MODEL_FILE: &str = "model.onnx";
pub(crate) const TOKENIZER_FILE: &str = "tokenizer.json";

/// Texts per onnxruntime call: large enough to use both cores, small enough that padding to
/// the longest text in the sub-batch wastes little.
const SUB_BATCH: usize = 16;

/// The process-wide onnxruntime environment and the library it came from.
static RUNTIME: Mutex<Option<(PathBuf, Environment)>> = Mutex::new(None);

/// A loaded ONNX encoder.
pub struct OnnxEmbedder {
    id: ModelId,
    dimension: usize,
    max_tokens: usize,
    tokenizer: Tokenizer,
    tokenizer_path: PathBuf,
    // `Session::run` takes `&mut self`; embedding calls are serialized, each using all cores.
    session: Mutex<Session>,
    wants_token_types: bool,
    output: String,
}

impl std::fmt::Debug for OnnxEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnnxEmbedder")
            .field("id", &self.id)
            .field("dimension", &self.dimension)
            .field("max_tokens", &self.max_tokens)
            .field("output", &self.output)
            .finish_non_exhaustive()
    }
}

fn runtime_error(err: impl std::fmt::Display) -> Error {
    Error::Runtime {
        reason: err.to_string(),
    }
}

/// Opens onnxruntime from `library` once per process.
fn environment(library: &Path) -> Result<Environment> {
    let mut guard = RUNTIME
        .lock()
        .map_err(|_| runtime_error("a previous load panicked"))?;
    if let Some((loaded, environment)) = guard.as_ref() {
        if loaded != library {
            tracing::warn!(
                loaded = %loaded.display(),
                requested = %library.display(),
                "onnxruntime is already loaded; using the library loaded first"
            );
        }
        return Ok(environment.clone());
    }
    if !library.is_file() {
        return Err(Error::Runtime {
            reason: format!("library {} does not exist", library.display()),
        });
    }
    let environment = ort::init_from(library)
        .map_err(runtime_error)?
        .with_name("rlm")
        .build()
        .map_err(runtime_error)?;
    *guard = Some((library.to_path_buf(), environment.clone()));
    Ok(environment)
}

impl OnnxEmbedder {
    /// Loads an imported ONNX model; `options.runtime` overrides the recorded library.
    pub(crate) fn load(dir: &Path, manifest: &Manifest, options: &LoadOptions) -> Result<Self> {
        let library = options
            .runtime
            .clone()
            .or_else(|| manifest.runtime_path(dir))
            .ok_or_else(|| Error::NoRuntime {
                model: manifest.id.to_string(),
            })?;
        let embedder = Self::open(
            dir,
            &library,
            manifest.id.clone(),
            manifest.max_tokens,
            options.threads,
            Some(manifest.dimension),
        )?;
        Ok(embedder)
    }

    /// Opens `dir/model.onnx` and `dir/tokenizer.json`. With `dimension` given, checks the
    /// model's output against it; without, finds it by running one text.
    pub(crate) fn open(
        dir: &Path,
        library: &Path,
        id: ModelId,
        max_tokens: usize,
        threads: Option<usize>,
        dimension: Option<usize>,
    ) -> Result<Self> {
        let environment = environment(library)?;
        let model_path = dir.join(MODEL_FILE);
        let threads = threads
            .or_else(|| std::thread::available_parallelism().ok().map(usize::from))
            .unwrap_or(1);
        let session = Session::builder(&environment)
            .map_err(runtime_error)?
            .with_optimization_level(GraphOptimizationLevel::Level3)
            .map_err(runtime_error)?
            .with_intra_threads(threads)
            .map_err(runtime_error)?
            .commit_from_file(&model_path)
            .map_err(|err| Error::corrupt(&model_path, err.to_string()))?;
        let mut wants_token_types = false;
        for input in session.inputs() {
            match input.name() {
                "input_ids" | "attention_mask" => {}
                "token_type_ids" => wants_token_types = true,
                other => {
                    return Err(Error::corrupt(
                        &model_path,
                        format!(
                            "unexpected input `{other}` (a BERT-style encoder takes input_ids, attention_mask, token_type_ids)"
                        ),
                    ));
                }
            }
        }
        let output = session
            .outputs()
            .first()
            .map(|output| output.name().to_owned())
            .ok_or_else(|| Error::corrupt(&model_path, "the model has no output"))?;
        let tokenizer_path = dir.join(TOKENIZER_FILE);
        let (mut tokenizer, _) = crate::static_model::load_tokenizer(&tokenizer_path)?;
        // Truncate inside the tokenizer so the post-processor still closes with [SEP].
        tokenizer
            .with_truncation(Some(tokenizers::TruncationParams {
                max_length: max_tokens,
                ..Default::default()
            }))
            .map_err(|err| Error::Tokenizer {
                path: tokenizer_path.clone(),
                reason: err.to_string(),
            })?;
        let mut embedder = Self {
            id,
            dimension: dimension.unwrap_or(0),
            max_tokens,
            tokenizer,
            tokenizer_path,
            session: Mutex::new(session),
            wants_token_types,
            output,
        };
        let probe = embedder.run(&["dimension probe"])?;
        let found = probe.first().map_or(0, Vec::len);
        match dimension {
            Some(expected) if expected != found => {
                return Err(Error::DimensionMismatch {
                    context: format!("{} (manifest vs model output)", model_path.display()),
                    expected,
                    found,
                });
            }
            _ => embedder.dimension = found,
        }
        Ok(embedder)
    }

    /// Tokenizes, runs and pools `texts`, in order.
    fn run(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let byte_limit = self.max_tokens.saturating_mul(16);
        let inputs: Vec<&str> = texts.iter().map(|text| clip(text, byte_limit)).collect();
        let encodings = self
            .tokenizer
            .encode_batch_fast(inputs, true)
            .map_err(|err| Error::Tokenizer {
                path: self.tokenizer_path.clone(),
                reason: err.to_string(),
            })?;
        let tokens: Vec<(&[u32], &[u32])> = encodings
            .iter()
            .map(|encoding| {
                let length = encoding.get_ids().len().min(self.max_tokens);
                (
                    &encoding.get_ids()[..length],
                    &encoding.get_type_ids()[..length],
                )
            })
            .collect();
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&index| tokens[index].0.len());
        let mut vectors = vec![Vec::new(); texts.len()];
        for group in order.chunks(SUB_BATCH) {
            let batch: Vec<(&[u32], &[u32])> = group.iter().map(|&index| tokens[index]).collect();
            for (index, vector) in group.iter().zip(self.run_batch(&batch)?) {
                vectors[*index] = vector;
            }
        }
        Ok(vectors)
    }

    fn run_batch(&self, batch: &[(&[u32], &[u32])]) -> Result<Vec<Vec<f32>>> {
        let rows = batch.len();
        let width = batch
            .iter()
            .map(|(ids, _)| ids.len())
            .max()
            .unwrap_or(0)
            .max(1);
        let mut ids = vec![0i64; rows * width];
        let mut mask = vec![0i64; rows * width];
        let mut types = vec![0i64; rows * width];
        for (row, (token_ids, type_ids)) in batch.iter().enumerate() {
            for (column, (&id, &kind)) in token_ids.iter().zip(type_ids.iter()).enumerate() {
                ids[row * width + column] = i64::from(id);
                mask[row * width + column] = 1;
                types[row * width + column] = i64::from(kind);
            }
        }
        let shape = [rows as i64, width as i64];
        let tensor = |data: Vec<i64>| -> Result<SessionInputValue<'static>> {
            Ok(Tensor::from_array((shape, data))
                .map_err(runtime_error)?
                .into())
        };
        let mut inputs: Vec<(Cow<'_, str>, SessionInputValue<'_>)> = vec![
            ("input_ids".into(), tensor(ids)?),
            ("attention_mask".into(), tensor(mask.clone())?),
        ];
        if self.wants_token_types {
            inputs.push(("token_type_ids".into(), tensor(types)?));
        }
        let mut session = self
            .session
            .lock()
            .map_err(|_| runtime_error("a previous run panicked"))?;
        let outputs = session.run(inputs).map_err(runtime_error)?;
        let value = outputs
            .get(&self.output)
            .ok_or_else(|| runtime_error(format!("no output `{}`", self.output)))?;
        let (output_shape, data) = value.try_extract_tensor::<f32>().map_err(runtime_error)?;
        pool(output_shape, data, &mask, rows, width)
    }
}

/// Mean over unmasked tokens for `[rows, width, hidden]`, or the rows as-is for `[rows, hidden]`.
fn pool(
    shape: &[i64],
    data: &[f32],
    mask: &[i64],
    rows: usize,
    width: usize,
) -> Result<Vec<Vec<f32>>> {
    let dims: Vec<usize> = shape
        .iter()
        .map(|&d| usize::try_from(d).unwrap_or(0))
        .collect();
    let mut out = Vec::with_capacity(rows);
    match dims.as_slice() {
        [r, w, hidden] if *r == rows && *w == width && data.len() == rows * width * hidden => {
            for row in 0..rows {
                let mut sum = vec![0.0f32; *hidden];
                let mut count = 0.0f32;
                for column in 0..width {
                    if mask[row * width + column] == 0 {
                        continue;
                    }
                    let start = (row * width + column) * hidden;
                    for (total, value) in sum.iter_mut().zip(&data[start..start + hidden]) {
                        *total += value;
                    }
                    count += 1.0;
                }
                if count > 0.0 {
                    sum.iter_mut().for_each(|value| *value /= count);
                }
                normalize(&mut sum);
                out.push(sum);
            }
        }
        [r, hidden] if *r == rows && data.len() == rows * hidden => {
            for row in data.chunks_exact(*hidden) {
                let mut vector = row.to_vec();
                normalize(&mut vector);
                out.push(vector);
            }
        }
        _ => {
            return Err(runtime_error(format!(
                "output shape {shape:?} is neither [batch, tokens, hidden] nor [batch, hidden]"
            )));
        }
    }
    Ok(out)
}

impl Embedder for OnnxEmbedder {
    fn model_id(&self) -> &ModelId {
        &self.id
    }

    fn kind(&self) -> ModelKind {
        ModelKind::Onnx
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.run(texts)
    }
}
