//! `ContextMetadata` and the one-pass analysis that produces it.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use rlm_types::thousands;
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::delimited::{QUOTED_FIELD_LIMIT, split_fields};
use crate::fields::FieldSet;
use crate::format::Format;
use crate::json_scan::JsonScanner;
use crate::read_ahead::{a_core_is_free, with_read_ahead};
use crate::records::{
    DelimitedRowCounter, HeadingCounter, LineRecordCounter, UnclosedQuotes, heading_level,
};
use crate::sample::{LineSampler, WindowSchedule};
use crate::scan::{
    BLOCK_SIZE, Block, BlockFacts, BlockReader, Blocks, LATER_BLOCK_SIZE, TextStats, lossy,
};
use crate::sniff::{Verdict, first_rows, sniff};

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Limits that keep the analysis bounded.
#[derive(Debug, Clone)]
pub struct AnalyzeOptions {
    /// Maximum characters of the sample (cut on a character boundary).
    pub sample_chars: usize,
    /// Leading records whose fields are collected (sparse fields show up if they occur in these).
    pub field_records: u64,
    /// Windows spread evenly over the input whose records also give fields, so fields that
    /// appear only late in a file show up (NDJSON and JSON arrays).
    pub field_windows: u64,
    /// Records read in each window.
    pub window_records: u64,
    /// Maximum number of field names kept.
    pub max_fields: usize,
    /// Maximum headings kept in a Markdown outline.
    pub max_outline: usize,
}

impl Default for AnalyzeOptions {
    fn default() -> Self {
        Self {
            sample_chars: 200,
            field_records: 1000,
            field_windows: 64,
            window_records: 16,
            max_fields: 500,
            max_outline: 20,
        }
    }
}

/// A heading of a Markdown outline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Heading {
    pub level: u8,
    pub text: String,
}

/// Encoding facts worth telling a reader.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct EncodingInfo {
    /// The input is valid UTF-8.
    pub valid_utf8: bool,
    /// The input started with a UTF-8 byte-order mark (not counted in `chars`).
    pub bom: bool,
    /// Lines end with `\r\n` (count of such endings).
    pub crlf_lines: u64,
    /// Invalid UTF-8 sequences (each counted as one replacement character).
    pub invalid_sequences: u64,
    /// Byte offset of the first invalid sequence.
    pub first_invalid_offset: Option<u64>,
}

/// What a context is: everything a model needs before its first step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ContextMetadata {
    /// File name, `<stdin>`, or `None` for unnamed inline text.
    pub source: Option<String>,
    pub format: Format,
    /// Human description of the format.
    pub format_description: String,
    /// Language of source code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    pub bytes: u64,
    pub chars: u64,
    pub lines: u64,
    /// NDJSON lines, JSON array elements, or CSV/TSV data rows (header excluded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub records: Option<u64>,
    /// Field names — every top-level key, then dot paths one level deep — or CSV/TSV header
    /// columns.
    pub fields: Vec<String>,
    /// Field names left out because of the cap.
    #[serde(skip_serializing_if = "is_zero")]
    pub fields_omitted: u64,
    /// Whether `fields` was cut by the cap.
    #[serde(default)]
    pub fields_truncated: bool,
    /// Column delimiter of CSV/TSV.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delimiter: Option<String>,
    /// Number of headings (Markdown).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headings: Option<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub outline: Vec<Heading>,
    /// Root element name (XML/HTML).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root_element: Option<String>,
    /// The start of the content (first record for record formats), truncated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample: Option<String>,
    pub sample_truncated: bool,
    pub encoding: EncodingInfo,
    /// Things worth knowing: contradictions with the extension, malformed input, truncation.
    pub notes: Vec<String>,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// Analyses a file. Reads it once, streaming; memory use does not depend on its size. A FIFO is
/// read to its end; directories, devices and sockets are refused.
pub fn analyze_path(path: &Path, options: &AnalyzeOptions) -> Result<ContextMetadata, Error> {
    let file_error = |source| Error::Read {
        path: path.to_path_buf(),
        source,
    };
    let metadata = std::fs::metadata(path).map_err(file_error)?;
    if metadata.is_dir() {
        return Err(Error::IsDirectory {
            path: path.to_path_buf(),
        });
    }
    if let Some(kind) = endless_kind(&metadata.file_type()) {
        return Err(Error::NotAFile {
            path: path.to_path_buf(),
            kind,
        });
    }
    let file = File::open(path).map_err(file_error)?;
    analyze_opened(file, path, options)
}

