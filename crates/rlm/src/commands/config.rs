//! `rlm config [show|paths]`: what configuration is in force and where it came from.
//!
//! `show` prints every setting's effective value with its source (an environment variable, a
//! file, or the default); with `--json` a `config` line (the files and their merged content,
//! secrets redacted) and then one `setting` line per setting.

use std::io::Write as _;
use std::process::ExitCode;

use rlm_app::operations::config::ConfigRecord;
use rlm_app::requests::ConfigRequest;
use rlm_app::settings::Origin;

use super::Run;

pub fn run(run: &Run<'_>, request: ConfigRequest) -> anyhow::Result<ExitCode> {
    let outcome = rlm_app::operations::config(&run.sources, &request, &run.context)?;
    if run.global.json {
        run.print_json(&outcome)?;
        return run.exit(outcome);
    }
    let mut out = crate::output::stdout();
    let settings: Vec<&rlm_app::settings::shown::Shown> = outcome
        .records
        .iter()
        .filter_map(|record| match record {
            ConfigRecord::Setting(setting) => Some(setting),
            _ => None,
        })
        .collect();
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
    for record in &outcome.records {
        match record {
            ConfigRecord::ConfigFile { path, state } => {
                let path = path.display().to_string();
                writeln!(out, "{} ({state})", crate::output::for_stdout(&path))?;
            }
            ConfigRecord::Config { described, .. } => {
                writeln!(out, "# files read (lowest precedence first): {described}")?;
            }
            ConfigRecord::Setting(_) => {}
        }
    }
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
    run.exit(outcome)
}
