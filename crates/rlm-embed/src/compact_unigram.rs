//! A Unigram tokenizer model that loads in milliseconds, cached next to a static model.
//!
//! The tokenizers crate builds a trie and a hash map of every vocabulary piece when it loads a
//! Unigram `tokenizer.json`: for the 276k-piece vocabulary of a typical static model that is
//! one to two seconds per process, paid again by every `rlm search --mode semantic`. Here the
//! vocabulary is kept as one sorted byte table written once (at import, or by the first load of
//! a model imported before the cache existed) to [`CACHE_FILE`]; loading it is a file read and
//! a few array conversions. Prefix matches are found by narrowing a range of the sorted table
//! one byte at a time instead of walking a trie.
//!
//! The model reproduces the tokenizers crate's Unigram segmentation (the best-scoring path,
//! ties kept by the shorter piece, consecutive unknown characters fused into one unknown
//! token), and the normalizer, pre-tokenizer and added tokens are the tokenizers crate's own,
//! read from the cached spec. A cache is only written after it gave the same token ids as the
//! full tokenizer on a set of probe texts, so a tokenizer.json this module does not reproduce
//! (byte fallback, another model type) keeps the full tokenizer.

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};
use tokenizers::models::unigram::UnigramTrainer;
use tokenizers::normalizers::NormalizerWrapper;
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::processors::PostProcessorWrapper;
use tokenizers::{AddedToken, DecoderWrapper, Model, Token, TokenizerImpl};

/// The cache file in a static model's directory.
pub(crate) const CACHE_FILE: &str = "tokenizer.compact";

const MAGIC: &[u8; 8] = b"RLMUNI1\0";

/// What the tokenizers crate adds to an unknown piece's score (its `K_UNK_PENALTY`).
const UNKNOWN_PENALTY: f64 = 10.0;

/// A tokenizer whose model is a [`CompactUnigram`].
pub(crate) type CompactTokenizer = TokenizerImpl<
    CompactUnigram,
    NormalizerWrapper,
    PreTokenizerWrapper,
    PostProcessorWrapper,
    DecoderWrapper,
>;

/// Everything but the vocabulary: the parts of `tokenizer.json` applied around the model.
#[derive(Debug, Serialize, Deserialize)]
struct Spec {
    /// SHA-256 of the `tokenizer.json` this cache was made from.
    tokenizer_sha256: String,
    unk_id: Option<u32>,
    normalizer: Option<serde_json::Value>,
    pre_tokenizer: Option<serde_json::Value>,
    added_tokens: Vec<AddedToken>,
}

/// The Unigram vocabulary as flat arrays.
#[derive(Debug, Clone)]
pub(crate) struct CompactUnigram {
    /// Every piece's bytes, back to back, in id order.
    blob: Vec<u8>,
    /// Piece `id` is `blob[offsets[id]..offsets[id + 1]]`.
    offsets: Vec<u32>,
    scores: Vec<f64>,
    /// Ids of the distinct non-empty pieces sorted by their bytes; for a piece listed twice,
    /// the last id (as the tokenizers crate's map keeps it).
    sorted: Vec<u32>,
    unk_id: Option<u32>,
    min_score: f64,
    /// The id of each one-byte piece.
    single: Vec<Option<u32>>,
    /// For each two-byte prefix `(b0 << 8) | b1`, the range of `sorted` holding the pieces of
    /// two bytes or more that start with it (empty when none do). Built at load: one pass.
    pairs: Vec<(u32, u32)>,
    /// Segmentations of recent words (pre-tokenized pieces repeat a lot in real text).
    recent: RecentWords,
}

/// A bounded map from a word to its segmentation, shared by the threads of a batch; a thread
/// that finds it locked just computes (as the tokenizers crate's own word cache does).
#[derive(Debug, Default)]
struct RecentWords(RwLock<HashMap<Box<str>, Segmentation>>);

type Segmentation = Arc<[(Range<usize>, u32)]>;

/// Words longer than this are not remembered; at most this many words are.
const RECENT_WORD_BYTES: usize = 256;
const RECENT_WORDS: usize = 10_000;

impl RecentWords {
    fn get(&self, word: &str) -> Option<Segmentation> {
        self.0.try_read().ok()?.get(word).cloned()
    }

