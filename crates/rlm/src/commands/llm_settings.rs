//! The one place where model settings are merged, highest precedence first: flags, environment,
//! the `[llm]` configuration section, defaults. Every command that calls a model uses
//! [`LlmSettings::load`] and [`LlmSettings::build_client`].
//!
//! ```toml
//! [llm]
//! model = "anthropic:claude-sonnet-4-5"
//! subcall_model = "anthropic:claude-haiku-4-5"
//! max_concurrency = 16        # per provider
//! timeout_secs = 300          # per request
//! max_retries = 4
//! default_provider = "ollama" # for model names without `provider:`
//!
//! [llm.providers.local]       # add or override a provider
//! kind = "openai"             # or "anthropic"
//! base_url = "http://localhost:8000/v1"
//! api_key_env = "LOCAL_KEY"   # or api_key = "..." (redacted in `rlm config show`)
//! max_concurrency = 4
//!
//! [llm.prices."my-model"]     # USD per million tokens; extends the built-in table
//! input_per_mtok = 1.0
//! output_per_mtok = 2.0
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use rlm_llm::{ApiKey, LlmClient, Price, PriceTable, ProviderConfig, ProviderKind, RetryPolicy};
use serde::Deserialize;

use crate::cli::LlmArgs;
use crate::config::LoadedConfig;
use crate::env;
use crate::error::{CliError, input_error};

/// The `[llm]` configuration section.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    pub model: Option<String>,
    pub subcall_model: Option<String>,
    pub max_concurrency: Option<u32>,
    pub timeout_secs: Option<f64>,
    pub max_retries: Option<u32>,
    pub default_provider: Option<String>,
    pub record: Option<PathBuf>,
    pub replay: Option<PathBuf>,
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderFileConfig>,
    #[serde(default)]
    pub prices: BTreeMap<String, Price>,
}

/// One `[llm.providers.NAME]` table. Missing fields keep the built-in provider's values.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderFileConfig {
    pub kind: Option<ProviderKind>,
    pub base_url: Option<String>,
    /// Redacted in `Debug` by `ApiKey`.
    pub api_key: Option<ApiKey>,
    pub api_key_env: Option<String>,
    pub max_concurrency: Option<u32>,
}

/// Merged model settings. `Debug` shows no secrets (keys are `ApiKey`).
#[derive(Debug, Clone)]
pub struct LlmSettings {
    /// Main model, if any was configured.
    pub model: Option<String>,
    /// Sub-call model; falls back to `model`.
    #[allow(
        dead_code,
        reason = "read by `rlm run`; `expect` would break once it is"
    )]
    pub subcall_model: Option<String>,
    pub record: Option<PathBuf>,
    pub replay: Option<PathBuf>,
    pub providers: Vec<ProviderConfig>,
    pub default_provider: Option<String>,
    pub request_timeout: Duration,
    pub retry: RetryPolicy,
    pub prices: PriceTable,
}

/// Provider variables read through `rlm_llm::BUILTIN_PROVIDERS`.
const PROVIDER_VARIABLES: [&str; 6] = [
    env::OPENAI_API_KEY,
    env::OPENAI_BASE_URL,
    env::ANTHROPIC_API_KEY,
    env::ANTHROPIC_BASE_URL,
    env::OPENROUTER_API_KEY,
    env::OLLAMA_BASE_URL,
];

/// Reads an environment variable, treating empty as unset.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .filter(|value| !value.trim().is_empty())
}

fn env_number<T: std::str::FromStr>(
    lookup: &dyn Fn(&str) -> Option<String>,
    name: &str,
) -> anyhow::Result<Option<T>> {
    lookup(name)
        .map(|text| {
            text.trim()
                .parse::<T>()
                .map_err(|_| input_error(format!("{name}={text} is not a valid number")).into())
        })
        .transpose()
}

impl LlmSettings {
    /// Loads `[llm]` from the configuration and merges flags and the process environment.
    pub fn load(args: &LlmArgs, config: &LoadedConfig) -> anyhow::Result<Self> {
        let section: LlmConfig = config.section("llm")?;
        // Names only, never values: enough to debug "why is my key not used".
        let present: Vec<&str> = PROVIDER_VARIABLES
            .iter()
            .copied()
            .filter(|name| process_env(name).is_some())
            .collect();
        tracing::debug!(variables = ?present, "provider variables set");
        Self::resolve(args, section, &process_env)
    }

