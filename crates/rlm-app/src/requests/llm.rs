//! Model flags shared by every command that calls a model (`#[command(flatten)]` them), and the
//! arguments of `rlm chat`.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which models to use and how to reach them. Each flag overrides its environment variable,
/// which overrides the `[llm]` section of the configuration (see `settings/llm.rs`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct LlmOptions {
    /// Model for the main call, as `provider:name` (e.g. `anthropic:claude-sonnet-4-5`,
    /// `openai:gpt-4o-mini`, `ollama:qwen2.5:7b`) [env: RLM_MODEL].
    #[cfg_attr(feature = "clap", arg(long, short = 'm', value_name = "MODEL", value_hint = clap::ValueHint::Other))]
    pub model: Option<String>,
    /// Model for sub-calls (defaults to --model) [env: RLM_SUBCALL_MODEL].
    #[cfg_attr(feature = "clap", arg(long, value_name = "MODEL", value_hint = clap::ValueHint::Other))]
    pub subcall_model: Option<String>,
    /// Append every model request and response to this JSON Lines file (keys redacted)
    /// [env: RLM_RECORD].
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "FILE", conflicts_with = "replay")
    )]
    pub record: Option<PathBuf>,
    /// Answer model calls from a recording instead of the network; no key needed
    /// [env: RLM_REPLAY].
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub replay: Option<PathBuf>,
    /// Requests in flight at once per provider (default 16, 1 for a server on this machine)
    /// [env: RLM_MAX_CONCURRENCY].
    #[cfg_attr(feature = "clap", arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096)))]
    pub max_concurrency: Option<u32>,
    /// Seconds a model request may take until its answer starts (time queued for the
    /// provider's concurrency limit not counted); a timed-out request is retried unless the
    /// answer had begun [env: RLM_TIMEOUT].
    #[cfg_attr(feature = "clap", arg(long = "request-timeout", value_name = "SECONDS", value_parser = parse_seconds))]
    #[serde(rename = "request_timeout")]
    pub timeout: Option<f64>,
    /// Seconds of silence after which a streamed answer that had begun is given up on
    /// (default 60; never more than --request-timeout) [env: RLM_IDLE_TIMEOUT].
    #[cfg_attr(feature = "clap", arg(long, value_name = "SECONDS", value_parser = parse_seconds))]
    pub idle_timeout: Option<f64>,
    /// Retries per request on rate limits, server errors and dropped connections
    /// [env: RLM_MAX_RETRIES].
    #[cfg_attr(feature = "clap", arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=100)))]
    pub max_retries: Option<u32>,
    /// Most tokens one answer may have, so a model that never stops cannot run until the
    /// request times out (default 8192; 32768 for reasoning models, whose thinking counts)
    /// [env: RLM_MAX_OUTPUT_TOKENS].
    #[cfg_attr(feature = "clap", arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..)))]
    pub max_output_tokens: Option<u32>,
    /// Send no prompt-caching breakpoints (Anthropic `cache_control`); by default the system
    /// prompt and the growing conversation are cached so each turn reads the earlier ones at
    /// a tenth of the input price [env: RLM_PROMPT_CACHE=0].
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(default)]
    pub no_prompt_cache: bool,
}

/// Parses a positive number of seconds, at most a day. Zero is refused: it would end every
/// request or run before it starts, and the message says so rather than "between 0 and …".
pub fn parse_seconds(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(value) if value.is_finite() && value > 0.0 && value <= 86_400.0 => Ok(value),
        _ => Err(format!(
            "`{text}` is not a number of seconds greater than 0 and at most 86400"
        )),
    }
}

/// Arguments of `rlm chat`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct ChatRequest {
    /// The prompt; `-` reads it from stdin.
    #[cfg_attr(feature = "clap", arg(value_name = "PROMPT"))]
    pub prompt: String,
    /// System prompt.
    #[cfg_attr(feature = "clap", arg(long, short = 's', value_name = "TEXT"))]
    pub system: Option<String>,
    /// Sampling temperature.
    #[cfg_attr(feature = "clap", arg(long, value_name = "T"))]
    pub temperature: Option<f32>,
    /// Maximum tokens in the answer (same as --max-output-tokens, which it overrides).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..)))]
    pub max_tokens: Option<u32>,
    /// Stop sequence (repeatable).
    #[cfg_attr(feature = "clap", arg(long, value_name = "TEXT"))]
    #[serde(default)]
    pub stop: Vec<String>,
    /// Ask the model for a JSON object.
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(default)]
    pub json_mode: bool,
    /// Deliver the answer piece by piece as it streams in (events), besides the whole answer
    /// at the end. The command line streams unless `--json` is given.
    #[cfg_attr(feature = "clap", arg(skip))]
    #[serde(default)]
    pub stream: bool,
    #[cfg_attr(feature = "clap", command(flatten))]
    #[serde(flatten)]
    pub llm: LlmOptions,
}
