//! The static tier: Model2Vec-format token embeddings, averaged.
//!
//! Files: `model.safetensors` with an `embeddings` tensor `[rows, dim]` (f32, f16, bf16 or
//! int8), and for vocabulary-quantized models also `mapping` (token id -> row, `[vocab]`) and
//! `weights` (a per-token scale, `[vocab]`); `tokenizer.json`; `config.json`.
//! A text's vector is the mean of `embeddings[row(token)] * weight(token)` over its tokens
//! (unknown tokens dropped, at most `max_tokens`), then L2-normalized.

use std::path::{Path, PathBuf};

use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;
use tokenizers::{Model as _, Tokenizer};

use crate::Embedder;
use crate::compact_unigram::{self, CompactTokenizer};
use crate::error::{Error, Result};
use crate::manifest::{Manifest, ModelId, ModelKind};
use crate::pooling::{clip, normalize};

/// File names of a static model.
pub(crate) const WEIGHTS_FILE: &str = "model.safetensors";
pub(crate) const TOKENIZER_FILE: &str = "tokenizer.json";
pub(crate) const CONFIG_FILE: &str = "config.json";

/// Token limit used by Model2Vec when a model does not say otherwise.
pub(crate) const DEFAULT_MAX_TOKENS: usize = 512;

/// A loaded static model.
pub struct StaticEmbedder {
    id: ModelId,
    tokenizer: StaticTokenizer,
    /// Row-major `[rows, dimension]`.
    table: Vec<f32>,
    dimension: usize,
    /// Token id -> row of `table`; identity when absent.
    mapping: Option<Vec<u32>>,
    /// Token id -> scale; 1.0 when absent.
    weights: Option<Vec<f32>>,
    unknown_token: Option<u32>,
    max_tokens: usize,
}

impl std::fmt::Debug for StaticEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticEmbedder")
            .field("id", &self.id)
            .field("dimension", &self.dimension)
            .field("rows", &(self.table.len() / self.dimension.max(1)))
            .field("quantized_vocabulary", &self.mapping.is_some())
            .field("max_tokens", &self.max_tokens)
            .finish_non_exhaustive()
    }
}

/// The tokenizer of a static model: the compact Unigram cache when the model directory has a
/// valid one, the full `tokenizer.json` otherwise.
enum StaticTokenizer {
    Compact(Box<CompactTokenizer>),
    Full(Box<Tokenizer>),
}

impl StaticTokenizer {
    /// How many token ids the tokenizer can produce: the model's vocabulary and the added
    /// tokens numbered after it. (The tokenizers crate's `get_vocab_size(true)` builds the whole
    /// vocabulary map to answer, ~100 ms for 276k pieces.)
    fn id_count(&self) -> usize {
        let (model, added) = match self {
            Self::Compact(tokenizer) => (
                tokenizer.get_model().get_vocab_size(),
                tokenizer.get_added_tokens_decoder(),
            ),
            Self::Full(tokenizer) => (
                tokenizer.get_model().get_vocab_size(),
                tokenizer.get_added_tokens_decoder(),
            ),
        };
        let past_added = added.keys().max().map_or(0, |&id| id as usize + 1);
        model.max(past_added)
    }

    fn ids(&self, texts: Vec<&str>) -> tokenizers::Result<Vec<Vec<u32>>> {
        let encodings = match self {
            Self::Compact(tokenizer) => tokenizer.encode_batch_fast(texts, false)?,
            Self::Full(tokenizer) => tokenizer.encode_batch_fast(texts, false)?,
        };
        Ok(encodings
            .into_iter()
            .map(|encoding| encoding.get_ids().to_vec())
            .collect())
    }
}

/// The fields of `config.json` this crate reads.
#[derive(Debug, Default, Deserialize)]
struct StaticConfig {
    #[serde(default)]
    max_length: Option<usize>,
}

/// The fields of `tokenizer.json` needed beyond what the tokenizers crate exposes.
#[derive(Debug, Deserialize)]
struct TokenizerSpec {
    model: TokenizerModelSpec,
}