/// [`analyze_path`] of a file already open (one a [`crate::root::FileRoot`] opened below its
/// root, say); `path` names it. What it is comes from the open file itself, so it cannot be
/// swapped between the look and the read.
pub fn analyze_opened(
    mut file: File,
    path: &Path,
    options: &AnalyzeOptions,
) -> Result<ContextMetadata, Error> {
    let file_error = |source| Error::Read {
        path: path.to_path_buf(),
        source,
    };
    let metadata = file.metadata().map_err(file_error)?;
    if metadata.is_dir() {
        return Err(Error::IsDirectory {
            path: path.to_path_buf(),
        });
    }
    if let Some(kind) = endless_kind(&metadata.file_type()) {
        return Err(Error::NotAFile {
            path: path.to_path_buf(),
            kind,
        });
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let size = metadata.is_file().then_some(metadata.len());
    if metadata.is_file() && starts_as_gzip(&mut file).map_err(file_error)? {
        return analyze_gzip(file, name.as_deref(), options, metadata.len()).map_err(file_error);
    }
    analyze_file(file, name.as_deref(), options, size).map_err(file_error)
}

/// Whether `file` begins with the gzip magic bytes (RFC 1952); it is left at its start.
fn starts_as_gzip(file: &mut File) -> io::Result<bool> {
    use std::io::{Seek as _, SeekFrom};
    let mut head = [0u8; 2];
    let mut read = 0;
    while read < head.len() {
        match file.read(&mut head[read..]) {
            Ok(0) => break,
            Ok(count) => read += count,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    file.seek(SeekFrom::Start(0))?;
    Ok(read == 2 && head == [0x1f, 0x8b])
}

/// A gzip file, analysed as the text it decompresses to (every member, as `zcat` reads it).
/// Its format is told by the name without `.gz` (`app.log.gz` is a log); `bytes` and the
/// counts are the decompressed text's, and a note gives the compressed size.
fn analyze_gzip(
    file: File,
    name: Option<&str>,
    options: &AnalyzeOptions,
    compressed: u64,
) -> io::Result<ContextMetadata> {
    let inner = name.map(|name| {
        name.strip_suffix(".gz")
            .or_else(|| name.strip_suffix(".GZ"))
            .unwrap_or(name)
    });
    let decoder = flate2::read::MultiGzDecoder::new(io::BufReader::new(file));
    let mut metadata = analyze_stream(decoder, inner, options, None).map_err(|error| {
        io::Error::new(
            error.kind(),
            format!("gzip data that does not decompress ({error})"),
        )
    })?;
    metadata.source = name.map(str::to_owned);
    metadata.notes.insert(
        0,
        format!(
            "gzip: {} bytes compressed; the figures are the decompressed text's",
            thousands(compressed)
        ),
    );
    Ok(metadata)
}

/// Files larger than this are read by a second thread while the first scans: the copy out of
/// the page cache is a third to a half of a run, and past a few blocks the overlap saves far
/// more than starting a thread costs (tens of microseconds; a 4 MiB file takes about a
/// millisecond).
const READ_AHEAD_MIN_BYTES: u64 = 4 * BLOCK_SIZE as u64;

/// The pass over a file, reading ahead on a second thread when the file is large and a core is
/// free for it ([`a_core_is_free`]; otherwise the two threads would only take turns). A FIFO
/// (no size) is read on this thread: a small one would pay for the thread, and its writer, not
/// the copy, usually sets the pace.
fn analyze_file(
    file: File,
    name: Option<&str>,
    options: &AnalyzeOptions,
    size: Option<u64>,
) -> io::Result<ContextMetadata> {
    let large = size.is_some_and(|size| size > READ_AHEAD_MIN_BYTES);
    #[cfg(target_os = "linux")]
    if let Some(size) = size.filter(|_| large)
        && let Some(map) = crate::mapped::GuardedMap::new(&file, size)
    {
        return analyze_mapped(map, &file, name, options, size);
    }
    if large && a_core_is_free() {
        with_read_ahead(file, BLOCK_SIZE, |blocks| {
            analyze_blocks(blocks, name, options, size)
        })
    } else {
        analyze_stream(file, name, options, size)
    }
}

/// The pass over a mapped file, on this thread: no copy out of the page cache to overlap with a
/// second one. A file cut short while it was read is an error, not figures of part of it.
#[cfg(target_os = "linux")]
fn analyze_mapped(
    map: crate::mapped::GuardedMap,
    file: &File,
    name: Option<&str>,
    options: &AnalyzeOptions,
    size: u64,
) -> io::Result<ContextMetadata> {
    let mut blocks = crate::mapped::MappedBlocks::new(map);
    let analysed = analyze_blocks(&mut blocks, name, options, Some(size));
    let now = file.metadata()?.len();
    if now < size {
        return Err(io::Error::other(format!(
            "the file shrank while it was read (from {} to {} bytes); run again once it is written",
            thousands(size),
            thousands(now)
        )));
    }
    if blocks.was_cut() {
        // Cut short and written again (a log rotated by copy and truncate), or a read the
        // storage failed.
        return Err(io::Error::other(
            "the file could not be read whole: it was cut short while it was read, or its storage \
             failed a read; run again once it is written",
        ));
    }
    analysed
}

/// What a file type is, if it is one whose reads need not end: character and block devices
/// (`/dev/zero`, a disk) and sockets. FIFOs are read: their writer ends them.
pub fn endless_kind(file_type: &std::fs::FileType) -> Option<&'static str> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if file_type.is_char_device() {
            return Some("character device");
        }
        if file_type.is_block_device() {
            return Some("block device");
        }
        if file_type.is_socket() {
            return Some("socket");
        }
    }
    #[cfg(not(unix))]
    let _ = file_type;
    None
}

