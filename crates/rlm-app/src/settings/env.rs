//! Every environment variable `rlm` reads, in one place, and [`Environment`], the one way the
//! settings layer reads them: a snapshot of the process environment, or a fixed set for tests
//! and other front ends.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use crate::error::input_error;

/// Log filter override (tracing `EnvFilter` syntax).
pub const RUST_LOG: &str = "RUST_LOG";
/// Disable colour (any non-empty value), per no-color.org.
pub const NO_COLOR: &str = "NO_COLOR";
/// Base directory for the user configuration file.
pub const XDG_CONFIG_HOME: &str = "XDG_CONFIG_HOME";
/// Fallback base of the configuration, state and data directories.
pub const HOME: &str = "HOME";
/// Explicit configuration file, same as `--config`.
pub const RLM_CONFIG: &str = "RLM_CONFIG";
/// The ctx directory for `rlm ctx`, same as `--dir`.
pub const RLM_CTX_DIR: &str = "RLM_CTX_DIR";

// --- LLM settings (merged in `settings/llm.rs`: flags > env > config > defaults)
/// Root model, same as `--model`.
pub const RLM_MODEL: &str = "RLM_MODEL";
/// Model for sub-calls, same as `--subcall-model`.
pub const RLM_SUBCALL_MODEL: &str = "RLM_SUBCALL_MODEL";
/// Record every model call to this JSON Lines file, same as `--record`.
pub const RLM_RECORD: &str = "RLM_RECORD";
/// Answer model calls from this recording, same as `--replay`.
pub const RLM_REPLAY: &str = "RLM_REPLAY";
/// Requests in flight per provider, same as `--max-concurrency`.
pub const RLM_MAX_CONCURRENCY: &str = "RLM_MAX_CONCURRENCY";
/// Seconds one model request may take until its answer starts, same as `--request-timeout`.
pub const RLM_TIMEOUT: &str = "RLM_TIMEOUT";
/// Longest silence inside a streamed answer, same as `--idle-timeout`.
pub const RLM_IDLE_TIMEOUT: &str = "RLM_IDLE_TIMEOUT";
/// Whether model answers are streamed (`0` asks for whole bodies).
pub const RLM_STREAM: &str = "RLM_STREAM";
/// Retries per model request, same as `--max-retries`.
pub const RLM_MAX_RETRIES: &str = "RLM_MAX_RETRIES";
/// Output-token cap of one answer (`--max-output-tokens`).
pub const RLM_MAX_OUTPUT_TOKENS: &str = "RLM_MAX_OUTPUT_TOKENS";
/// Ask providers to cache prompt prefixes (`1`/`true`, the default, or `0`/`false`); `0` is
/// the same as `--no-prompt-cache`.
pub const RLM_PROMPT_CACHE: &str = "RLM_PROMPT_CACHE";

// --- Provider keys and endpoints (read through `rlm_llm::BUILTIN_PROVIDERS`, listed here so
// every variable rlm reads is in one place)
/// OpenAI key.
pub const OPENAI_API_KEY: &str = "OPENAI_API_KEY";
/// OpenAI-compatible base URL (including `/v1`).
pub const OPENAI_BASE_URL: &str = "OPENAI_BASE_URL";
/// Anthropic key.
pub const ANTHROPIC_API_KEY: &str = "ANTHROPIC_API_KEY";
/// Anthropic base URL (without `/v1`).
pub const ANTHROPIC_BASE_URL: &str = "ANTHROPIC_BASE_URL";
/// OpenRouter key.
pub const OPENROUTER_API_KEY: &str = "OPENROUTER_API_KEY";
/// Ollama base URL (including `/v1`).
pub const OLLAMA_BASE_URL: &str = "OLLAMA_BASE_URL";
/// vLLM base URL (including `/v1`).
pub const VLLM_BASE_URL: &str = "VLLM_BASE_URL";
/// llama.cpp server base URL (including `/v1`).
pub const LLAMACPP_BASE_URL: &str = "LLAMACPP_BASE_URL";
/// LM Studio base URL (including `/v1`).
pub const LMSTUDIO_BASE_URL: &str = "LMSTUDIO_BASE_URL";
/// Store directory or PostgreSQL URL, same as `--store` (default `.rlm` in the current
/// directory).
pub const RLM_STORE: &str = "RLM_STORE";
/// The password of a PostgreSQL store whose URL has none (as libpq reads it).
pub const PGPASSWORD: &str = "PGPASSWORD";
/// The password file of PostgreSQL stores (default `~/.pgpass`), as libpq reads it.
pub const PGPASSFILE: &str = "PGPASSFILE";
/// Base directory for user data; models live in `$XDG_DATA_HOME/rlm/models`.
pub const XDG_DATA_HOME: &str = "XDG_DATA_HOME";
/// Directory of imported embedding models (overrides `[embed] models_dir`).
pub const RLM_MODELS_DIR: &str = "RLM_MODELS_DIR";
/// Name of the embedding model to use (overrides `[embed] model`).
pub const RLM_EMBED_MODEL: &str = "RLM_EMBED_MODEL";
/// onnxruntime shared library for ONNX models (overrides `[embed] runtime` and the import).
pub const RLM_ONNXRUNTIME: &str = "RLM_ONNXRUNTIME";

