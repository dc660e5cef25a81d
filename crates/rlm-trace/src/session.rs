//! Sessions: named series of `rlm run` questions that continue one another
//! (`rlm run --session NAME`).
//!
//! A session is a directory `NAME/` under the sessions directory (the binary uses
//! `$XDG_STATE_HOME/rlm/sessions`):
//!
//! - `session.json` — [`SessionFile`]: the contexts (path, size, modification time, SHA-256),
//!   the model, when it was created, and one [`Question`] per run (its run id and log).
//! - `question-N/variables.json` — the [`VariablesSnapshot`] after question `N` (0-based).
//! - `question-N/history.json` — question `N`'s conversation as `[{role, content}, …]`, which
//!   the next run binds as `history_N`.
//! - `contexts/…` — copies of contexts that were not files (standard input, `--context TEXT`),
//!   so a later question reads the same text.
//!
//! Every file is written to a temporary name and renamed into place, and `session.json` is
//! written last: a question exists once `session.json` lists it, so an interrupted run leaves
//! the session as it was before that question (a stray `question-N/` is overwritten later).

use std::fs;
use std::io::{self, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use rlm_types::Message;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::error::Error;
use crate::variables::VariablesSnapshot;

/// The `version` of the `session.json` this crate writes.
pub const SESSION_VERSION: u32 = 1;

/// Longest session name accepted, in bytes.
const MAX_NAME_BYTES: usize = 100;

/// `session.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionFile {
    /// Format version ([`SESSION_VERSION`]).
    pub version: u32,
    /// The session's name (its directory's name).
    pub name: String,
    /// When the first question was asked (RFC 3339, UTC).
    pub created: String,
    /// When the last question was asked.
    pub updated: String,
    /// The root model of the last question.
    pub model: String,
    /// The contexts of the last question, in order (`context_0`, `context_1`, …).
    pub contexts: Vec<SessionContext>,
    /// The questions, oldest first.
    pub questions: Vec<Question>,
}

/// One context of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionContext {
    /// What the user named: a file path, `<stdin>` or `<inline>`.
    pub name: String,
    /// The file the text is read from: the user's file, or a copy in the session's
    /// `contexts/` for standard input and inline text.
    pub path: PathBuf,
    /// Whether `path` is the session's own copy (not watched for changes).
    #[serde(default)]
    pub copied: bool,
    /// Size in bytes.
    pub bytes: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub modified_ns: u64,
    /// SHA-256 of the contents, lower-case hex.
    pub sha256: String,
}

/// One question of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    /// The question as asked.
    pub question: String,
    /// The run that answered it.
    pub run_id: String,
    /// Its trajectory log, when it was logged.
    pub log: Option<PathBuf>,
    /// When it was asked (RFC 3339, UTC).
    pub asked: String,
    /// How the run ended (the trajectory's `status`).
    pub status: crate::Status,
    /// The answer, cut to a 2,000-char preview.
    pub answer: Option<String>,
    /// The root model that answered.
    pub model: String,
}

/// A context file compared with what the session recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContextState {
    /// Same size and modification time, or same contents.
    Unchanged,
    /// Different contents (the session's hash no longer matches).
    Changed,
    /// The file is gone.
    Missing,
}

/// Checks `name` as a session name: 1–100 bytes of letters, digits, `-`, `_` and `.`, not
/// starting with `.` — so it is one directory name and never a path (`/`, `..`).
pub fn check_name(name: &str) -> Result<(), Error> {
    let reason = if name.is_empty() {
        Some("it is empty")
    } else if name.len() > MAX_NAME_BYTES {
        Some("it is longer than 100 bytes")
    } else if name.contains('/') || name.contains('\\') {
        Some("it contains a path separator")
    } else if name.contains("..") {
        Some("it contains `..`")
    } else if name.starts_with('.') {
        Some("it starts with `.`")
    } else if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        Some("only letters, digits, `-`, `_` and `.` are allowed")
    } else {
        None
    };
    match reason {
        None => Ok(()),
        Some(reason) => Err(Error::InvalidSessionName {
            name: name.to_owned(),
            reason: reason.to_owned(),
        }),
    }
}

/// The sessions under one directory.
#[derive(Debug, Clone)]
pub struct SessionStore {
    dir: PathBuf,
}

