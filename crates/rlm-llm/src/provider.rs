//! Providers: which wire format, where, with which key, and how model strings map to them.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::ApiKey;
use crate::error::{Error, Result};
use crate::limiter::{ADAPTIVE_MAX_CONCURRENCY, ConcurrencyMode};

/// Default number of requests in flight per provider.
pub const DEFAULT_MAX_CONCURRENCY: usize = 16;

/// Whether `base_url` points at this machine: `localhost` (or a `*.localhost` name),
/// `127.0.0.0/8` or `[::1]`.
pub fn is_loopback_url(base_url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(base_url) else {
        return false;
    };
    let Some(host) = url.host_str() else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(address) = bare.parse::<std::net::IpAddr>() {
        return address.is_loopback();
    }
    let name = bare.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost")
}

/// The concurrency a provider at `base_url` gets unless configured: on this machine
/// [`ConcurrencyMode::Auto`] up to [`ADAPTIVE_MAX_CONCURRENCY`] (what the server reports, else
/// adapted to its answers: `limiter.rs`), else [`DEFAULT_MAX_CONCURRENCY`] fixed.
pub fn default_concurrency(base_url: &str) -> (usize, ConcurrencyMode) {
    if is_loopback_url(base_url) {
        (ADAPTIVE_MAX_CONCURRENCY, ConcurrencyMode::Auto)
    } else {
        (DEFAULT_MAX_CONCURRENCY, ConcurrencyMode::Fixed)
    }
}

/// The wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// `POST {base_url}/chat/completions` (OpenAI, Ollama, vLLM, llama.cpp, OpenRouter, LM Studio).
    #[serde(rename = "openai")]
    OpenAi,
    /// `POST {base_url}/v1/messages` (Anthropic Messages API).
    Anthropic,
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
        })
    }
}

/// Everything needed to reach one provider.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// The prefix used in model strings (`openai`, `anthropic`, `ollama`, ...).
    pub name: String,
    pub kind: ProviderKind,
    /// For OpenAI-compatible servers this includes the `/v1` part; for Anthropic it does not.
    pub base_url: String,
    pub api_key: Option<ApiKey>,
    /// The variable a user should set when the key is missing; `None` when no key is needed.
    pub api_key_env: Option<String>,
    /// Requests in flight at once, for every caller in the process sharing this client (with
    /// [`ConcurrencyMode::Auto`], the most the limit may reach).
    pub max_concurrency: usize,
    /// Whether `max_concurrency` is the limit or a ceiling for what the server reports or
    /// the client learns.
    pub concurrency_mode: ConcurrencyMode,
}

impl ProviderConfig {
    /// A provider with no key requirement and the default concurrency for its URL
    /// ([`default_concurrency`]).
    pub fn new(name: impl Into<String>, kind: ProviderKind, base_url: impl Into<String>) -> Self {
        let base_url = base_url.into().trim_end_matches('/').to_owned();
        let (max_concurrency, concurrency_mode) = default_concurrency(&base_url);
        Self {
            name: name.into(),
            kind,
            max_concurrency,
            concurrency_mode,
            base_url,
            api_key: None,
            api_key_env: None,
        }
    }

    /// Puts back the default concurrency for the current base URL (after it changed).
    #[must_use]
    pub fn default_concurrency(mut self) -> Self {
        (self.max_concurrency, self.concurrency_mode) = default_concurrency(&self.base_url);
        self
    }

    /// Sets the key.
    #[must_use]
    pub fn api_key(mut self, key: Option<ApiKey>) -> Self {
        self.api_key = key;
        self
    }

    /// Requires a key, naming the variable that supplies it in the missing-key error.
    #[must_use]
    pub fn api_key_env(mut self, variable: impl Into<String>) -> Self {
        self.api_key_env = Some(variable.into());
        self
    }

    /// Sets the concurrency limit (at least 1, at most [`crate::CONCURRENCY_CEILING`]),
    /// fixed: neither a server's report nor its answers change it.
    #[must_use]
    pub fn max_concurrency(mut self, max: usize) -> Self {
        self.max_concurrency = max.clamp(1, crate::CONCURRENCY_CEILING);
        self.concurrency_mode = ConcurrencyMode::Fixed;
        self
    }

    /// The key, or an error naming the variable to set when the provider needs one.
    pub(crate) fn require_key(&self) -> Result<Option<&ApiKey>> {
        match (&self.api_key, &self.api_key_env) {
            (Some(key), _) => Ok(Some(key)),
            (None, Some(variable)) => Err(Error::MissingApiKey {
                provider: self.name.clone(),
                variable: variable.clone(),
            }),
            (None, None) => Ok(None),
        }
    }
}