// --- rlm run
/// Directory of prompt overrides (`system.md`, `first_turn.md`, `session.md`, ... for `rlm run`;
/// `prompt-system.md`, `stage-<stage>.md`, `prompt-summarize.md` for `rlm prompt`).
pub const RLM_PROMPT_DIR: &str = "RLM_PROMPT_DIR";
/// Run the sandbox without Landlock/seccomp where the kernel lacks them (`1`/`true`), same as
/// `--allow-reduced-protection`.
pub const RLM_ALLOW_REDUCED_PROTECTION: &str = "RLM_ALLOW_REDUCED_PROTECTION";
// --- rlm view
/// The browser `rlm view --open` starts: commands separated by `:`, tried in order, each given
/// the page's path (or with `%s` replaced by it); `xdg-open` when unset.
pub const BROWSER: &str = "BROWSER";
// --- rlm prompt
/// The summarizing model of `rlm prompt` (overrides `[prompt.rlm] model`).
pub const RLM_PROMPT_MODEL: &str = "RLM_PROMPT_MODEL";

/// Base directory for state; trajectories go to `$XDG_STATE_HOME/rlm/runs`, `rlm prompt`'s
/// caches to `$XDG_STATE_HOME/rlm/prompt-cache`.
pub const XDG_STATE_HOME: &str = "XDG_STATE_HOME";

/// Environment variables, read once. Empty values count as unset everywhere.
#[derive(Clone, Default)]
pub struct Environment {
    vars: BTreeMap<String, OsString>,
}

impl Environment {
    /// A snapshot of the process environment (names that are not UTF-8 are never read).
    pub fn process() -> Self {
        Self::from_pairs(
            std::env::vars_os().filter_map(|(name, value)| Some((name.into_string().ok()?, value))),
        )
    }

    /// An environment holding exactly `pairs`.
    pub fn from_pairs<K, V>(pairs: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<String>,
        V: Into<OsString>,
    {
        Self {
            vars: pairs
                .into_iter()
                .map(|(name, value)| (name.into(), value.into()))
                .collect(),
        }
    }

    /// The raw value, or `None` when unset or empty.
    pub fn var_os(&self, name: &str) -> Option<OsString> {
        self.vars
            .get(name)
            .filter(|value| !value.is_empty())
            .cloned()
    }

    /// The value as text, or `None` when unset, blank or not UTF-8.
    pub fn var(&self, name: &str) -> Option<String> {
        self.var_os(name)
            .and_then(|value| value.into_string().ok())
            .filter(|value| !value.trim().is_empty())
    }

    /// The value as a path, or `None` when unset or empty.
    pub fn path(&self, name: &str) -> Option<PathBuf> {
        self.var_os(name).map(PathBuf::from)
    }

    /// The value as a switch (`1`/`true`/`yes`/`on` or `0`/`false`/`no`/`off`); anything else
    /// is an input error naming it.
    pub fn switch(&self, name: &str) -> anyhow::Result<Option<bool>> {
        self.var(name)
            .map(|text| match text.trim().to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" | "on" => Ok(true),
                "0" | "false" | "no" | "off" => Ok(false),
                _ => Err(input_error(format!("{name}={text} is not 1/true or 0/false")).into()),
            })
            .transpose()
    }

    /// The value parsed as a number; a value that does not parse is an input error naming it.
    pub fn number<T: FromStr>(&self, name: &str) -> anyhow::Result<Option<T>> {
        self.var(name)
            .map(|text| {
                text.trim()
                    .parse::<T>()
                    .map_err(|_| input_error(format!("{name}={text} is not a valid number")).into())
            })
            .transpose()
    }
}

/// Names only: values may be API keys.
impl fmt::Debug for Environment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Environment")
            .field("names", &self.vars.keys().collect::<Vec<_>>())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_blank_values_are_unset_and_debug_hides_values() {
        let env = Environment::from_pairs([
            ("EMPTY", ""),
            ("BLANK", "  "),
            ("N", " 7 "),
            ("BAD", "seven"),
            ("OPENAI_API_KEY", "sk-secret"),
        ]);
        assert_eq!(env.var_os("EMPTY"), None);
        assert_eq!(env.var("BLANK"), None);
        assert_eq!(env.path("BLANK"), Some(PathBuf::from("  ")));
        assert_eq!(env.number::<u32>("N").unwrap(), Some(7));
        assert_eq!(env.number::<u32>("UNSET").unwrap(), None);
        let switches = Environment::from_pairs([("ON", "True"), ("OFF", "0"), ("ODD", "maybe")]);
        assert_eq!(switches.switch("ON").unwrap(), Some(true));
        assert_eq!(switches.switch("OFF").unwrap(), Some(false));
        assert_eq!(switches.switch("UNSET").unwrap(), None);
        let err = switches.switch("ODD").unwrap_err();
        assert!(err.to_string().contains("ODD=maybe"), "{err}");
        let err = env.number::<u32>("BAD").unwrap_err();
        assert!(err.to_string().contains("BAD=seven"), "{err}");
        let shown = format!("{env:?}");
        assert!(
            shown.contains("OPENAI_API_KEY") && !shown.contains("sk-secret"),
            "{shown}"
        );
    }
}
