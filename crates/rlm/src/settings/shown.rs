//! What `rlm config show` prints: every setting this version reads from the environment and
//! the files, its effective value and where that value came from (an environment variable,
//! a configuration file, or the default). Flags are per command and not shown here.
//!
//! API keys are never shown: a key setting says only whether a key is set and where from.
//! The *name* of a key variable (`api_key_env`) is not a secret and is shown.

use std::path::{Path, PathBuf};

use rlm_llm::{BUILTIN_PROVIDERS, RetryPolicy};
use serde::Serialize;

use super::env;
use super::run::DEFAULT_BLOCK_TIMEOUT;
use super::store::DEFAULT_STORE_DIR;
use super::{LoadedConfig, Sources};

/// Where an effective value came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum Origin {
    /// An environment variable.
    Env { variable: String },
    /// A configuration file (the highest-precedence one that sets it).
    File { path: PathBuf },
    /// Nothing set it.
    Default,
}

/// One setting as shown.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Shown {
    /// Its name in the files, dotted: `llm.model`, `llm.providers.openai.base_url`.
    pub key: String,
    /// The effective value; `None` when unset.
    pub value: Option<toml::Value>,
    #[serde(flatten)]
    pub origin: Origin,
    /// What an unset value means, when that is not plain "none".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<&'static str>,
}

/// A setting read from one file key, one environment variable (optional) and a default.
struct Plain {
    key: &'static str,
    variable: Option<&'static str>,
    default: Option<toml::Value>,
    note: Option<&'static str>,
}

impl Plain {
    fn new(key: &'static str, variable: Option<&'static str>) -> Self {
        Self {
            key,
            variable,
            default: None,
            note: None,
        }
    }

    fn default(mut self, value: impl Into<toml::Value>) -> Self {
        self.default = Some(value.into());
        self
    }

    fn note(mut self, note: &'static str) -> Self {
        self.note = Some(note);
        self
    }
}

/// Every setting with its effective value and origin, in a stable order.
pub fn settings(sources: &Sources, config: &LoadedConfig) -> Vec<Shown> {
    let seconds = |duration: std::time::Duration| duration.as_secs_f64();
    let plain = [
        Plain::new("llm.model", Some(env::RLM_MODEL)),
        Plain::new("llm.subcall_model", Some(env::RLM_SUBCALL_MODEL)).note("the same as llm.model"),
        Plain::new("llm.max_concurrency", Some(env::RLM_MAX_CONCURRENCY))
            .note("per provider: see llm.providers.*.max_concurrency"),
        Plain::new("llm.timeout_secs", Some(env::RLM_TIMEOUT))
            .default(seconds(rlm_llm::DEFAULT_REQUEST_TIMEOUT)),
        Plain::new("llm.idle_timeout_secs", Some(env::RLM_IDLE_TIMEOUT))
            .default(seconds(rlm_llm::DEFAULT_IDLE_TIMEOUT)),
        Plain::new("llm.stream", Some(env::RLM_STREAM)).default(true),
        Plain::new("llm.max_retries", Some(env::RLM_MAX_RETRIES))
            .default(i64::from(RetryPolicy::default().max_retries)),
        Plain::new("llm.default_provider", None),
        Plain::new("llm.prompt_cache", Some(env::RLM_PROMPT_CACHE)).default(true),
        Plain::new("llm.record", Some(env::RLM_RECORD)),
        Plain::new("llm.replay", Some(env::RLM_REPLAY)),
        Plain::new("run.allow_models", None).default(toml::Value::Array(Vec::new())),
        Plain::new("run.block_timeout", None).default(seconds(DEFAULT_BLOCK_TIMEOUT)),
        Plain::new(
            "sandbox.allow_reduced_protection",
            Some(env::RLM_ALLOW_REDUCED_PROTECTION),
        )
        .default(false),
        Plain::new("embed.model", Some(env::RLM_EMBED_MODEL))
            .note("the only imported model, if there is one"),
        Plain {
            default: path_value(sources.dirs().models().as_deref()),
            ..Plain::new("embed.models_dir", Some(env::RLM_MODELS_DIR))
        },
        Plain::new("embed.runtime", Some(env::RLM_ONNXRUNTIME))
            .note("the library recorded when the model was imported"),
    ];
    let mut shown: Vec<Shown> = plain
        .into_iter()
        .map(|setting| resolve(sources, config, setting))
        .collect();
    // Not file settings, but part of what a command runs with.
    shown.push(environment_only(
        sources,
        "store",
        env::RLM_STORE,
        DEFAULT_STORE_DIR,
    ));
    shown.push(environment_only(
        sources,
        "prompt_dir",
        env::RLM_PROMPT_DIR,
        &path_value(sources.dirs().prompts().as_deref())
            .and_then(|value| value.as_str().map(str::to_owned))
            .unwrap_or_default(),
    ));
    for name in provider_names(config) {
        shown.extend(provider(sources, config, &name));
    }
    let listed: std::collections::HashSet<String> =
        shown.iter().map(|setting| setting.key.clone()).collect();
    shown.extend(
        set_in_files(config)
            .into_iter()
            .filter(|setting| !listed.contains(&setting.key)),
    );
    shown
}

