//! Arguments of `rlm ctx`.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};
use rlm_assemble::Slot;
use rlm_context::tokens::Tokenizer;

#[derive(Debug, Args)]
pub struct CtxArgs {
    /// The ctx directory.
    #[arg(long, global = true, env = crate::settings::env::RLM_CTX_DIR, default_value = "ctx", value_name = "DIR")]
    pub dir: PathBuf,
    #[command(subcommand)]
    pub action: CtxAction,
}

#[derive(Debug, Subcommand)]
pub enum CtxAction {
    /// Create the ctx directory with a policy and an empty request.
    Init {
        /// Flow id written into the outputs (default: the folder holding the ctx directory).
        #[arg(long)]
        flow: Option<String>,
        /// Default tokenizer for counts.
        #[arg(long, default_value = "o200k", value_parser = parse_tokenizer)]
        tokenizer: Tokenizer,
        /// Default token budget (none: unlimited).
        #[arg(long, value_name = "TOKENS")]
        budget: Option<u64>,
    },
    /// Add evidence: `file`, `file::100,200` (lines), `file::100` (to the end),
    /// `file::100c,500c` (bytes), `file#tag1,tag2`, or a glob such as 'src/**/*.rs'.
    Add {
        /// Selectors.
        #[arg(value_name = "SELECTOR", required = true)]
        selectors: Vec<String>,
        /// Rank, three digits 000–499 (default 200 for evidence).
        #[arg(long)]
        rank: Option<String>,
        /// Role of the new parts: the prompt group they go in.
        #[arg(long, value_enum, default_value_t = Slot::Evidence)]
        role: Slot,
        /// Add whole files as `.link` symlinks: always current, always active.
        #[arg(long)]
        link: bool,
        /// Let globs descend into symbolic links to directories (by default they do not, as
        /// `rlm load` does not; a directory named literally in the pattern is always followed).
        #[arg(long)]
        follow: bool,
    },
    /// Parts with state, bytes, tokens and staleness.
    Status,
    /// Dry run of the assembly: what goes in, in what order, what is dropped.
    Plan(BuildArgs),
    /// Tokens per part and in total against the budget.
    Budget(BuildArgs),
    /// Switch parts on or off by name, rank (200) or rank range (200-299).
    Toggle {
        /// on or off.
        #[arg(value_enum)]
        state: OnOff,
        /// NAME, RANK or RANGE.
        target: String,
    },
    /// Move a part to another rank.
    Rank {
        /// The part.
        name: String,
        /// The new rank (three digits).
        rank: String,
    },
    /// Renumber ranks evenly (keeping order) and re-find ranges whose source text moved.
    Rebase,
    /// Delete parts (for links, only the link).
    Remove {
        /// Parts (names, ranks or ranges).
        #[arg(required = true)]
        names: Vec<String>,
    },
    /// Print `export e1=… EVIDENCE_COUNT=…` for `eval`.
    Env,
    /// Write the user request (no model is called).
    Ask {
        /// The question.
        question: String,
    },
    /// Keep evidence relevant to a query (BM25) and switch the rest off; `focus off` undoes.
    Focus {
        /// The query, or `off`.
        #[arg(required = true)]
        query: Vec<String>,
        /// Keep at most this many evidence parts.
        #[arg(long)]
        top: Option<usize>,
        /// Keep parts scoring at least this fraction of the best score.
        #[arg(long, default_value_t = 0.25)]
        min_ratio: f64,
    },
    /// Which other parts mention a part's file or the symbols it defines.
    Deps {
        /// The part.
        name: String,
    },
    /// Write build/prompt.mdctx and build/ctxplan.json.
    Assemble(BuildArgs),
}

#[derive(Debug, Args)]
pub struct BuildArgs {
    /// Token budget (overrides ctx.json).
    #[arg(long, value_name = "TOKENS")]
    pub budget: Option<u64>,
    /// Tokenizer (overrides ctx.json).
    #[arg(long, value_parser = parse_tokenizer)]
    pub tokenizer: Option<Tokenizer>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

pub fn parse_tokenizer(name: &str) -> Result<Tokenizer, String> {
    name.parse()
        .map_err(|error: rlm_context::tokens::UnknownTokenizer| error.to_string())
}