    fn put(&self, word: &str, segmentation: &Segmentation) {
        if word.len() > RECENT_WORD_BYTES {
            return;
        }
        if let Ok(mut map) = self.0.try_write()
            && map.len() < RECENT_WORDS
        {
            map.insert(word.into(), Arc::clone(segmentation));
        }
    }
}

impl Clone for RecentWords {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl CompactUnigram {
    /// Fills [`Self::single`] and [`Self::pairs`] from [`Self::sorted`].
    fn index_prefixes(&mut self) {
        let mut single = vec![None; 256];
        let mut pairs = vec![(0u32, 0u32); 1 << 16];
        for (index, &id) in self.sorted.iter().enumerate() {
            let index = index as u32;
            match *self.piece(id) {
                [byte] => single[byte as usize] = Some(id),
                [first, second, ..] => {
                    let range = &mut pairs[(usize::from(first) << 8) | usize::from(second)];
                    if range.0 == range.1 {
                        *range = (index, index + 1);
                    } else {
                        range.1 = index + 1;
                    }
                }
                [] => {}
            }
        }
        self.single = single;
        self.pairs = pairs;
    }

    /// Builds the arrays from a vocabulary in id order.
    fn from_vocab(vocab: &[(String, f64)], unk_id: Option<u32>) -> Option<Self> {
        if vocab.is_empty() || unk_id.is_some_and(|id| id as usize >= vocab.len()) {
            return None;
        }
        let mut blob = Vec::new();
        let mut offsets = Vec::with_capacity(vocab.len() + 1);
        offsets.push(0);
        for (piece, _) in vocab {
            blob.extend_from_slice(piece.as_bytes());
            offsets.push(u32::try_from(blob.len()).ok()?);
        }
        let scores: Vec<f64> = vocab.iter().map(|(_, score)| *score).collect();
        let min_score = scores.iter().copied().fold(f64::INFINITY, f64::min);
        let mut model = Self {
            blob,
            offsets,
            scores,
            sorted: Vec::new(),
            unk_id,
            min_score,
            single: Vec::new(),
            pairs: Vec::new(),
            recent: RecentWords::default(),
        };
        let mut ids: Vec<u32> = (0..u32::try_from(vocab.len()).ok()?).collect();
        // Stable: equal pieces stay in id order, and the last of each run is kept.
        ids.sort_by(|&a, &b| model.piece(a).cmp(model.piece(b)));
        let mut sorted: Vec<u32> = Vec::with_capacity(ids.len());
        for id in ids {
            if model.piece(id).is_empty() {
                continue;
            }
            match sorted.last_mut() {
                Some(last) if model.piece(*last) == model.piece(id) => *last = id,
                _ => sorted.push(id),
            }
        }
        model.sorted = sorted;
        model.index_prefixes();
        Some(model)
    }

    /// The unknown token's id.
    pub(crate) fn unknown_id(&self) -> Option<u32> {
        self.unk_id
    }

    fn piece(&self, id: u32) -> &[u8] {
        let id = id as usize;
        &self.blob[self.offsets[id] as usize..self.offsets[id + 1] as usize]
    }

    fn len(&self) -> usize {
        self.scores.len()
    }

    /// The id of a piece (the last id when it is listed twice).
    fn find(&self, piece: &[u8]) -> Option<u32> {
        self.sorted
            .binary_search_by(|&id| self.piece(id).cmp(piece))
            .ok()
            .map(|index| self.sorted[index])
    }

    /// Ids of the pieces that are prefixes of `text`, shortest first.
    fn prefixes(&self, text: &[u8], found: &mut Vec<u32>) {
        found.clear();
        let (Some(&first), second) = (text.first(), text.get(1)) else {
            return;
        };
        if let Some(id) = self.single[usize::from(first)] {
            found.push(id);
        }
        let Some(&second) = second else { return };
        let (low, high) = self.pairs[(usize::from(first) << 8) | usize::from(second)];
        let (mut low, mut high) = (low as usize, high as usize);
        if low == high {
            return;
        }
        if self.piece(self.sorted[low]).len() == 2 {
            found.push(self.sorted[low]);
        }
        for (depth, &byte) in text.iter().enumerate().skip(2) {
            // Every piece in `low..high` starts with `text[..depth]`; those of exactly that
            // length sort first, then the rest by their next byte.
            let next = |id: u32| self.piece(id).get(depth).copied();
            let range = &self.sorted[low..high];
            let start = low + range.partition_point(|&id| next(id) < Some(byte));
            let end = low + range.partition_point(|&id| next(id) <= Some(byte));
            if start == end {
                return;
            }
            (low, high) = (start, end);
            if self.piece(self.sorted[low]).len() == depth + 1 {
                found.push(self.sorted[low]);
            }
        }
    }