#[derive(Debug, Deserialize)]
struct TokenizerModelSpec {
    #[serde(default)]
    unk_id: Option<u32>,
    #[serde(default)]
    unk_token: Option<String>,
}

impl StaticEmbedder {
    /// Loads the static model in an imported directory whose manifest was already read.
    pub fn load(dir: &Path, manifest: &Manifest) -> Result<Self> {
        let tokenizer_sha256 = manifest
            .files
            .iter()
            .find(|file| file.path == TOKENIZER_FILE)
            .map(|file| file.sha256.as_str());
        let embedder = Self::from_dir(
            dir,
            manifest.id.clone(),
            manifest.max_tokens,
            tokenizer_sha256,
        )?;
        if embedder.dimension != manifest.dimension {
            return Err(Error::DimensionMismatch {
                context: format!("{} (manifest vs model file)", dir.display()),
                expected: manifest.dimension,
                found: embedder.dimension,
            });
        }
        Ok(embedder)
    }

    /// Loads the three model files from `dir`, checking that they fit together. With the
    /// tokenizer's digest known (from the manifest), the compact tokenizer cache is used when it
    /// matches, and written next to the model when it is missing or stale.
    pub(crate) fn from_dir(
        dir: &Path,
        id: ModelId,
        max_tokens: usize,
        tokenizer_sha256: Option<&str>,
    ) -> Result<Self> {
        let weights_path = dir.join(WEIGHTS_FILE);
        let bytes = read(&weights_path)?;
        let tensors = SafeTensors::deserialize(&bytes)
            .map_err(|err| Error::corrupt(&weights_path, err.to_string()))?;
        let (table, rows, dimension) = read_table(&tensors, &weights_path)?;
        let mapping = read_optional(&tensors, "mapping", &weights_path)?
            .map(|(dtype, data)| integers(dtype, data, &weights_path))
            .transpose()?;
        let weights = read_optional(&tensors, "weights", &weights_path)?
            .map(|(dtype, data)| floats(dtype, data, &weights_path))
            .transpose()?;

        let (tokenizer, unknown_token) = open_tokenizer(dir, tokenizer_sha256)?;
        let vocabulary = tokenizer.id_count();
        match &mapping {
            Some(mapping) => {
                if mapping.len() < vocabulary {
                    return Err(Error::corrupt(
                        &weights_path,
                        format!(
                            "`mapping` covers {} tokens but the tokenizer has {vocabulary}",
                            mapping.len()
                        ),
                    ));
                }
                if let Some(bad) = mapping.iter().find(|&&row| row as usize >= rows) {
                    return Err(Error::corrupt(
                        &weights_path,
                        format!("`mapping` points at row {bad} of a {rows}-row table"),
                    ));
                }
            }
            None if rows < vocabulary => {
                return Err(Error::corrupt(
                    &weights_path,
                    format!("{rows} embedding rows for a {vocabulary}-token tokenizer"),
                ));
            }
            None => {}
        }
        if let Some(weights) = &weights
            && weights.len() < vocabulary
        {
            return Err(Error::corrupt(
                &weights_path,
                format!(
                    "`weights` covers {} tokens but the tokenizer has {vocabulary}",
                    weights.len()
                ),
            ));
        }
        Ok(Self {
            id,
            tokenizer,
            table,
            dimension,
            mapping,
            weights,
            unknown_token,
            max_tokens,
        })
    }

    /// Reads `max_length` from `config.json` when the model declares one.
    pub(crate) fn configured_max_tokens(dir: &Path) -> Result<usize> {
        let path = dir.join(CONFIG_FILE);
        let bytes = read(&path)?;
        let config: StaticConfig = serde_json::from_slice(&bytes)
            .map_err(|err| Error::corrupt(&path, format!("not a JSON object: {err}")))?;
        Ok(config.max_length.unwrap_or(DEFAULT_MAX_TOKENS))
    }

