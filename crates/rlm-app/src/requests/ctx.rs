//! Arguments of `rlm ctx`.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use rlm_assemble::Slot;
use rlm_context::tokens::Tokenizer;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct CtxRequest {
    /// The ctx directory [env: RLM_CTX_DIR] [default: ctx].
    #[cfg_attr(feature = "clap", arg(long, global = true, value_name = "DIR"))]
    pub dir: Option<PathBuf>,
    #[cfg_attr(feature = "clap", command(subcommand))]
    #[serde(flatten)]
    pub action: CtxAction,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Subcommand))]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum CtxAction {
    /// Create the ctx directory with a policy and an empty request.
    Init {
        /// Flow id written into the outputs (default: the folder holding the ctx directory).
        #[cfg_attr(feature = "clap", arg(long))]
        flow: Option<String>,
        /// Default tokenizer for counts.
        #[cfg_attr(feature = "clap", arg(long, default_value = "o200k", value_parser = parse_tokenizer))]
        #[serde(default)]
        tokenizer: Tokenizer,
        /// Default token budget (none: unlimited).
        #[cfg_attr(feature = "clap", arg(long, value_name = "TOKENS"))]
        budget: Option<u64>,
    },
    /// Add evidence: `file`, `file::100,200` (lines), `file::100` (to the end),
    /// `file::100c,500c` (bytes), `file#tag1,tag2`, or a glob such as 'src/**/*.rs'.
    Add {
        /// Selectors.
        #[cfg_attr(feature = "clap", arg(value_name = "SELECTOR", required = true))]
        selectors: Vec<String>,
        /// Rank, three digits 000–499 (default 200 for evidence).
        #[cfg_attr(feature = "clap", arg(long))]
        rank: Option<String>,
        /// Role of the new parts: the prompt group they go in.
        #[cfg_attr(feature = "clap", arg(long, value_enum, default_value_t = Slot::Evidence))]
        #[serde(default = "evidence")]
        role: Slot,
        /// Add whole files as `.link` symlinks: always current, always active.
        #[cfg_attr(feature = "clap", arg(long))]
        #[serde(default)]
        link: bool,
        /// Let globs descend into symbolic links to directories (by default they do not, as
        /// `rlm load` does not; a directory named literally in the pattern is always followed).
        #[cfg_attr(feature = "clap", arg(long))]
        #[serde(default)]
        follow: bool,
    },
    /// Parts with state, bytes, tokens and staleness.
    Status,
    /// Dry run of the assembly: what goes in, in what order, what is dropped.
    Plan(CtxBuildOptions),
    /// Tokens per part and in total against the budget.
    Budget(CtxBuildOptions),
    /// Switch parts on or off by name, rank (200) or rank range (200-299).
    Toggle {
        /// on or off.
        #[cfg_attr(feature = "clap", arg(value_enum))]
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
        #[cfg_attr(feature = "clap", arg(required = true))]
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
        #[cfg_attr(feature = "clap", arg(required = true))]
        query: Vec<String>,
        /// Keep at most this many evidence parts.
        #[cfg_attr(feature = "clap", arg(long))]
        top: Option<usize>,
        /// Keep parts scoring at least this fraction of the best score.
        #[cfg_attr(feature = "clap", arg(long, default_value_t = super::defaults::focus_min_ratio()))]
        #[serde(default = "super::defaults::focus_min_ratio")]
        min_ratio: f64,
    },
    /// Which other parts mention a part's file or the symbols it defines.
    Deps {
        /// The part.
        name: String,
    },
    /// Write build/prompt.mdctx and build/ctxplan.json.
    Assemble(CtxBuildOptions),
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct CtxBuildOptions {
    /// Token budget (overrides ctx.json).
    #[cfg_attr(feature = "clap", arg(long, value_name = "TOKENS"))]
    pub budget: Option<u64>,
    /// Tokenizer (overrides ctx.json).
    #[cfg_attr(feature = "clap", arg(long, value_parser = parse_tokenizer))]
    pub tokenizer: Option<Tokenizer>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum OnOff {
    On,
    Off,
}

pub fn parse_tokenizer(name: &str) -> Result<Tokenizer, String> {
    name.parse()
        .map_err(|error: rlm_context::tokens::UnknownTokenizer| error.to_string())
}

/// The role `rlm ctx add` gives new parts.
fn evidence() -> Slot {
    Slot::Evidence
}

/// A ctx directory's prompt, assembled within its budget: what the MCP `ctx_assemble` tool
/// takes (the command line's `rlm ctx --dir DIR assemble`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct CtxAssembleRequest {
    /// The ctx directory (default `ctx`).
    pub dir: Option<PathBuf>,
    #[serde(flatten)]
    pub build: CtxBuildOptions,
}
