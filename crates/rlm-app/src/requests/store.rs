//! Arguments of the store commands: load, list, show, peek, grep, chunk, search, delete, status,
//! doctor, reindex.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use rlm_context::chunk::{SizeUnit, Strategy};
use rlm_store::SearchMode;

/// How to chunk, shared by `load` and `chunk`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct ChunkingOptions {
    /// Chunker: auto picks code, records or structure from the file name and content.
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value_t = Strategy::Auto))]
    #[serde(default)]
    pub chunker: Strategy,
    /// Target chunk size, in --unit (records longer than this stay whole).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = super::defaults::chunk_size()))]
    #[serde(default = "super::defaults::chunk_size")]
    pub chunk_size: usize,
    /// Overlap between consecutive chunks, in --unit; must be smaller than --chunk-size.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0))]
    #[serde(default)]
    pub overlap: usize,
    /// Unit of --chunk-size and --overlap (tokens are approximated as 4 characters).
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value_t = SizeUnit::Chars))]
    #[serde(default)]
    pub unit: SizeUnit,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct LoadRequest {
    /// Files or directories to load (directories recurse, honouring .gitignore); `-` reads stdin.
    /// Re-loading a directory removes the buffers of its files that are gone.
    #[cfg_attr(feature = "clap", arg(value_name = "PATH", required = true))]
    #[serde(default)]
    pub paths: Vec<PathBuf>,
    /// Buffer name (only with a single file or stdin; default: the path as given).
    #[cfg_attr(feature = "clap", arg(long))]
    pub name: Option<String>,
    /// In directories, only files matching this glob (ripgrep's -g syntax); repeatable.
    #[cfg_attr(feature = "clap", arg(long, value_name = "GLOB"))]
    #[serde(default)]
    pub include: Vec<String>,
    /// In directories, skip files and directories matching this glob; repeatable.
    #[cfg_attr(feature = "clap", arg(long, value_name = "GLOB"))]
    #[serde(default)]
    pub exclude: Vec<String>,
    /// In directories, also load hidden files (`.git` is still skipped).
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(default)]
    pub hidden: bool,
    /// In directories, do not honour .gitignore and .ignore files.
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(default)]
    pub no_ignore: bool,
    /// Skip files (and stdin) larger than this (`500MB`, `2GiB`, bytes); default and most: what
    /// one buffer holds, 2,147,483,576 bytes. Split a larger file (`split -C 1G`).
    #[cfg_attr(feature = "clap", arg(long, value_name = "SIZE", value_parser = parse_file_size))]
    pub max_file_size: Option<u64>,
    #[cfg_attr(feature = "clap", command(flatten))]
    #[serde(flatten)]
    pub chunking: ChunkingOptions,
    /// Do not compute embeddings now (run `rlm embed` later).
    #[cfg_attr(feature = "clap", arg(long, conflicts_with = "embed"))]
    #[serde(default)]
    pub no_embed: bool,
    /// Compute embeddings now whatever the size of the load and the kind of model (by default
    /// only a static model, and only up to `[embed] load_auto_limit_mb` of new text, 16 MiB).
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(default)]
    pub embed: bool,
    /// Embedding model to use (a name from the models directory; default: the `[embed]`
    /// configuration, or the only imported model).
    #[cfg_attr(feature = "clap", arg(long, value_name = "NAME", value_hint = clap::ValueHint::Other))]
    pub model: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct ListRequest {
    /// Where to continue: the `cursor` a page of this request's answer gave when it stopped
    /// at the reply ceiling (MCP and Python; the command line streams everything).
    #[cfg_attr(feature = "clap", arg(skip))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct ShowRequest {
    /// Buffer name or id.
    pub buffer: String,
    /// Also print the chunk table.
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(default)]
    pub chunks: bool,
    /// Print the whole text of the buffer (it can be large).
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(default)]
    pub text: bool,
    /// Where to continue: the `cursor` a page of this request's answer gave when it stopped
    /// at the reply ceiling (MCP and Python; the command line streams everything).
    #[cfg_attr(feature = "clap", arg(skip))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[cfg_attr(feature = "clap", command(group(clap::ArgGroup::new("range").required(true).args(["lines", "bytes", "chunk"]))))]