/// Analyses bytes already in memory.
pub fn analyze_bytes(
    bytes: &[u8],
    name: Option<&str>,
    options: &AnalyzeOptions,
) -> ContextMetadata {
    // Reading from a slice cannot fail.
    analyze_stream(bytes, name, options, Some(bytes.len() as u64))
        .unwrap_or_else(|_| unreachable_metadata(name))
}

fn unreachable_metadata(name: Option<&str>) -> ContextMetadata {
    let mut metadata = Analysis::new(name, Verdict::empty()).finish();
    metadata
        .notes
        .push("internal error while reading in-memory input".to_owned());
    metadata
}

/// Analyses any reader in one streaming pass. `name` (a file name) is the first format signal.
pub fn analyze_reader(
    reader: impl Read,
    name: Option<&str>,
    options: &AnalyzeOptions,
) -> io::Result<ContextMetadata> {
    analyze_stream(reader, name, options, None)
}

/// The pass on this thread; `size_hint` (the input's length, when known) spaces the windows
/// records are sampled from.
fn analyze_stream(
    reader: impl Read,
    name: Option<&str>,
    options: &AnalyzeOptions,
    size_hint: Option<u64>,
) -> io::Result<ContextMetadata> {
    analyze_blocks(
        &mut BlockReader::with_later_blocks(reader, BLOCK_SIZE, LATER_BLOCK_SIZE),
        name,
        options,
        size_hint,
    )
}

/// The pass over blocks, however they are read.
fn analyze_blocks(
    blocks: &mut impl Blocks,
    name: Option<&str>,
    options: &AnalyzeOptions,
    size_hint: Option<u64>,
) -> io::Result<ContextMetadata> {
    let Some(Block {
        bytes: first,
        last: complete,
        facts,
    }) = blocks.next_block()?
    else {
        return Ok(Analysis::new(name, Verdict::empty()).finish());
    };
    let bom = first.starts_with(BOM);
    let prefix = if bom { &first[BOM.len()..] } else { first };
    let verdict = sniff(prefix, complete, name);
    let mut analysis = Analysis::new(name, verdict);
    analysis.bom = bom;
    // Input that fits in the first block has a known size whatever it came from.
    let size_hint = size_hint.or(complete.then_some(first.len() as u64));
    let windows = WindowSchedule::new(options.field_windows, size_hint);
    analysis.inspect_prefix(prefix, complete, options, windows);
    analysis.feed(first, prefix, facts);
    while let Some(block) = blocks.next_block()? {
        analysis.feed(block.bytes, block.bytes, block.facts);
    }
    Ok(analysis.finish())
}

