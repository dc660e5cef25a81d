//! `rlm config [show|paths]`: what configuration is in force and where it came from.
//!
//! `show` prints every setting's effective value with its source (an environment variable, a
//! file, or the default); with `--json` a `config` line (the files and their merged content,
//! secrets redacted) and then one `setting` line per setting.

use std::io::Write as _;
use std::process::ExitCode;

use crate::cli::{ConfigAction, ConfigArgs, GlobalArgs};
use crate::settings::{Origin, Sources, files, shown};

pub fn run(global: &GlobalArgs, sources: &Sources, args: ConfigArgs) -> anyhow::Result<ExitCode> {
    match args.action.unwrap_or(ConfigAction::Show) {
        ConfigAction::Show => show(global, sources)?,
        ConfigAction::Paths => {
            let paths: Vec<(std::path::PathBuf, &str)> = match sources.explicit_config() {
                Some(path) => vec![(path.to_path_buf(), "explicit")],
                None => sources
                    .config_candidates()
                    .into_iter()
                    .map(|path| {
                        let state = if path.is_file() { "found" } else { "absent" };
                        (path, state)
                    })
                    .collect(),
            };
            let mut out = crate::output::stdout();
            for (path, state) in paths {
                if global.json {
                    let record = ConfigRecord::ConfigFile { path: &path, state };
                    crate::output::write_json(&mut out, &record)?;
                } else {
                    let path = path.display().to_string();
                    writeln!(out, "{} ({state})", crate::output::for_stdout(&path))?;
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn show(global: &GlobalArgs, sources: &Sources) -> anyhow::Result<()> {
    let loaded = sources.config()?;
    let settings = shown::settings(sources, loaded);
    let mut out = crate::output::stdout();
    if global.json {
        let files: Vec<String> = loaded
            .files
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        let config = ConfigRecord::Config {
            files,
            config: files::redacted(&loaded.table),
        };
        crate::output::write_json(&mut out, &config)?;
        for setting in &settings {
            crate::output::write_json(&mut out, &ConfigRecord::Setting(setting))?;
        }
        return Ok(());
    }
    writeln!(
        out,
        "# files read (lowest precedence first): {}",
        loaded.describe_files()
    )?;
    let assignments: Vec<String> = settings
        .iter()
        .map(|setting| {
            let value = match (&setting.value, &setting.note) {
                (Some(value), _) => value.to_string(),
                (None, Some(note)) => format!("({note})"),
                (None, None) => "(none)".to_owned(),
            };
            format!("{} = {value}", setting.key)
        })
        .collect();
    let width = assignments
        .iter()
        .map(|a| a.chars().count())
        .max()
        .unwrap_or(0);
    for (assignment, setting) in assignments.iter().zip(&settings) {
        let origin = match &setting.origin {
            Origin::Flag { flag } => (*flag).to_owned(),
            Origin::Env { variable } => format!("env {variable}"),
            Origin::File { path } => path.display().to_string(),
            Origin::Default => "default".to_owned(),
        };
        // A value with a note (an automatic one) says how it is decided.
        let origin = match (&setting.value, &setting.note) {
            (Some(_), Some(note)) => format!("{origin}: {note}"),
            _ => origin,
        };
        let line = format!("{assignment:width$}  # {origin}");
        writeln!(out, "{}", crate::output::for_stdout(&line))?;
    }
    Ok(())
}

/// What `rlm config show|paths --json` prints.
#[derive(serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ConfigRecord<'a> {
    /// `paths`: a configuration file rlm reads, and whether it is there (`found`, `absent`,
    /// or `explicit` for `--config`).
    ConfigFile {
        path: &'a std::path::Path,
        state: &'a str,
    },
    /// `show`, first: the files read and their merged content, secrets redacted.
    Config {
        files: Vec<String>,
        config: toml::Table,
    },
    /// `show`: one setting in force, its value and where it came from.
    Setting(&'a shown::Shown),
}