/// Every other value the files set, as dotted keys with the file that set it (`query.top_k`,
/// `prompt.rlm.threshold_percentage`, `llm.prices.m.input`): all of it is in force for the
/// commands that read it. Providers are listed by [`provider`]; secrets show as `<set>`.
fn set_in_files(config: &LoadedConfig) -> Vec<Shown> {
    fn leaves(prefix: &str, table: &toml::Table, out: &mut Vec<String>) {
        for (key, value) in table {
            let dotted = format!("{prefix}{key}");
            match value {
                toml::Value::Table(inner) => leaves(&format!("{dotted}."), inner, out),
                _ => out.push(dotted),
            }
        }
    }
    let mut keys = Vec::new();
    leaves("", &config.table, &mut keys);
    keys.into_iter()
        .filter(|key| !key.starts_with("llm.providers."))
        .filter(|key| {
            let section = key.split('.').next().unwrap_or_default();
            super::SECTIONS.contains(&section)
        })
        .filter_map(|key| {
            let (value, path) = config.lookup(&key)?;
            let last = key.rsplit('.').next().unwrap_or(&key);
            let value = if super::files::is_secret_key(last) {
                toml::Value::String("<set>".to_owned())
            } else {
                value.clone()
            };
            Some(Shown {
                key,
                value: Some(value),
                origin: Origin::File {
                    path: path.to_path_buf(),
                },
                note: None,
            })
        })
        .collect()
}

fn path_value(path: Option<&Path>) -> Option<toml::Value> {
    path.map(|path| toml::Value::String(path.display().to_string()))
}

/// Environment > files > default for one plain setting.
fn resolve(sources: &Sources, config: &LoadedConfig, setting: Plain) -> Shown {
    let from_env = setting
        .variable
        .and_then(|variable| Some((variable, sources.env().var(variable)?)));
    let (value, origin) = match from_env {
        Some((variable, value)) => (
            Some(toml::Value::String(value)),
            Origin::Env {
                variable: variable.to_owned(),
            },
        ),
        None => match config.lookup(setting.key) {
            Some((value, path)) => (
                Some(value.clone()),
                Origin::File {
                    path: path.to_path_buf(),
                },
            ),
            None => (setting.default, Origin::Default),
        },
    };
    Shown {
        key: setting.key.to_owned(),
        note: value.is_none().then_some(setting.note).flatten(),
        value,
        origin,
    }
}

fn environment_only(sources: &Sources, key: &str, variable: &str, default: &str) -> Shown {
    let (value, origin) = match sources.env().var(variable) {
        Some(value) => (
            value,
            Origin::Env {
                variable: variable.to_owned(),
            },
        ),
        None => (default.to_owned(), Origin::Default),
    };
    Shown {
        key: key.to_owned(),
        value: (!value.is_empty()).then_some(toml::Value::String(value)),
        origin,
        note: None,
    }
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
    let automatic = concurrency.0 == Some(toml::Value::String(AUTOMATIC.to_owned()));
    let mut concurrency = shown("max_concurrency", concurrency);
    if automatic {
        concurrency.note = Some(AUTOMATIC_NOTE);
    }
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

/// A provider's concurrency as `LlmSettings::resolve` sets it: the environment variable over
/// the provider's own file key over `llm.max_concurrency` over the default for its base URL
/// ([`AUTOMATIC`] on this machine).
fn max_concurrency(
    sources: &Sources,
    config: &LoadedConfig,
    base_url: &Option<toml::Value>,
    own: Option<(toml::Value, Origin)>,
) -> (Option<toml::Value>, Origin) {
    if let Some(value) = sources.env().var(env::RLM_MAX_CONCURRENCY) {
        let origin = Origin::Env {
            variable: env::RLM_MAX_CONCURRENCY.to_owned(),
        };
        return (Some(toml::Value::String(value)), origin);
    }
    let shared = || {
        config.lookup("llm.max_concurrency").map(|(value, path)| {
            let origin = Origin::File {
                path: path.to_path_buf(),
            };
            (value.clone(), origin)
        })
    };
    if let Some((value, origin)) = own.or_else(shared) {
        return (Some(value), origin);
    }
    let url = base_url
        .as_ref()
        .and_then(toml::Value::as_str)
        .unwrap_or("");
    let value = match rlm_llm::default_concurrency(url) {
        (_, rlm_llm::ConcurrencyMode::Auto) => toml::Value::String(AUTOMATIC.to_owned()),
        (fixed, _) => toml::Value::Integer(i64::try_from(fixed).unwrap_or(i64::MAX)),
    };
    (Some(value), Origin::Default)
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
        assert_eq!(timeout.value, Some("42".into()));
        assert_eq!(
            timeout.origin,
            Origin::Env {
                variable: "RLM_TIMEOUT".into()
            }
        );
        assert_eq!(find(&shown, "run.block_timeout").value, Some(5.into()));
        let sandbox = find(&shown, "sandbox.allow_reduced_protection");
        assert_eq!(
            (&sandbox.value, &sandbox.origin),
            (&Some(false.into()), &Origin::Default)
        );
        let subcall = find(&shown, "llm.subcall_model");
        assert_eq!(
            (&subcall.value, subcall.note),
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
        assert!(lmstudio.note.unwrap().contains("total_slots"));
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
        assert_eq!(ollama.value, Some("2".into()));
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