    /// Merges flags > `lookup` (the environment) > `config` > defaults.
    pub fn resolve(
        args: &LlmArgs,
        config: LlmConfig,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> anyhow::Result<Self> {
        let model = args
            .model
            .clone()
            .or_else(|| lookup(env::RLM_MODEL))
            .or(config.model);
        let subcall_model = args
            .subcall_model
            .clone()
            .or_else(|| lookup(env::RLM_SUBCALL_MODEL))
            .or(config.subcall_model)
            .or_else(|| model.clone());
        let record = args
            .record
            .clone()
            .or_else(|| lookup(env::RLM_RECORD).map(PathBuf::from))
            .or(config.record);
        let replay = args
            .replay
            .clone()
            .or_else(|| lookup(env::RLM_REPLAY).map(PathBuf::from))
            .or(config.replay);
        if record.is_some() && replay.is_some() {
            return Err(input_error("--record and --replay cannot be used together").into());
        }
        let explicit_concurrency = match args.max_concurrency {
            Some(n) => Some(n),
            None => env_number::<u32>(lookup, env::RLM_MAX_CONCURRENCY)?,
        };
        let timeout_secs = match args.timeout {
            Some(t) => Some(t),
            None => env_number::<f64>(lookup, env::RLM_TIMEOUT)?,
        }
        .or(config.timeout_secs);
        let request_timeout = match timeout_secs {
            None => rlm_llm::DEFAULT_REQUEST_TIMEOUT,
            Some(seconds) => Duration::try_from_secs_f64(seconds)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    input_error(format!(
                        "timeout {seconds} is not a positive number of seconds"
                    ))
                })?,
        };
        let max_retries = match args.max_retries {
            Some(n) => Some(n),
            None => env_number::<u32>(lookup, env::RLM_MAX_RETRIES)?,
        }
        .or(config.max_retries);
        let retry = RetryPolicy {
            max_retries: max_retries.unwrap_or(RetryPolicy::default().max_retries),
            ..RetryPolicy::default()
        };

        let mut providers: Vec<ProviderConfig> = rlm_llm::BUILTIN_PROVIDERS
            .iter()
            .map(|builtin| builtin.configure(lookup))
            .collect();
        let mut pinned = std::collections::HashSet::new();
        for (name, file) in config.providers {
            let existing = providers.iter().position(|p| p.name == name);
            let base = match existing {
                Some(index) => providers.remove(index),
                None => {
                    let kind = file.kind.ok_or_else(|| {
                        CliError::input(anyhow::anyhow!(
                            "[llm.providers.{name}] needs `kind` (\"openai\" or \"anthropic\") and `base_url`"
                        ))
                    })?;
                    let base_url = file.base_url.clone().ok_or_else(|| {
                        input_error(format!("[llm.providers.{name}] needs `base_url`"))
                    })?;
                    ProviderConfig::new(name.clone(), kind, base_url)
                }
            };
            let mut merged = base;
            if let Some(kind) = file.kind {
                merged.kind = kind;
            }
            if let Some(url) = file.base_url {
                merged.base_url = url.trim_end_matches('/').to_owned();
            }
            if let Some(variable) = file.api_key_env {
                merged.api_key = lookup(&variable).map(ApiKey::new);
                merged.api_key_env = Some(variable);
            }
            // An environment key (already in `merged`) wins over one written in a file.
            if merged.api_key.is_none() {
                merged.api_key = file.api_key;
            }
            if let Some(max) = file.max_concurrency {
                merged = merged.max_concurrency(max as usize);
                pinned.insert(name.clone());
            }
            providers.push(merged);
        }
        let fallback_concurrency = explicit_concurrency.or(config.max_concurrency);
        for provider in &mut providers {
            let chosen = match (explicit_concurrency, pinned.contains(&provider.name)) {
                (Some(n), _) => Some(n),
                (None, true) => None,
                (None, false) => fallback_concurrency,
            };
            if let Some(n) = chosen {
                provider.max_concurrency = (n as usize).max(1);
            }
        }

        let mut prices = PriceTable::builtin();
        for (model, price) in config.prices {
            prices.insert(model, price);
        }
        Ok(Self {
            model,
            subcall_model,
            record,
            replay,
            providers,
            default_provider: config.default_provider,
            request_timeout,
            retry,
            prices,
        })
    }

    /// The main model, or an input error saying how to set one.
    pub fn require_model(&self) -> anyhow::Result<&str> {
        self.model.as_deref().ok_or_else(|| {
            CliError::input(anyhow::anyhow!("no model configured"))
                .with_hint(format!(
                    "pass --model provider:name (e.g. openai:gpt-4o-mini), set {}, or set `model` in the [llm] section of rlm.toml",
                    env::RLM_MODEL
                ))
                .into()
        })
    }

    /// Builds the client (one per process; clone it for concurrent callers).
    pub fn build_client(&self) -> anyhow::Result<LlmClient> {
        let mut builder = LlmClient::builder()
            .retry(self.retry)
            .request_timeout(self.request_timeout)
            .prices(self.prices.clone());
        for provider in &self.providers {
            builder = builder.provider(provider.clone());
        }
        if let Some(name) = &self.default_provider {
            builder = builder.default_provider(name.clone());
        }
        if let Some(path) = &self.record {
            builder = builder.record(path);
        }
        if let Some(path) = &self.replay {
            builder = builder.replay(path);
        }
        builder
            .build()
            .map_err(into_cli_error)
            .context("cannot set up the model client")
    }
}