/// A provider the crate knows without configuration.
#[derive(Debug, Clone, Copy)]
pub struct BuiltinProvider {
    pub name: &'static str,
    pub kind: ProviderKind,
    pub base_url: &'static str,
    /// Environment variable holding the key, if the service needs one.
    pub api_key_env: Option<&'static str>,
    /// Environment variable overriding the base URL, if conventional.
    pub base_url_env: Option<&'static str>,
}

/// Providers available by prefix out of the box. Local servers need no key.
pub const BUILTIN_PROVIDERS: &[BuiltinProvider] = &[
    BuiltinProvider {
        name: "openai",
        kind: ProviderKind::OpenAi,
        base_url: "https://api.openai.com/v1",
        api_key_env: Some("OPENAI_API_KEY"),
        base_url_env: Some("OPENAI_BASE_URL"),
    },
    BuiltinProvider {
        name: "anthropic",
        kind: ProviderKind::Anthropic,
        base_url: "https://api.anthropic.com",
        api_key_env: Some("ANTHROPIC_API_KEY"),
        base_url_env: Some("ANTHROPIC_BASE_URL"),
    },
    BuiltinProvider {
        name: "openrouter",
        kind: ProviderKind::OpenAi,
        base_url: "https://openrouter.ai/api/v1",
        api_key_env: Some("OPENROUTER_API_KEY"),
        base_url_env: None,
    },
    BuiltinProvider {
        name: "ollama",
        kind: ProviderKind::OpenAi,
        base_url: "http://localhost:11434/v1",
        api_key_env: None,
        base_url_env: Some("OLLAMA_BASE_URL"),
    },
    BuiltinProvider {
        name: "vllm",
        kind: ProviderKind::OpenAi,
        base_url: "http://localhost:8000/v1",
        api_key_env: None,
        base_url_env: Some("VLLM_BASE_URL"),
    },
    BuiltinProvider {
        name: "llamacpp",
        kind: ProviderKind::OpenAi,
        base_url: "http://localhost:8080/v1",
        api_key_env: None,
        base_url_env: Some("LLAMACPP_BASE_URL"),
    },
    BuiltinProvider {
        name: "lmstudio",
        kind: ProviderKind::OpenAi,
        base_url: "http://localhost:1234/v1",
        api_key_env: None,
        base_url_env: Some("LMSTUDIO_BASE_URL"),
    },
];

impl BuiltinProvider {
    /// The provider configured from an environment lookup (`lookup("OPENAI_API_KEY")`, ...).
    /// Empty values count as unset.
    pub fn configure(&self, lookup: &dyn Fn(&str) -> Option<String>) -> ProviderConfig {
        let get = |name: &str| lookup(name).filter(|value| !value.trim().is_empty());
        let base_url = self
            .base_url_env
            .and_then(get)
            .unwrap_or_else(|| self.base_url.to_owned());
        let mut config = ProviderConfig::new(self.name, self.kind, base_url);
        if let Some(variable) = self.api_key_env {
            config = config
                .api_key(get(variable).map(ApiKey::new))
                .api_key_env(variable);
        }
        config
    }
}

/// A model string split into provider and model name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModelRef {
    pub provider: String,
    pub model: String,
}

impl ModelRef {
    /// Splits `provider:model`. Only the first colon separates, so `ollama:qwen2.5:7b` works.
    /// A bare name is mapped by its family (`claude-*` → anthropic, `gpt-*`/`o1`/`o3`/`o4` →
    /// openai), else to `default_provider` when one is given.
    pub fn parse(text: &str, known: &[&str], default_provider: Option<&str>) -> Result<Self> {
        if let Some((prefix, rest)) = text.split_once(':')
            && known.contains(&prefix)
            && !rest.is_empty()
        {
            return Ok(Self {
                provider: prefix.to_owned(),
                model: rest.to_owned(),
            });
        }
        if let Some((prefix, _)) = text.split_once(':')
            && !prefix.is_empty()
            && !prefix.contains(['.', '/'])
            && default_provider.is_none()
        {
            return Err(Error::UnknownProvider {
                provider: prefix.to_owned(),
                model: text.to_owned(),
                known: known.join(", "),
            });
        }
        let family = if text.starts_with("claude") {
            Some("anthropic")
        } else if ["gpt-", "o1", "o3", "o4", "chatgpt-"]
            .iter()
            .any(|p| text.starts_with(p))
        {
            Some("openai")
        } else {
            None
        };
        let provider = default_provider
            .or(family.filter(|name| known.contains(name)))
            .ok_or_else(|| Error::AmbiguousModel {
                model: text.to_owned(),
            })?;
        Ok(Self {
            provider: provider.to_owned(),
            model: text.to_owned(),
        })
    }
}

