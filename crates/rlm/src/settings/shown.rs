//! What `rlm config show` prints: every setting of the catalog (`catalog.rs`), resolved by its
//! descriptor as a command resolves it, with where its value came from (an environment
//! variable, a configuration file, or the default); the providers as `LlmSettings` merges them;
//! the entries the files set in the other tables. Flags are per command and not shown here.
//!
//! API keys are never shown: a key setting says only whether a key is set and where from.
//! The *name* of a key variable (`api_key_env`) is not a secret and is shown.

use rlm_llm::BUILTIN_PROVIDERS;
use serde::Serialize;

use super::setting::Origin;
use super::{LoadedConfig, Sources, catalog};

/// One setting as shown.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Shown {
    /// Its name in the files, dotted: `llm.model`, `llm.providers.openai.base_url`.
    pub key: String,
    /// The effective value; `None` when unset.
    pub value: Option<toml::Value>,
    #[serde(flatten)]
    pub origin: Origin,
    /// What an unset value means, when that is not plain "none"; how an automatic value is
    /// decided; why a value is refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Every setting in the catalog with its effective value and origin, in the catalog's order;
/// the tables of named entries list what the files set in them.
pub fn settings(sources: &Sources, config: &LoadedConfig) -> Vec<Shown> {
    catalog::ALL
        .iter()
        .flat_map(|described| described.show(sources, config))
        .collect()
}

/// `[llm.providers]` as `LlmSettings::resolve` merges it: every built-in provider, then those
/// only the files define, each field with where it came from.
pub fn providers(sources: &Sources, config: &LoadedConfig, _: &'static str) -> Vec<Shown> {
    provider_names(config)
        .iter()
        .flat_map(|name| provider(sources, config, name))
        .collect()
}