    fn pool(&self, ids: &[u32]) -> Vec<f32> {
        let mut sum = vec![0.0f32; self.dimension];
        let mut count = 0usize;
        let kept = ids
            .iter()
            .filter(|&&id| Some(id) != self.unknown_token)
            .take(self.max_tokens);
        for &token in kept {
            let token = token as usize;
            let row = match &self.mapping {
                Some(mapping) => mapping.get(token).map(|&row| row as usize),
                None => Some(token),
            };
            let Some(row) = row else { continue };
            let Some(values) = self
                .table
                .get(row * self.dimension..(row + 1) * self.dimension)
            else {
                continue;
            };
            let scale = self
                .weights
                .as_ref()
                .and_then(|weights| weights.get(token).copied())
                .unwrap_or(1.0);
            for (total, value) in sum.iter_mut().zip(values) {
                *total += value * scale;
            }
            count += 1;
        }
        if count > 0 {
            // The mean only matters before normalization for non-normalized output; kept so
            // the vector matches Model2Vec's pooling step exactly.
            let count = count as f32;
            for value in &mut sum {
                *value /= count;
            }
        }
        normalize(&mut sum);
        sum
    }
}

impl Embedder for StaticEmbedder {
    fn model_id(&self) -> &ModelId {
        &self.id
    }

    fn kind(&self) -> ModelKind {
        ModelKind::Static
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let byte_limit = self.max_tokens.saturating_mul(16);
        let inputs: Vec<&str> = texts.iter().map(|text| clip(text, byte_limit)).collect();
        let ids = self.tokenizer.ids(inputs).map_err(|err| Error::Tokenizer {
            path: PathBuf::from(TOKENIZER_FILE),
            reason: err.to_string(),
        })?;
        Ok(ids.iter().map(|ids| self.pool(ids)).collect())
    }
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|err| Error::io(path, err))
}

/// The static model's tokenizer and its unknown-token id: the compact cache when it is intact
/// and made from this `tokenizer.json` (by digest), else the full tokenizer, after which a cache
/// is written if the tokenizer is one the compact model reproduces (best effort: a read-only
/// model directory just keeps the slower load).
fn open_tokenizer(dir: &Path, sha256: Option<&str>) -> Result<(StaticTokenizer, Option<u32>)> {
    let cache_path = dir.join(compact_unigram::CACHE_FILE);
    if let Some(sha256) = sha256
        && let Ok(bytes) = std::fs::read(&cache_path)
        && let Some(compact) = compact_unigram::load(&bytes, sha256)
    {
        let unknown = compact.get_model().unknown_id();
        return Ok((StaticTokenizer::Compact(Box::new(compact)), unknown));
    }
    let path = dir.join(TOKENIZER_FILE);
    let bytes = read(&path)?;
    let (tokenizer, unknown) = tokenizer_from_bytes(&bytes, &path)?;
    if let Some(sha256) = sha256
        && let Some(cache) = compact_unigram::build(&bytes, sha256, &tokenizer)
    {
        let _ = write_replacing(&cache_path, &cache);
    }
    Ok((StaticTokenizer::Full(Box::new(tokenizer)), unknown))
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename.
fn write_replacing(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    file.write_all(bytes)?;
    file.persist(path).map_err(|err| err.error)?;
    Ok(())
}

/// Loads a tokenizer for raw token ids: no padding, truncation or special tokens.
#[cfg(feature = "onnx")]
pub(crate) fn load_tokenizer(path: &Path) -> Result<(Tokenizer, Option<u32>)> {
    tokenizer_from_bytes(&read(path)?, path)
}

fn tokenizer_from_bytes(bytes: &[u8], path: &Path) -> Result<(Tokenizer, Option<u32>)> {
    let error = |reason: String| Error::Tokenizer {
        path: path.to_path_buf(),
        reason,
    };
    let mut tokenizer = Tokenizer::from_bytes(bytes).map_err(|err| error(err.to_string()))?;
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(None)
        .map_err(|err| error(err.to_string()))?;
    let spec: TokenizerSpec =
        serde_json::from_slice(bytes).map_err(|err| error(err.to_string()))?;
    let unknown = spec.model.unk_id.or_else(|| {
        spec.model
            .unk_token
            .as_deref()
            .and_then(|token| tokenizer.token_to_id(token))
    });
    Ok((tokenizer, unknown))
}

fn read_table(tensors: &SafeTensors<'_>, path: &Path) -> Result<(Vec<f32>, usize, usize)> {
    let view = tensors.tensor("embeddings").map_err(|_| {
        Error::corrupt(
            path,
            "no `embeddings` tensor: not a Model2Vec-format static model",
        )
    })?;
    let [rows, dimension] = view.shape() else {
        return Err(Error::corrupt(
            path,
            format!(
                "`embeddings` has shape {:?}, expected [rows, dim]",
                view.shape()
            ),
        ));
    };
    let (rows, dimension) = (*rows, *dimension);
    if rows == 0 || dimension == 0 {
        return Err(Error::corrupt(path, "`embeddings` is empty"));
    }
    Ok((floats(view.dtype(), view.data(), path)?, rows, dimension))
}

fn read_optional<'data>(
    tensors: &SafeTensors<'data>,
    name: &str,
    path: &Path,
) -> Result<Option<(Dtype, &'data [u8])>> {
    if !tensors.names().contains(&name) {
        return Ok(None);
    }
    let view = tensors
        .tensor(name)
        .map_err(|err| Error::corrupt(path, err.to_string()))?;
    if view.shape().len() != 1 {
        return Err(Error::corrupt(
            path,
            format!("`{name}` has shape {:?}, expected [vocab]", view.shape()),
        ));
    }
    Ok(Some((view.dtype(), view.data())))
}