    /// The best segmentation of `text`: byte ranges with the id chosen for each, unknown
    /// characters fused into one range with the unknown id.
    fn segment(&self, text: &str) -> tokenizers::Result<Vec<(Range<usize>, u32)>> {
        #[derive(Clone, Copy)]
        struct Best {
            id: u32,
            score: f64,
            start: Option<usize>,
        }
        if text.is_empty() {
            return Ok(Vec::new());
        }
        let bytes = text.as_bytes();
        let unknown_score = self.min_score - UNKNOWN_PENALTY;
        let mut best = vec![
            Best {
                id: 0,
                score: 0.0,
                start: None
            };
            bytes.len() + 1
        ];
        let mut found = Vec::new();
        let mut start = 0;
        while start < bytes.len() {
            let so_far = best[start].score;
            let char_len = text[start..].chars().next().map_or(1, char::len_utf8);
            self.prefixes(&bytes[start..], &mut found);
            let mut single_char = false;
            for &id in &found {
                let length = self.piece(id).len();
                let candidate = so_far + self.scores[id as usize];
                let node = &mut best[start + length];
                if node.start.is_none() || candidate > node.score {
                    *node = Best {
                        id,
                        score: candidate,
                        start: Some(start),
                    };
                }
                single_char |= length == char_len;
            }
            if !single_char {
                let unknown = self.unk_id.ok_or("the tokenizer has no unknown token")?;
                let candidate = so_far + unknown_score;
                let node = &mut best[start + char_len];
                if node.start.is_none() || candidate > node.score {
                    *node = Best {
                        id: unknown,
                        score: candidate,
                        start: Some(start),
                    };
                }
            }
            start += char_len;
        }
        let mut pieces = Vec::new();
        let mut end = bytes.len();
        let mut fused_start: Option<usize> = None;
        let mut fused_end = end;
        while end > 0 {
            let node = best[end];
            let Some(node_start) = node.start else {
                return Err("no segmentation reaches the end of the text".into());
            };
            if Some(node.id) == self.unk_id {
                if fused_start.is_none() {
                    fused_end = end;
                }
                fused_start = Some(node_start);
            } else {
                if let Some(fused) = fused_start.take() {
                    pieces.push(fused..fused_end);
                }
                pieces.push(node_start..end);
            }
            end = node_start;
        }
        if let Some(fused) = fused_start {
            pieces.push(fused..fused_end);
        }
        pieces.reverse();
        // As the tokenizers crate does: each piece's id is looked up by its text, so a fused
        // unknown run that happens to be a vocabulary piece gets that piece's id.
        pieces
            .into_iter()
            .map(|range| {
                let id = self
                    .find(&bytes[range.clone()])
                    .or(self.unk_id)
                    .ok_or("the tokenizer has no unknown token")?;
                Ok((range, id))
            })
            .collect()
    }

    fn to_bytes(&self, spec: &Spec) -> Option<Vec<u8>> {
        let spec = serde_json::to_vec(spec).ok()?;
        let mut out = Vec::with_capacity(
            64 + spec.len() + self.blob.len() + self.len() * 16 + self.sorted.len() * 4,
        );
        out.extend_from_slice(MAGIC);
        for value in [spec.len(), self.len(), self.blob.len(), self.sorted.len()] {
            out.extend_from_slice(&u64::try_from(value).ok()?.to_le_bytes());
        }
        out.extend_from_slice(&spec);
        for score in &self.scores {
            out.extend_from_slice(&score.to_le_bytes());
        }
        for offset in &self.offsets {
            out.extend_from_slice(&offset.to_le_bytes());
        }
        for id in &self.sorted {
            out.extend_from_slice(&id.to_le_bytes());
        }
        out.extend_from_slice(&self.blob);
        Some(out)
    }

