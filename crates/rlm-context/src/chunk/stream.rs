//! Chunking text that arrives in pieces, holding only the part not yet in a finished chunk.
//!
//! Every chunker here is greedy from a chunk start: where a chunk ends depends only on the text
//! from its start onwards. So the stream keeps the text from the start of the last (possibly
//! unfinished) chunk, appends the next piece, chunks that tail again, and emits every chunk but
//! the last. The result equals [`chunk`](super::chunk) on the whole text; a test checks it for
//! every strategy. The one exception is overlap for `structure` and `code`, which reaches back
//! before a chunk's start: [`StreamChunker::supports`] says when a stream can be used.

use std::ops::Range;

use super::records::{self, Section};
use super::{
    Chunk, ChunkError, ChunkOptions, Strategy, delimiter_head, detect_strategy, lines::LineCounter,
    split_ranges, unit_starts,
};

/// Non-blank lines `detect_strategy` samples.
pub(super) const DETECTION_LINES: usize = 20;

/// Past this much text without enough lines, `Auto` decides from what it has; a CSV's delimiter
/// is sniffed from this much.
pub(super) const DETECTION_BYTES: usize = SETTLE_FALLBACK_BYTES;

/// Incremental chunker. Feed pieces with [`push`](Self::push), then call
/// [`finish`](Self::finish); chunk ranges and lines are relative to the whole stream.
#[derive(Debug)]
pub struct StreamChunker {
    name: Option<String>,
    options: ChunkOptions,
    /// Resolved from the first piece when the options say `Auto`.
    strategy: Option<Strategy>,
    /// The delimiter of a table (for `records`), resolved with the strategy; a CSV's is sniffed
    /// from its first [`DETECTION_BYTES`].
    table: Option<Option<u8>>,
    /// The CSV/TSV header row, once a chunk has been emitted after it.
    header: Option<Range<usize>>,
    /// Whether a chunk has been emitted yet (until then the tail starts at the stream start).
    started: bool,
    /// Text from `tail_offset` on that is not in an emitted chunk.
    tail: String,
    tail_offset: usize,
    /// 1-based line at `tail_offset`.
    tail_line: u64,
}

impl StreamChunker {
    /// Whether streaming gives the same chunks as whole-text chunking for these options:
    /// always without overlap, and for `fixed` and `records` (which ignore overlap or repeat a
    /// fixed grid) with it.
    pub fn supports(options: &ChunkOptions) -> bool {
        options.overlap == 0 || matches!(options.strategy, Strategy::Fixed | Strategy::Records)
    }

    /// A stream for a buffer called `name` (guides `Auto` and CSV detection).
    pub fn new(name: Option<&str>, options: &ChunkOptions) -> Result<Self, ChunkError> {
        options.validate()?;
        Ok(Self {
            name: name.map(str::to_owned),
            options: *options,
            strategy: None,
            table: None,
            header: None,
            started: false,
            tail: String::new(),
            tail_offset: 0,
            tail_line: 1,
        })
    }

    /// Adds the next piece of text and passes each chunk it completed, with the chunk's text
    /// (without header), to `each`. Stops at the first error.
    pub fn push<E>(
        &mut self,
        piece: &str,
        each: impl FnMut(Chunk, &str) -> Result<(), E>,
    ) -> Result<(), E> {
        self.tail.push_str(piece);
        self.emit(false, each)
    }

    /// Ends the stream: passes the remaining chunks to `each`; returns the strategy used (never
    /// `Auto`).
    pub fn finish<E>(
        mut self,
        each: impl FnMut(Chunk, &str) -> Result<(), E>,
    ) -> Result<Strategy, E> {
        self.emit(true, each)?;
        Ok(self.resolved())
    }