/// Converts a tensor's little-endian bytes to f32. Int8 tables carry no scale: the per-token
/// `weights` and the final normalization make an absolute scale irrelevant.
fn floats(dtype: Dtype, data: &[u8], path: &Path) -> Result<Vec<f32>> {
    Ok(match dtype {
        Dtype::F32 => data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
        Dtype::F16 => data
            .chunks_exact(2)
            .map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]])))
            .collect(),
        Dtype::BF16 => data
            .chunks_exact(2)
            .map(|b| f32::from_bits(u32::from(u16::from_le_bytes([b[0], b[1]])) << 16))
            .collect(),
        Dtype::I8 => data.iter().map(|&b| f32::from(b as i8)).collect(),
        other => {
            return Err(Error::corrupt(
                path,
                format!("unsupported embedding type {other:?}"),
            ));
        }
    })
}

fn integers(dtype: Dtype, data: &[u8], path: &Path) -> Result<Vec<u32>> {
    let too_big = |value: i64| Error::corrupt(path, format!("`mapping` holds {value}"));
    match dtype {
        Dtype::I64 => data
            .chunks_exact(8)
            .map(|b| {
                let value = i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
                u32::try_from(value).map_err(|_| too_big(value))
            })
            .collect(),
        Dtype::I32 => data
            .chunks_exact(4)
            .map(|b| {
                let value = i32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                u32::try_from(value).map_err(|_| too_big(i64::from(value)))
            })
            .collect(),
        other => Err(Error::corrupt(
            path,
            format!("`mapping` has type {other:?}, expected I64 or I32"),
        )),
    }
}

/// IEEE 754 half precision to single precision.
fn f16_to_f32(bits: u16) -> f32 {
    let sign = u32::from(bits >> 15) << 31;
    let exponent = u32::from((bits >> 10) & 0x1f);
    let mantissa = u32::from(bits & 0x3ff);
    let value = match (exponent, mantissa) {
        (0, 0) => sign,
        (0, _) => {
            // Subnormal: value = mantissa * 2^-24.
            let magnitude = mantissa as f32 * f32::from_bits(0x3380_0000);
            return if sign != 0 { -magnitude } else { magnitude };
        }
        (0x1f, 0) => sign | 0x7f80_0000,
        (0x1f, _) => sign | 0x7fc0_0000,
        _ => sign | ((exponent + 112) << 23) | (mantissa << 13),
    };
    f32::from_bits(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_precision_conversion() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x0000), 0.0);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert!((f16_to_f32(0x0001) - 5.960_464_5e-8).abs() < 1e-12);
        assert!(f16_to_f32(0x7c00).is_infinite());
    }
}
