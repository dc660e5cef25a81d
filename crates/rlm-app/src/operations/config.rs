//! `config show|paths`: what configuration is in force and where it came from.
//!
//! `show` gives every setting's effective value with its source (an environment variable, a
//! file, or the default), after one record with the files and their merged content (secrets
//! redacted); `paths` the files looked for, in precedence order.

use std::path::PathBuf;

use crate::requests::{ConfigAction, ConfigRequest};
use crate::settings::{Sources, files, shown};
use crate::{Context, Outcome};

/// What `rlm config show|paths --json` prints.
#[derive(Debug, serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ConfigRecord {
    /// `paths`: a configuration file rlm reads, and whether it is there (`found`, `absent`,
    /// or `explicit` for `--config`).
    ConfigFile { path: PathBuf, state: &'static str },
    /// `show`, first: the files read and their merged content, secrets redacted.
    Config {
        files: Vec<String>,
        config: toml::Table,
        /// The files as a person reads them (`show`'s header line; not in JSON).
        #[serde(skip)]
        described: String,
    },
    /// `show`: one setting in force, its value and where it came from.
    Setting(shown::Shown),
}

pub fn config(
    sources: &Sources,
    request: &ConfigRequest,
    _context: &Context,
) -> anyhow::Result<Outcome<ConfigRecord>> {
    let records = match request.action.unwrap_or_default() {
        ConfigAction::Show => show(sources)?,
        ConfigAction::Paths => match sources.explicit_config() {
            Some(path) => vec![ConfigRecord::ConfigFile {
                path: path.to_path_buf(),
                state: "explicit",
            }],
            None => sources
                .config_candidates()
                .into_iter()
                .map(|path| {
                    let state = if path.is_file() { "found" } else { "absent" };
                    ConfigRecord::ConfigFile { path, state }
                })
                .collect(),
        },
    };
    Ok(Outcome::success(records))
}

fn show(sources: &Sources) -> anyhow::Result<Vec<ConfigRecord>> {
    let loaded = sources.config()?;
    let settings = shown::settings(sources, loaded);
    let files = loaded
        .files
        .iter()
        .map(|path| path.display().to_string())
        .collect();
    let mut records = vec![ConfigRecord::Config {
        files,
        config: files::redacted(&loaded.table),
        described: loaded.describe_files(),
    }];
    records.extend(settings.into_iter().map(ConfigRecord::Setting));
    Ok(records)
}