    /// `Auto` looks at the first [`DETECTION_LINES`] non-blank lines; decide once they are all
    /// here (or the tail is already [`DETECTION_BYTES`] long).
    fn can_resolve(&self) -> bool {
        if self.strategy.is_some() || self.options.strategy != Strategy::Auto {
            return true;
        }
        if self.tail.len() >= DETECTION_BYTES {
            return true;
        }
        let complete = self.tail.rfind('\n').map_or("", |end| &self.tail[..end]);
        complete
            .lines()
            .filter(|line| !line.trim().is_empty())
            .count()
            > DETECTION_LINES
    }

    fn resolved(&mut self) -> Strategy {
        *self
            .strategy
            .get_or_insert_with(|| match self.options.strategy {
                Strategy::Auto => detect_strategy(&self.tail, self.name.as_deref()),
                other => other,
            })
    }

    /// The table delimiter, once it can be known: `Some(None)` when the text is no table, `None`
    /// while a CSV's first [`DETECTION_BYTES`] have not all arrived (whole-text chunking sniffs
    /// exactly those).
    fn table_delimiter(&mut self, strategy: Strategy, last: bool) -> Option<Option<u8>> {
        if strategy != Strategy::Records {
            return Some(None);
        }
        if self.table.is_none() {
            let name = self.name.as_deref();
            if records::needs_sniffing(name) && !last && self.tail.len() <= DETECTION_BYTES {
                return None;
            }
            // Nothing was emitted yet, so the tail is the start of the text.
            let (head, complete) = delimiter_head(&self.tail);
            self.table = Some(records::table_delimiter(name, head, complete));
        }
        self.table
    }

    fn emit<E>(
        &mut self,
        last: bool,
        mut each: impl FnMut(Chunk, &str) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.tail.is_empty() || (!last && !self.can_resolve()) {
            return Ok(());
        }
        let strategy = self.resolved();
        let Some(table) = self.table_delimiter(strategy, last) else {
            return Ok(());
        };
        // Chunk only up to a boundary no later text can move (a chunker decides where a chunk
        // ends from the units after it, so those must be whole), then hold back the last chunk,
        // which may still grow.
        let end = if last {
            self.tail.len()
        } else {
            settled_end(&self.tail, strategy)
        };
        let section = Section {
            table,
            header_first: !self.started,
            complete: last,
        };
        let (mut ranges, header) =
            split_ranges(&self.tail[..end], strategy, &self.options, section);
        if !last {
            // Hold back the last chunk, which may still grow, and restart at a chunk that also
            // starts a unit: a chunk cut from the middle of an oversized paragraph or item would
            // be packed differently when chunked afresh. Past the fallback size with no such
            // chunk, restart at the last chunk anyway (bounded memory over exactness).
            let restart = match unit_starts(&self.tail[..end], strategy) {
                None => ranges.len().checked_sub(1),
                Some(starts) => (1..ranges.len())
                    .rev()
                    .find(|&i| starts.binary_search(&ranges[i].start).is_ok())
                    .or_else(|| {
                        (self.tail.len() > SETTLE_FALLBACK_BYTES)
                            .then(|| ranges.len().checked_sub(1))
                            .flatten()
                    }),
            };
            ranges.truncate(restart.unwrap_or(0));
        }
        let Some(cut) = ranges.last().map(|range| range.end) else {
            return Ok(());
        };
        if !self.started {
            self.header = header.map(|h| self.tail_offset + h.start..self.tail_offset + h.end);
            self.started = true;
        }
        let mut counter = LineCounter::new(&self.tail);
        let base = self.tail_line - 1;
        for range in ranges {
            let chunk = Chunk {
                start_line: base + counter.line_at(range.start),
                end_line: base + counter.line_at(range.end - 1),
                range: self.tail_offset + range.start..self.tail_offset + range.end,
                header: self.header.clone(),
            };
            each(chunk, &self.tail[range])?;
        }
        // Keep the text after the last emitted chunk. Fixed windows with overlap restart inside
        // the last emitted chunk, at the next window's start.
        let keep_from = if strategy == Strategy::Fixed && self.options.overlap > 0 {
            overlap_restart(&self.tail, cut, self.options.in_chars(self.options.overlap))
        } else {
            cut
        };
        self.tail_line = base + counter.line_at(keep_from);
        self.tail.drain(..keep_from);
        self.tail_offset += keep_from;
        Ok(())
    }
}