impl Verdict {
    fn empty() -> Self {
        Self {
            format: Format::Empty,
            language: None,
            delimiter: None,
            notes: Vec::new(),
        }
    }
}

/// Format-specific counting during the pass.
enum Counter {
    None,
    Ndjson(LineRecordCounter, Box<LineSampler>),
    Rows(DelimitedRowCounter),
    Json(Box<JsonScanner>),
    Headings(HeadingCounter),
}

struct Analysis {
    source: Option<String>,
    verdict: Verdict,
    bom: bool,
    stats: TextStats,
    counter: Counter,
    fields: FieldSet,
    sample: Option<String>,
    sample_truncated: bool,
    outline: Vec<Heading>,
    root_element: Option<String>,
    notes: Vec<String>,
}

impl Analysis {
    fn new(name: Option<&str>, verdict: Verdict) -> Self {
        let counter = match verdict.format {
            Format::Csv | Format::Tsv => Counter::Rows(DelimitedRowCounter::new(
                verdict
                    .delimiter
                    .unwrap_or(default_delimiter(verdict.format)),
            )),
            Format::Markdown => Counter::Headings(HeadingCounter::default()),
            _ => Counter::None,
        };
        let notes = verdict.notes.clone();
        Self {
            source: name.map(str::to_owned),
            verdict,
            bom: false,
            stats: TextStats::default(),
            counter,
            fields: FieldSet::default(),
            sample: None,
            sample_truncated: false,
            outline: Vec::new(),
            root_element: None,
            notes,
        }
    }

    /// Structure from the first block: sample, outline, root element, CSV columns; sets up the
    /// field sampling of the pass for NDJSON and JSON.
    fn inspect_prefix(
        &mut self,
        prefix: &[u8],
        complete: bool,
        options: &AnalyzeOptions,
        windows: WindowSchedule,
    ) {
        self.fields = FieldSet::new(options.max_fields);
        let text = lossy(prefix);
        let sample_source = match self.verdict.format {
            Format::Ndjson => {
                let sampler = LineSampler::new(
                    options.field_records,
                    windows,
                    options.window_records,
                    FieldSet::new(options.max_fields),
                );
                self.counter = Counter::Ndjson(LineRecordCounter::default(), Box::new(sampler));
                first_json_line(&text, complete)
            }
            Format::Json | Format::JsonArray => {
                let array = self.verdict.format == Format::JsonArray;
                self.counter = Counter::Json(Box::new(JsonScanner::new(
                    array,
                    options.field_records,
                    (windows, options.window_records),
                    options.max_fields,
                )));
                if array {
                    first_array_element(&text)
                } else {
                    text.trim_start().to_owned()
                }
            }
            Format::Csv | Format::Tsv => self.inspect_delimited(prefix, complete),
            Format::Markdown => {
                self.outline = outline(&text, options.max_outline);
                text.into_owned()
            }
            Format::Xml | Format::Html => {
                self.root_element = root_element(&text);
                text.into_owned()
            }
            Format::Binary | Format::Empty => String::new(),
            Format::Code | Format::PlainText => text.into_owned(),
        };
        if !sample_source.is_empty() {
            let (sample, truncated) =
                truncate_chars(sample_source.trim_end(), options.sample_chars);
            self.sample = Some(sample);
            self.sample_truncated = truncated;
        }
    }

    fn inspect_delimited(&mut self, prefix: &[u8], complete: bool) -> String {
        let delimiter = self
            .verdict
            .delimiter
            .unwrap_or(default_delimiter(self.verdict.format));
        self.verdict.delimiter = Some(delimiter);
        let rows = first_rows(prefix, complete, 2, delimiter);
        if let Some(header) = rows.first() {
            for column in split_fields(header, delimiter) {
                self.fields.insert_key(column.trim());
            }
        }
        rows.get(1)
            .or(rows.first())
            .map(|row| String::from_utf8_lossy(row).into_owned())
            .unwrap_or_default()
    }

