//! Token counting: exact OpenAI BPE counts offline (`o200k`, `cl100k`) and a cheap estimate.
//!
//! The exact tokenizers come from the `bpe-openai` crate, which embeds the BPE tables in the
//! binary (no network, no files at run time). Measured on this machine class against
//! `tiktoken-rs` 0.12 on 17 MB of text and 300 generated strings of mixed scripts, emoji and odd
//! whitespace: identical counts for both encodings, table load 0.16–0.24 s instead of 0.4 s, and
//! counting 1.3–2.2× faster. Each table is built once per process, on first use.
//!
//! ```
//! use rlm_context::tokens::Tokenizer;
//!
//! let tokenizer: Tokenizer = "approx".parse()?;
//! assert_eq!(tokenizer.count("abcdefgh"), 2);
//! assert_eq!(Tokenizer::O200k.name(), "o200k");
//! # Ok::<(), rlm_context::tokens::UnknownTokenizer>(())
//! ```

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::str::FromStr;

/// A way to count tokens. Serialized by its short name (`o200k`, `cl100k`, `approx`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Tokenizer {
    /// OpenAI `o200k_base` (GPT-4o, GPT-4.1, o-series), exact.
    #[default]
    O200k,
    /// OpenAI `cl100k_base` (GPT-4, GPT-3.5), exact.
    Cl100k,
    /// A heuristic that reads each byte once: one token per 4 ASCII bytes (rounded up), one per
    /// CJK/kana/hangul character, one per 2 other non-ASCII characters. Typically within ±25% of
    /// `o200k` for English prose and source code; use it when speed matters more than exactness.
    Approx,
}

/// The error for a tokenizer name that is not one of [`Tokenizer::NAMES`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownTokenizer(pub String);

impl fmt::Display for UnknownTokenizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown tokenizer `{}` (expected one of: {})",
            self.0,
            Tokenizer::NAMES.join(", ")
        )
    }
}

impl std::error::Error for UnknownTokenizer {}

impl Tokenizer {
    /// Every accepted name, in the order shown to users.
    pub const NAMES: [&'static str; 3] = ["o200k", "cl100k", "approx"];

    /// The short name (`o200k`, `cl100k`, `approx`), as accepted by [`FromStr`].
    pub fn name(self) -> &'static str {
        match self {
            Self::O200k => "o200k",
            Self::Cl100k => "cl100k",
            Self::Approx => "approx",
        }
    }

    /// Whether counts are exact for the named encoding.
    pub fn is_exact(self) -> bool {
        !matches!(self, Self::Approx)
    }

    /// Builds the encoding tables now (they are otherwise built on first use), so a later
    /// measurement or a parallel count does not include the one-time load.
    pub fn warm_up(self) {
        self.count("");
    }

    /// Number of tokens in `text`.
    pub fn count(self, text: &str) -> usize {
        match self {
            Self::O200k => bpe_openai::o200k_base().count(text),
            Self::Cl100k => bpe_openai::cl100k_base().count(text),
            Self::Approx => approximate_count(text),
        }
    }

    /// Counts many texts, spreading the work over the available cores. The result is in input
    /// order and equal to calling [`Tokenizer::count`] on each text.
    ///
    /// Exact tokenizers split each text into pre-tokens (words, spaces, punctuation runs) and
    /// remember the BPE count of every distinct pre-token per thread: source code repeats its
    /// words heavily, and the memo halves the time on such input (measured: 3.0 s → 1.6 s on
    /// 17 MB, with SipHash; a multiplicative hash does better still).
    pub fn count_many(self, texts: &[&str]) -> Vec<usize> {
        const PARALLEL_MIN_BYTES: usize = 256 * 1024;
        let total: usize = texts.iter().map(|text| text.len()).sum();
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        if threads < 2 || texts.len() < 2 || total < PARALLEL_MIN_BYTES {
            return self.count_run(texts);
        }
        self.warm_up();
        // Split into contiguous runs of about equal bytes, one per thread.
        let per_thread = total.div_ceil(threads);
        let mut runs: Vec<&[&str]> = Vec::with_capacity(threads);
        let mut start = 0;
        let mut bytes = 0;
        for (index, text) in texts.iter().enumerate() {
            bytes += text.len();
            if bytes >= per_thread {
                runs.push(&texts[start..=index]);
                start = index + 1;
                bytes = 0;
            }
        }
        if start < texts.len() {
            runs.push(&texts[start..]);
        }
        std::thread::scope(|scope| {
            let handles: Vec<_> = runs
                .iter()
                .map(|run| scope.spawn(move || self.count_run(run)))
                .collect();
            let mut counts = Vec::with_capacity(texts.len());
            for (handle, run) in handles.into_iter().zip(&runs) {
                // A panicking counter thread is a bug in the tokenizer crate; fall back to
                // counting that run here rather than losing the whole result.
                let part: Vec<usize> = handle.join().unwrap_or_else(|_| self.count_run(run));
                counts.extend(part);
            }
            counts
        })
    }

