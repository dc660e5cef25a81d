//! Settings of `rlm runs` and `rlm sessions`, and the session `rlm run --session` continues:
//! run logs in `--log DIR`, else `$XDG_STATE_HOME/rlm/runs`; sessions in
//! `$XDG_STATE_HOME/rlm/sessions`.

use std::path::PathBuf;

use rlm_trace::SessionStore;

use super::Sources;
use crate::error::AppError;

/// Where `rlm runs` looks for logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunsSettings {
    pub log_dir: PathBuf,
}

impl RunsSettings {
    pub fn resolve(log: Option<&PathBuf>, sources: &Sources) -> anyhow::Result<Self> {
        let log_dir = log
            .cloned()
            .or_else(|| sources.dirs().runs())
            .ok_or_else(|| {
                AppError::input(anyhow::anyhow!("no log directory is known"))
                    .with_hint("pass --log DIR, or set HOME or XDG_STATE_HOME")
            })?;
        Ok(Self { log_dir })
    }
}

/// The sessions directory.
pub fn session_store(sources: &Sources) -> anyhow::Result<SessionStore> {
    let dir = sources.dirs().sessions().ok_or_else(|| {
        AppError::input(anyhow::anyhow!("no state directory is known for sessions"))
            .with_hint("set HOME or XDG_STATE_HOME")
    })?;
    Ok(SessionStore::new(dir))
}

/// A session name as given on the command line: a bad one is the user's to fix (exit 2).
pub fn check_session_name(name: &str) -> anyhow::Result<()> {
    rlm_trace::check_session_name(name).map_err(|err| {
        AppError::input(err)
            .with_hint(
                "a session name is one plain name: letters, digits, `-`, `_` and `.`, e.g. \
                 `--session logs-2024`",
            )
            .into()
    })
}

/// The session `rlm run --session NAME` continues (or starts).
#[derive(Debug, Clone)]
pub struct SessionTarget {
    pub name: String,
    pub store: SessionStore,
}

impl SessionTarget {
    pub fn resolve(name: &str, sources: &Sources) -> anyhow::Result<Self> {
        check_session_name(name)?;
        Ok(Self {
            name: name.to_owned(),
            store: session_store(sources)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::tests::Layout;

    #[test]
    fn sessions_live_in_the_state_directory_and_names_are_checked() {
        let layout = Layout::new(None, None);
        let sources = layout.sources(&[("XDG_STATE_HOME", "/state")]);
        let target = SessionTarget::resolve("work", &sources).unwrap();
        assert_eq!(target.store.dir(), PathBuf::from("/state/rlm/sessions"));
        for bad in ["a/b", "..", "../up"] {
            let err = SessionTarget::resolve(bad, &sources).unwrap_err();
            assert!(format!("{err:#}").contains("not a session name"), "{err:#}");
        }
        let runs = RunsSettings::resolve(None, &sources).unwrap();
        assert_eq!(runs.log_dir, PathBuf::from("/state/rlm/runs"));
        let nowhere = layout.sources(&[]);
        assert!(RunsSettings::resolve(None, &nowhere).is_err());
    }
}