/// The built-in providers, then those only the files define.
fn provider_names(config: &LoadedConfig) -> Vec<String> {
    let mut names: Vec<String> = BUILTIN_PROVIDERS
        .iter()
        .map(|builtin| builtin.name.to_owned())
        .collect();
    if let Some(toml::Value::Table(table)) = config.lookup("llm.providers").map(|(value, _)| value)
    {
        for name in table.keys() {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
    }
    names
}

/// One provider's kind, base URL, key variable and whether a key is set, as
/// `LlmSettings::resolve` merges them: a file's `base_url` over the URL variable over the
/// built-in URL; the key from `api_key_env` (file, else built-in), else a file's `api_key`.
fn provider(sources: &Sources, config: &LoadedConfig, name: &str) -> Vec<Shown> {
    let builtin = BUILTIN_PROVIDERS.iter().find(|b| b.name == name);
    let key = |field: &str| format!("llm.providers.{name}.{field}");
    let file = |field: &str| {
        config.lookup(&key(field)).map(|(value, path)| {
            (
                value.clone(),
                Origin::File {
                    path: path.to_path_buf(),
                },
            )
        })
    };
    let env_value = |variable: &str| {
        sources
            .env()
            .var(variable)
            .filter(|value| !value.trim().is_empty())
    };
    let default = |value: Option<String>| (value.map(toml::Value::String), Origin::Default);
    let shown = |field: &str, (value, origin): (Option<toml::Value>, Origin)| Shown {
        key: key(field),
        value,
        origin,
        note: None,
    };

    let kind = file("kind")
        .map(|(v, o)| (Some(v), o))
        .unwrap_or_else(|| default(builtin.map(|b| b.kind.to_string())));
    let base_url = file("base_url")
        .map(|(v, o)| (Some(v), o))
        .or_else(|| {
            let variable = builtin?.base_url_env?;
            let value = env_value(variable)?;
            Some((
                Some(toml::Value::String(value)),
                Origin::Env {
                    variable: variable.to_owned(),
                },
            ))
        })
        .unwrap_or_else(|| default(builtin.map(|b| b.base_url.to_owned())));
    let key_variable = file("api_key_env")
        .map(|(v, o)| (Some(v), o))
        .unwrap_or_else(|| default(builtin.and_then(|b| b.api_key_env).map(str::to_owned)));
    let variable_name = key_variable
        .0
        .as_ref()
        .and_then(toml::Value::as_str)
        .map(str::to_owned);
    // Only whether a key is set, and where: never its value.
    let set = || Some(toml::Value::String("<set>".to_owned()));
    let api_key = match variable_name
        .as_deref()
        .and_then(|v| Some((v, env_value(v)?)))
    {
        Some((variable, _)) => (
            set(),
            Origin::Env {
                variable: variable.to_owned(),
            },
        ),
        None => match file("api_key") {
            Some((_, origin)) => (set(), origin),
            None => (None, Origin::Default),
        },
    };
    let concurrency = max_concurrency(sources, config, &base_url.0, file("max_concurrency"));
    let concurrency = Shown {
        key: key("max_concurrency"),
        ..concurrency
    };
    vec![
        shown("kind", kind),
        shown("base_url", base_url),
        shown("api_key_env", key_variable),
        shown("api_key", api_key),
        concurrency,
    ]
}

/// The concurrency shown for a server on this machine that nobody configured.
const AUTOMATIC: &str = "auto";

/// Why: what the limit will be ([`rlm_llm::ConcurrencyMode::Auto`]).
const AUTOMATIC_NOTE: &str =
    "on this machine: the server's /props total_slots, else adaptive 1-16 (halved on 429/503)";

/// A provider's concurrency as `LlmSettings::resolve` sets it: the flag's variable over the
/// provider's own file key over `llm.max_concurrency` over the default for its base URL
/// ([`AUTOMATIC`] on this machine).
fn max_concurrency(
    sources: &Sources,
    config: &LoadedConfig,
    base_url: &Option<toml::Value>,
    own: Option<(toml::Value, Origin)>,
) -> Shown {
    let shared = catalog::LLM_MAX_CONCURRENCY.shown(sources, config);
    match (&shared.origin, own) {
        (Origin::Env { .. }, _) => return shared,
        (_, Some((value, origin))) => {
            return Shown {
                value: Some(value),
                origin,
                note: None,
                ..shared
            };
        }
        (Origin::File { .. }, None) => return shared,
        _ => {}
    }
    let url = base_url
        .as_ref()
        .and_then(toml::Value::as_str)
        .unwrap_or("");
    let (value, note) = match rlm_llm::default_concurrency(url) {
        (_, rlm_llm::ConcurrencyMode::Auto) => (
            toml::Value::String(AUTOMATIC.to_owned()),
            Some(AUTOMATIC_NOTE.to_owned()),
        ),
        (fixed, _) => (
            toml::Value::Integer(i64::try_from(fixed).unwrap_or(i64::MAX)),
            None,
        ),
    };
    Shown {
        value: Some(value),
        origin: Origin::Default,
        note,
        ..shared
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::tests::Layout;

    fn find<'a>(shown: &'a [Shown], key: &str) -> &'a Shown {
        shown
            .iter()
            .find(|s| s.key == key)
            .unwrap_or_else(|| panic!("{key} not shown"))
    }

    #[test]
    fn each_value_says_whether_env_a_file_or_the_default_set_it() {
        let layout = Layout::new(
            Some("[llm]\nmodel = 'user:m'\nmax_retries = 1\n"),
            Some("[llm]\nmodel = 'project:m'\n[run]\nblock_timeout = 5\n"),
        );
        let sources = layout.sources(&[("RLM_TIMEOUT", "42")]);
        let shown = settings(&sources, sources.config().unwrap());
        let model = find(&shown, "llm.model");
        assert_eq!(model.value, Some("project:m".into()));
        assert_eq!(
            model.origin,
            Origin::File {
                path: layout.path("project/rlm.toml")
            }
        );
        let retries = find(&shown, "llm.max_retries");
        assert_eq!(retries.value, Some(1.into()));
        assert_eq!(
            retries.origin,
            Origin::File {
                path: layout.path("xdg/rlm/config.toml")
            }
        );
        let timeout = find(&shown, "llm.timeout_secs");
        assert_eq!(timeout.value, Some(42.0.into()), "as a command reads it");
        assert_eq!(
            timeout.origin,
            Origin::Env {
                variable: "RLM_TIMEOUT".into()
            }
        );
        assert_eq!(find(&shown, "run.block_timeout").value, Some(5.0.into()));
        let sandbox = find(&shown, "sandbox.allow_reduced_protection");
        assert_eq!(
            (&sandbox.value, &sandbox.origin),
            (&Some(false.into()), &Origin::Default)
        );
        let subcall = find(&shown, "llm.subcall_model");
        assert_eq!(
            (&subcall.value, subcall.note.as_deref()),
            (&None, Some("the same as llm.model"))
        );
    }

    /// Each provider's concurrency is shown as resolved: automatic, with why, for a base URL
    /// on this machine, sixteen for a hosted API, a provider's own key over `llm.max_concurrency`,
    /// the environment over both.
    #[test]
    fn each_provider_shows_its_concurrency_and_where_it_came_from() {
        let layout = Layout::new(
            None,
            Some(
                "[llm.providers.local]\nkind = 'openai'\nbase_url = 'http://127.0.0.1:8080/v1'\n\
                 [llm.providers.ollama]\nmax_concurrency = 4\n",
            ),
        );
        let sources = layout.sources(&[]);
        let shown = settings(&sources, sources.config().unwrap());
        let value = |key: &str| find(&shown, key).value.clone();
        assert_eq!(
            value("llm.providers.local.max_concurrency"),
            Some("auto".into())
        );
        let lmstudio = find(&shown, "llm.providers.lmstudio.max_concurrency");
        assert_eq!(lmstudio.value, Some("auto".into()));
        assert!(lmstudio.note.as_deref().unwrap().contains("total_slots"));
        assert_eq!(
            value("llm.providers.openai.max_concurrency"),
            Some(16.into())
        );
        let ollama = find(&shown, "llm.providers.ollama.max_concurrency");
        assert_eq!(ollama.value, Some(4.into()));
        assert!(matches!(ollama.origin, Origin::File { .. }), "{ollama:?}");
        assert_eq!(ollama.note, None);
        assert_eq!(
            find(&shown, "llm.providers.openai.max_concurrency").origin,
            Origin::Default
        );
        assert_eq!(value("llm.idle_timeout_secs"), Some(60.0.into()));
        assert_eq!(value("llm.stream"), Some(true.into()));

        let sources = layout.sources(&[("RLM_MAX_CONCURRENCY", "2")]);
        let shown = settings(&sources, sources.config().unwrap());
        let ollama = find(&shown, "llm.providers.ollama.max_concurrency");
        assert_eq!(ollama.value, Some(2.into()));
        assert!(matches!(ollama.origin, Origin::Env { .. }), "{ollama:?}");
    }

    #[test]
    fn keys_are_never_shown_but_their_variable_names_are() {
        let layout = Layout::new(
            None,
            Some(
                "[llm.providers.local]\nkind = 'openai'\nbase_url = 'http://h/v1'\napi_key_env = 'LOCAL_KEY'\n\
                 [llm.providers.other]\nkind = 'anthropic'\nbase_url = 'http://o'\napi_key = 'file-secret'\n",
            ),
        );
        let sources = layout.sources(&[
            ("OPENAI_API_KEY", "env-secret"),
            ("LOCAL_KEY", "local-secret"),
        ]);
        let shown = settings(&sources, sources.config().unwrap());
        let text = format!("{shown:?}");
        for secret in ["env-secret", "local-secret", "file-secret"] {
            assert!(!text.contains(secret), "{secret} shown: {text}");
        }
        let openai = find(&shown, "llm.providers.openai.api_key");
        assert_eq!(openai.value, Some("<set>".into()));
        assert_eq!(
            openai.origin,
            Origin::Env {
                variable: "OPENAI_API_KEY".into()
            }
        );
        assert_eq!(
            find(&shown, "llm.providers.local.api_key_env").value,
            Some("LOCAL_KEY".into())
        );
        assert_eq!(
            find(&shown, "llm.providers.local.api_key").value,
            Some("<set>".into())
        );
        let other = find(&shown, "llm.providers.other.api_key");
        assert!(matches!(other.origin, Origin::File { .. }), "{other:?}");
        assert_eq!(find(&shown, "llm.providers.anthropic.api_key").value, None);
        assert_eq!(
            find(&shown, "llm.providers.anthropic.api_key_env").value,
            Some("ANTHROPIC_API_KEY".into())
        );
    }
}