impl SessionStore {
    /// The sessions under `dir` (created on the first save).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The sessions directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Session `name`'s directory (the name is checked first).
    pub fn session_dir(&self, name: &str) -> Result<PathBuf, Error> {
        check_name(name)?;
        Ok(self.dir.join(name))
    }

    /// Session `name`, or `None` when it does not exist yet.
    pub fn load(&self, name: &str) -> Result<Option<SessionFile>, Error> {
        let path = self.session_dir(name)?.join("session.json");
        match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|source| Error::Corrupt { path, source }),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(Error::Io { path, source }),
        }
    }

    /// Every session, by name; a directory without a readable `session.json` is left out.
    pub fn list(&self) -> Result<Vec<SessionFile>, Error> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(Error::Io {
                    path: self.dir.clone(),
                    source,
                });
            }
        };
        let mut sessions = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if check_name(&name).is_ok()
                && let Ok(Some(session)) = self.load(&name)
            {
                sessions.push(session);
            }
        }
        sessions.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(sessions)
    }

    /// Removes session `name`; `false` when it did not exist.
    pub fn remove(&self, name: &str) -> Result<bool, Error> {
        let dir = self.session_dir(name)?;
        match fs::remove_dir_all(&dir) {
            Ok(()) => Ok(true),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(Error::Io { path: dir, source }),
        }
    }

    /// The variables after the session's last question (empty when there is none).
    pub fn last_variables(&self, session: &SessionFile) -> Result<VariablesSnapshot, Error> {
        let Some(last) = session.questions.len().checked_sub(1) else {
            return Ok(VariablesSnapshot::default());
        };
        let path = self
            .session_dir(&session.name)?
            .join(question_dir(last))
            .join("variables.json");
        read_json(&path)
    }

    /// The conversations of the session's questions, oldest first (`history_0`, …).
    pub fn histories(&self, session: &SessionFile) -> Result<Vec<Vec<Message>>, Error> {
        let dir = self.session_dir(&session.name)?;
        (0..session.questions.len())
            .map(|index| read_json(&dir.join(question_dir(index)).join("history.json")))
            .collect()
    }

    /// Where a copy of a context that is not a file goes for the question `index`
    /// (`contexts/q<index>-<part>.txt`; its directory is created).
    pub fn context_copy_path(
        &self,
        name: &str,
        index: usize,
        part: usize,
    ) -> Result<PathBuf, Error> {
        let dir = self.session_dir(name)?.join("contexts");
        fs::create_dir_all(&dir).map_err(|source| Error::Io {
            path: dir.clone(),
            source,
        })?;
        Ok(dir.join(format!("q{index}-{part}.txt")))
    }

    /// Appends a question: its variables and conversation first, then `session.json` (the
    /// commit point), each written atomically.
    pub fn save_question(
        &self,
        session: &SessionFile,
        variables: &VariablesSnapshot,
        conversation: &[Message],
    ) -> Result<(), Error> {
        let dir = self.session_dir(&session.name)?;
        let index = session.questions.len().saturating_sub(1);
        let question = dir.join(question_dir(index));
        fs::create_dir_all(&question).map_err(|source| Error::Io {
            path: question.clone(),
            source,
        })?;
        write_json(&question.join("variables.json"), variables)?;
        write_json(&question.join("history.json"), &conversation)?;
        write_json(&dir.join("session.json"), session)
    }
}

