//! The model providers as `LlmSettings` merges them, each field with where it came from: the
//! built-in ones configured from the environment, then `[llm.providers.NAME]` over them (or
//! added), then the concurrency (`--max-concurrency` or `RLM_MAX_CONCURRENCY` over a
//! provider's own `max_concurrency` over `[llm] max_concurrency` over the default for its base
//! URL). `rlm config show` prints the same merge ([`super::shown::providers`]).

use rlm_llm::{ApiKey, BUILTIN_PROVIDERS, ProviderConfig};
use serde::Deserialize;

use super::env::Environment;
use super::files::LoadedConfig;
use super::{Origin, Sources, Value, catalog};
use crate::error::{AppError, input_error};

/// One `[llm.providers.NAME]` table. Missing fields keep the built-in provider's values.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderFileConfig {
    pub kind: Option<rlm_llm::ProviderKind>,
    pub base_url: Option<String>,
    /// Redacted in `Debug` by `ApiKey`.
    pub api_key: Option<ApiKey>,
    pub api_key_env: Option<String>,
    pub max_concurrency: Option<u32>,
}

/// One provider and where each of its fields came from.
#[derive(Debug, Clone)]
pub struct MergedProvider {
    pub config: ProviderConfig,
    pub kind: Origin,
    pub base_url: Origin,
    pub api_key_env: Origin,
    /// `Default` when there is no key.
    pub api_key: Origin,
    pub max_concurrency: Origin,
}

/// Every provider for `LlmSettings`, in the order it registers them.
pub fn merge(
    sources: &Sources,
    concurrency: &Value<Option<u32>>,
) -> anyhow::Result<Vec<ProviderConfig>> {
    let files = catalog::LLM_PROVIDERS
        .read(sources)?
        .into_iter()
        .map(|(name, file)| (name, Ok(file)))
        .collect();
    merge_all(sources.env(), sources.config()?, files, concurrency)
        .into_iter()
        .map(|(_, merged)| merged.map(|merged| merged.config))
        .collect()
}

/// The built-in providers, then each one the files describe, over its built-in namesake (which
/// moves to the end) or added; a provider the files describe wrongly is an error in its place.
pub fn merge_all(
    env: &Environment,
    config: &LoadedConfig,
    files: Vec<(String, anyhow::Result<ProviderFileConfig>)>,
    concurrency: &Value<Option<u32>>,
) -> Vec<(String, anyhow::Result<MergedProvider>)> {
    let mut merged: Vec<(String, anyhow::Result<MergedProvider>)> = builtin(env)
        .into_iter()
        .map(|provider| (provider.config.name.clone(), Ok(provider)))
        .collect();
    for (name, file) in files {
        let base = merged
            .iter()
            .position(|(existing, _)| *existing == name)
            .and_then(|index| merged.remove(index).1.ok());
        let provider = file.and_then(|file| over(base, &name, file, config, env));
        merged.push((name, provider));
    }
    for provider in merged
        .iter_mut()
        .filter_map(|(_, merged)| merged.as_mut().ok())
    {
        apply_concurrency(provider, concurrency);
    }
    merged
}

fn builtin(env: &Environment) -> Vec<MergedProvider> {
    let from_env = |variable: Option<&str>| match variable {
        Some(variable) if env.var(variable).is_some() => Origin::Env {
            variable: variable.to_owned(),
        },
        _ => Origin::Default,
    };
    BUILTIN_PROVIDERS
        .iter()
        .map(|builtin| MergedProvider {
            config: builtin.configure(&|name| env.var(name)),
            kind: Origin::Default,
            base_url: from_env(builtin.base_url_env),
            api_key_env: Origin::Default,
            api_key: from_env(builtin.api_key_env),
            max_concurrency: Origin::Default,
        })
        .collect()
}

/// `file` over `base` (the built-in provider of that name), or a new provider.
fn over(
    base: Option<MergedProvider>,
    name: &str,
    file: ProviderFileConfig,
    config: &LoadedConfig,
    env: &Environment,
) -> anyhow::Result<MergedProvider> {
    let origin = |field: &str| {
        config
            .lookup(&format!("llm.providers.{name}.{field}"))
            .map_or(Origin::Default, |(_, path)| Origin::File {
                path: path.to_path_buf(),
            })
    };
    let mut merged = match base {
        Some(base) => base,
        None => {
            let kind = file.kind.ok_or_else(|| {
                AppError::input(anyhow::anyhow!(
                    "[llm.providers.{name}] needs `kind` (\"openai\" or \"anthropic\") and `base_url`"
                ))
            })?;
            let base_url = file
                .base_url
                .clone()
                .ok_or_else(|| input_error(format!("[llm.providers.{name}] needs `base_url`")))?;
            MergedProvider {
                config: ProviderConfig::new(name, kind, base_url),
                kind: origin("kind"),
                base_url: origin("base_url"),
                api_key_env: Origin::Default,
                api_key: Origin::Default,
                max_concurrency: Origin::Default,
            }
        }
    };
    if let Some(kind) = file.kind {
        merged.config.kind = kind;
        merged.kind = origin("kind");
    }
    if let Some(url) = file.base_url {
        merged.config.base_url = url.trim_end_matches('/').to_owned();
        // The default follows the URL the provider ends up with.
        merged.config = merged.config.default_concurrency();
        merged.base_url = origin("base_url");
    }
    if let Some(variable) = file.api_key_env {
        merged.config.api_key = env.var(&variable).map(ApiKey::new);
        merged.api_key = match merged.config.api_key {
            Some(_) => Origin::Env {
                variable: variable.clone(),
            },
            None => Origin::Default,
        };
        merged.config.api_key_env = Some(variable);
        merged.api_key_env = origin("api_key_env");
    }
    // An environment key (already in `merged`) wins over one written in a file.
    if merged.config.api_key.is_none() && file.api_key.is_some() {
        merged.config.api_key = file.api_key;
        merged.api_key = origin("api_key");
    }
    if let Some(max) = file.max_concurrency {
        merged.config = merged.config.max_concurrency(max as usize);
        merged.max_concurrency = origin("max_concurrency");
    }
    Ok(merged)
}

/// The flag or variable sets every provider's concurrency; `[llm] max_concurrency` those whose
/// own table does not set one.
fn apply_concurrency(provider: &mut MergedProvider, concurrency: &Value<Option<u32>>) {
    let Some(limit) = concurrency.value else {
        return;
    };
    let explicit = matches!(concurrency.origin, Origin::Flag { .. } | Origin::Env { .. });
    let pinned = matches!(provider.max_concurrency, Origin::File { .. });
    if explicit || !pinned {
        provider.config = provider.config.clone().max_concurrency(limit as usize);
        provider.max_concurrency = concurrency.origin.clone();
    }
}