    fn from_bytes(bytes: &[u8]) -> Option<(Self, Spec)> {
        let mut reader = Reader { bytes, at: 0 };
        if reader.take(MAGIC.len())? != MAGIC {
            return None;
        }
        let spec_len = reader.length()?;
        let count = reader.length()?;
        let blob_len = reader.length()?;
        let sorted_len = reader.length()?;
        let spec: Spec = serde_json::from_slice(reader.take(spec_len)?).ok()?;
        let scores: Vec<f64> = reader
            .take(count.checked_mul(8)?)?
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
            .collect();
        let offsets = reader.words(count.checked_add(1)?)?;
        let sorted = reader.words(sorted_len)?;
        let blob = reader.take(blob_len)?.to_vec();
        if reader.at != bytes.len() || count == 0 {
            return None;
        }
        let in_order = offsets.windows(2).all(|pair| pair[0] <= pair[1]);
        let last = offsets.last().copied().map(|end| end as usize);
        if offsets.first() != Some(&0) || !in_order || last != Some(blob.len()) {
            return None;
        }
        if sorted.iter().any(|&id| id as usize >= count)
            || spec.unk_id.is_some_and(|id| id as usize >= count)
        {
            return None;
        }
        let min_score = scores.iter().copied().fold(f64::INFINITY, f64::min);
        let mut model = Self {
            blob,
            offsets,
            scores,
            sorted,
            unk_id: spec.unk_id,
            min_score,
            single: Vec::new(),
            pairs: Vec::new(),
            recent: RecentWords::default(),
        };
        let ordered = model
            .sorted
            .windows(2)
            .all(|pair| model.piece(pair[0]) < model.piece(pair[1]));
        if !ordered || model.sorted.iter().any(|&id| model.piece(id).is_empty()) {
            return None;
        }
        model.index_prefixes();
        Some((model, spec))
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(len)?;
        let slice = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(slice)
    }

    fn length(&mut self) -> Option<usize> {
        let bytes = self.take(8)?;
        usize::try_from(u64::from_le_bytes(bytes.try_into().ok()?)).ok()
    }

    fn words(&mut self, count: usize) -> Option<Vec<u32>> {
        Some(
            self.take(count.checked_mul(4)?)?
                .chunks_exact(4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
        )
    }
}

impl Model for CompactUnigram {
    type Trainer = UnigramTrainer;

    fn tokenize(&self, sequence: &str) -> tokenizers::Result<Vec<Token>> {
        let segmentation = match self.recent.get(sequence) {
            Some(known) => known,
            None => {
                let segmentation: Segmentation = self.segment(sequence)?.into();
                self.recent.put(sequence, &segmentation);
                segmentation
            }
        };
        Ok(segmentation
            .iter()
            .map(|(range, id)| {
                Token::new(
                    *id,
                    sequence[range.clone()].to_owned(),
                    (range.start, range.end),
                )
            })
            .collect())
    }

    fn token_to_id(&self, token: &str) -> Option<u32> {
        self.find(token.as_bytes())
    }

    fn id_to_token(&self, id: u32) -> Option<String> {
        ((id as usize) < self.len()).then(|| String::from_utf8_lossy(self.piece(id)).into_owned())
    }

    fn get_vocab(&self) -> HashMap<String, u32> {
        self.sorted
            .iter()
            .map(|&id| (String::from_utf8_lossy(self.piece(id)).into_owned(), id))
            .collect()
    }

    fn get_vocab_size(&self) -> usize {
        self.len()
    }

    fn save(&self, _folder: &Path, _prefix: Option<&str>) -> tokenizers::Result<Vec<PathBuf>> {
        Err("the compact Unigram model is a cache and is not saved as a tokenizer".into())
    }