    /// Feeds a block; `content` is the block without a byte order mark.
    fn feed(&mut self, block: &[u8], content: &[u8], facts: Option<BlockFacts>) {
        let facts = facts.unwrap_or_else(|| BlockFacts::of(block));
        self.stats.feed(block, facts);
        match &mut self.counter {
            Counter::None => {}
            Counter::Ndjson(counter, sampler) => {
                if content.len() == block.len() {
                    counter.feed_counted(content, &facts.counts);
                } else {
                    counter.feed(content);
                }
                sampler.feed(content);
            }
            Counter::Rows(counter) => counter.feed(content),
            Counter::Json(scanner) => scanner.feed(content),
            Counter::Headings(counter) => counter.feed(content),
        }
    }

    fn finish(mut self) -> ContextMetadata {
        let mut records = None;
        let mut headings = None;
        let mut fields = std::mem::take(&mut self.fields);
        match std::mem::replace(&mut self.counter, Counter::None) {
            Counter::None => {}
            Counter::Ndjson(counter, mut sampler) => {
                records = Some(counter.finish());
                sampler.finish();
                if let Some(note) = malformed_lines_note(&sampler) {
                    self.notes.push(note);
                }
                fields = sampler.fields;
            }
            Counter::Rows(counter) => {
                let (rows, unclosed) = counter.finish();
                records = Some(rows.saturating_sub(1));
                if let Some(note) = unclosed_note(unclosed) {
                    self.notes.push(note);
                }
            }
            Counter::Json(scanner) => {
                let scan = scanner.finish();
                if scan.top == Some(b'[') {
                    records = Some(scan.elements);
                }
                if scan.malformed {
                    self.notes.push(
                        "brackets or quotes do not balance: the JSON is malformed or truncated"
                            .to_owned(),
                    );
                } else if scan.top_values > 1 {
                    self.notes.push(format!(
                        "{} top-level JSON values (expected one)",
                        scan.top_values
                    ));
                }
                fields = scan.fields;
            }
            Counter::Headings(counter) => headings = Some(counter.finish()),
        }
        let stats = &self.stats;
        let valid_utf8 = stats.invalid_sequences == 0;
        if !valid_utf8 && self.verdict.format != Format::Binary {
            self.notes.push(format!(
                "invalid UTF-8: {} sequence(s), first at byte {}; shown with replacement characters",
                stats.invalid_sequences,
                stats.first_invalid_offset.unwrap_or(0)
            ));
        }
        let fields = fields.finish();
        let format = self.verdict.format;
        let binary = format == Format::Binary;
        ContextMetadata {
            source: self.source,
            format,
            format_description: match self.verdict.language {
                Some(language) if format == Format::Code => format!("{language} source code"),
                _ => format.description().to_owned(),
            },
            language: self.verdict.language.map(str::to_owned),
            bytes: stats.bytes,
            chars: if binary {
                0
            } else {
                stats.chars - u64::from(self.bom)
            },
            lines: if binary { 0 } else { stats.lines() },
            records,
            fields: fields.names,
            fields_omitted: fields.omitted,
            fields_truncated: fields.truncated,
            delimiter: self.verdict.delimiter.map(|d| char::from(d).to_string()),
            headings,
            outline: self.outline,
            root_element: self.root_element,
            sample: self.sample,
            sample_truncated: self.sample_truncated,
            encoding: EncodingInfo {
                valid_utf8,
                bom: self.bom,
                crlf_lines: stats.crlf,
                invalid_sequences: stats.invalid_sequences,
                first_invalid_offset: stats.first_invalid_offset,
            },
            notes: self.notes,
        }
    }
}

/// The text of the first element of a JSON array (or its start, if it is longer than the prefix).
fn first_array_element(text: &str) -> String {
    let Some(body) = text.trim_start().strip_prefix('[') else {
        return text.to_owned();
    };
    let body = body.trim_start();
    let mut stream = serde_json::Deserializer::from_str(body).into_iter::<serde::de::IgnoredAny>();
    match stream.next() {
        Some(Ok(_)) => body[..stream.byte_offset()].to_owned(),
        _ => body.to_owned(),
    }
}

/// The first line that parses as JSON (the sample), else the first line. A partial last line
/// of an incomplete prefix is not tried.
fn first_json_line(text: &str, complete: bool) -> String {
    let mut lines = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .peekable();
    let mut first_valid = None;
    while let Some(line) = lines.next() {
        if lines.peek().is_none() && !complete {
            break;
        }
        if serde_json::from_str::<serde::de::IgnoredAny>(line).is_ok() {
            first_valid = Some(line);
            break;
        }
    }
    first_valid
        .or_else(|| text.lines().next())
        .unwrap_or_default()
        .to_owned()
}

