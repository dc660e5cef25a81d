//! `rlm view`: a run's trajectory as one self-contained HTML page.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use rlm_trace::view::{self, RunView};

use crate::cli::{GlobalArgs, ViewArgs};
use crate::error::CliError;
use crate::output;
use crate::settings::{Sources, ViewSettings, ViewTarget};

pub fn run(global: &GlobalArgs, sources: &Sources, args: ViewArgs) -> anyhow::Result<ExitCode> {
    let settings = ViewSettings::resolve(&args, sources)?;
    let log = find_log(&settings)?;
    let run = RunView::load(&log).map_err(trace_error)?;
    let output = match (&settings.output, &settings.target) {
        (Some(path), _) => path.clone(),
        (None, ViewTarget::File(path)) => path.with_extension("html"),
        (None, _) => PathBuf::from(format!("rlm-{}.html", run.metadata.run_id)),
    };
    view::write_page(&run, &output).map_err(|err| {
        CliError::input(err)
            .with_hint("check that the directory of --output exists and is writable")
    })?;
    if !run.is_complete() {
        note(
            global.quiet,
            &format!(
                "{} has no result line (the run is still going, or was stopped); the page \
                 shows the {} turns logged so far",
                log.display(),
                run.turns.len()
            ),
        );
    }
    if global.json {
        output::print_json(&serde_json::json!({
            "type": "view",
            "path": output,
            "log": log,
            "run_id": run.metadata.run_id,
            "turns": run.turns.len(),
            "turns_with_children": run.total_turns(),
            "complete": run.is_complete(),
        }))?;
    } else {
        let mut out = output::stdout();
        writeln!(out, "{}", output::for_stdout(&output.display().to_string()))?;
        out.flush()?;
    }
    if settings.open {
        open(&output, global.quiet);
    }
    Ok(ExitCode::SUCCESS)
}

/// The log file the target names.
fn find_log(settings: &ViewSettings) -> anyhow::Result<PathBuf> {
    let directory = || {
        settings.log_dir.clone().ok_or_else(|| {
            CliError::input(anyhow::anyhow!("no log directory is known"))
                .with_hint("pass --log DIR, or set HOME or XDG_STATE_HOME")
        })
    };
    match &settings.target {
        ViewTarget::File(path) => Ok(path.clone()),
        ViewTarget::RunId(id) => {
            let dir = directory()?;
            let suffix = format!("_{id}.jsonl");
            let found = logs_in(&dir)?
                .into_iter()
                .find(|(name, _, _)| name.ends_with(&suffix));
            match found {
                Some((_, path, _)) => Ok(path),
                None => Err(CliError::input(anyhow::anyhow!(
                    "no run `{id}` in {}",
                    dir.display()
                ))
                .with_hint("name the log file itself, use --last, or point --log at the directory the run logged to")
                .into()),
            }
        }
        ViewTarget::Last => {
            let dir = directory()?;
            // Root runs only: a child's file is `<parent stem>.<n>.jsonl`.
            logs_in(&dir)?
                .into_iter()
                .filter(|(name, _, _)| !name.trim_end_matches(".jsonl").contains('.'))
                .max_by(|a, b| (a.2, &a.0).cmp(&(b.2, &b.0)))
                .map(|(_, path, _)| path)
                .ok_or_else(|| {
                    CliError::input(anyhow::anyhow!("no run logs in {}", dir.display()))
                        .with_hint(
                            "`rlm run` writes one per run; --log DIR names another directory",
                        )
                        .into()
                })
        }
    }
}

/// `(file name, path, modified)` of each `rlm_*.jsonl` file in `dir`.
fn logs_in(dir: &Path) -> anyhow::Result<Vec<(String, PathBuf, std::time::SystemTime)>> {
    let entries = std::fs::read_dir(dir)
        .map_err(|err| {
            CliError::input(
                anyhow::Error::new(err)
                    .context(format!("cannot read the log directory {}", dir.display())),
            )
            .with_hint("runs log to --log DIR or $XDG_STATE_HOME/rlm/runs; pass --log DIR")
        })
        .with_context(|| format!("looking for run logs in {}", dir.display()))?;
    let mut logs = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("rlm_") && name.ends_with(".jsonl") {
            let modified = entry
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            logs.push((name, entry.path(), modified));
        }
    }
    Ok(logs)
}

/// A log that cannot be shown is the user's input problem: exit 2 with what to do.
fn trace_error(err: rlm_trace::Error) -> anyhow::Error {
    use rlm_trace::Error as E;
    let hint = match &err {
        E::Io { .. } => "check the path; `rlm view --last` shows the newest run",
        E::NotATrajectory { .. } | E::MalformedLine { .. } | E::InvalidRecord { .. } => {
            "rlm view reads the .jsonl trajectory logs that `rlm run` writes"
        }
        E::NewerVersion { .. } => "this log comes from a newer rlm; view it with that version",
        E::Truncated { .. } => {
            "the file was cut short (a partial copy, a full disk); a run still going writes \
             whole lines, so its log shows"
        }
        _ => "rlm view reads the .jsonl trajectory logs that `rlm run` writes",
    };
    CliError::input(err).with_hint(hint).into()
}

/// Opens the page with the desktop's handler; a failure is a warning, the page is written.
fn open(path: &Path, quiet: bool) {
    let spawned = std::process::Command::new("xdg-open")
        .arg(path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(err) = spawned {
        note(
            quiet,
            &format!("could not open the page with xdg-open: {err}"),
        );
    }
}

/// A note on stderr (the page is the data; this says something about it).
fn note(quiet: bool, message: &str) {
    if !quiet {
        let _ = writeln!(anstream::stderr(), "note: {}", output::neutralize(message));
    }
}