pub struct PeekRequest {
    /// Buffer name or id (not needed with --chunk).
    #[cfg_attr(feature = "clap", arg(required_unless_present = "chunk"))]
    pub buffer: Option<String>,
    /// Lines A:B, 1-based and inclusive (A: or :B leave one end open).
    #[cfg_attr(feature = "clap", arg(long, value_name = "A:B"))]
    pub lines: Option<String>,
    /// Bytes A:B, 0-based and end-exclusive, widened to whole characters.
    #[cfg_attr(feature = "clap", arg(long, value_name = "A:B"))]
    pub bytes: Option<String>,
    /// A chunk id from `rlm search` or `rlm show --chunks`.
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "ID", conflicts_with = "buffer")
    )]
    pub chunk: Option<i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct GrepRequest {
    /// Regular expression (Rust regex syntax).
    pub pattern: String,
    /// Only this buffer (name or id); repeatable.
    #[cfg_attr(feature = "clap", arg(long = "buffer", value_name = "BUFFER"))]
    #[serde(default)]
    pub buffers: Vec<String>,
    /// Only buffers whose name or path matches this glob.
    #[cfg_attr(feature = "clap", arg(long = "path", value_name = "GLOB"))]
    #[serde(rename = "path", alias = "path_glob")]
    pub path_glob: Option<String>,
    /// Lines of context around each match.
    #[cfg_attr(feature = "clap", arg(short = 'C', long, default_value_t = super::defaults::grep_context(), value_name = "N"))]
    #[serde(default = "super::defaults::grep_context")]
    pub context: usize,
    /// Lines of context after each match (overrides -C).
    #[cfg_attr(feature = "clap", arg(short = 'A', long, value_name = "N"))]
    pub after_context: Option<usize>,
    /// Lines of context before each match (overrides -C).
    #[cfg_attr(feature = "clap", arg(short = 'B', long, value_name = "N"))]
    pub before_context: Option<usize>,
    /// Case-insensitive.
    #[cfg_attr(feature = "clap", arg(short = 'i', long))]
    #[serde(default)]
    pub ignore_case: bool,
    /// The pattern is literal text, not a regular expression.
    #[cfg_attr(feature = "clap", arg(short = 'F', long))]
    #[serde(default)]
    pub fixed_strings: bool,
    /// Only matches surrounded by word boundaries.
    #[cfg_attr(feature = "clap", arg(short = 'w', long))]
    #[serde(default)]
    pub word_regexp: bool,
    /// Print only the names of buffers with a match.
    #[cfg_attr(feature = "clap", arg(short = 'l', long, conflicts_with = "count"))]
    #[serde(default)]
    pub files_with_matches: bool,
    /// Print the number of matching lines per buffer.
    #[cfg_attr(feature = "clap", arg(short = 'c', long))]
    #[serde(default)]
    pub count: bool,
    /// Stop each buffer after this many matching lines.
    #[cfg_attr(feature = "clap", arg(short = 'm', long, value_name = "NUM"))]
    pub max_count: Option<u64>,
    /// Where to continue: the `cursor` a page of this request's answer gave when it stopped
    /// at the reply ceiling (MCP and Python; the command line streams everything).
    #[cfg_attr(feature = "clap", arg(skip))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct ChunkRequest {
    /// File to chunk (`-` for stdin); nothing is stored.
    pub path: PathBuf,
    /// Name used for chunker detection when reading stdin.
    #[cfg_attr(feature = "clap", arg(long))]
    pub name: Option<String>,
    #[cfg_attr(feature = "clap", command(flatten))]
    #[serde(flatten)]
    pub chunking: ChunkingOptions,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct SearchRequest {
    /// What to look for (several words are one query).
    #[cfg_attr(feature = "clap", arg(required = true, value_name = "QUERY"))]
    #[serde(with = "words")]
    #[schemars(with = "String")]
    pub query: Vec<String>,
    /// Ranking: BM25, embeddings, or both fused by reciprocal rank.
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value_t = SearchMode::Bm25))]
    #[serde(default)]
    pub mode: SearchMode,
    /// Number of results (1 to 10,000).
    #[cfg_attr(feature = "clap", arg(short = 'k', long = "top", default_value_t = super::defaults::search_k(), value_parser = clap::value_parser!(u32).range(1..=10_000)))]
    #[serde(default = "super::defaults::search_k", alias = "top", alias = "top_k")]
    pub k: u32,
    /// Only this buffer (name or id); repeatable. Applied before ranking.
    #[cfg_attr(feature = "clap", arg(long = "buffer", value_name = "BUFFER"))]
    #[serde(default)]
    pub buffers: Vec<String>,
    /// Only buffers whose name or path matches this glob. Applied before ranking.
    #[cfg_attr(feature = "clap", arg(long = "path", value_name = "GLOB"))]
    #[serde(rename = "path", alias = "path_glob")]
    pub path_glob: Option<String>,
    /// The k constant of reciprocal rank fusion (hybrid mode).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = super::defaults::rrf_k()))]
    #[serde(default = "super::defaults::rrf_k")]
    pub rrf_k: f64,
    /// Embedding model for semantic and hybrid modes (default: as for `rlm embed`).
    #[cfg_attr(feature = "clap", arg(long, value_name = "NAME", value_hint = clap::ValueHint::Other))]
    pub model: Option<String>,
    /// Where to continue: the `cursor` a page of this request's answer gave when it stopped
    /// at the reply ceiling (MCP and Python; the command line streams everything).
    #[cfg_attr(feature = "clap", arg(skip))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct DeleteRequest {
    /// Buffer names, ids, unique path suffixes, globs (`*.md`) or directories (`src`).
    #[cfg_attr(feature = "clap", arg(required = true))]
    #[serde(default)]
    pub buffers: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct StatusRequest {}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct DoctorRequest {}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct ReindexRequest {
    /// Embedding model for chunks without a vector (default: the model that made the stored
    /// vectors, when it is imported).
    #[cfg_attr(feature = "clap", arg(long, value_name = "NAME", value_hint = clap::ValueHint::Other))]
    pub model: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct EmbedRequest {
    /// Embedding model (a name from the models directory; default: the `[embed]`
    /// configuration, or the only imported model).
    #[cfg_attr(feature = "clap", arg(long, value_name = "NAME", value_hint = clap::ValueHint::Other))]
    pub model: Option<String>,
    /// Drop vectors of a different model first (otherwise mixing models is refused).
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(default)]
    pub reset: bool,
}

