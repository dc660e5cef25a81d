//! Settings of `rlm view`: which log to show, where its runs are, where the page goes.
//!
//! The log directory is `rlm run`'s: `--log DIR`, else `$XDG_STATE_HOME/rlm/runs`.

use std::path::PathBuf;

use crate::error::input_error;
use crate::requests::ViewRequest;
use crate::settings::{Sources, env};

/// Which log `rlm view` shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ViewTarget {
    /// A log file named on the command line.
    File(PathBuf),
    /// A run id, looked up in the log directory.
    RunId(String),
    /// The most recent root run in the log directory.
    Last,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewSettings {
    pub target: ViewTarget,
    /// Where run logs are; `None` when neither `--log` nor a state directory is known.
    pub log_dir: Option<PathBuf>,
    pub output: Option<PathBuf>,
    pub open: bool,
    /// `$BROWSER`, for `--open` (unset or blank: `xdg-open`).
    pub browser: Option<String>,
}

impl ViewSettings {
    pub fn resolve(args: &ViewRequest, sources: &Sources) -> anyhow::Result<Self> {
        let target = match (&args.run, args.last) {
            (_, true) => ViewTarget::Last,
            (Some(run), false) => target(run),
            (None, false) => {
                return Err(input_error("name a run id or a log file, or pass --last").into());
            }
        };
        Ok(Self {
            target,
            log_dir: args.log.clone().or_else(|| sources.dirs().runs()),
            output: args.output.clone(),
            open: args.open,
            browser: sources
                .env()
                .var(env::BROWSER)
                .filter(|browser| !browser.trim().is_empty()),
        })
    }
}

/// A log file when the argument names an existing file or looks like a path; else a run id.
pub fn target(run: &str) -> ViewTarget {
    let path = PathBuf::from(run);
    if path.is_file() || run.ends_with(".jsonl") || run.contains(std::path::MAIN_SEPARATOR) {
        ViewTarget::File(path)
    } else {
        ViewTarget::RunId(run.to_owned())
    }
}

#[cfg(all(test, feature = "clap"))]
mod tests {
    use super::*;
    use crate::settings::tests::Layout;

    fn view_args(args: &[&str]) -> ViewRequest {
        crate::requests::parse(args)
    }

    #[test]
    fn targets_and_the_log_directory() {
        let layout = Layout::new(None, None);
        let sources = layout.sources(&[("XDG_STATE_HOME", "/state")]);
        let settings = ViewSettings::resolve(&view_args(&["a1b2c3d4"]), &sources).unwrap();
        assert_eq!(settings.target, ViewTarget::RunId("a1b2c3d4".into()));
        assert_eq!(settings.log_dir, Some(PathBuf::from("/state/rlm/runs")));
        let settings =
            ViewSettings::resolve(&view_args(&["logs/run.jsonl", "--log", "/l"]), &sources)
                .unwrap();
        assert_eq!(settings.target, ViewTarget::File("logs/run.jsonl".into()));
        assert_eq!(settings.log_dir, Some(PathBuf::from("/l")));
        let settings =
            ViewSettings::resolve(&view_args(&["--last", "-o", "x.html"]), &sources).unwrap();
        assert_eq!(settings.target, ViewTarget::Last);
        assert_eq!(settings.output, Some(PathBuf::from("x.html")));
        assert_eq!(settings.browser, None);
        let sources = layout.sources(&[("BROWSER", "firefox --new-tab:chromium")]);
        let settings = ViewSettings::resolve(&view_args(&["--last", "--open"]), &sources).unwrap();
        assert!(settings.open);
        assert_eq!(
            settings.browser.as_deref(),
            Some("firefox --new-tab:chromium")
        );
        assert!(
            crate::requests::try_parse::<ViewRequest>(&[]).is_err(),
            "a run is required"
        );
        assert!(crate::requests::try_parse::<ViewRequest>(&["abc", "--last"]).is_err());
    }
}
