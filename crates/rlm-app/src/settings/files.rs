//! Configuration files and their layering.
//!
//! Precedence, highest first: flags > environment > project file (`rlm.toml` in the current
//! directory or an ancestor) > user file (`$XDG_CONFIG_HOME/rlm/config.toml`) > defaults.
//! Files are merged table by table here; each setting's descriptor (`catalog.rs`) then reads
//! its key from the merged table ([`LoadedConfig::lookup`]) below the flag and the environment.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::error::AppError;

/// The name of the project configuration file.
pub const PROJECT_FILE: &str = "rlm.toml";

/// The merged content of the configuration files that exist.
#[derive(Debug, Default)]
pub struct LoadedConfig {
    pub table: toml::Table,
    /// Files that were read, lowest precedence first.
    pub files: Vec<PathBuf>,
    /// Each file's own table, in the order of `files` (to tell where a value came from).
    layers: Vec<toml::Table>,
}

impl LoadedConfig {
    /// Loads the explicit file if given (it must exist), otherwise each of `candidates` that
    /// exists, lowest precedence first.
    pub fn load(explicit: Option<&Path>, candidates: &[PathBuf]) -> anyhow::Result<Self> {
        let mut loaded = Self::default();
        if let Some(path) = explicit {
            if !path.is_file() {
                return Err(AppError::input(anyhow::anyhow!(
                    "configuration file {} does not exist",
                    path.display()
                ))
                .into());
            }
            loaded.merge_file(path)?;
            return Ok(loaded);
        }
        for path in candidates {
            if path.is_file() {
                loaded.merge_file(path)?;
            }
        }
        Ok(loaded)
    }

    fn merge_file(&mut self, path: &Path) -> anyhow::Result<()> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("failed to read configuration file {}", path.display()))?;
        let table: toml::Table = toml::from_str(&text).map_err(|err| {
            // Only the message and position: toml's full error quotes the offending line,
            // which may be the one holding an API key.
            let position = err.span().map_or_else(String::new, |span| {
                let before = &text.as_bytes()[..span.start.min(text.len())];
                let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
                let column = before.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
                format!(" at line {line}, column {column}")
            });
            AppError::input(anyhow::anyhow!(
                "invalid TOML in {}{position}: {}",
                path.display(),
                err.message()
            ))
            .with_hint(format!("fix or remove {}", path.display()))
        })?;
        merge_tables(&mut self.table, table.clone());
        self.layers.push(table);
        self.files.push(path.to_path_buf());
        Ok(())
    }

    /// Each file read and its own table, lowest precedence first.
    pub fn layers(&self) -> impl Iterator<Item = (&Path, &toml::Table)> {
        self.files.iter().map(PathBuf::as_path).zip(&self.layers)
    }

    /// The merged value at a dotted key (`llm.providers.openai.base_url`) and the file of
    /// highest precedence that sets it.
    pub fn lookup(&self, dotted: &str) -> Option<(&toml::Value, &Path)> {
        let value = lookup(&self.table, dotted)?;
        let file = self
            .layers
            .iter()
            .zip(&self.files)
            .rev()
            .find(|(layer, _)| lookup(layer, dotted).is_some())
            .map(|(_, path)| path.as_path())?;
        Some((value, file))
    }

    /// [`LoadedConfig::lookup`] by the key's parts, for keys whose names hold dots
    /// (`[llm.prices."gpt-4.1"]`).
    pub fn lookup_parts(&self, parts: &[&str]) -> Option<(&toml::Value, &Path)> {
        let value = lookup_in(&self.table, parts)?;
        let file = self
            .layers
            .iter()
            .zip(&self.files)
            .rev()
            .find(|(layer, _)| lookup_in(layer, parts).is_some())
            .map(|(_, path)| path.as_path())?;
        Some((value, file))
    }

    pub fn describe_files(&self) -> String {
        if self.files.is_empty() {
            return "none".to_owned();
        }
        self.files
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn lookup_in<'a>(table: &'a toml::Table, parts: &[&str]) -> Option<&'a toml::Value> {
    let (first, rest) = parts.split_first()?;
    let value = table.get(*first)?;
    if rest.is_empty() {
        return Some(value);
    }
    lookup_in(value.as_table()?, rest)
}

fn lookup<'a>(table: &'a toml::Table, dotted: &str) -> Option<&'a toml::Value> {
    let (first, rest) = match dotted.split_once('.') {
        Some((first, rest)) => (first, Some(rest)),
        None => (dotted, None),
    };
    let value = table.get(first)?;
    match rest {
        None => Some(value),
        Some(rest) => lookup(value.as_table()?, rest),
    }
}

