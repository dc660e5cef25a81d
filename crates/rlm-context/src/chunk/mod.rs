//! Chunkers: split a buffer into byte ranges for search and for fan-out to models.
//!
//! A [`Chunk`] is a range into the buffer (never a copy), always on UTF-8 character boundaries,
//! with 1-based inclusive line numbers. Sizes are counted in **characters**; with
//! [`SizeUnit::Tokens`] a size is converted at [`CHARS_PER_TOKEN`] characters per token, the usual
//! rule of thumb for English text and code with BPE tokenizers (an approximation, not a count).
//!
//! Strategies:
//! - [`Strategy::Fixed`]: windows of exactly `size` characters, each starting `size - overlap`
//!   characters after the previous one.
//! - [`Strategy::Structure`] (default for prose): markdown headings start a new chunk once the
//!   current one holds a quarter of the target size; paragraphs (blank-line separated, fenced
//!   code kept whole) are packed up to `size`; an oversized paragraph is split at sentence ends,
//!   then at whitespace, then anywhere on a character boundary.
//! - [`Strategy::Records`]: lines (NDJSON, logs) or CSV/TSV records (quoted newlines respected)
//!   packed whole up to `size`; a record longer than `size` is a chunk of its own and is never
//!   split. For CSV/TSV every chunk carries the header row as [`Chunk::header`]. Overlap is
//!   ignored: records are never repeated.
//! - [`Strategy::Code`]: a **heuristic**, not a parser. A top-level item starts at a non-blank line
//!   in column 0 that follows a blank line, an indented line, or a column-0 closing bracket; doc
//!   comments, attributes and decorators directly above stay with their item. Items are packed up
//!   to `size`; an oversized item is split at blank lines, then lines.
//!
//! For `Structure` and `Code`, `overlap` extends each chunk after the first backwards by up to
//! `overlap` characters, snapped forward to a line start when the window holds one.
//!
//! ```
//! use rlm_context::chunk::{chunk, ChunkOptions, Strategy};
//!
//! let text = "# Title\n\nFirst paragraph.\n\nSecond paragraph.\n";
//! let options = ChunkOptions { strategy: Strategy::Structure, size: 30, ..ChunkOptions::default() };
//! let chunking = chunk(text, Some("notes.md"), &options).unwrap();
//! assert_eq!(chunking.chunks.len(), 2);
//! assert_eq!(chunking.chunks[1].text(text), "Second paragraph.\n");
//! assert_eq!((chunking.chunks[1].start_line, chunking.chunks[1].end_line), (5, 5));
//! ```

mod code;
mod fixed;
mod lines;
mod pack;
mod records;
mod stream;
mod structure;

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use serde::{Deserialize, Serialize};

use records::Section;
pub use stream::StreamChunker;

/// Characters per token assumed by [`SizeUnit::Tokens`].
pub const CHARS_PER_TOKEN: usize = 4;

/// Default chunk size, in characters.
pub const DEFAULT_SIZE: usize = 2000;

/// How a buffer is split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Strategy {
    /// Pick from the name and content: code, records or structure.
    #[default]
    Auto,
    /// Fixed-size windows with overlap.
    Fixed,
    /// Headings, paragraphs and sentences.
    Structure,
    /// Whole NDJSON lines or CSV records.
    Records,
    /// Top-level code items (heuristic).
    Code,
}

impl Strategy {
    /// The lowercase name used on the command line and in stored metadata.
    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Fixed => "fixed",
            Self::Structure => "structure",
            Self::Records => "records",
            Self::Code => "code",
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The unit `size` and `overlap` are counted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum SizeUnit {
    /// Unicode scalar values.
    #[default]
    Chars,
    /// Approximate tokens ([`CHARS_PER_TOKEN`] characters each).
    #[cfg_attr(
        feature = "clap",
        value(help = "Approximate tokens (4 characters each)")
    )]
    Tokens,
}

/// Chunking parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkOptions {
    /// Which chunker to use.
    pub strategy: Strategy,
    /// Target (maximum, except for oversized records) chunk size in `unit`.
    pub size: usize,
    /// Overlap between consecutive chunks in `unit`; must be smaller than `size`.
    pub overlap: usize,
    /// Unit of `size` and `overlap`.
    pub unit: SizeUnit,
}

impl Default for ChunkOptions {
    fn default() -> Self {
        Self {
            strategy: Strategy::Auto,
            size: DEFAULT_SIZE,
            overlap: 0,
            unit: SizeUnit::Chars,
        }
    }
}

impl ChunkOptions {
    /// Checks the sizes; the chunkers call this before doing anything.
    pub fn validate(&self) -> Result<(), ChunkError> {
        if self.size == 0 {
            return Err(ChunkError::ZeroSize);
        }
        if self.overlap >= self.size {
            return Err(ChunkError::OverlapTooLarge {
                overlap: self.overlap,
                size: self.size,
            });
        }
        Ok(())
    }

