//! What each tool returns as `structuredContent`, described for its `outputSchema`: the
//! `--json` records its command prints, in order, as `{"records": [...]}`.
//!
//! The types below are never built: they exist so schemars can derive each tool's output
//! schema from Rust types (as the argument schemas are). They name the fields a client can rely
//! on, with `"type"` telling the records apart; the commands may print more fields than listed
//! (every object here allows additional properties), and the MCP test validates real results
//! against these schemas through the Python SDK, which refuses a result that does not match.
#![expect(
    dead_code,
    reason = "the types only describe records: schemars derives the output schemas from them"
)]

use schemars::JsonSchema;

/// A JSON object whose fields the CLI documents elsewhere (usage breakdowns, plans).
type Object = serde_json::Map<String, serde_json::Value>;

/// A tool's structured result.
#[derive(JsonSchema)]
pub struct Records<T> {
    /// The records the command printed with `--json` (one JSON Lines record each), in order.
    records: Vec<T>,
}

/// A byte range `[start, end)` into a text field of the same record.
#[derive(JsonSchema)]
pub struct ByteRange {
    start: u64,
    end: u64,
}

/// `inspect`: one record per file (or for the inline text).
#[derive(JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum InspectRecord {
    /// What the file is: format, size, lines, records, fields and a sample.
    Metadata {
        /// The name the text would have in a run (`context`, `context_1`, ...).
        variable: String,
        /// File name, or null for unnamed inline text.
        source: Option<String>,
        /// Detected format, e.g. `ndjson`, `csv`, `markdown`, `code`, `text`.
        format: String,
        format_description: String,
        /// Programming language of source code.
        language: Option<String>,
        bytes: u64,
        chars: u64,
        lines: u64,
        /// NDJSON lines, JSON array elements or CSV/TSV data rows.
        records: Option<u64>,
        /// Field names (top-level keys and dot paths) or CSV/TSV columns.
        fields: Vec<String>,
        /// The start of the content, cut to the sample size.
        sample: Option<String>,
        sample_truncated: bool,
    },
}

/// `load`: one record for the whole load.
#[derive(JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LoadRecord {
    /// What the load wrote, left alone, skipped and removed.
    Load {
        /// Buffers written (new or replaced).
        loaded: Vec<LoadedBuffer>,
        /// Names whose content and options were unchanged.
        unchanged: Vec<String>,
        /// Sources not loaded, and why.
        skipped: Vec<SkippedSource>,
        /// Buffers removed because their files are gone.
        removed: Vec<String>,
    },
}

#[derive(JsonSchema)]
pub struct LoadedBuffer {
    id: i64,
    name: String,
    bytes: u64,
    chunks: u64,
    /// The chunker used.
    strategy: String,
    /// Whether a buffer of the same name with other content was replaced.
    replaced: bool,
    /// How it was stored, when worth knowing (e.g. invalid UTF-8 replaced).
    #[serde(default)]
    notes: Vec<String>,
}

#[derive(JsonSchema)]
pub struct SkippedSource {
    name: String,
    reason: String,
}

/// `list_buffers`: one record per stored buffer.
#[derive(JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BufferRecord {
    /// A stored buffer.
    Buffer {
        /// Buffer id.
        id: i64,
        name: String,
        /// Absolute path it was loaded from, if it was a file.
        path: Option<String>,
        bytes: u64,
        lines: u64,
        chunks: u64,
        /// The chunker used.
        strategy: String,
        /// SHA-256 of the content, hex.
        sha256: String,
        /// Unix time of the load.
        loaded_at: i64,
    },
}

/// `search`: one record per hit, best first.
#[derive(JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SearchRecord {
    /// A ranked chunk.
    Hit {
        /// 1 for the best hit.
        rank: u64,
        /// The ranking that ran (BM25 when semantic was asked for without vectors).
        mode: rlm_store::SearchMode,
        /// Chunk id, for `peek` with `chunk` and `rlm://chunk/ID`.
        chunk_id: i64,
        /// Buffer name.
        buffer: String,
        /// First line, 1-based.
        start_line: u64,
        /// Last line, 1-based inclusive.
        end_line: u64,
        score: f64,
        /// The chunk's line that covers the query best, cut around its first match.
        snippet: String,
        /// Where the query's terms are in `snippet`.
        highlights: Vec<ByteRange>,
    },
}

