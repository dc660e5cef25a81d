//! `view`: a run's trajectory as one self-contained HTML page; also how `runs show` finds a
//! log.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use rlm_trace::view::{self, LogView};

use crate::error::AppError;
use crate::requests::ViewRequest;
use crate::settings::{LlmSettings, Sources, ViewSettings, ViewTarget};
use crate::{Context, Outcome};

/// What `rlm view --json` prints: one record naming the page written.
#[derive(Debug, serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ViewRecord {
    View {
        /// The HTML page.
        path: PathBuf,
        /// The log it shows.
        log: PathBuf,
        run_id: String,
        /// Whether the log has its closing record.
        complete: bool,
        #[serde(flatten)]
        shown: Shown,
    },
}

/// What kind of log the page shows and how much of it.
#[derive(Debug, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Shown {
    /// An `rlm run`: its root turns, and turns with its child runs'.
    Run {
        turns: usize,
        turns_with_children: usize,
    },
    /// An `rlm query`: its model calls.
    Query { calls: usize },
}

/// Writes the page of the run `request` names, and opens it in a browser when asked.
pub fn view(
    sources: &Sources,
    request: &ViewRequest,
    context: &Context,
) -> anyhow::Result<Outcome<ViewRecord>> {
    let settings = ViewSettings::resolve(request, sources)?;
    // The page masks the keys this process knows: those of the configuration.
    LlmSettings::register_keys(sources);
    let log = find_log(&settings.target, settings.log_dir.as_deref(), "--last")?;
    let view = LogView::load(&log).map_err(|err| trace_error(err, &log))?;
    let output = match (&settings.output, &settings.target) {
        (Some(path), _) => path.clone(),
        (None, ViewTarget::File(path)) => path.with_extension("html"),
        (None, _) => PathBuf::from(default_page_name(&view, &log)),
    };
    view::write_page(&view, &output).map_err(|err| {
        AppError::input(err)
            .with_hint("check that the directory of --output exists and is writable")
    })?;
    let mut notes = Vec::new();
    if !view.is_complete() {
        let (what, shown) = match &view {
            LogView::Run(run) => ("run", plural(run.turns.len(), "turn")),
            LogView::Query(query) => ("query", plural(query.calls.len(), "model call")),
        };
        let cut = view.cut_line().map_or_else(String::new, |line| {
            format!("; its last line ({line}) is cut short and left out")
        });
        notes.push(format!(
            "note: {} has no result line (the {what} is still going, or was stopped){cut}; the \
             page shows the {shown} logged so far",
            log.display(),
        ));
    }
    let shown = match &view {
        LogView::Run(run) => Shown::Run {
            turns: run.turns.len(),
            turns_with_children: run.total_turns(),
        },
        LogView::Query(query) => Shown::Query {
            calls: query.calls.len(),
        },
    };
    let record = ViewRecord::View {
        path: output.clone(),
        log: log.clone(),
        run_id: view.run_id().to_owned(),
        complete: view.is_complete(),
        shown,
    };
    let mut status = crate::ExitStatus::Success;
    // The page is written either way: a browser that does not start is said, after it.
    if settings.open
        && let Err(err) = open(&output, settings.browser.as_deref())
    {
        context.problem(&err);
        status = crate::ExitStatus::InputError;
    }
    Ok(Outcome {
        notes,
        ..Outcome::ended(vec![record], status)
    })
}