    fn in_chars(&self, amount: usize) -> usize {
        match self.unit {
            SizeUnit::Chars => amount,
            SizeUnit::Tokens => amount.saturating_mul(CHARS_PER_TOKEN),
        }
    }
}

/// Invalid chunking parameters.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChunkError {
    /// `size` was zero.
    #[error("chunk size must be at least 1")]
    ZeroSize,
    /// `overlap` was not smaller than `size`.
    #[error("overlap ({overlap}) must be smaller than the chunk size ({size})")]
    OverlapTooLarge {
        /// The requested overlap.
        overlap: usize,
        /// The requested size.
        size: usize,
    },
}

/// One chunk: a byte range of the buffer plus an optional header range shown before it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    /// Byte range in the buffer; both ends are character boundaries.
    pub range: Range<usize>,
    /// First line of the range, 1-based.
    pub start_line: u64,
    /// Last line of the range, 1-based, inclusive.
    pub end_line: u64,
    /// Byte range of a header (the CSV header row) that belongs in front of this chunk.
    pub header: Option<Range<usize>>,
}

impl Chunk {
    /// The chunk's text, with the header in front when there is one.
    pub fn text<'a>(&self, buffer: &'a str) -> Cow<'a, str> {
        let body = &buffer[self.range.clone()];
        match &self.header {
            Some(header) => Cow::Owned(format!("{}{body}", &buffer[header.clone()])),
            None => Cow::Borrowed(body),
        }
    }
}

/// The result of chunking: the strategy actually used (never `Auto`) and the chunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunking {
    /// The concrete strategy `Auto` resolved to, or the one requested.
    pub strategy: Strategy,
    /// Chunks in buffer order.
    pub chunks: Vec<Chunk>,
}

/// Splits `text` into chunks. `name` (a file name or path) guides `Auto` and CSV detection.
pub fn chunk(
    text: &str,
    name: Option<&str>,
    options: &ChunkOptions,
) -> Result<Chunking, ChunkError> {
    options.validate()?;
    let strategy = match options.strategy {
        Strategy::Auto => detect_strategy(text, name),
        other => other,
    };
    let table = match strategy {
        Strategy::Records => {
            let (head, complete) = delimiter_head(text);
            records::table_delimiter(name, head, complete)
        }
        _ => None,
    };
    let section = Section {
        table,
        header_first: true,
        complete: true,
    };
    let (ranges, header) = split_ranges(text, strategy, options, section);
    let mut counter = lines::LineCounter::new(text);
    let chunks = ranges
        .into_iter()
        .map(|range| {
            let start_line = counter.line_at(range.start);
            let end_line = counter.line_at(range.end - 1);
            Chunk {
                range,
                start_line,
                end_line,
                header: header.clone(),
            }
        })
        .collect();
    Ok(Chunking { strategy, chunks })
}

/// The non-empty chunk ranges of `text` by a concrete `strategy`, and the CSV/TSV header range;
/// `section` says how `records` reads the text.
fn split_ranges(
    text: &str,
    strategy: Strategy,
    options: &ChunkOptions,
    section: Section,
) -> (Vec<Range<usize>>, Option<Range<usize>>) {
    let size = options.in_chars(options.size);
    let overlap = options.in_chars(options.overlap);
    let (mut ranges, header) = match strategy {
        Strategy::Fixed => (fixed::split(text, size, overlap), None),
        Strategy::Records => records::split(text, section, size),
        Strategy::Code => (
            pack::with_overlap(text, code::split(text, size), overlap),
            None,
        ),
        Strategy::Structure | Strategy::Auto => (
            pack::with_overlap(text, structure::split(text, size), overlap),
            None,
        ),
    };
    ranges.retain(|range| !range.is_empty());
    (ranges, header)
}

/// The start of `text` a table's delimiter is sniffed from, and whether that is all of it. A
/// stream sniffs once it holds more than this, so both see the same bytes.
fn delimiter_head(text: &str) -> (&str, bool) {
    if text.len() <= stream::DETECTION_BYTES {
        (text, true)
    } else {
        (
            &text[..text.floor_char_boundary(stream::DETECTION_BYTES)],
            false,
        )
    }
}

/// Where the units of `structure` (paragraphs) and `code` (items) start; `None` for the
/// strategies whose every chunk starts a unit. A chunk that starts a unit starts afresh:
/// chunking from there gives what chunking the whole text gave.
fn unit_starts(text: &str, strategy: Strategy) -> Option<Vec<usize>> {
    let units = match strategy {
        Strategy::Structure | Strategy::Auto => structure::paragraphs(text),
        Strategy::Code => code::items(text),
        Strategy::Fixed | Strategy::Records => return None,
    };
    Some(units.into_iter().map(|unit| unit.range.start).collect())
}