impl fmt::Display for ModelRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.provider, self.model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KNOWN: &[&str] = &["openai", "anthropic", "ollama"];

    #[test]
    fn prefix_selects_provider_and_keeps_later_colons() {
        let parsed = ModelRef::parse("ollama:qwen2.5:7b", KNOWN, None).unwrap();
        assert_eq!(parsed.provider, "ollama");
        assert_eq!(parsed.model, "qwen2.5:7b");
    }

    #[test]
    fn bare_names_map_by_family_or_default() {
        assert_eq!(
            ModelRef::parse("claude-sonnet-4-5", KNOWN, None)
                .unwrap()
                .provider,
            "anthropic"
        );
        assert_eq!(
            ModelRef::parse("gpt-4o", KNOWN, None).unwrap().provider,
            "openai"
        );
        assert_eq!(
            ModelRef::parse("root", KNOWN, Some("fake"))
                .unwrap()
                .provider,
            "fake"
        );
        assert!(matches!(
            ModelRef::parse("mystery", KNOWN, None),
            Err(Error::AmbiguousModel { .. })
        ));
        assert!(matches!(
            ModelRef::parse("nope:model", KNOWN, None),
            Err(Error::UnknownProvider { .. })
        ));
    }

    #[test]
    fn servers_on_this_machine_default_to_an_automatic_limit() {
        for url in [
            "http://localhost:11434/v1",
            "http://LOCALHOST:8080/v1",
            "http://127.0.0.1:8080/v1",
            "http://127.3.2.1/v1",
            "http://[::1]:8000/v1",
            "http://model.localhost/v1",
        ] {
            assert!(is_loopback_url(url), "{url}");
            let config = ProviderConfig::new("p", ProviderKind::OpenAi, url);
            assert_eq!(config.concurrency_mode, ConcurrencyMode::Auto, "{url}");
            assert_eq!(config.max_concurrency, ADAPTIVE_MAX_CONCURRENCY, "{url}");
            let pinned = config.max_concurrency(3);
            assert_eq!(pinned.concurrency_mode, ConcurrencyMode::Fixed, "{url}");
        }
        for url in [
            "https://api.openai.com/v1",
            "http://10.0.0.5:11434/v1",
            "http://localhost.example.com/v1",
            "not a url",
        ] {
            assert!(!is_loopback_url(url), "{url}");
        }
        let lookup =
            |name: &str| (name == "OPENAI_BASE_URL").then(|| "http://127.0.0.1:8080/v1".to_owned());
        let openai = BUILTIN_PROVIDERS[0].configure(&lookup);
        assert_eq!(openai.concurrency_mode, ConcurrencyMode::Auto);
        let remote = BUILTIN_PROVIDERS[0].configure(&|_| None);
        assert_eq!(
            (remote.max_concurrency, remote.concurrency_mode),
            (DEFAULT_MAX_CONCURRENCY, ConcurrencyMode::Fixed)
        );
        let ollama = BUILTIN_PROVIDERS
            .iter()
            .find(|b| b.name == "ollama")
            .unwrap();
        assert_eq!(
            ollama.configure(&|_| None).concurrency_mode,
            ConcurrencyMode::Auto
        );
    }

    #[test]
    fn every_local_server_takes_its_base_url_from_its_variable() {
        for (name, variable) in [
            ("ollama", "OLLAMA_BASE_URL"),
            ("vllm", "VLLM_BASE_URL"),
            ("llamacpp", "LLAMACPP_BASE_URL"),
            ("lmstudio", "LMSTUDIO_BASE_URL"),
        ] {
            let builtin = BUILTIN_PROVIDERS.iter().find(|b| b.name == name).unwrap();
            let lookup =
                |asked: &str| (asked == variable).then(|| "http://10.0.0.7:9000/v1".to_owned());
            let config = builtin.configure(&lookup);
            assert_eq!(config.base_url, "http://10.0.0.7:9000/v1", "{name}");
            assert_eq!(
                (config.max_concurrency, config.concurrency_mode),
                (DEFAULT_MAX_CONCURRENCY, ConcurrencyMode::Fixed),
                "{name}: not loopback"
            );
            assert_eq!(builtin.configure(&|_| None).base_url, builtin.base_url);
        }
    }

    #[test]
    fn missing_key_names_the_variable_and_key_is_redacted() {
        let lookup = |_: &str| None;
        let config = BUILTIN_PROVIDERS[0].configure(&lookup);
        let err = config.require_key().unwrap_err().to_string();
        assert!(err.contains("OPENAI_API_KEY"), "{err}");
        let with_key = config.api_key(Some(ApiKey::new("sk-secret-123")));
        assert!(!format!("{with_key:?}").contains("sk-secret-123"));
        assert_eq!(
            with_key.require_key().unwrap().unwrap().expose(),
            "sk-secret-123"
        );
    }
}
