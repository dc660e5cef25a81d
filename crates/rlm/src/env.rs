//! Every environment variable `rlm` reads, in one place.

/// Log filter override (tracing `EnvFilter` syntax).
pub const RUST_LOG: &str = "RUST_LOG";
/// Disable colour (any non-empty value), per no-color.org.
pub const NO_COLOR: &str = "NO_COLOR";
/// Base directory for the user configuration file.
pub const XDG_CONFIG_HOME: &str = "XDG_CONFIG_HOME";
/// Fallback for the user configuration directory.
pub const HOME: &str = "HOME";
/// Explicit configuration file, same as `--config`.
pub const RLM_CONFIG: &str = "RLM_CONFIG";
/// The ctx directory for `rlm ctx`, same as `--dir`.
pub const RLM_CTX_DIR: &str = "RLM_CTX_DIR";

// --- LLM settings (merged in `commands/llm_settings.rs`: flags > env > config > defaults)
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
/// Seconds one model request may take, same as `--timeout`.
pub const RLM_TIMEOUT: &str = "RLM_TIMEOUT";
/// Retries per model request, same as `--max-retries`.
pub const RLM_MAX_RETRIES: &str = "RLM_MAX_RETRIES";

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
/// Store directory, same as `--store` (default `.rlm` in the current directory).
pub const RLM_STORE: &str = "RLM_STORE";
/// Base directory for user data; models live in `$XDG_DATA_HOME/rlm/models`.
pub const XDG_DATA_HOME: &str = "XDG_DATA_HOME";
/// Directory of imported embedding models (overrides `[embed] models_dir`).
pub const RLM_MODELS_DIR: &str = "RLM_MODELS_DIR";
/// Name of the embedding model to use (overrides `[embed] model`).
pub const RLM_EMBED_MODEL: &str = "RLM_EMBED_MODEL";
/// onnxruntime shared library for ONNX models (overrides `[embed] runtime` and the import).
pub const RLM_ONNXRUNTIME: &str = "RLM_ONNXRUNTIME";

// --- rlm run
/// Directory of prompt overrides (`system.md`, `first_turn.md`, ...) for `rlm run`.
pub const RLM_PROMPT_DIR: &str = "RLM_PROMPT_DIR";
/// Base directory for state; trajectories go to `$XDG_STATE_HOME/rlm/runs`.
pub const XDG_STATE_HOME: &str = "XDG_STATE_HOME";
