//! Arguments of the store commands: load, list, show, peek, grep, chunk, search, delete, status,
//! doctor, reindex.

use std::path::PathBuf;

use clap::Args;
use rlm_context::chunk::{SizeUnit, Strategy};
use rlm_store::SearchMode;

/// Where the store lives.
#[derive(Debug, Args)]
pub struct StoreLocation {
    /// Store directory, or a PostgreSQL URL `postgres://USER@HOST/DATABASE?schema=NAME`
    /// (default: .rlm in the current directory).
    #[arg(long, env = crate::settings::env::RLM_STORE, value_name = "DIR|URL")]
    pub store: Option<PathBuf>,
}

/// How to chunk, shared by `load` and `chunk`.
#[derive(Debug, Args)]
pub struct ChunkingArgs {
    /// Chunker: auto picks code, records or structure from the file name and content.
    #[arg(long, value_enum, default_value_t = Strategy::Auto)]
    pub chunker: Strategy,
    /// Target chunk size, in --unit (records longer than this stay whole).
    #[arg(long, default_value_t = rlm_context::chunk::DEFAULT_SIZE)]
    pub chunk_size: usize,
    /// Overlap between consecutive chunks, in --unit; must be smaller than --chunk-size.
    #[arg(long, default_value_t = 0)]
    pub overlap: usize,
    /// Unit of --chunk-size and --overlap (tokens are approximated as 4 characters).
    #[arg(long, value_enum, default_value_t = SizeUnit::Chars)]
    pub unit: SizeUnit,
}

#[derive(Debug, Args)]
pub struct LoadArgs {
    /// Files or directories to load (directories recurse, honouring .gitignore); `-` reads stdin.
    /// Re-loading a directory removes the buffers of its files that are gone.
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// Buffer name (only with a single file or stdin; default: the path as given).
    #[arg(long)]
    pub name: Option<String>,
    /// In directories, only files matching this glob (ripgrep's -g syntax); repeatable.
    #[arg(long, value_name = "GLOB")]
    pub include: Vec<String>,
    /// In directories, skip files and directories matching this glob; repeatable.
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// In directories, also load hidden files (`.git` is still skipped).
    #[arg(long)]
    pub hidden: bool,
    /// In directories, do not honour .gitignore and .ignore files.
    #[arg(long)]
    pub no_ignore: bool,
    /// Skip files (and stdin) larger than this (`500MB`, `2GiB`, bytes); default and most: what
    /// one buffer holds, 2,147,483,576 bytes. Split a larger file (`split -C 1G`).
    #[arg(long, value_name = "SIZE", value_parser = parse_file_size)]
    pub max_file_size: Option<u64>,
    #[command(flatten)]
    pub chunking: ChunkingArgs,
    /// Do not compute embeddings now (run `rlm embed` later).
    #[arg(long, conflicts_with = "embed")]
    pub no_embed: bool,
    /// Compute embeddings now whatever the size of the load and the kind of model (by default
    /// only a static model, and only up to `[embed] load_auto_limit_mb` of new text, 16 MiB).
    #[arg(long)]
    pub embed: bool,
    /// Embedding model to use (a name from the models directory; default: the `[embed]`
    /// configuration, or the only imported model).
    #[arg(long, value_name = "NAME", value_hint = clap::ValueHint::Other)]
    pub model: Option<String>,
    #[command(flatten)]
    pub location: StoreLocation,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub location: StoreLocation,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Buffer name or id.
    pub buffer: String,
    /// Also print the chunk table.
    #[arg(long)]
    pub chunks: bool,
    /// Print the whole text of the buffer (it can be large).
    #[arg(long)]
    pub text: bool,
    #[command(flatten)]
    pub location: StoreLocation,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("range").required(true).args(["lines", "bytes", "chunk"])))]
pub struct PeekArgs {
    /// Buffer name or id (not needed with --chunk).
    #[arg(required_unless_present = "chunk")]
    pub buffer: Option<String>,
    /// Lines A:B, 1-based and inclusive (A: or :B leave one end open).
    #[arg(long, value_name = "A:B")]
    pub lines: Option<String>,
    /// Bytes A:B, 0-based and end-exclusive, widened to whole characters.
    #[arg(long, value_name = "A:B")]
    pub bytes: Option<String>,
    /// A chunk id from `rlm search` or `rlm show --chunks`.
    #[arg(long, value_name = "ID", conflicts_with = "buffer")]
    pub chunk: Option<i64>,
    #[command(flatten)]
    pub location: StoreLocation,
}

