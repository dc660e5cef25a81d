//! Every setting rlm reads from the environment or the files, described once: its key, flag,
//! environment variable, default and what an unset value means.
//!
//! The commands resolve these descriptors (`LLM_TIMEOUT.resolve(args.timeout, sources)`), the
//! files are checked against them (an unknown key or a value of the wrong type is warned
//! about), and `rlm config show` prints each one in the order below ([`ALL`]). A new setting is
//! one entry here, read by its command's `*Settings::resolve` and documented on its page.

use std::path::PathBuf;

use rlm_llm::{ModelCapabilities, Price, RetryPolicy};
use rlm_query::Threshold;

use super::env;
use super::providers::ProviderFileConfig;
use super::setting::{Described, Map, Setting};
use super::size::SizeValue;

/// Declares each descriptor as a `pub const` and lists them all in [`ALL`], so that one
/// cannot be declared and left out of the checks and `rlm config show`.
macro_rules! catalog {
    ($($(#[$attribute:meta])* $name:ident: $kind:ty = $descriptor:expr;)*) => {
        $($(#[$attribute])* pub const $name: $kind = $descriptor;)*

        /// Every descriptor, in the order `rlm config show` prints them.
        pub const ALL: &[&dyn Described] = &[$(&$name),*];
    };
}

catalog! {
    // [llm]: every command that calls a model (`settings/llm.rs`).
    /// The root model.
    LLM_MODEL: Setting<String> = Setting::optional("llm.model")
        .flag("--model")
        .variable(env::RLM_MODEL);
    /// The sub-call model; unset, the root model.
    LLM_SUBCALL_MODEL: Setting<String> = Setting::optional("llm.subcall_model")
        .flag("--subcall-model")
        .variable(env::RLM_SUBCALL_MODEL)
        .note("the same as llm.model");
    /// Requests in flight per provider; flag and variable win over a provider's own
    /// `max_concurrency`, which wins over the file key.
    LLM_MAX_CONCURRENCY: Setting<u32> = Setting::optional("llm.max_concurrency")
        .flag("--max-concurrency")
        .variable(env::RLM_MAX_CONCURRENCY)
        .note("per provider: see llm.providers.*.max_concurrency");
    /// Seconds a request may take until its answer starts.
    LLM_TIMEOUT: Setting<f64, f64> = Setting::new("llm.timeout_secs", |_| {
        rlm_llm::DEFAULT_REQUEST_TIMEOUT.as_secs_f64()
    })
    .flag("--request-timeout")
    .variable(env::RLM_TIMEOUT);
    /// Longest silence inside a streamed answer, in seconds.
    LLM_IDLE_TIMEOUT: Setting<f64, f64> = Setting::new("llm.idle_timeout_secs", |_| {
        rlm_llm::DEFAULT_IDLE_TIMEOUT.as_secs_f64()
    })
    .flag("--idle-timeout")
    .variable(env::RLM_IDLE_TIMEOUT);
    /// Whether answers are streamed.
    LLM_STREAM: Setting<bool, bool> = Setting::new("llm.stream", |_| true)
        .variable(env::RLM_STREAM);
    /// Retries per request.
    LLM_MAX_RETRIES: Setting<u32, u32> =
        Setting::new("llm.max_retries", |_| RetryPolicy::default().max_retries)
            .flag("--max-retries")
            .variable(env::RLM_MAX_RETRIES);
    /// The output-token cap of one answer; unset, `LlmSettings::output_cap` decides by model.
    LLM_MAX_OUTPUT_TOKENS: Setting<u32> = Setting::optional("llm.max_output_tokens")
        .flag("--max-output-tokens")
        .variable(env::RLM_MAX_OUTPUT_TOKENS)
        .note("8192, 32768 for reasoning models");
    /// The provider of model names without `provider:`.
    LLM_DEFAULT_PROVIDER: Setting<String> = Setting::optional("llm.default_provider");
    /// Whether requests ask for prompt caching; the flag can only turn it off.
    LLM_PROMPT_CACHE: Setting<bool, bool> = Setting::new("llm.prompt_cache", |_| true)
        .flag("--no-prompt-cache")
        .variable(env::RLM_PROMPT_CACHE);
    /// Record every model call to this file.
    LLM_RECORD: Setting<PathBuf> = Setting::optional("llm.record")
        .flag("--record")
        .variable(env::RLM_RECORD);
    /// Answer model calls from this recording.
    LLM_REPLAY: Setting<PathBuf> = Setting::optional("llm.replay")
        .flag("--replay")
        .variable(env::RLM_REPLAY);

    // [run] and [sandbox]: `rlm run` and `rlm bench-quality` (`settings/run.rs`).
    /// Other models code may name; the flag replaces the list.
    RUN_ALLOW_MODELS: Setting<Vec<String>, Vec<String>> =
        Setting::new("run.allow_models", |_| Vec::new()).flag("--allow-model");
    /// Interpreter seconds one code block may take.
    RUN_BLOCK_TIMEOUT: Setting<f64, f64> = Setting::new("run.block_timeout", |_| {
        super::run::DEFAULT_BLOCK_TIMEOUT.as_secs_f64()
    })
    .flag("--block-timeout");
    /// The largest prompt model code may send in one sub-call.
    RUN_MAX_PROMPT_SIZE: Setting<SizeValue, SizeValue> = Setting::new("run.max_prompt_size", |_| {
        SizeValue::from(rlm_engine::RunLimits::default().max_prompt_bytes)
    })
    .flag("--max-prompt-size");
    /// The largest answer a run may give.
    RUN_MAX_ANSWER_SIZE: Setting<SizeValue, SizeValue> = Setting::new("run.max_answer_size", |_| {
        SizeValue::from(rlm_engine::RunLimits::default().max_answer_bytes)
    })
    .flag("--max-answer-size");
    /// Run the sandbox where the kernel lacks Landlock or seccomp. The flag can only allow;
    /// the variable can also deny what a file allows.
    SANDBOX_ALLOW_REDUCED_PROTECTION: Setting<bool, bool> =
        Setting::new("sandbox.allow_reduced_protection", |_| false)
            .flag("--allow-reduced-protection")
            .variable(env::RLM_ALLOW_REDUCED_PROTECTION);

    // [query]: `rlm query` (`settings/query.rs`). A value set here wins over the plan.
    QUERY_BATCH_SIZE: Setting<usize> = Setting::optional("query.batch_size")
        .flag("--batch-size")
        .note("the plan decides");
    QUERY_TOP_K: Setting<usize> = Setting::optional("query.top_k")
        .flag("--top")
        .note("the plan decides");
    /// Extractor calls in flight.
    QUERY_MAX_CONCURRENCY: Setting<usize, usize> =
        Setting::new("query.max_concurrency", |_| rlm_query::DEFAULT_MAX_CONCURRENCY)
            .flag("--max-concurrency")
            .variable(env::RLM_MAX_CONCURRENCY);
    QUERY_THRESHOLD: Setting<Threshold, Threshold> =
        Setting::new("query.threshold", |_| Threshold::default()).flag("--threshold");
    QUERY_MAX_TOOL_ROUNDS: Setting<i64, i64> = Setting::new("query.max_tool_rounds", |_| {
        i64::from(rlm_query::DEFAULT_MAX_TOOL_ROUNDS)
    })
    .flag("--max-tool-rounds");

    // [prompt] and [prompt.rlm]: `rlm prompt` (`settings/prompt.rs`).
    PROMPT_SYSTEM_BUDGET: Setting<i64, i64> =
        Setting::new("prompt.system_prompt_budget", |_| tokens(budgets().system))
            .flag("--system-budget");
    PROMPT_AGENT_BUDGET: Setting<i64, i64> =
        Setting::new("prompt.agent_prompt_budget", |_| tokens(budgets().agent))
            .flag("--agent-budget");
    PROMPT_HISTORY_BUDGET: Setting<i64, i64> =
        Setting::new("prompt.chat_history_budget", |_| tokens(budgets().history))
            .flag("--history-budget");
    PROMPT_CONTEXT_BUDGET: Setting<i64, i64> =
        Setting::new("prompt.other_context_budget", |_| tokens(budgets().other))
            .flag("--context-budget");
    PROMPT_TOTAL_BUDGET: Setting<i64> = Setting::optional("prompt.total_budget")
        .flag("--budget-total")
        .note("the sum of the four budgets");
    /// A tokenizer's name (`rlm_context::tokens::Tokenizer`).
    PROMPT_TOKENIZER: Setting<String, String> = Setting::new("prompt.tokenizer", |_| {
        rlm_context::tokens::Tokenizer::default().to_string()
    })
    .flag("--tokenizer");
    /// The summarizing model.
    PROMPT_MODEL: Setting<String> = Setting::optional("prompt.rlm.model")
        .flag("--model")
        .variable(env::RLM_PROMPT_MODEL)
        .note("none: a long history keeps its most recent messages");
    PROMPT_THRESHOLD: Setting<i64, i64> = Setting::new("prompt.rlm.threshold_percentage", |_| {
        i64::from(history().threshold_percentage)
    })
    .flag("--threshold");
    PROMPT_RECENT_SHARE: Setting<i64, i64> =
        Setting::new("prompt.rlm.recent_share_percentage", |_| {
            i64::from(history().recent_share_percentage)
        })
        .flag("--recent-share");
    /// The summarizing model's window; left at the default, a local server's report of its
    /// own replaces it.
    PROMPT_WINDOW_TOKENS: Setting<i64, i64> =
        Setting::new("prompt.rlm.window_tokens", |_| tokens(history().window_tokens))
            .flag("--window-tokens");

    // [embed]: the store commands that embed (`settings/embedding.rs`, `settings/store.rs`).
    EMBED_MODEL: Setting<String> = Setting::optional("embed.model")
        .flag("--model")
        .variable(env::RLM_EMBED_MODEL)
        .note("the only imported model, if there is one");
    EMBED_MODELS_DIR: Setting<PathBuf> = Setting::optional("embed.models_dir")
        .variable(env::RLM_MODELS_DIR)
        .default(|sources| sources.dirs().models());
    EMBED_RUNTIME: Setting<PathBuf> = Setting::optional("embed.runtime")
        .variable(env::RLM_ONNXRUNTIME)
        .note("the library recorded when the model was imported");
    /// MiB of new text up to which `rlm load` embeds unasked.
    EMBED_LOAD_AUTO_LIMIT_MB: Setting<u64, u64> = Setting::new("embed.load_auto_limit_mb", |_| {
        super::store::DEFAULT_EMBED_AUTO_LIMIT_MB
    });

    // Not file settings, but part of what a command runs with.
    /// The store directory of the store commands, `rlm query` and `rlm run --store`.
    STORE: Setting<PathBuf, PathBuf> =
        Setting::new("store.url", |_| PathBuf::from(super::store::DEFAULT_STORE_DIR))
            .flag("--store")
            .variable(env::RLM_STORE);
    /// The ctx directory of `rlm ctx`.
    CTX_DIR: Setting<PathBuf, PathBuf> =
        Setting::new("ctx_dir", |_| crate::requests::defaults::ctx_dir())
            .flag("--dir")
            .variable(env::RLM_CTX_DIR)
            .environment_only();
    /// The configuration file read instead of `./rlm.toml` and the user file.
    CONFIG: Setting<PathBuf> = Setting::optional("config")
        .flag("--config")
        .variable(env::RLM_CONFIG)
        .note("./rlm.toml, then the user file")
        .environment_only();
    /// The directory of prompt overrides.
    PROMPT_DIR: Setting<PathBuf> = Setting::optional("prompt_dir")
        .variable(env::RLM_PROMPT_DIR)
        .default(|sources| sources.dirs().prompts())
        .environment_only();

    // Tables of named entries.
    LLM_PROVIDERS: Map<ProviderFileConfig> =
        Map::new("llm.providers").shown_by(super::shown::providers);
    LLM_PRICES: Map<Price> = Map::new("llm.prices");
    LLM_CAPABILITIES: Map<ModelCapabilities> = Map::new("llm.capabilities");
    RUN_CONTEXT_WINDOWS: Map<u64> = Map::new("run.context_windows");
    RUN_TOOLS: Map<crate::command_tools::CommandToolConfig> = Map::new("run.tools");
    PROMPT_CONTEXT_PRIORITY: Map<i64> = Map::new("prompt.context_priority");
}

/// The descriptor of a dotted key.
pub fn find(key: &str) -> Option<&'static dyn Described> {
    ALL.iter().copied().find(|described| described.key() == key)
}

/// The sections of the files, as the catalog's keys name them.
pub fn sections() -> Vec<&'static str> {
    let mut sections: Vec<&str> = ALL
        .iter()
        .filter(|described| described.in_files())
        .filter_map(|described| described.key().split('.').next())
        .collect();
    sections.sort_unstable();
    sections.dedup();
    sections
}

fn budgets() -> rlm_assemble::prompt::PromptBudgets {
    rlm_assemble::prompt::PromptBudgets::default()
}

fn history() -> rlm_assemble::prompt::HistoryOptions {
    rlm_assemble::prompt::HistoryOptions::default()
}

fn tokens(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::requests::LlmOptions;
    use crate::settings::shown;
    use crate::settings::tests::Layout;
    use crate::settings::{LlmSettings, Origin, Value};

    /// Every page under `docs/`, as one text.
    fn docs() -> String {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
        let mut text = String::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|extension| extension == "md") {
                text.push_str(&std::fs::read_to_string(path).unwrap());
            }
        }
        text
    }

    /// A setting's variable, its key in the files and its flag are each written on a page of
    /// `docs/`, so that a descriptor added here without documentation fails.
    #[test]
    fn every_variable_key_and_flag_is_documented() {
        let docs = docs();
        for described in ALL {
            let key = described.key();
            if let Some(variable) = described.variable() {
                assert!(
                    docs.contains(variable),
                    "{variable} ({key}) is not in docs/"
                );
            }
            if let Some(flag) = described.flag() {
                assert!(docs.contains(flag), "{flag} ({key}) is not in docs/");
            }
            if described.in_files() {
                let (table, name) = key.rsplit_once('.').unwrap();
                let written = [
                    format!("`{name}`"),
                    format!("`{name} ="),
                    format!("[{table}] {name}"),
                    format!("[{key}"),
                ];
                let in_example = docs
                    .lines()
                    .any(|line| line.trim_start().starts_with(&format!("{name} =")));
                assert!(
                    in_example || written.iter().any(|form| docs.contains(form.as_str())),
                    "{key} is not in docs/"
                );
            }
        }
    }

    /// `rlm config show` lists each setting of the catalog once, and nothing else but the
    /// entries of its tables: a setting cannot be resolved by a command and missing from the
    /// listing, or listed from a table of its own.
    #[test]
    fn config_show_lists_the_catalog_and_only_it() {
        let layout = Layout::new(
            Some(
                "[llm.prices.m]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n\
                 [llm.capabilities.m]\nstop = false\n",
            ),
            Some(
                "[run.context_windows]\nm = 4096\n[prompt.context_priority]\nadrs = 3\n\
                 [run.tools.t]\ncommand = [\"true\"]\n",
            ),
        );
        let sources = layout.sources(&[]);
        let listed = shown::settings(&sources, sources.config().unwrap());
        let keys: Vec<&str> = listed.iter().map(|shown| shown.key.as_str()).collect();
        for described in ALL {
            let key = described.key();
            let count = keys
                .iter()
                .filter(|shown| **shown == key || shown.starts_with(&format!("{key}.")))
                .count();
            assert!(count >= 1, "{key} not shown: {keys:?}");
        }
        for key in &keys {
            let described = ALL.iter().any(|described| {
                *key == described.key() || key.starts_with(&format!("{}.", described.key()))
            });
            assert!(described, "{key} is shown but described nowhere");
            assert_eq!(
                keys.iter().filter(|other| *other == key).count(),
                1,
                "{key} shown twice"
            );
        }
        for entry in [
            "llm.prices.m.input_per_mtok",
            "run.context_windows.m",
            "prompt.context_priority.adrs",
            "llm.providers.openai.base_url",
        ] {
            assert!(keys.contains(&entry), "{entry} not shown: {keys:?}");
        }
    }

    /// One value set in a file, then in the environment, then by a flag: the value resolved
    /// and the value shown say which, and agree.
    #[test]
    fn a_value_reports_the_layer_that_set_it() {
        let layout = Layout::new(None, Some("[llm]\nmodel = 'file:m'\ntimeout_secs = 5\n"));
        let file = Origin::File {
            path: layout.path("project/rlm.toml"),
        };
        let sources = layout.sources(&[]);
        assert_eq!(
            LLM_MODEL.resolve(None, &sources).unwrap(),
            Value {
                value: Some("file:m".to_owned()),
                origin: file.clone()
            }
        );
        let shown = LLM_MODEL.shown(&sources, sources.config().unwrap());
        assert_eq!((shown.value, shown.origin), (Some("file:m".into()), file));

        let sources = layout.sources(&[("RLM_MODEL", "env:m"), ("RLM_TIMEOUT", "7")]);
        let env = Origin::Env {
            variable: "RLM_MODEL".into(),
        };
        assert_eq!(LLM_MODEL.resolve(None, &sources).unwrap().origin, env);
        let shown = LLM_MODEL.shown(&sources, sources.config().unwrap());
        assert_eq!((shown.value, shown.origin), (Some("env:m".into()), env));
        let timeout = LLM_TIMEOUT.resolve(None, &sources).unwrap();
        assert_eq!(timeout.value, 7.0);

        let flagged = LLM_MODEL.resolve(Some("flag:m".into()), &sources).unwrap();
        assert_eq!(
            flagged,
            Value {
                value: Some("flag:m".to_owned()),
                origin: Origin::Flag { flag: "--model" }
            }
        );
        // What the command runs with is what the descriptors resolved.
        let args = LlmOptions {
            model: Some("flag:m".into()),
            ..LlmOptions::default()
        };
        let settings = LlmSettings::resolve(&args, &sources).unwrap();
        assert_eq!(settings.model.as_deref(), Some("flag:m"));
        assert_eq!(settings.request_timeout, std::time::Duration::from_secs(7));

        let defaults = layout.sources(&[]);
        let retries = LLM_MAX_RETRIES.resolve(None, &defaults).unwrap();
        assert_eq!(retries.origin, Origin::Default);
        assert_eq!(
            LlmSettings::resolve(&LlmOptions::default(), &defaults)
                .unwrap()
                .retry
                .max_retries,
            retries.value
        );
    }

    /// A value a command would refuse is shown as written, with why, and does not hide the
    /// rest of the listing.
    #[test]
    fn a_refused_value_is_shown_as_written_with_why() {
        let layout = Layout::new(None, None);
        let sources = layout.sources(&[("RLM_TIMEOUT", "soon")]);
        assert!(LLM_TIMEOUT.resolve(None, &sources).is_err());
        let shown = LLM_TIMEOUT.shown(&sources, sources.config().unwrap());
        assert_eq!(shown.value, Some("soon".into()));
        assert_eq!(
            shown.origin,
            Origin::Env {
                variable: "RLM_TIMEOUT".into()
            }
        );
        let note = shown.note.unwrap();
        assert!(
            note.contains("RLM_TIMEOUT=soon is not a valid number"),
            "{note}"
        );
    }
}
