//! `rlm config [show|paths]`: what configuration is in force and where it came from.

use std::io::Write as _;
use std::process::ExitCode;

use crate::cli::{ConfigAction, ConfigArgs, GlobalArgs};
use crate::settings::{Sources, files};

pub fn run(global: &GlobalArgs, sources: &Sources, args: ConfigArgs) -> anyhow::Result<ExitCode> {
    match args.action.unwrap_or(ConfigAction::Show) {
        ConfigAction::Show => {
            let loaded = sources.config()?;
            let shown = files::redacted(&loaded.table);
            if global.json {
                let files: Vec<String> = loaded
                    .files
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect();
                crate::output::print_json(&serde_json::json!({
                    "type": "config", "files": files, "config": shown,
                }))?;
            } else {
                let mut out = crate::output::stdout();
                writeln!(
                    out,
                    "# files read (lowest precedence first): {}",
                    loaded.describe_files()
                )?;
                write!(out, "{}", toml::to_string_pretty(&shown)?)?;
            }
        }
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
                    crate::output::write_json(
                        &mut out,
                        &serde_json::json!({ "type": "config_file", "path": path, "state": state }),
                    )?;
                } else {
                    let path = path.display().to_string();
                    writeln!(out, "{} ({state})", crate::output::for_stdout(&path))?;
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
