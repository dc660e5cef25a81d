//! Token counts cached on disk by content id, so a rebuild only counts what changed.
//!
//! One text file per tokenizer in `build/.token-cache/`, one `<sha256 hex> <count>` line per
//! entry, sorted. Saving keeps only the entries used by the last run, so the cache never grows
//! past the ctx directory's own size class.

use std::collections::HashMap;
use std::fs;
use std::path::PathBuf;

use rlm_context::tokens::Tokenizer;
use sha2::{Digest as _, Sha256};

use crate::ctxdir::write_atomic;
use crate::error::{Error, Result};

/// A loaded token cache.
#[derive(Debug)]
pub struct TokenCache {
    tokenizer: Tokenizer,
    path: PathBuf,
    stored: HashMap<[u8; 32], u64>,
    used: HashMap<[u8; 32], u64>,
    /// Texts counted (cache misses and uncached probes) since loading.
    pub misses: usize,
}

impl TokenCache {
    /// Loads the cache for `tokenizer` from `cache_dir` (missing or damaged files give an empty
    /// cache: it is only a cache).
    pub fn load(cache_dir: PathBuf, tokenizer: Tokenizer) -> Self {
        let path = cache_dir.join(tokenizer.name());
        let mut stored = HashMap::new();
        if let Ok(text) = fs::read_to_string(&path) {
            for line in text.lines() {
                let Some((key, count)) = line.split_once(' ') else {
                    continue;
                };
                let mut bytes = [0u8; 32];
                if hex::decode_to_slice(key, &mut bytes).is_ok()
                    && let Ok(count) = count.parse()
                {
                    stored.insert(bytes, count);
                }
            }
        }
        Self {
            tokenizer,
            path,
            stored,
            used: HashMap::new(),
            misses: 0,
        }
    }

    /// The tokenizer this cache counts with.
    pub fn tokenizer(&self) -> Tokenizer {
        self.tokenizer
    }

    /// Token counts for `texts`, in order: cached ones looked up, the rest counted (in
    /// parallel) and remembered.
    pub fn count(&mut self, texts: &[&str]) -> Vec<u64> {
        let keys: Vec<[u8; 32]> = texts.iter().map(|text| cache_key(text)).collect();
        self.count_keyed(texts, &keys)
    }

    /// [`TokenCache::count`] with the keys ([`cache_key`]) already computed.
    pub fn count_keyed(&mut self, texts: &[&str], keys: &[[u8; 32]]) -> Vec<u64> {
        let mut counts: Vec<Option<u64>> = keys
            .iter()
            .map(|key| self.used.get(key).or_else(|| self.stored.get(key)).copied())
            .collect();
        let missing: Vec<usize> = (0..texts.len()).filter(|&i| counts[i].is_none()).collect();
        if !missing.is_empty() {
            let to_count: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
            let fresh = self.tokenizer.count_many(&to_count);
            self.misses += missing.len();
            for (&index, count) in missing.iter().zip(fresh) {
                counts[index] = Some(count as u64);
            }
        }
        let counts: Vec<u64> = counts.into_iter().map(Option::unwrap_or_default).collect();
        for (key, &count) in keys.iter().zip(&counts) {
            self.used.insert(*key, count);
        }
        counts
    }

    /// Counts `text` without caching its count (a probe whose text will not recur); counted in
    /// [`TokenCache::misses`] like any other count.
    pub fn count_uncached(&mut self, text: &str) -> u64 {
        self.misses += 1;
        self.tokenizer.count(text) as u64
    }

    /// A value derived from token counts (not a count of one text), remembered under `key`
    /// like a count: `compute` runs only when the key is not cached. The key must cover every
    /// input of the computation (see [`derived_key`]).
    pub fn remembered(&mut self, key: [u8; 32], compute: impl FnOnce(&mut Self) -> u64) -> u64 {
        if let Some(&value) = self.used.get(&key).or_else(|| self.stored.get(&key)) {
            self.used.insert(key, value);
            return value;
        }
        let value = compute(self);
        self.used.insert(key, value);
        value
    }

    /// Forgets a remembered value (it turned out stale).
    pub fn forget(&mut self, key: &[u8; 32]) {
        self.used.remove(key);
        self.stored.remove(key);
    }

    /// Writes the entries used since loading, if they differ from what was stored.
    pub fn save(&self) -> Result<()> {
        if self.used == self.stored || self.used.is_empty() {
            return Ok(());
        }
        if let Some(dir) = self.path.parent() {
            fs::create_dir_all(dir).map_err(|e| Error::io("create", dir, e))?;
        }
        let mut lines: Vec<String> = self
            .used
            .iter()
            .map(|(key, count)| format!("{} {count}\n", hex::encode(key)))
            .collect();
        lines.sort_unstable();
        write_atomic(&self.path, lines.concat().as_bytes())
    }
}

/// The cache key of a derived value: the sha256 of its kind (name and version of the
/// computation) and its inputs, each length-prefixed so no two input lists share a key.
pub fn derived_key(kind: &str, inputs: &[&[u8]]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for part in std::iter::once(kind.as_bytes()).chain(inputs.iter().copied()) {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hasher.finalize().into()
}

/// The cache key of a text: its sha256.
pub fn cache_key(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_cached_across_loads() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = TokenCache::load(dir.path().to_path_buf(), Tokenizer::Approx);
        assert_eq!(cache.count(&["abcdefgh", "abcd"]), [2, 1]);
        assert_eq!(cache.misses, 2);
        cache.save().unwrap();
        let mut again = TokenCache::load(dir.path().to_path_buf(), Tokenizer::Approx);
        assert_eq!(again.count(&["abcd", "abcdefghi"]), [1, 3]);
        assert_eq!(again.misses, 1, "only the new text is counted");
        let other = TokenCache::load(dir.path().to_path_buf(), Tokenizer::O200k);
        assert!(other.stored.is_empty(), "caches are per tokenizer");
    }
}