/// Turns a provider-layer error into a CLI error with the right exit code and a hint.
pub fn into_cli_error(err: rlm_llm::Error) -> anyhow::Error {
    let hint = match &err {
        rlm_llm::Error::MissingApiKey { variable, .. } => {
            Some(format!("export {variable}=... (or use --replay FILE to answer from a recording)"))
        }
        rlm_llm::Error::ReplayMiss { .. } => Some(
            "the recording has no answer for this exact request; record it with --record FILE".to_owned(),
        ),
        rlm_llm::Error::AmbiguousModel { .. } | rlm_llm::Error::UnknownProvider { .. } => Some(
            "known prefixes: openai, anthropic, openrouter, ollama, vllm, llamacpp, lmstudio, or a [llm.providers.NAME] table".to_owned(),
        ),
        _ => None,
    };
    let cli = if err.is_input_error() {
        CliError::input(err)
    } else {
        CliError::failed(err)
    };
    match hint {
        Some(hint) => cli.with_hint(hint).into(),
        None => cli.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        }
    }

    fn config(text: &str) -> LlmConfig {
        toml::from_str::<toml::Table>(text)
            .unwrap()
            .get("llm")
            .cloned()
            .unwrap()
            .try_into()
            .unwrap()
    }

    #[test]
    fn flags_beat_env_beat_config() {
        let file = "[llm]\nmodel = 'file:m'\nsubcall_model = 'file:s'\nmax_retries = 9\n";
        let lookup = env_of(&[("RLM_MODEL", "env:m"), ("RLM_MAX_RETRIES", "2")]);
        let args = LlmArgs::default();
        let merged = LlmSettings::resolve(&args, config(file), &lookup).unwrap();
        assert_eq!(merged.model.as_deref(), Some("env:m"));
        assert_eq!(merged.subcall_model.as_deref(), Some("file:s"));
        assert_eq!(merged.retry.max_retries, 2);

        let args = LlmArgs {
            model: Some("flag:m".into()),
            max_retries: Some(0),
            ..LlmArgs::default()
        };
        let merged = LlmSettings::resolve(&args, config(file), &lookup).unwrap();
        assert_eq!(merged.model.as_deref(), Some("flag:m"));
        assert_eq!(merged.retry.max_retries, 0);

        let merged =
            LlmSettings::resolve(&LlmArgs::default(), LlmConfig::default(), &env_of(&[])).unwrap();
        assert_eq!(merged.model, None);
        assert!(merged.require_model().is_err());
    }

    #[test]
    fn providers_merge_and_keys_stay_hidden() {
        let file = "[llm]\nmax_concurrency = 3\n[llm.providers.openai]\nbase_url = 'http://x/v1/'\n\
                    [llm.providers.local]\nkind = 'anthropic'\nbase_url = 'http://y'\napi_key = 'file-secret'\nmax_concurrency = 7\n";
        let lookup = env_of(&[("OPENAI_API_KEY", "env-secret")]);
        let merged = LlmSettings::resolve(&LlmArgs::default(), config(file), &lookup).unwrap();
        let openai = merged
            .providers
            .iter()
            .find(|p| p.name == "openai")
            .unwrap();
        assert_eq!(openai.base_url, "http://x/v1");
        assert_eq!(openai.api_key.as_ref().unwrap().expose(), "env-secret");
        assert_eq!(openai.max_concurrency, 3);
        let local = merged.providers.iter().find(|p| p.name == "local").unwrap();
        assert_eq!(local.kind, ProviderKind::Anthropic);
        assert_eq!(local.max_concurrency, 7);
        let shown = format!("{merged:?}");
        assert!(
            !shown.contains("env-secret") && !shown.contains("file-secret"),
            "{shown}"
        );

        let flag = LlmArgs {
            max_concurrency: Some(2),
            ..LlmArgs::default()
        };
        let merged = LlmSettings::resolve(&flag, config(file), &lookup).unwrap();
        assert!(merged.providers.iter().all(|p| p.max_concurrency == 2));
    }

    #[test]
    fn env_module_lists_every_provider_variable() {
        for builtin in rlm_llm::BUILTIN_PROVIDERS {
            for name in [builtin.api_key_env, builtin.base_url_env]
                .into_iter()
                .flatten()
            {
                assert!(
                    PROVIDER_VARIABLES.contains(&name),
                    "{name} missing from env.rs"
                );
            }
        }
    }

    #[test]
    fn bad_values_are_input_errors() {
        let lookup = env_of(&[("RLM_TIMEOUT", "soon")]);
        let err =
            LlmSettings::resolve(&LlmArgs::default(), LlmConfig::default(), &lookup).unwrap_err();
        assert!(err.to_string().contains("RLM_TIMEOUT"), "{err}");
        let file = "[llm.providers.new]\nbase_url = 'http://z'\n";
        let table: toml::Table = toml::from_str(file).unwrap();
        let section: LlmConfig = table["llm"].clone().try_into().unwrap();
        assert!(LlmSettings::resolve(&LlmArgs::default(), section, &env_of(&[])).is_err());
    }
}