/// `grep`: matching lines, context lines, breaks between groups and one end record per
/// buffer that matched (only the end records with `count` or `files_with_matches`).
#[derive(JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum GrepRecord {
    /// A line with a match.
    Match {
        buffer: String,
        /// 1-based line number.
        line: u64,
        /// The line without its line ending.
        text: String,
        /// Where the matches are in `text`.
        matches: Vec<ByteRange>,
    },
    /// A line near a match.
    Context {
        buffer: String,
        line: u64,
        text: String,
    },
    /// A gap between groups of lines that are not adjacent.
    Break,
    /// The last line of a buffer that matched has been given.
    End {
        buffer: String,
        /// Its matching lines.
        matched_lines: u64,
    },
}

/// `peek`: one record with the text.
#[derive(JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PeekRecord {
    /// Part of a buffer.
    Text {
        /// Buffer name.
        buffer: String,
        /// What was read.
        range: PeekRange,
        text: String,
    },
}

#[derive(JsonSchema)]
pub struct PeekRange {
    /// First and last line, 1-based inclusive.
    lines: Option<[u64; 2]>,
    /// Byte range, end exclusive.
    bytes: Option<[u64; 2]>,
    /// The chunk read, when one was asked for.
    chunk: Option<i64>,
}

/// `run`: one record with the outcome.
#[derive(JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RunRecord {
    /// How the run ended and what it cost.
    Result {
        /// `answered`, `forced_answer`, `iteration_limit`, `token_budget`, `cost_budget`,
        /// `call_budget`, `timeout`, `subcall_budget`, `error_limit`, `model_error` or
        /// `interrupted`.
        status: String,
        /// The answer, or null when the run ended without one.
        answer: Option<String>,
        /// What the model had when a budget stopped it, if anything.
        partial_answer: Option<String>,
        /// Root-model turns taken.
        iterations: u64,
        /// Tokens and cost per model, in total, and sub-call counts.
        usage: Object,
        /// Input and output tokens over the whole run.
        tokens: u64,
        /// Dollars over priced calls.
        cost_usd: f64,
        /// Whether some call's price was unknown (then `cost_usd` is a lower bound).
        cost_is_partial: bool,
        seconds: f64,
        /// The trajectory file, when logging.
        log: Option<String>,
        run_id: String,
        /// Why the run stopped, when it failed.
        error: Option<String>,
    },
}

/// `ctx_assemble`: one record with the plan.
#[derive(JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CtxRecord {
    /// The assembled prompt's plan.
    Ctx {
        /// `assemble`.
        command: String,
        /// Parts in order with their tokens and status, totals, digest and stale parts.
        plan: Object,
        /// Files written (build/prompt.mdctx, build/ctxplan.json).
        #[serde(default)]
        written: Vec<String>,
        /// Parts whose tokens had to be counted.
        counted_parts: u64,
    },
}

/// `query`: one record with the report.
#[derive(JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum QueryRecord {
    /// The report and how it was made.
    Result {
        run_id: String,
        /// `answered`, `no_evidence`, `extraction_failed` or `synthesis_failed`.
        status: String,
        /// The Markdown report, citing chunk ids.
        report: String,
        /// The plan that ran.
        plan: Object,
        chunks_selected: u64,
        chunks_analyzed: u64,
        batches: u64,
        /// The findings the report was written from, per chunk.
        findings: Vec<Object>,
        /// Chunk ids the report cites that the query neither analysed nor read (marked
        /// `(not read)` in the report).
        citations_unknown: Vec<i64>,
        /// Usage per stage.
        usage: Object,
        /// The trajectory file, when logging.
        log: Option<String>,
    },
}