fn malformed_lines_note(sampler: &LineSampler) -> Option<String> {
    let (malformed, checked) = (sampler.malformed, sampler.checked);
    if malformed == 0 {
        return None;
    }
    let (malformed, checked) = (thousands(malformed), thousands(checked));
    Some(if sampler.windowed {
        format!("{malformed} of the {checked} lines sampled across the file are not valid JSON")
    } else {
        format!("{malformed} of the first {checked} lines are not valid JSON")
    })
}

fn default_delimiter(format: Format) -> u8 {
    match format {
        Format::Tsv => b'\t',
        _ => b',',
    }
}

/// What a model should know when quoting did not hold: the count is of lines there.
fn unclosed_note(unclosed: UnclosedQuotes) -> Option<String> {
    let limit = QUOTED_FIELD_LIMIT / 1024;
    match unclosed.fields {
        0 => None,
        1 => Some(format!(
            "quotes do not balance: a quoted field opened on line {} does not close within {limit} KiB, so the rows it would span are counted as lines",
            thousands(unclosed.first_line)
        )),
        fields => Some(format!(
            "quotes do not balance: {} quoted fields (the first opened on line {}) do not close within {limit} KiB, so the rows they would span are counted as lines",
            thousands(fields),
            thousands(unclosed.first_line)
        )),
    }
}

fn outline(text: &str, limit: usize) -> Vec<Heading> {
    let mut headings = Vec::new();
    let mut fence = None;
    for line in text.lines() {
        if let Some(marker) = crate::records::fence_marker(line.as_bytes()) {
            fence = match fence {
                Some(open) if open == marker => None,
                None => Some(marker),
                other => other,
            };
            continue;
        }
        if fence.is_some() {
            continue;
        }
        if let Some(level) = heading_level(line.as_bytes()) {
            let title = line
                .trim_start()
                .trim_start_matches('#')
                .trim()
                .trim_end_matches('#')
                .trim();
            headings.push(Heading {
                level: level as u8,
                text: title.to_owned(),
            });
            if headings.len() == limit {
                break;
            }
        }
    }
    headings
}

/// The first element name that is not a declaration, comment or processing instruction.
fn root_element(text: &str) -> Option<String> {
    let mut rest = text;
    loop {
        let start = rest.find('<')?;
        rest = &rest[start..];
        if let Some(after) = rest.strip_prefix("<!--") {
            rest = &after[after.find("-->")? + 3..];
        } else if rest.starts_with("<?") || rest.starts_with("<!") {
            rest = &rest[rest.find('>')? + 1..];
        } else {
            let name: String = rest[1..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | ':' | '.'))
                .collect();
            return (!name.is_empty()).then_some(name);
        }
    }
}

