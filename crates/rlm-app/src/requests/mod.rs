//! One typed request per operation: what a front end asks for, in the operation's own words.
//!
//! Each request is declared once and read three ways: deserialized from JSON (the MCP server's
//! tool arguments, with a JSON schema from the same type), built field by field (the Python
//! package), and — behind the `clap` feature — parsed from a command line (the `rlm` binary).
//! A field's doc comment is its `--help` line and its schema description; its default is
//! written once, in [`defaults`], and named by both the serde and the clap attribute.
//!
//! Requests hold what the caller chose, unchecked beyond their types: the operations check
//! ranges and combinations (a front end without clap's parsers gets the same refusals), and
//! fill in what is left out from the environment and the configuration files
//! ([`crate::settings`]).

mod ctx;
mod inspect;
mod inspection;
mod llm;
mod models;
mod prompt;
mod query;
mod run;
mod store;
mod view;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use ctx::{CtxAction, CtxAssembleRequest, CtxBuildOptions, CtxRequest, OnOff, parse_tokenizer};
pub use inspect::{DEFAULT_SAMPLE_CHARS, InspectRequest, SAMPLE_CHARS};
pub use inspection::{
    RunsAction, RunsListRequest, RunsRequest, RunsShowRequest, SessionNameRequest, SessionsAction,
    SessionsRequest,
};
pub use llm::{ChatRequest, LlmOptions, parse_seconds};
pub use models::{ModelsAction, ModelsImportRequest, ModelsRemoveRequest, ModelsRequest};
pub use prompt::{PromptAction, PromptBuildRequest, PromptFormat, PromptRequest};
pub use query::QueryRequest;
pub use run::{EmbeddingOptions, LoopOptions, RunRequest, StoreChoice};
pub use store::{
    ChunkRequest, ChunkingOptions, DeleteRequest, DoctorRequest, EmbedRequest, GrepRequest,
    ListRequest, LoadRequest, PeekRequest, ReindexRequest, SearchRequest, ShowRequest,
    StatusRequest, StoreAction, StoreCopyRequest, StoreRequest, parse_file_size,
};
pub use view::ViewRequest;

/// The spending budget of `rlm run` and `rlm query`, read and checked the same way by both
/// (`settings::budget`): a negative or zero value is an input error with a hint, not a
/// parse error.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct BudgetOptions {
    /// Stop when this many US dollars have been spent (every model call counted).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "USD", allow_negative_numbers = true)
    )]
    pub max_cost: Option<f64>,
    /// Stop when this many tokens have been used (every model call counted).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "N", allow_negative_numbers = true)
    )]
    pub max_tokens: Option<i64>,
}

/// Every default a request field has, written once: the serde attribute names the function
/// and the clap attribute calls it.
pub mod defaults {
    /// `rlm run`'s root-model turns.
    pub fn max_iterations() -> u32 {
        30
    }
    /// `rlm run`'s recursion depth.
    pub fn max_depth() -> u32 {
        1
    }
    /// `rlm run`'s iterations in a row whose code failed before it stops.
    pub fn max_errors() -> u32 {
        5
    }
    /// Results of `rlm search` (`k`).
    pub fn search_k() -> u32 {
        10
    }
    /// The k constant of reciprocal rank fusion.
    pub fn rrf_k() -> f64 {
        rlm_store::DEFAULT_RRF_K
    }
    /// Characters of `rlm inspect`'s sample.
    pub fn sample_chars() -> u32 {
        super::DEFAULT_SAMPLE_CHARS
    }
    /// Chunk size of `rlm load` and `rlm chunk`.
    pub fn chunk_size() -> usize {
        rlm_context::chunk::DEFAULT_SIZE
    }
    /// Runs `rlm runs list` shows.
    pub fn runs_limit() -> usize {
        20
    }
    /// The ctx directory.
    pub fn ctx_dir() -> std::path::PathBuf {
        std::path::PathBuf::from("ctx")
    }
    /// `rlm ctx focus`'s least share of the best score.
    pub fn focus_min_ratio() -> f64 {
        0.25
    }
    /// `rlm prompt build`'s stage.
    pub fn stage() -> String {
        "coding".to_owned()
    }
    /// The context lines around a grep match.
    pub fn grep_context() -> usize {
        0
    }
}

/// `rlm config`: what configuration is in force and where it came from.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct ConfigRequest {
    #[cfg_attr(feature = "clap", command(subcommand))]
    #[serde(default, flatten)]
    pub action: Option<ConfigAction>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Subcommand))]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum ConfigAction {
    /// Print the merged configuration (secrets redacted).
    #[default]
    Show,
    /// Print the configuration files that were looked for, in precedence order.
    Paths,
}

#[cfg(test)]
#[cfg(feature = "clap")]
pub(crate) use test_parse::{parse, try_parse};

/// Requests as the command line parses them (tests of the settings that read requests).
#[cfg(test)]
#[cfg(feature = "clap")]
mod test_parse {
    /// `T` as the command line parses `words`.
    pub(crate) fn parse<T: clap::Args + clap::FromArgMatches>(words: &[&str]) -> T {
        match try_parse(words) {
            Ok(parsed) => parsed,
            Err(err) => panic!("{words:?}: {err}"),
        }
    }

    /// `T` as the command line parses `words`, or clap's refusal.
    pub(crate) fn try_parse<T: clap::Args + clap::FromArgMatches>(
        words: &[&str],
    ) -> Result<T, clap::Error> {
        let command = T::augment_args(clap::Command::new("rlm").no_binary_name(true));
        let matches = command.try_get_matches_from(words)?;
        T::from_arg_matches(&matches)
    }
}

/// The checks the command line's parsers make, for requests that did not come through them
/// (JSON, Python): the same refusals, naming the flag.
pub mod checks {
    use std::ops::RangeInclusive;

    use crate::error::AppError;

    /// `value` of `flag` inside `range`, else an input error.
    pub fn range<T: PartialOrd + std::fmt::Display + Copy>(
        flag: &str,
        value: T,
        range: RangeInclusive<T>,
    ) -> Result<(), AppError> {
        if range.contains(&value) {
            return Ok(());
        }
        Err(crate::error::input_error(format!(
            "{flag} {value} is not in {}..={}",
            range.start(),
            range.end()
        )))
    }

    /// An optional value of `flag` inside `range`.
    pub fn optional_range<T: PartialOrd + std::fmt::Display + Copy>(
        flag: &str,
        value: Option<T>,
        range: RangeInclusive<T>,
    ) -> Result<(), AppError> {
        value.map_or(Ok(()), |value| self::range(flag, value, range))
    }

    /// A number of seconds as `--timeout` takes it (more than 0, at most a day).
    pub fn seconds(flag: &str, value: Option<f64>) -> Result<(), AppError> {
        match value {
            Some(seconds) => super::parse_seconds(&seconds.to_string())
                .map(drop)
                .map_err(|message| crate::error::input_error(format!("{flag}: {message}"))),
            None => Ok(()),
        }
    }
}