/// A size from `--max-file-size`.
pub fn parse_file_size(text: &str) -> Result<u64, String> {
    let bytes = crate::settings::size::parse_size(text)?;
    Ok(u64::try_from(bytes).unwrap_or(u64::MAX))
}

/// A query given as words (the command line's `rlm search profile cache`) or as one text (JSON,
/// Python): the operation joins the words with spaces, so both are one query.
mod words {
    use serde::de::{Error as _, SeqAccess, Visitor};
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(words: &[String], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&words.join(" "))
    }

    struct Words;

    impl<'de> Visitor<'de> for Words {
        type Value = Vec<String>;

        fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            formatter.write_str("a query text, or a list of words")
        }

        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Self::Value, E> {
            Ok(vec![text.to_owned()])
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut sequence: A) -> Result<Self::Value, A::Error> {
            let mut words = Vec::new();
            while let Some(word) = sequence.next_element::<String>()? {
                words.push(word);
            }
            if words.is_empty() {
                return Err(A::Error::invalid_length(0, &self));
            }
            Ok(words)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<String>, D::Error> {
        deserializer.deserialize_any(Words)
    }
}

/// `rlm store …`: whole stores.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct StoreRequest {
    #[cfg_attr(feature = "clap", command(subcommand))]
    #[serde(flatten)]
    pub action: StoreAction,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Subcommand))]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum StoreAction {
    /// Copy every buffer (with its chunk options, path and vectors) from one store to another,
    /// a directory or a PostgreSQL URL either way; buffers already there unchanged are skipped.
    Copy(StoreCopyRequest),
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct StoreCopyRequest {
    /// The store to copy from: a directory or a PostgreSQL URL.
    #[cfg_attr(feature = "clap", arg(value_name = "SOURCE"))]
    pub source: PathBuf,
    /// The store to copy into (created when missing): a directory or a PostgreSQL URL.
    #[cfg_attr(feature = "clap", arg(value_name = "DESTINATION"))]
    pub destination: PathBuf,
}