const CODE_EXTENSIONS: &[&str] = &[
    "rs", "py", "pyi", "js", "mjs", "cjs", "ts", "tsx", "jsx", "go", "java", "kt", "kts", "scala",
    "c", "h", "cc", "cpp", "cxx", "hpp", "hh", "cs", "rb", "php", "swift", "m", "mm", "sh", "bash",
    "zsh", "lua", "pl", "pm", "r", "sql", "proto", "ex", "exs", "erl", "hs", "ml", "clj", "dart",
    "zig", "nim", "jl", "vue", "svelte",
];

const RECORD_EXTENSIONS: &[&str] = &["csv", "tsv", "jsonl", "ndjson", "log"];

/// Picks a strategy from the file extension, then from the content (NDJSON lines).
pub fn detect_strategy(text: &str, name: Option<&str>) -> Strategy {
    if let Some(extension) = name.and_then(extension) {
        if CODE_EXTENSIONS.contains(&extension.as_str()) {
            return Strategy::Code;
        }
        if RECORD_EXTENSIONS.contains(&extension.as_str()) {
            return Strategy::Records;
        }
    }
    let sample: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .take(stream::DETECTION_LINES)
        .collect();
    let json_lines = sample
        .iter()
        .filter(|line| line.starts_with('{') && line.ends_with('}'))
        .count();
    if sample.len() >= 2 && json_lines * 10 >= sample.len() * 9 {
        Strategy::Records
    } else {
        Strategy::Structure
    }
}

pub(crate) fn extension(name: &str) -> Option<String> {
    let file = name.rsplit(['/', '\\']).next()?;
    let (stem, extension) = file.rsplit_once('.')?;
    (!stem.is_empty()).then(|| extension.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Every strategy, many sizes: ranges on char boundaries, exact line numbers, and (without
    /// overlap) chunks that tile the text with nothing lost or repeated.
    #[test]
    fn all_strategies_keep_boundaries_lines_and_coverage() {
        let text = "# Título\n\nPárrafo uno. ¿Dos? 日本語のテキスト。\n\nfn main() {\n    println!(\"🎉\");\n}\n\n{\"k\":\"vé\"}\n{\"k\":2}\n";
        for strategy in [
            Strategy::Fixed,
            Strategy::Structure,
            Strategy::Records,
            Strategy::Code,
        ] {
            for size in [1, 2, 3, 5, 8, 13, 40, 1000] {
                for overlap in [0, size / 2] {
                    let options = ChunkOptions {
                        strategy,
                        size,
                        overlap,
                        unit: SizeUnit::Chars,
                    };
                    let chunks = chunk(text, Some("mixed.txt"), &options).unwrap().chunks;
                    for piece in &chunks {
                        assert!(
                            text.is_char_boundary(piece.range.start)
                                && text.is_char_boundary(piece.range.end)
                        );
                        let before = text[..piece.range.start].matches('\n').count() as u64;
                        let through = text.as_bytes()[..piece.range.end - 1]
                            .iter()
                            .filter(|&&b| b == b'\n')
                            .count() as u64;
                        assert_eq!(
                            (piece.start_line, piece.end_line),
                            (before + 1, through + 1),
                            "{strategy} {size}"
                        );
                    }
                    let tiles = overlap == 0 || matches!(strategy, Strategy::Records);
                    if tiles {
                        let joined: String =
                            chunks.iter().map(|c| &text[c.range.clone()]).collect();
                        assert_eq!(joined, text, "{strategy} size {size} lost or repeated text");
                    }
                }
            }
        }
    }

    #[test]
    fn absurd_sizes_are_refused_and_tokens_scale() {
        let zero = ChunkOptions {
            size: 0,
            ..ChunkOptions::default()
        };
        assert_eq!(chunk("x", None, &zero), Err(ChunkError::ZeroSize));
        let overlap = ChunkOptions {
            size: 4,
            overlap: 4,
            ..ChunkOptions::default()
        };
        assert!(matches!(
            chunk("x", None, &overlap),
            Err(ChunkError::OverlapTooLarge { .. })
        ));
        let tokens = ChunkOptions {
            strategy: Strategy::Fixed,
            size: 2,
            unit: SizeUnit::Tokens,
            ..ChunkOptions::default()
        };
        let chunks = chunk("abcdefghij", None, &tokens).unwrap().chunks;
        assert_eq!(chunks[0].range, 0..2 * CHARS_PER_TOKEN);
    }

    #[test]
    fn auto_picks_by_extension_then_content() {
        assert_eq!(detect_strategy("", Some("src/lib.rs")), Strategy::Code);
        assert_eq!(detect_strategy("", Some("data.CSV")), Strategy::Records);
        assert_eq!(
            detect_strategy("{\"a\":1}\n{\"a\":2}\n", None),
            Strategy::Records
        );
        assert_eq!(
            detect_strategy("Some prose.\n\nMore.", Some("notes")),
            Strategy::Structure
        );
    }
}