/// At most `limit` characters, cut on a character boundary; newlines kept.
pub(crate) fn truncate_chars(text: &str, limit: usize) -> (String, bool) {
    match text.char_indices().nth(limit) {
        Some((cut, _)) => (text[..cut].to_owned(), true),
        None => (text.to_owned(), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(bytes: &[u8], block_size: usize) -> ContextMetadata {
        let mut blocks = BlockReader::new(bytes, block_size);
        analyze_blocks(&mut blocks, Some("input"), &AnalyzeOptions::default(), None).unwrap()
    }

    fn threaded(bytes: &[u8], block_size: usize) -> ContextMetadata {
        with_read_ahead(bytes, block_size, |blocks| {
            analyze_blocks(blocks, Some("input"), &AnalyzeOptions::default(), None)
        })
        .unwrap()
    }

    /// Inputs of each format the pass counts differently, with characters of 2 to 4 bytes.
    fn inputs() -> Vec<String> {
        let record = |i: usize| format!(r#"{{"id":{i},"text":"é日🎉 \"q\"","tags":["a"]}}"#);
        let records: Vec<String> = (0..200).map(record).collect();
        vec![
            format!("[{}]", records.join(",")),
            records.join("\n") + "\n",
            (0..300).fold("id,name\n".to_owned(), |csv, i| {
                csv + &format!("{i},\"naïve, 日本\nline\"\r\n")
            }),
            "# Title\n\nprose with ünïcödé 🎉\n## Part\n".repeat(100),
            "plain text ☃\n".repeat(500),
        ]
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_mapped_file_cut_short_while_it_is_read_is_an_error_not_figures() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.ndjson");
        let line = "{\"level\":\"info\",\"message\":\"a line of the log\"}\n";
        std::fs::write(&path, line.repeat((6 << 20) / line.len())).unwrap();
        let file = File::open(&path).unwrap();
        let size = file.metadata().unwrap().len();
        let map = crate::mapped::GuardedMap::new(&file, size).unwrap();
        // Cut after the first block, as a writer truncating the file during the scan would.
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(2 << 20)
            .unwrap();
        let error = analyze_mapped(
            map,
            &file,
            Some("log.ndjson"),
            &AnalyzeOptions::default(),
            size,
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.starts_with("the file shrank while it was read"),
            "{error}"
        );
        assert!(
            error.contains(&format!("to {} bytes", thousands(2 << 20))),
            "{error}"
        );
    }

    #[test]
    fn read_ahead_gives_the_metadata_of_the_plain_pass() {
        for input in inputs() {
            // Small blocks put many block edges inside characters, records and quoted fields.
            for block_size in [61, 1000, BLOCK_SIZE] {
                let expected = plain(input.as_bytes(), block_size);
                assert_eq!(threaded(input.as_bytes(), block_size), expected);
            }
            let whole = analyze_bytes(input.as_bytes(), Some("input"), &AnalyzeOptions::default());
            assert_eq!(threaded(input.as_bytes(), BLOCK_SIZE), whole);
        }
    }

    #[test]
    fn read_ahead_counts_invalid_utf8_and_crlf_as_the_plain_pass() {
        // CR LF pairs and invalid sequences fall on block edges at these sizes; the reading
        // thread's counts of each block must add up as the scan's own do.
        let mut input = Vec::new();
        for i in 0..300 {
            input.extend_from_slice(format!("line {i} é\r\n").as_bytes());
            if i % 7 == 0 {
                input.extend_from_slice(b"bad \xff\xfe cut \xe2\x82 end\r\n");
            }
        }
        for block_size in [8, 13, 61, 1000, BLOCK_SIZE] {
            let expected = plain(&input, block_size);
            assert!(!expected.encoding.valid_utf8);
            assert_eq!(expected.encoding.crlf_lines, 343);
            assert_eq!(threaded(&input, block_size), expected, "block {block_size}");
        }
    }

    #[test]
    fn smaller_blocks_after_the_prefix_give_the_metadata_of_whole_blocks() {
        // The pass on one thread reads `LATER_BLOCK_SIZE` after a first block of `BLOCK_SIZE`;
        // nothing it reports may depend on that. The outline comes from the first block, the
        // prefix, which must stay whole: a heading half a block in is in it.
        let late_heading = format!("# Top\n\n{}## Late\n", "prose line\n".repeat(50_000));
        let named = inputs().into_iter().map(|input| ("input", input));
        for (name, input) in named.chain([("notes.md", late_heading)]) {
            let mut large = input.clone();
            while large.len() < 3 * BLOCK_SIZE {
                large.push_str(&input);
            }
            let options = AnalyzeOptions::default();
            let mut whole = BlockReader::new(large.as_bytes(), BLOCK_SIZE);
            let expected = analyze_blocks(&mut whole, Some(name), &options, None).unwrap();
            let mut smaller =
                BlockReader::with_later_blocks(large.as_bytes(), BLOCK_SIZE, LATER_BLOCK_SIZE);
            let analyzed = analyze_blocks(&mut smaller, Some(name), &options, None).unwrap();
            assert_eq!(analyzed, expected, "{name}");
            if name == "notes.md" {
                let late = analyzed
                    .outline
                    .iter()
                    .any(|heading| heading.text == "Late");
                assert!(late, "{:?}", analyzed.outline);
            }
        }
    }

    #[test]
    fn read_ahead_of_empty_input_is_empty_metadata() {
        assert_eq!(threaded(b"", 64), plain(b"", 64));
        assert_eq!(threaded(b"", 64).format, Format::Empty);
    }
}
