//! What in a configuration file is not in force, found by walking it against the catalog:
//! unknown sections, unknown keys and values of the wrong type, each named with its table.
//!
//! Each file is checked on its own when the files are read, so a problem is warned about
//! against the file that has it; a command that reads a section with a problem refuses it
//! ([`super::Sources::checked_config`]).

use std::path::PathBuf;

use super::catalog;

/// One thing in a file that is not in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub path: PathBuf,
    /// The section it is in (`llm` for `[llm.providers]` too); `None` outside every section.
    pub section: Option<String>,
    /// What is wrong, naming the table and key: `[llm] max_retries: invalid type: …`.
    pub message: String,
}

/// The problems found in one file.
#[derive(Debug, Default)]
pub struct Warnings {
    found: Vec<(Option<String>, String)>,
}

impl Warnings {
    /// A problem in `table` (`llm`, `prompt.rlm`, `llm.providers`).
    pub fn push(&mut self, table: &str, message: String) {
        let section = table.split('.').next().map(str::to_owned);
        self.found.push((section, message));
    }
}

/// Every problem in one file's table.
pub fn check_file(path: &std::path::Path, table: &toml::Table) -> Vec<Problem> {
    let mut warnings = Warnings::default();
    let sections = catalog::sections().join(", ");
    for (name, value) in table {
        if !catalog::sections().contains(&name.as_str()) {
            let known = catalog::sections();
            let message = if value.is_table() {
                match crate::text::closest(name, &known) {
                    Some(near) => {
                        format!("unknown section [{name}], ignored; did you mean [{near}]?")
                    }
                    None => format!("unknown section [{name}], ignored (sections: {sections})"),
                }
            } else {
                format!(
                    "unknown top-level key `{name}`, ignored (settings go in a section: {sections})"
                )
            };
            warnings.found.push((None, message));
            continue;
        }
        match value.as_table() {
            Some(inner) => check_table(name, inner, &mut warnings),
            None => warnings.push(
                name,
                format!("[{name}]: a section, not a {}", value.type_str()),
            ),
        }
    }
    warnings
        .found
        .into_iter()
        .map(|(section, message)| Problem {
            path: path.to_path_buf(),
            section,
            message,
        })
        .collect()
}

/// The keys of `[prefix]`: each one a setting, a table of entries, or a table holding more
/// settings (`[prompt.rlm]`).
fn check_table(prefix: &str, table: &toml::Table, warnings: &mut Warnings) {
    for (name, value) in table {
        let dotted = format!("{prefix}.{name}");
        if let Some(described) = catalog::find(&dotted).filter(|d| d.in_files()) {
            described.check(value, warnings);
        } else if let Some(inner) = value.as_table()
            && !known_names(&dotted).is_empty()
        {
            check_table(&dotted, inner, warnings);
        } else {
            let known = known_names(prefix);
            let message = match crate::text::closest(name, &known) {
                Some(near) => format!("[{prefix}]: unknown key `{name}`; did you mean `{near}`?"),
                None => format!(
                    "[{prefix}]: unknown key `{name}` (known: {})",
                    known.join(", ")
                ),
            };
            warnings.push(prefix, message);
        }
    }
}

