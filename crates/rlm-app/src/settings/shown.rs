//! What `rlm config show` prints: every setting of the catalog (`catalog.rs`), resolved by its
//! descriptor as a command resolves it, with where its value came from (an environment
//! variable, a configuration file, or the default); the providers as `LlmSettings` merges them;
//! the entries the files set in the other tables. Flags are per command and not shown here.
//!
//! API keys are never shown: a key setting says only whether a key is set and where from.
//! The *name* of a key variable (`api_key_env`) is not a secret and is shown.

use rlm_llm::BUILTIN_PROVIDERS;
use serde::Serialize;

use super::providers::MergedProvider;
use super::{LoadedConfig, Origin, Sources, Value, catalog};

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

/// `[llm.providers]` as `LlmSettings::resolve` merges it (`providers::merge_all`): every
/// built-in provider, then those only the files define, each field with where it came from. A
/// provider the files describe wrongly is one line saying why.
pub fn providers(sources: &Sources, config: &LoadedConfig, key: &'static str) -> Vec<Shown> {
    // A refused value is shown on its own line (llm.max_concurrency); here it sets nothing.
    let concurrency = catalog::LLM_MAX_CONCURRENCY
        .peek(sources, config)
        .unwrap_or(Value {
            value: None,
            origin: Origin::Default,
        });
    let files = catalog::LLM_PROVIDERS.entries(config);
    let mut merged = super::providers::merge_all(sources.env(), config, files, &concurrency);
    // Built-in providers first, in their own order, then the others.
    merged.sort_by_key(|(name, _)| {
        BUILTIN_PROVIDERS
            .iter()
            .position(|builtin| builtin.name == name)
            .unwrap_or(BUILTIN_PROVIDERS.len())
    });
    merged
        .into_iter()
        .flat_map(|(name, provider)| match provider {
            Ok(provider) => provider_lines(&format!("{key}.{name}"), provider),
            Err(err) => vec![Shown {
                key: format!("{key}.{name}"),
                value: None,
                origin: config.lookup(&format!("{key}.{name}")).map_or(
                    Origin::Default,
                    |(_, path)| Origin::File {
                        path: path.to_path_buf(),
                    },
                ),
                note: Some(format!("refused: {err}")),
            }],
        })
        .collect()
}

/// One provider's kind, base URL, key variable, whether a key is set (never the key), and
/// concurrency.
fn provider_lines(prefix: &str, provider: MergedProvider) -> Vec<Shown> {
    let config = provider.config;
    let line = |field: &str, value: Option<toml::Value>, origin: Origin| Shown {
        key: format!("{prefix}.{field}"),
        value,
        origin,
        note: None,
    };
    let text = |text: String| Some(toml::Value::String(text));
    let automatic = config.concurrency_mode == rlm_llm::ConcurrencyMode::Auto;
    let concurrency = if automatic {
        toml::Value::String(AUTOMATIC.to_owned())
    } else {
        toml::Value::Integer(i64::try_from(config.max_concurrency).unwrap_or(i64::MAX))
    };
    vec![
        line("kind", text(config.kind.to_string()), provider.kind),
        line("base_url", text(config.base_url), provider.base_url),
        line(
            "api_key_env",
            config.api_key_env.and_then(text),
            provider.api_key_env,
        ),
        line(
            "api_key",
            config.api_key.and(text("<set>".to_owned())),
            provider.api_key,
        ),
        Shown {
            note: automatic.then(|| AUTOMATIC_NOTE.to_owned()),
            ..line(
                "max_concurrency",
                Some(concurrency),
                provider.max_concurrency,
            )
        },
    ]
}

/// The concurrency shown for a server on this machine that nobody configured.
const AUTOMATIC: &str = "auto";

/// Why: what the limit will be ([`rlm_llm::ConcurrencyMode::Auto`]).
const AUTOMATIC_NOTE: &str =
    "on this machine: the server's /props total_slots, else adaptive 1-16 (halved on 429/503)";

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

    /// The providers are shown as the commands merge them: a base URL as it is used (no
    /// trailing slash), and a provider the commands refuse as one line saying why.
    #[test]
    fn providers_are_shown_as_merged_and_a_refused_one_says_why() {
        let layout = Layout::new(
            None,
            Some(
                "[llm.providers.local]\nkind = 'openai'\nbase_url = 'http://h/v1/'\n\
                 [llm.providers.broken]\nbase_url = 'http://b/v1'\n",
            ),
        );
        let sources = layout.sources(&[]);
        let shown = settings(&sources, sources.config().unwrap());
        let url = find(&shown, "llm.providers.local.base_url");
        assert_eq!(url.value, Some("http://h/v1".into()));
        let broken = find(&shown, "llm.providers.broken");
        assert_eq!(broken.value, None);
        assert!(matches!(broken.origin, Origin::File { .. }), "{broken:?}");
        let note = broken.note.as_deref().unwrap();
        assert!(
            note.starts_with("refused: [llm.providers.broken] needs `kind`"),
            "{note}"
        );
        let err = crate::settings::LlmSettings::resolve(
            &crate::requests::LlmOptions::default(),
            &sources,
        )
        .unwrap_err();
        assert!(note.ends_with(&err.to_string()), "{note} / {err}");
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