/// The nearest `rlm.toml` in `dir` or an ancestor.
pub fn find_project_file(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .map(|dir| dir.join(PROJECT_FILE))
        .find(|path| path.is_file())
}

/// Deep-merges `overlay` into `base`: tables merge key by key, other values replace.
pub fn merge_tables(base: &mut toml::Table, overlay: toml::Table) {
    for (key, value) in overlay {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(existing)), toml::Value::Table(incoming)) => {
                merge_tables(existing, incoming);
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// Replaces values of keys that look secret, so the table can be shown or logged.
pub fn redacted(table: &toml::Table) -> toml::Table {
    table
        .iter()
        .map(|(key, value)| {
            let value = match value {
                _ if is_secret_key(key) && !value.is_table() => {
                    toml::Value::String("<redacted>".to_owned())
                }
                other => redacted_value(other),
            };
            (key.clone(), value)
        })
        .collect()
}

fn redacted_value(value: &toml::Value) -> toml::Value {
    match value {
        toml::Value::Table(inner) => toml::Value::Table(redacted(inner)),
        toml::Value::Array(items) => toml::Value::Array(items.iter().map(redacted_value).collect()),
        other => other.clone(),
    }
}

/// Whether a key's value may be a secret: one of its words (`api_key`, `access-token`) is a
/// word for one, or it runs them together (`apikey`). A `*_env` key names an environment
/// variable (such as `api_key_env = "OPENAI_API_KEY"`): the name is not a secret, the
/// variable's value is. A word only containing one is no secret (`max_tokens_field`).
pub fn is_secret_key(key: &str) -> bool {
    const WORDS: [&str; 8] = [
        "key",
        "token",
        "secret",
        "password",
        "passwd",
        "authorization",
        "credential",
        "credentials",
    ];
    let key = key.to_ascii_lowercase();
    if key.ends_with("_env") {
        return false;
    }
    key.split(['_', '-', '.'])
        .any(|word| WORDS.contains(&word) || ["apikey", "accesstoken", "authtoken"].contains(&word))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_overrides_scalars_and_keeps_siblings() {
        let mut base: toml::Table = toml::from_str("[llm]\nmodel = 'a'\nretries = 3\n").unwrap();
        let overlay: toml::Table = toml::from_str("[llm]\nmodel = 'b'\n").unwrap();
        merge_tables(&mut base, overlay);
        assert_eq!(base["llm"]["model"].as_str(), Some("b"));
        assert_eq!(base["llm"]["retries"].as_integer(), Some(3));
    }

    #[test]
    fn secrets_are_redacted_at_any_depth() {
        let table: toml::Table =
            toml::from_str("[providers.openai]\napi_key = 'sk-123'\nbase_url = 'x'\n").unwrap();
        let shown = toml::to_string(&redacted(&table)).unwrap();
        assert!(!shown.contains("sk-123"));
        assert!(shown.contains("base_url"));
        let listed: toml::Table =
            toml::from_str("[[servers]]\nname = 'a'\ntoken = 'tok-999'\n").unwrap();
        let shown = toml::to_string(&redacted(&listed)).unwrap();
        assert!(
            !shown.contains("tok-999") && shown.contains("name"),
            "{shown}"
        );
        let named: toml::Table =
            toml::from_str("[providers.local]\napi_key_env = 'LOCAL_KEY'\n").unwrap();
        let shown = toml::to_string(&redacted(&named)).unwrap();
        assert!(
            shown.contains("LOCAL_KEY"),
            "a variable name is shown: {shown}"
        );
    }

    #[test]
    fn lookup_names_the_file_of_highest_precedence() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user.toml");
        let project = dir.path().join("rlm.toml");
        std::fs::write(&user, "[llm]\nmodel = 'u'\nmax_retries = 1\n").unwrap();
        std::fs::write(&project, "[llm]\nmodel = 'p'\n").unwrap();
        let loaded = LoadedConfig::load(None, &[user.clone(), project.clone()]).unwrap();
        let (value, file) = loaded.lookup("llm.model").unwrap();
        assert_eq!((value.as_str(), file), (Some("p"), project.as_path()));
        let (value, file) = loaded.lookup("llm.max_retries").unwrap();
        assert_eq!((value.as_integer(), file), (Some(1), user.as_path()));
        assert!(loaded.lookup("llm.nothing").is_none());
        assert!(loaded.lookup("llm.model.deeper").is_none());
    }

    #[test]
    fn toml_errors_do_not_quote_the_offending_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rlm.toml");
        std::fs::write(&path, "[llm]\napi_key = sk-proj-SECRET\n").unwrap();
        let err = LoadedConfig::load(Some(&path), &[]).unwrap_err();
        let shown = format!("{err:#}");
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(shown.contains("line 2"), "{shown}");
    }
}