/// The names the catalog knows directly under `prefix` (`llm` → `model`, …, `providers`).
fn known_names(prefix: &str) -> Vec<&'static str> {
    let mut names: Vec<&str> = Vec::new();
    let under = catalog::ALL
        .iter()
        .filter(|described| described.in_files())
        .filter_map(|described| {
            let rest = described.key().strip_prefix(prefix)?.strip_prefix('.')?;
            rest.split('.').next()
        });
    for name in under {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(text: &str) -> Vec<String> {
        let table: toml::Table = toml::from_str(text).unwrap();
        check_file(std::path::Path::new("rlm.toml"), &table)
            .into_iter()
            .map(|problem| problem.message)
            .collect()
    }

    #[test]
    fn unknown_keys_and_wrong_types_are_named_with_their_table() {
        assert_eq!(
            problems(
                "top = 1\n[quer]\n[llm]\nmax_retries = 'three'\nmodle = 'x'\n\
                 [prompt.rlm]\nwindow = 3\n[llm.providers.local]\nkindd = 'openai'\n\
                 [llm.prices]\nm = 3\n"
            ),
            [
                "[llm] max_retries: invalid type: string \"three\", expected u32",
                "[llm]: unknown key `modle`; did you mean `model`?",
                "[llm.prices] m: invalid type: integer `3`, expected struct Price",
                "[llm.providers] local: unknown field `kindd`, expected one of `kind`, `base_url`, \
                 `api_key`, `api_key_env`, `max_concurrency`",
                "[prompt.rlm]: unknown key `window` (known: model, threshold_percentage, \
                 recent_share_percentage, window_tokens)",
                "unknown section [quer], ignored; did you mean [query]?",
                "unknown top-level key `top`, ignored (settings go in a section: embed, llm, prompt, query, run, sandbox, store)",
            ]
        );
    }

    /// Every setting's default, written in a file, is accepted: the check reads each key with
    /// the type its command resolves.
    #[test]
    fn every_default_written_in_a_file_is_accepted() {
        let sources = crate::settings::tests::Layout::new(None, None).sources(&[]);
        let mut table = toml::Table::new();
        let mut written = 0;
        for described in catalog::ALL.iter().filter(|d| d.in_files()) {
            let Some(value) = described.example(&sources) else {
                continue;
            };
            let (section, name) = described.key().split_once('.').unwrap();
            let mut dotted = toml::Table::new();
            dotted.insert(name.to_owned(), value);
            let mut layer = toml::Table::new();
            layer.insert(section.to_owned(), toml::Value::Table(unflatten(dotted)));
            crate::settings::files::merge_tables(&mut table, layer);
            written += 1;
        }
        assert!(written > 20, "{written} defaults written");
        assert_eq!(
            check_file(std::path::Path::new("rlm.toml"), &table),
            [],
            "{table}"
        );
    }

    /// `{"rlm.model": v}` as `{"rlm": {"model": v}}`.
    fn unflatten(table: toml::Table) -> toml::Table {
        let mut out = toml::Table::new();
        for (key, value) in table {
            match key.split_once('.') {
                Some((first, rest)) => {
                    let mut inner = toml::Table::new();
                    inner.insert(rest.to_owned(), value);
                    let mut layer = toml::Table::new();
                    layer.insert(first.to_owned(), toml::Value::Table(unflatten(inner)));
                    crate::settings::files::merge_tables(&mut out, layer);
                }
                None => {
                    out.insert(key, value);
                }
            }
        }
        out
    }

    /// Configuration files of every known key with values of any type, named tables with any
    /// fields, and lines that are not TOML.
    #[cfg(feature = "clap")]
    fn any_configuration_file() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;

        let keys: Vec<&'static str> = catalog::ALL
            .iter()
            .filter(|described| described.in_files())
            .map(|described| described.key())
            .collect();
        let text = proptest::sample::select(vec![
            "",
            "x",
            "openai:gpt-4o",
            "ollama:",
            "1KB",
            "99999999999999GB",
            "-1",
            "0",
            "http://[::1",
            "http://127.0.0.1:1/v1",
            "../../etc",
            "openai",
            "anthropic",
            "low",
            "medium",
            "bm25",
            "\u{202e}",
            "auto",
        ]);
        let value = prop_oneof![
            any::<i64>().prop_map(|n| n.to_string()),
            prop_oneof![
                Just("1e300"),
                Just("-0.5"),
                Just("nan"),
                Just("-inf"),
                Just("0.0")
            ]
            .prop_map(str::to_owned),
            any::<bool>().prop_map(|b| b.to_string()),
            text.clone().prop_map(|text| format!("{text:?}")),
            proptest::collection::vec(text.clone(), 0..3).prop_map(|items| format!("{items:?}")),
            Just("{ kind = \"openai\", base_url = \"x\", max_concurrency = -3 }".to_owned()),
        ];
        let entry = (0..keys.len(), value.clone()).prop_map(move |(key, value)| {
            let (section, name) = keys[key].rsplit_once('.').unwrap_or(("llm", keys[key]));
            format!("[{section}]\n{name} = {value}\n")
        });
        let named = (
            proptest::sample::select(vec![
                "llm.providers",
                "llm.prices",
                "run.context_windows",
                "llm.capabilities",
                "prompt.context_priority",
            ]),
            proptest::sample::select(vec!["local", "m", "openai", "a.b"]),
            proptest::sample::select(vec![
                "kind",
                "base_url",
                "api_key",
                "api_key_env",
                "max_concurrency",
                "input_per_mtok",
                "output_per_mtok",
                "cache_read_per_mtok",
                "tools",
                "stop",
            ]),
            value,
        )
            .prop_map(|(table, name, field, value)| {
                format!("[{table}.\"{name}\"]\n{field} = {value}\n")
            });
        let raw = proptest::sample::select(vec!["[llm", "= 1\n", "[[llm]]\n", "llm = 3\n"])
            .prop_map(str::to_owned);
        proptest::collection::vec(prop_oneof![4 => entry, 3 => named, 1 => raw], 0..8)
            .prop_map(|parts| parts.concat())
    }

    /// Any configuration file — every known key with a value of any type, named tables of
    /// providers, prices and windows with any fields, lines that are not TOML — is read,
    /// checked, shown and resolved for every command with an answer or an error, never a
    /// panic.
    #[cfg(feature = "clap")]
    #[test]
    fn any_configuration_file_resolves_or_is_refused() {
        use proptest::test_runner::{Config, TestRunner};

        use crate::requests::{
            ChatRequest, LoadRequest, QueryRequest, RunRequest, SearchRequest, ViewRequest, parse,
        };
        use crate::settings::tests::Layout;

        let file = any_configuration_file();

        let run: RunRequest = parse(&["q", "--context", "x"]);
        let query: QueryRequest = parse(&["q"]);
        let chat: ChatRequest = parse(&["hi"]);
        let load: LoadRequest = parse(&["."]);
        let search: SearchRequest = parse(&["q"]);
        let view: ViewRequest = parse(&["log.jsonl"]);
        let mut runner = TestRunner::new(Config {
            cases: 128,
            failure_persistence: None,
            ..Config::default()
        });
        runner
            .run(&file, |file| {
                let layout = Layout::new(None, Some(&file));
                let sources = layout.sources(&[]);
                let Ok(config) = sources.config() else {
                    return Ok(());
                };
                let _ = crate::settings::shown::settings(&sources, config);
                let _ = crate::settings::shown::providers(&sources, config, "llm.providers");
                for section in ["llm", "run", "query", "prompt", "embed", "sandbox"] {
                    let _ = sources.checked_config(section);
                }
                let _ = crate::settings::EmbeddingSettings::resolve(None, &sources);
                let _ = crate::settings::RunSettings::resolve(&run, &sources);
                let _ = crate::settings::QuerySettings::resolve(&query, &sources);
                if let Ok(chat) = crate::settings::ChatSettings::resolve(&chat, &sources) {
                    let _ = chat.llm.build_client();
                }
                let _ = crate::settings::LoadSettings::resolve(&load, &sources);
                let _ = crate::settings::SearchSettings::resolve(&search, &sources);
                let _ = crate::settings::ViewSettings::resolve(&view, &sources);
                Ok(())
            })
            .unwrap();
    }
}