fn question_dir(index: usize) -> String {
    format!("question-{index}")
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, Error> {
    let bytes = fs::read(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_slice(&bytes).map_err(|source| Error::Corrupt {
        path: path.to_path_buf(),
        source,
    })
}

/// Writes `value` as JSON to a temporary file beside `path`, syncs it and renames it over
/// `path`: readers see the old file or the new one, never a part.
pub fn write_json(path: &Path, value: &impl Serialize) -> Result<(), Error> {
    let io_error = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let bytes = serde_json::to_vec_pretty(value).map_err(|source| Error::Serialize {
        kind: "session",
        source,
    })?;
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temporary = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let mut file = fs::File::create(&temporary).map_err(io_error)?;
    file.write_all(&bytes).map_err(io_error)?;
    file.sync_all().map_err(io_error)?;
    drop(file);
    fs::rename(&temporary, path).map_err(io_error)
}

impl SessionContext {
    /// Describes the file at `path` now (hashing its contents), as context `name`.
    pub fn describe(name: &str, path: &Path, copied: bool) -> Result<Self, Error> {
        let (bytes, modified_ns) = stat(path)?;
        Ok(Self {
            name: name.to_owned(),
            path: path.to_path_buf(),
            copied,
            bytes,
            modified_ns,
            sha256: sha256_of(path)?,
        })
    }

    /// Like [`SessionContext::describe`], but keeps this record's hash when size and
    /// modification time are unchanged (the file is not read again).
    pub fn refreshed(&self) -> Result<Self, Error> {
        let (bytes, modified_ns) = stat(&self.path)?;
        if bytes == self.bytes && modified_ns == self.modified_ns {
            return Ok(self.clone());
        }
        Self::describe(&self.name, &self.path, self.copied)
    }

    /// Whether the file still holds what the session recorded: size and modification time
    /// first, the contents' hash only when those differ (a `touch` is not a change).
    pub fn state(&self) -> Result<ContextState, Error> {
        let (bytes, modified_ns) = match stat(&self.path) {
            Ok(found) => found,
            Err(Error::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                return Ok(ContextState::Missing);
            }
            Err(err) => return Err(err),
        };
        if bytes == self.bytes && modified_ns == self.modified_ns {
            return Ok(ContextState::Unchanged);
        }
        if bytes != self.bytes || sha256_of(&self.path)? != self.sha256 {
            return Ok(ContextState::Changed);
        }
        Ok(ContextState::Unchanged)
    }
}

fn stat(path: &Path) -> Result<(u64, u64), Error> {
    let metadata = fs::metadata(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let modified = metadata
        .modified()
        .ok()
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |since| {
            u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
        });
    Ok((metadata.len(), modified))
}

fn sha256_of(path: &Path) -> Result<String, Error> {
    let io_error = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = fs::File::open(path).map_err(io_error)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0_u8; 1 << 20];
    loop {
        let read = file.read(&mut buffer).map_err(io_error)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_one_directory_name() {
        for good in ["work", "q-1", "a_b.c", "X9"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in [
            "", "a/b", "..", "a..b", "../x", ".hidden", "a b", "a\\b", "é",
        ] {
            assert!(
                matches!(check_name(bad), Err(Error::InvalidSessionName { .. })),
                "{bad}"
            );
        }
        assert!(check_name(&"a".repeat(101)).is_err());
    }

    #[test]
    fn a_question_is_saved_whole_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path().join("sessions"));
        assert_eq!(store.load("s").unwrap(), None);
        let file = dir.path().join("data.txt");
        fs::write(&file, "hello").unwrap();
        let context = SessionContext::describe("data.txt", &file, false).unwrap();
        assert_eq!(context.bytes, 5);
        assert_eq!(
            context.sha256,
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        let session = SessionFile {
            version: SESSION_VERSION,
            name: "s".into(),
            created: "t0".into(),
            updated: "t0".into(),
            model: "m".into(),
            contexts: vec![context.clone()],
            questions: vec![Question {
                question: "q".into(),
                run_id: "r1".into(),
                log: None,
                asked: "t0".into(),
                status: crate::Status::Answered,
                answer: Some("a".into()),
                model: "m".into(),
            }],
        };
        let variables = VariablesSnapshot {
            run_id: "r1".into(),
            variables: Vec::new(),
        };
        store
            .save_question(&session, &variables, &[Message::user("q")])
            .unwrap();
        assert_eq!(store.load("s").unwrap().as_ref(), Some(&session));
        assert_eq!(store.last_variables(&session).unwrap(), variables);
        assert_eq!(store.histories(&session).unwrap()[0][0].content, "q");
        assert_eq!(store.list().unwrap().len(), 1);
        // No temporary file is left beside the written ones.
        let leftovers: Vec<_> = fs::read_dir(store.session_dir("s").unwrap())
            .unwrap()
            .flatten()
            .filter(|entry| entry.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");

        assert_eq!(context.state().unwrap(), ContextState::Unchanged);
        // A different size: a same-size edit within one mtime tick would go unseen.
        fs::write(&file, "hello!").unwrap();
        assert_eq!(context.state().unwrap(), ContextState::Changed);
        fs::remove_file(&file).unwrap();
        assert_eq!(context.state().unwrap(), ContextState::Missing);

        assert!(store.remove("s").unwrap());
        assert!(!store.remove("s").unwrap());
        assert!(store.list().unwrap().is_empty());
    }
}
