//! Commands that rename, switch or rewrite parts: `toggle`, `rank`, `remove`, `ask`, `env`.

use serde::Serialize;

use crate::ctx::{Ctx, fill_report};
use crate::ctxdir::{PartFile, rename, write_atomic};
use crate::error::{Error, Result};
use crate::part::{PartName, Rank, Slot, State};
use crate::report::Report;

/// Output of [`Ctx::env`].
#[derive(Debug, Clone, Serialize)]
pub struct EnvReport {
    /// Always `"ctx"`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// `(name, value)` in order: `e1`, `e2`, ..., `EVIDENCE_COUNT`.
    pub variables: Vec<(String, String)>,
}

impl std::fmt::Display for EnvReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let assignments: Vec<String> = self
            .variables
            .iter()
            .map(|(name, value)| format!("{name}={}", shell_quote(value)))
            .collect();
        writeln!(f, "export {}", assignments.join(" "))
    }
}

/// Single-quotes a value for POSIX shells unless it is plainly safe.
fn shell_quote(value: &str) -> String {
    let safe = !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:,=@%".contains(&b));
    if safe {
        value.to_owned()
    } else {
        format!("'{}'", value.replace('\'', r"'\''"))
    }
}

impl Ctx {
    /// Switches parts on (`.md`) or off (`.md.skip`). `target` is a name, a rank or a range.
    /// Links are always on: naming one to switch off is an error, and ranks or ranges leave
    /// them alone.
    pub fn toggle(&self, on: bool, target: &str) -> Result<Report> {
        let scan = self.dir.scan()?;
        let parts = self.select(&scan, target)?;
        let by_name = !crate::ctx::is_rank_or_range(target);
        if !on
            && by_name
            && let [only] = parts.as_slice()
            && only.name.state == State::Linked
        {
            return Err(Error::Invalid(format!(
                "{} is a link part, which is always active; remove it instead",
                only.name.id()
            )));
        }
        let mut changes = Vec::new();
        let mut notes = Vec::new();
        for part in parts {
            let wanted = if on { State::Active } else { State::Skipped };
            if part.name.state == State::Linked {
                notes.push(format!("{} is a link, always active", part.name.id()));
                continue;
            }
            if part.name.state == wanted {
                changes.push(("unchanged", part.name.id(), None));
                continue;
            }
            set_state(&part, wanted)?;
            changes.push((if on { "on" } else { "off" }, part.name.id(), None));
        }
        self.report("toggle", changes, notes)
    }

    /// Moves one part to another rank (keeping kind, slot and state).
    pub fn set_rank(&self, name: &str, rank: &str) -> Result<Report> {
        let rank: Rank = rank.parse()?;
        let scan = self.dir.scan()?;
        let part = self.resolve(&scan, name)?;
        let renamed = PartName {
            rank,
            ..part.name.clone()
        };
        if renamed.id() == part.name.id() {
            return self.report(
                "rank",
                vec![("unchanged", part.name.id(), None)],
                Vec::new(),
            );
        }
        if self
            .dir
            .id_taken(&scan, rank, &part.name.kind, part.name.slot)
        {
            return Err(Error::Invalid(format!(
                "{} already exists; choose another rank",
                renamed.id()
            )));
        }
        rename(&part.path, &part.path.with_file_name(renamed.file_name()))?;
        let detail = Some(format!("was {}", part.name.id()));
        self.report("rank", vec![("renamed", renamed.id(), detail)], Vec::new())
    }

    /// Deletes parts (for links, only the symlink). All names are checked before anything is
    /// deleted.
    pub fn remove(&self, names: &[String]) -> Result<Report> {
        if names.is_empty() {
            return Err(Error::Invalid(
                "nothing to remove: give at least one part".into(),
            ));
        }
        let before = self.snapshot()?;
        let mut parts: Vec<PartFile> = Vec::new();
        for name in names {
            for part in self.select(&before.scan, name)? {
                if !parts.iter().any(|p| p.path == part.path) {
                    parts.push(part);
                }
            }
        }
        for part in &parts {
            std::fs::remove_file(&part.path)
                .map_err(|e| Error::io("remove", part.path.clone(), e))?;
        }
        let after = self.snapshot()?;
        let changes = parts
            .iter()
            .map(|p| ("removed", p.name.id(), None))
            .collect();
        Ok(fill_report(
            "remove",
            changes,
            Vec::new(),
            &after.plan,
            Some(&before.plan),
        ))
    }

    /// Writes `question` as the request: into the lowest-ranked user part, or a new
    /// `010_request.user.md`. Nothing is sent to a model; `assemble` puts the request under
    /// `# User Request`.
    pub fn ask(&self, question: &str) -> Result<Report> {
        let question = question.trim();
        if question.is_empty() {
            return Err(Error::Invalid("the question is empty".into()));
        }
        let scan = self.dir.scan()?;
        let existing = scan
            .parts
            .iter()
            .find(|p| p.name.slot == Slot::User && p.name.state != State::Linked);
        let (name, path, action) = match existing {
            Some(part) => (part.name.clone(), part.path.clone(), "updated"),
            None => {
                let name = PartName {
                    rank: Rank::new(10)?,
                    kind: "request".into(),
                    slot: Slot::User,
                    state: State::Active,
                };
                let path = self.dir.path_for(&name);
                (name, path, "added")
            }
        };
        write_atomic(&path, format!("{question}\n").as_bytes())?;
        self.report("ask", vec![(action, name.id(), None)], Vec::new())
    }

    /// `e1`, `e2`, ... = the files of the active evidence parts in prompt order, then
    /// `EVIDENCE_COUNT`.
    pub fn env(&self) -> Result<EnvReport> {
        let scan = self.dir.scan()?;
        let mut variables = Vec::new();
        for part in scan
            .parts
            .iter()
            .filter(|p| p.name.slot == Slot::Evidence && p.name.state != State::Skipped)
        {
            let path = crate::ctxdir::absolute(&part.path);
            variables.push((
                format!("e{}", variables.len() + 1),
                path.to_string_lossy().into_owned(),
            ));
        }
        let count = variables.len();
        variables.push(("EVIDENCE_COUNT".into(), count.to_string()));
        Ok(EnvReport {
            kind: "ctx",
            variables,
        })
    }
}

/// Renames a part file to the file name of `state`.
pub(crate) fn set_state(part: &PartFile, state: State) -> Result<()> {
    let target = PartName {
        state,
        ..part.name.clone()
    };
    rename(&part.path, &part.path.with_file_name(target.file_name()))
}

#[cfg(test)]
mod tests {
    use super::shell_quote;

    #[test]
    fn quotes_only_what_needs_it() {
        assert_eq!(shell_quote("/a/b-c.md"), "/a/b-c.md");
        assert_eq!(shell_quote("/a b/it's"), r"'/a b/it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