    fn get_trainer(&self) -> UnigramTrainer {
        UnigramTrainer::default()
    }
}

/// The parts of `tokenizer.json` read to build a cache.
#[derive(Deserialize)]
struct TokenizerFile {
    #[serde(default)]
    added_tokens: Vec<AddedToken>,
    #[serde(default)]
    normalizer: Option<serde_json::Value>,
    #[serde(default)]
    pre_tokenizer: Option<serde_json::Value>,
    model: ModelSection,
}

#[derive(Deserialize)]
struct ModelSection {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    vocab: Option<Vec<(String, f64)>>,
    #[serde(default)]
    unk_id: Option<u32>,
    #[serde(default)]
    byte_fallback: bool,
}

/// Texts the cache must tokenize exactly as the full tokenizer does before it is written.
const PROBES: &[&str] = &[
    "rlm import check: open a file and read its contents",
    "How does authentication fail on token refresh, and where is it handled?",
    "fn main() {\n    let x = vec![1, 2, 3];\n    println!(\"{x:?}\");\n}\n",
    "2026-11-23T17:51:31Z ERROR [auth] token expired (code=401) user_id=8841",
    "  leading and trailing spaces,\ttabs\tand\n\nblank lines  ",
    "Ünïcödé façade — naïve café; Straße; ÆØÅ; ﬁ ligature; ① ② ③",
    "日本語のテキストと中文文本，한국어 텍스트",
    "emoji 🦀🔥 and combining e\u{301} and zero\u{200b}width",
    "<unk> <pad> literal special tokens <unk><pad>",
    "SELECT count(*) FROM requests WHERE status >= 500 GROUP BY user;",
    "",
];

/// Builds the cache file's bytes for the `tokenizer.json` in `bytes`, or None when it is not a
/// Unigram tokenizer this module reproduces (it must then give the same ids as `full`).
pub(crate) fn build(bytes: &[u8], sha256: &str, full: &tokenizers::Tokenizer) -> Option<Vec<u8>> {
    let file: TokenizerFile = serde_json::from_slice(bytes).ok()?;
    if file.model.kind.as_deref() != Some("Unigram") || file.model.byte_fallback {
        return None;
    }
    let model = CompactUnigram::from_vocab(&file.model.vocab?, file.model.unk_id)?;
    let spec = Spec {
        tokenizer_sha256: sha256.to_owned(),
        unk_id: file.model.unk_id,
        normalizer: file.normalizer,
        pre_tokenizer: file.pre_tokenizer,
        added_tokens: file.added_tokens,
    };
    let cache = model.to_bytes(&spec)?;
    let compact = assemble(model, spec)?;
    let mut probes: Vec<String> = PROBES.iter().map(|text| (*text).to_owned()).collect();
    // Pieces from across the vocabulary, glued and spaced, so rare pieces are exercised too.
    let vocabulary = full.get_vocab_size(false).max(1);
    let sample: Vec<String> = (0..vocabulary)
        .step_by((vocabulary / 300).max(1))
        .filter_map(|id| full.id_to_token(u32::try_from(id).ok()?))
        .collect();
    probes.push(sample.concat());
    probes.push(sample.join(" "));
    same_ids(full, &compact, &probes).then_some(cache)
}

/// Whether both tokenizers give the same ids for every text.
pub(crate) fn same_ids(
    full: &tokenizers::Tokenizer,
    compact: &CompactTokenizer,
    texts: &[String],
) -> bool {
    texts.iter().all(|text| {
        let expected = full.encode_fast(text.as_str(), false);
        let found = compact.encode_fast(text.as_str(), false);
        matches!((expected, found), (Ok(a), Ok(b)) if a.get_ids() == b.get_ids())
    })
}

/// Loads a cache file, if it is intact and was made from the tokenizer with `sha256`.
pub(crate) fn load(bytes: &[u8], sha256: &str) -> Option<CompactTokenizer> {
    let (model, spec) = CompactUnigram::from_bytes(bytes)?;
    if spec.tokenizer_sha256 != sha256 {
        return None;
    }
    assemble(model, spec)
}

fn assemble(model: CompactUnigram, spec: Spec) -> Option<CompactTokenizer> {
    let mut tokenizer = CompactTokenizer::new(model);
    if let Some(normalizer) = spec.normalizer {
        tokenizer.with_normalizer(Some(
            serde_json::from_value::<NormalizerWrapper>(normalizer).ok()?,
        ));
    }
    if let Some(pre_tokenizer) = spec.pre_tokenizer {
        tokenizer.with_pre_tokenizer(Some(
            serde_json::from_value::<PreTokenizerWrapper>(pre_tokenizer).ok()?,
        ));
    }
    tokenizer.add_tokens(&spec.added_tokens);
    Some(tokenizer)
}

#[cfg(test)]
#[path = "compact_unigram_tests.rs"]
mod tests;