/// `rlm-<run id>.html` (`rlm-query-…` for a query) in the working directory. The id comes from
/// the log, which is input: only an id of our own shape is used, else the log file's own name
/// (one component of a directory listing), so no log can name a path.
fn default_page_name(view: &LogView, log: &Path) -> String {
    let prefix = match view {
        LogView::Run(_) => "rlm",
        LogView::Query(_) => "rlm-query",
    };
    let id = view.run_id();
    if rlm_trace::is_run_id(id) {
        return format!("{prefix}-{id}.html");
    }
    let stem = log
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .filter(|stem| !stem.is_empty() && !stem.starts_with('.'))
        .unwrap_or_else(|| "log".to_owned());
    format!("{prefix}-{stem}.html")
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// The log file the target names (`rlm view` and `rlm runs show`); `last` is how the command
/// asks for the newest run (`--last`, or the word `last`), for the hint when an id is unknown.
pub fn find_log(
    target: &ViewTarget,
    log_dir: Option<&Path>,
    last: &str,
) -> anyhow::Result<PathBuf> {
    let directory = || {
        log_dir.map(Path::to_path_buf).ok_or_else(|| {
            AppError::input(anyhow::anyhow!("no log directory is known"))
                .with_hint("pass --log DIR, or set HOME or XDG_STATE_HOME")
        })
    };
    match target {
        ViewTarget::File(path) => Ok(path.clone()),
        ViewTarget::RunId(id) => {
            let dir = directory()?;
            let suffix = format!("_{id}.jsonl");
            let found = logs_in(&dir)?
                .into_iter()
                .find(|(name, _, _)| name.ends_with(&suffix));
            match found {
                Some((_, path, _)) => Ok(path),
                None => Err(AppError::input(anyhow::anyhow!(
                    "no run `{id}` in {}",
                    dir.display()
                ))
                .with_hint(format!("name the log file itself, use {last}, or point --log at the directory the run logged to"))
                .into()),
            }
        }
        ViewTarget::Last => {
            let dir = directory()?;
            // Root runs and queries only: a child's file is `<parent stem>.<n>.jsonl`.
            logs_in(&dir)?
                .into_iter()
                .filter(|(name, _, _)| !name.trim_end_matches(".jsonl").contains('.'))
                .max_by(|a, b| (a.2, &a.0).cmp(&(b.2, &b.0)))
                .map(|(_, path, _)| path)
                .ok_or_else(|| {
                    AppError::input(anyhow::anyhow!("no run logs in {}", dir.display()))
                        .with_hint(
                            "`rlm run` and `rlm query` write one each time; --log DIR names \
                             another directory",
                        )
                        .into()
                })
        }
    }
}

/// `(file name, path, modified)` of each `rlm_*.jsonl` (run) and `query_*.jsonl` file in `dir`.
fn logs_in(dir: &Path) -> anyhow::Result<Vec<(String, PathBuf, std::time::SystemTime)>> {
    let entries = std::fs::read_dir(dir)
        .map_err(|err| {
            AppError::input(
                anyhow::Error::new(err)
                    .context(format!("cannot read the log directory {}", dir.display())),
            )
            .with_hint("runs log to --log DIR or $XDG_STATE_HOME/rlm/runs; pass --log DIR")
        })
        .with_context(|| format!("looking for run logs in {}", dir.display()))?;
    let mut logs = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if (name.starts_with("rlm_") || name.starts_with("query_")) && name.ends_with(".jsonl") {
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
/// A log reading error as the user sees it: with a hint, and naming `path` when the error does
/// not (a malformed or unreadable line says only its number).
pub fn trace_error(err: rlm_trace::Error, path: &Path) -> anyhow::Error {
    use rlm_trace::Error as E;
    let names_no_file = matches!(
        err,
        E::Read { .. } | E::MalformedLine { .. } | E::InvalidRecord { .. } | E::Serialize { .. }
    );
    let hint = match &err {
        E::Io { .. } => "check the path; `rlm view --last` shows the newest run",
        E::NotATrajectory { .. } | E::MalformedLine { .. } | E::InvalidRecord { .. } => {
            "rlm view reads the .jsonl trajectory logs that `rlm run` and `rlm query` write"
        }
        E::NewerVersion { .. } => "this log comes from a newer rlm; view it with that version",
        E::Truncated { .. } => {
            "the file was cut after its result line (a partial copy, a full disk); the log of \
             a run still going shows, its cut last line left out"
        }
        _ => "rlm view reads the .jsonl trajectory logs that `rlm run` and `rlm query` write",
    };
    let err = if names_no_file {
        anyhow::Error::new(err).context(format!("cannot read the log {}", path.display()))
    } else {
        anyhow::Error::new(err)
    };
    AppError::input(err).with_hint(hint).into()
}

/// Opens the page in the user's browser without waiting for it: each command of `$BROWSER`
/// (`:`-separated; `%s` stands for the page, else the page is the last argument) until one
/// starts, or `xdg-open` when `$BROWSER` is unset. The page is written either way; none
/// starting is an error that says how to fix it.
fn open(page: &Path, browser: Option<&str>) -> anyhow::Result<()> {
    let page = std::path::absolute(page).unwrap_or_else(|_| page.to_path_buf());
    let page_text = page.display().to_string();
    let commands: Vec<&str> = match browser {
        Some(list) => list
            .split(':')
            .filter(|command| !command.trim().is_empty())
            .collect(),
        None => vec!["xdg-open"],
    };
    let mut failures = Vec::new();
    for command in commands {
        let mut words = command.split_whitespace();
        let Some(program) = words.next() else {
            continue;
        };
        let mut arguments: Vec<String> = words.map(|word| word.replace("%s", &page_text)).collect();
        if !command.contains("%s") {
            arguments.push(page_text.clone());
        }
        // Streams closed: the browser must not hold rlm's stdout open (a pipe reader would
        // wait for it), and it is not waited for.
        let spawned = std::process::Command::new(program)
            .args(&arguments)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        match spawned {
            Ok(_browser) => return Ok(()),
            Err(err) => failures.push(format!("`{program}`: {err}")),
        }
    }
    let tried = if failures.is_empty() {
        "BROWSER names no command".to_owned()
    } else {
        failures.join("; ")
    };
    let hint = match browser {
        Some(_) => "fix BROWSER (e.g. BROWSER=firefox), or open the page yourself",
        None => {
            "set BROWSER to your browser's command (e.g. BROWSER=firefox) or install \
                 xdg-utils; or open the page yourself"
        }
    };
    Err(AppError::input(anyhow::anyhow!(
        "the page was written to {}, but no browser could be started ({tried})",
        page.display()
    ))
    .with_hint(hint)
    .into())
}