#[derive(Debug, Args)]
pub struct GrepArgs {
    /// Regular expression (Rust regex syntax).
    pub pattern: String,
    /// Only this buffer (name or id); repeatable.
    #[arg(long = "buffer", value_name = "BUFFER")]
    pub buffers: Vec<String>,
    /// Only buffers whose name or path matches this glob.
    #[arg(long = "path", value_name = "GLOB")]
    pub path_glob: Option<String>,
    /// Lines of context around each match.
    #[arg(short = 'C', long, default_value_t = 0, value_name = "N")]
    pub context: usize,
    /// Lines of context after each match (overrides -C).
    #[arg(short = 'A', long, value_name = "N")]
    pub after_context: Option<usize>,
    /// Lines of context before each match (overrides -C).
    #[arg(short = 'B', long, value_name = "N")]
    pub before_context: Option<usize>,
    /// Case-insensitive.
    #[arg(short = 'i', long)]
    pub ignore_case: bool,
    /// The pattern is literal text, not a regular expression.
    #[arg(short = 'F', long)]
    pub fixed_strings: bool,
    /// Only matches surrounded by word boundaries.
    #[arg(short = 'w', long)]
    pub word_regexp: bool,
    /// Print only the names of buffers with a match.
    #[arg(short = 'l', long, conflicts_with = "count")]
    pub files_with_matches: bool,
    /// Print the number of matching lines per buffer.
    #[arg(short = 'c', long)]
    pub count: bool,
    /// Stop each buffer after this many matching lines.
    #[arg(short = 'm', long, value_name = "NUM")]
    pub max_count: Option<u64>,
    #[command(flatten)]
    pub location: StoreLocation,
}

#[derive(Debug, Args)]
pub struct ChunkArgs {
    /// File to chunk (`-` for stdin); nothing is stored.
    pub path: PathBuf,
    /// Name used for chunker detection when reading stdin.
    #[arg(long)]
    pub name: Option<String>,
    #[command(flatten)]
    pub chunking: ChunkingArgs,
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// What to look for (several words are one query).
    #[arg(required = true, value_name = "QUERY")]
    pub query: Vec<String>,
    /// Ranking: BM25, embeddings, or both fused by reciprocal rank.
    #[arg(long, value_enum, default_value_t = SearchMode::Bm25)]
    pub mode: SearchMode,
    /// Number of results.
    #[arg(short = 'k', long = "top", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub top: u32,
    /// Only this buffer (name or id); repeatable. Applied before ranking.
    #[arg(long = "buffer", value_name = "BUFFER")]
    pub buffers: Vec<String>,
    /// Only buffers whose name or path matches this glob. Applied before ranking.
    #[arg(long = "path", value_name = "GLOB")]
    pub path_glob: Option<String>,
    /// The k constant of reciprocal rank fusion (hybrid mode).
    #[arg(long, default_value_t = rlm_store::DEFAULT_RRF_K)]
    pub rrf_k: f64,
    /// Embedding model for semantic and hybrid modes (default: as for `rlm embed`).
    #[arg(long, value_name = "NAME", value_hint = clap::ValueHint::Other)]
    pub model: Option<String>,
    #[command(flatten)]
    pub location: StoreLocation,
}

#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// Buffer names, ids, unique path suffixes, globs (`*.md`) or directories (`src`).
    #[arg(required = true)]
    pub buffers: Vec<String>,
    #[command(flatten)]
    pub location: StoreLocation,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub location: StoreLocation,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub location: StoreLocation,
}

#[derive(Debug, Args)]
pub struct ReindexArgs {
    /// Embedding model for chunks without a vector (default: the model that made the stored
    /// vectors, when it is imported).
    #[arg(long, value_name = "NAME", value_hint = clap::ValueHint::Other)]
    pub model: Option<String>,
    #[command(flatten)]
    pub location: StoreLocation,
}

#[derive(Debug, Args)]
pub struct EmbedArgs {
    /// Embedding model (a name from the models directory; default: the `[embed]`
    /// configuration, or the only imported model).
    #[arg(long, value_name = "NAME", value_hint = clap::ValueHint::Other)]
    pub model: Option<String>,
    /// Drop vectors of a different model first (otherwise mixing models is refused).
    #[arg(long)]
    pub reset: bool,
    #[command(flatten)]
    pub location: StoreLocation,
}

/// A size from `--max-file-size`.
fn parse_file_size(text: &str) -> Result<u64, String> {
    let bytes = crate::settings::size::parse_size(text)?;
    Ok(u64::try_from(bytes).unwrap_or(u64::MAX))
}

#[derive(Debug, Args)]
pub struct StoreArgs {
    #[command(subcommand)]
    pub action: StoreAction,
}

#[derive(Debug, clap::Subcommand)]
pub enum StoreAction {
    /// Copy every buffer (with its chunk options, path and vectors) from one store to another,
    /// a directory or a PostgreSQL URL either way; buffers already there unchanged are skipped.
    Copy(StoreCopyArgs),
}

#[derive(Debug, Args)]
pub struct StoreCopyArgs {
    /// The store to copy from: a directory or a PostgreSQL URL.
    #[arg(value_name = "SOURCE")]
    pub source: PathBuf,
    /// The store to copy into (created when missing): a directory or a PostgreSQL URL.
    #[arg(value_name = "DESTINATION")]
    pub destination: PathBuf,
}