    /// Counts a run of texts on this thread, memoising BPE counts per distinct pre-token.
    fn count_run(self, texts: &[&str]) -> Vec<usize> {
        let tokenizer = match self {
            Self::O200k => bpe_openai::o200k_base(),
            Self::Cl100k => bpe_openai::cl100k_base(),
            Self::Approx => return texts.iter().map(|text| approximate_count(text)).collect(),
        };
        let mut memo: HashMap<&str, u32, BuildHasherDefault<PieceHasher>> = HashMap::default();
        texts
            .iter()
            .map(|text| {
                tokenizer
                    .split(text)
                    .map(|piece| {
                        *memo.entry(piece).or_insert_with(|| {
                            u32::try_from(tokenizer.bpe.count(piece.as_bytes())).unwrap_or(u32::MAX)
                        }) as usize
                    })
                    .sum()
            })
            .collect()
    }
}

/// A fast non-cryptographic hasher for short pre-token strings (FxHash-style multiply-rotate);
/// the memo is private to one call, so hash flooding is not a concern.
#[derive(Debug, Default, Clone, Copy)]
struct PieceHasher(u64);

impl Hasher for PieceHasher {
    fn write(&mut self, bytes: &[u8]) {
        const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(SEED);
        }
        for &byte in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(byte)).wrapping_mul(SEED);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl fmt::Display for Tokenizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Tokenizer {
    type Err = UnknownTokenizer;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name.to_ascii_lowercase().as_str() {
            "o200k" | "o200k_base" => Ok(Self::O200k),
            "cl100k" | "cl100k_base" => Ok(Self::Cl100k),
            "approx" => Ok(Self::Approx),
            _ => Err(UnknownTokenizer(name.to_owned())),
        }
    }
}

fn approximate_count(text: &str) -> usize {
    let ascii = text.bytes().filter(u8::is_ascii).count();
    let mut wide: usize = 0;
    let mut other: usize = 0;
    for character in text.chars().filter(|c| !c.is_ascii()) {
        if is_wide_script(character) {
            wide += 1;
        } else {
            other += 1;
        }
    }
    ascii.div_ceil(4) + wide + other.div_ceil(2)
}

/// CJK ideographs, kana and hangul: about one token per character in BPE vocabularies.
fn is_wide_script(character: char) -> bool {
    matches!(character as u32, 0x2E80..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF | 0x20000..=0x3FFFF)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_counts_match_known_values() {
        // Reference values from tiktoken-rs 0.12 (o200k_base / cl100k_base).
        let code = "def parse_args(argv):\n    return argv[1:]\n";
        assert_eq!(Tokenizer::O200k.count("hello world"), 2);
        assert_eq!(Tokenizer::Cl100k.count("hello world"), 2);
        assert_eq!(Tokenizer::O200k.count(""), 0);
        assert_eq!(Tokenizer::O200k.count("fn main() {}\n"), 4);
        assert_eq!(Tokenizer::Cl100k.count(code), 11);
        assert_eq!(Tokenizer::O200k.count(code), 11);
    }

    #[test]
    fn count_many_keeps_order_and_equals_single_counts() {
        let mut owned: Vec<String> = (0..64)
            .map(|i| format!("fn item_{i}() {{ let x = {i}; }}\n").repeat(200 + i))
            .collect();
        owned.push("日本語 🙂 'S  \r\n\t x_y getLogger  \n ".repeat(50));
        owned.push(String::new());
        let texts: Vec<&str> = owned.iter().map(String::as_str).collect();
        for tokenizer in [Tokenizer::O200k, Tokenizer::Cl100k, Tokenizer::Approx] {
            let many = tokenizer.count_many(&texts);
            let single: Vec<usize> = texts.iter().map(|t| tokenizer.count(t)).collect();
            assert_eq!(many, single, "{tokenizer}");
            assert_eq!(
                tokenizer.count_many(&texts[60..]),
                single[60..],
                "{tokenizer} serial"
            );
        }
    }

    #[test]
    fn approx_follows_its_documented_rule() {
        assert_eq!(Tokenizer::Approx.count("abcde"), 2);
        assert_eq!(Tokenizer::Approx.count("日本語"), 3);
        assert_eq!(Tokenizer::Approx.count("привет"), 3);
    }

    #[test]
    fn names_round_trip_and_unknown_is_rejected() {
        for name in Tokenizer::NAMES {
            let parsed: Tokenizer = name.parse().unwrap_or_default();
            assert_eq!(parsed.name(), name);
        }
        let error = "gpt2".parse::<Tokenizer>().unwrap_err();
        assert!(error.to_string().contains("o200k, cl100k, approx"));
    }
}