/// Past this much unfinished text, the stream settles for line ends, then any character, and
/// restarts at its last chunk even mid-unit: bounded memory over exactness on text without blank
/// lines or line breaks.
const SETTLE_FALLBACK_BYTES: usize = 1 << 20;

/// The end of the text whose units are complete: any point for fixed windows, the last line end
/// for records, the last blank line for paragraphs and code items.
fn settled_end(text: &str, strategy: Strategy) -> usize {
    let after = |found: Option<usize>, length: usize| found.map_or(0, |at| at + length);
    let settled = match strategy {
        Strategy::Fixed => text.len(),
        Strategy::Records => after(text.rfind('\n'), 1),
        Strategy::Structure | Strategy::Code | Strategy::Auto => {
            let paragraph = after(text.rfind("\n\n"), 2);
            if paragraph == 0 && text.len() > SETTLE_FALLBACK_BYTES {
                after(text.rfind('\n'), 1)
            } else {
                paragraph
            }
        }
    };
    if settled == 0 && text.len() > SETTLE_FALLBACK_BYTES {
        // No line break at all (minified code, one-line JSON): any character boundary.
        text.len()
    } else {
        settled
    }
}

/// Where the next fixed window starts: `overlap` characters before `cut`.
fn overlap_restart(text: &str, cut: usize, overlap: usize) -> usize {
    text[..cut]
        .char_indices()
        .rev()
        .nth(overlap.saturating_sub(1))
        .map_or(0, |(index, _)| index)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::chunk::{SizeUnit, chunk};

    fn streamed(text: &str, name: &str, options: &ChunkOptions, piece: usize) -> Vec<Chunk> {
        let mut stream = StreamChunker::new(Some(name), options).unwrap();
        let mut out = Vec::new();
        let mut start = 0;
        while start < text.len() {
            let mut end = (start + piece).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            stream
                .push(&text[start..end], |chunk, body| {
                    assert_eq!(body, &text[chunk.range.clone()]);
                    out.push(chunk);
                    Ok::<(), ()>(())
                })
                .unwrap();
            start = end;
        }
        let strategy = stream
            .finish(|chunk, body| {
                assert_eq!(body, &text[chunk.range.clone()]);
                out.push(chunk);
                Ok::<(), ()>(())
            })
            .unwrap();
        assert_eq!(strategy, chunk(text, Some(name), options).unwrap().strategy);
        out
    }

    /// Char boundaries, exact line numbers, and (without overlap) ranges that tile the text.
    fn assert_valid(text: &str, chunks: &[Chunk], tiles: bool, label: &str) {
        let line_of = |at: usize| {
            1 + text.as_bytes()[..at]
                .iter()
                .filter(|&&b| b == b'\n')
                .count() as u64
        };
        // A table's chunks start after its header row.
        let mut covered = chunks
            .first()
            .and_then(|c| c.header.as_ref())
            .map_or(0, |h| h.end);
        for chunk in chunks {
            let range = chunk.range.clone();
            assert!(text.is_char_boundary(range.start) && text.is_char_boundary(range.end));
            assert_eq!(chunk.start_line, line_of(range.start), "{label}");
            assert_eq!(chunk.end_line, line_of(range.end - 1), "{label}");
            if tiles {
                assert_eq!(range.start, covered, "{label}");
            }
            covered = range.end;
        }
        if tiles {
            assert_eq!(covered, text.len(), "{label}");
        }
    }

    fn sample(kind: &str) -> String {
        let mut text = String::new();
        for i in 0..120 {
            match kind {
                "md" => {
                    if i % 9 == 0 {
                        text.push_str(&format!("## Section {i}\n\n"));
                    }
                    text.push_str(&format!(
                        "Paragraph {i} speaks of ñandú and 東京. It has two sentences, here.\n\n"
                    ));
                    if i % 13 == 0 {
                        text.push_str("```\nfn fenced() {}\n\nstill fenced\n```\n\n");
                    }
                }
                "rs" => text.push_str(&format!(
                    "/// Doc {i}.\n#[inline]\nfn item_{i}(x: u32) -> u32 {{\n    x + {i}\n}}\n\n"
                )),
                "ndjson" => text.push_str(&format!("{{\"id\":{i},\"v\":\"é{i}\"}}\n")),
                "csv" => {
                    if i == 0 {
                        text.push_str("id,note\n");
                    }
                    text.push_str(&format!("{i},\"line one\nline two {i}\"\n"));
                }
                // Quoted fields, quotes inside unquoted fields, and near the end a quoted field
                // that never closes (no quote follows it).
                "tsv" => {
                    if i == 0 {
                        text.push_str("id\tnote\n");
                    }
                    let row = match i {
                        _ if i > 110 => format!("{i}\tplain\n"),
                        110 => format!("{i}\t\"never closes\n"),
                        _ if i % 7 == 0 => format!("{i}\t\"quoted\nacross \"\"lines\"\"\"\n"),
                        _ if i % 5 == 0 => format!("{i}\t27\" wide\n"),
                        _ => format!("{i}\tx\t\"a\tb\"\n"),
                    };
                    text.push_str(&row);
                }
                _ => text.push_str(&format!("word{i} ")),
            }
        }
        text
    }

    #[test]
    fn streaming_equals_whole_text_chunking() {
        let cases = [
            ("notes.md", "md"),
            ("lib.rs", "rs"),
            ("events.ndjson", "ndjson"),
            ("table.csv", "csv"),
            ("quotes.tsv", "tsv"),
            ("plain.txt", "txt"),
        ];
        for (name, kind) in cases {
            let text = sample(kind);
            for strategy in [
                Strategy::Auto,
                Strategy::Fixed,
                Strategy::Structure,
                Strategy::Records,
                Strategy::Code,
            ] {
                for (size, overlap) in [(40, 0), (200, 0), (1000, 0), (97, 13)] {
                    let options = ChunkOptions {
                        strategy,
                        size,
                        overlap,
                        unit: SizeUnit::Chars,
                    };
                    if !StreamChunker::supports(&options) {
                        continue;
                    }
                    let whole = chunk(&text, Some(name), &options).unwrap().chunks;
                    for piece in [3, 64, 333, 5000] {
                        let got = streamed(&text, name, &options, piece);
                        let label = format!(
                            "{name} {strategy} size {size} overlap {overlap} piece {piece}"
                        );
                        assert_valid(&text, &got, overlap == 0, &label);
                        assert_eq!(got, whole, "{label}");
                    }
                }
            }
        }
    }

    /// A CSV over the sniffing window, with `;` as delimiter (so quoting depends on the sniffed
    /// delimiter), and a quoted field open past the limit that a stray quote closes far below.
    #[test]
    fn tables_with_sniffed_delimiters_and_unclosed_quotes_stream_like_whole_text() {
        let mut text = String::from("id;note;size\n");
        for i in 0..60_000 {
            let row = match i {
                20_000 => format!("{i};\"opens and runs on;1\n"),
                30_000 => format!("{i};stray quote\" closes it;1\n"),
                _ if (20_000..30_000).contains(&i) => format!("{i};plain;{i}\n"),
                _ if i % 9 == 0 => format!("{i};\"line\nbreak; {i}\";2\n"),
                _ if i % 4 == 0 => format!("{i};monitor;27\" wide\n"),
                _ => format!("{i};plain;{i}\n"),
            };
            text.push_str(&row);
        }
        assert!(text.len() > DETECTION_BYTES);
        let options = ChunkOptions {
            strategy: Strategy::Auto,
            size: 200,
            overlap: 0,
            unit: SizeUnit::Chars,
        };
        let whole = chunk(&text, Some("t.csv"), &options).unwrap().chunks;
        let tiles = whole
            .windows(2)
            .all(|pair| pair[0].range.end == pair[1].range.start);
        assert!(tiles && whole.last().unwrap().range.end == text.len());
        for piece in [65_536, 333_333, 2 << 20] {
            assert_eq!(
                streamed(&text, "t.csv", &options, piece),
                whole,
                "piece {piece}"
            );
        }
        // No record swallowed its neighbours, so every chunk is within the size.
        assert!(
            whole
                .iter()
                .all(|c| text[c.range.clone()].chars().count() <= 200)
        );
        // One record per chunk: read with `;`, a quoted newline stays in its record, and the
        // field left open at row 20,000 is one line.
        let one_each = ChunkOptions { size: 1, ..options };
        let records = chunk(&text, Some("t.csv"), &one_each).unwrap().chunks;
        assert_eq!(records.len(), 60_000);
        assert!(
            records
                .iter()
                .all(|c| !text[c.range.clone()].starts_with("break;"))
        );
        assert_eq!(
            &text[records[20_000].range.clone()],
            "20000;\"opens and runs on;1\n"
        );
    }

    /// Texts where a chunk starts inside an oversized paragraph or fenced block: restarting
    /// there would pack the rest differently.
    #[test]
    fn a_split_paragraph_or_fence_is_not_a_restart_point() {
        let mut prose = String::new();
        let mut fenced = String::new();
        for i in 0..40 {
            prose.push_str(&format!(
                "Aaaa aaaa {i}. Bbbb bbbb. Cccc cccc. Dddd.\n\nEe.\n\n"
            ));
            fenced.push_str(&format!(
                "```\nlet a = {i};\n\nlet b = 2;\n\nlet c = 3;\n```\n\nAfter a.\n\n# H{i}\n\nText.\n\n"
            ));
        }
        for (text, size) in [(&prose, 25), (&fenced, 20), (&fenced, 45)] {
            for strategy in [Strategy::Structure, Strategy::Code] {
                let options = ChunkOptions {
                    strategy,
                    size,
                    overlap: 0,
                    unit: SizeUnit::Chars,
                };
                let whole = chunk(text, Some("t.md"), &options).unwrap().chunks;
                for piece in [1, 5, 30, 40, 41, 60] {
                    assert_eq!(
                        streamed(text, "t.md", &options, piece),
                        whole,
                        "{strategy} size {size} piece {piece}"
                    );
                }
            }
        }
    }

    #[test]
    fn text_without_line_breaks_is_chunked_in_bounded_memory() {
        let text = "word ".repeat(700_000); // 3.5 MB, no newline
        let options = ChunkOptions::default();
        let mut stream = StreamChunker::new(Some("min.txt"), &options).unwrap();
        let mut covered = 0;
        let mut longest_tail = 0;
        for piece in text.as_bytes().chunks(64 * 1024) {
            let piece = std::str::from_utf8(piece).unwrap();
            stream
                .push(piece, |chunk, _| {
                    assert_eq!(chunk.range.start, covered);
                    covered = chunk.range.end;
                    Ok::<(), ()>(())
                })
                .unwrap();
            longest_tail = longest_tail.max(stream.tail.len());
        }
        stream
            .finish(|chunk, _| {
                assert_eq!(chunk.range.start, covered);
                covered = chunk.range.end;
                Ok::<(), ()>(())
            })
            .unwrap();
        assert_eq!(covered, text.len());
        assert!(
            longest_tail < SETTLE_FALLBACK_BYTES + 128 * 1024,
            "{longest_tail}"
        );
    }

    #[test]
    fn overlap_support_is_limited_to_grids_and_records() {
        let with = |strategy| ChunkOptions {
            strategy,
            size: 10,
            overlap: 2,
            unit: SizeUnit::Chars,
        };
        assert!(StreamChunker::supports(&with(Strategy::Fixed)));
        assert!(StreamChunker::supports(&with(Strategy::Records)));
        assert!(!StreamChunker::supports(&with(Strategy::Structure)));
        assert!(!StreamChunker::supports(&with(Strategy::Auto)));
    }
}
