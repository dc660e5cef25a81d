//! `add`: turn selectors into evidence files (or `.link` symlinks).
//!
//! Every selector is parsed, expanded and read before anything is written, so a bad selector
//! anywhere in the list leaves the directory untouched.

use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};

use crate::ctx::Ctx;
use crate::ctxdir::{absolute, read_text, write_atomic};
use crate::error::{Error, Result};
use crate::part::{PartName, Rank, Slot, State, kind_from_path};
use crate::provenance::{Provenance, content_id, file_uri};
use crate::report::Report;
use crate::selector::{Selector, Span, SpanSpec, extract};

/// Options for [`Ctx::add`].
#[derive(Debug, Clone)]
pub struct AddOptions {
    /// Rank for the new parts; default 200 for evidence, 000 for system, 010 for user parts.
    pub rank: Option<Rank>,
    /// Slot of the new parts.
    pub slot: Slot,
    /// Add whole files as `.link` symlinks (always current) instead of copies.
    pub link: bool,
    /// Directory that relative selectors are resolved against (usually the current directory).
    pub base: PathBuf,
}

/// One file ready to be written.
struct Pending {
    name: PartName,
    file_text: String,
    link_target: Option<PathBuf>,
    key: (String, String),
}

impl Ctx {
    /// Adds evidence (or system/user parts) from selectors. Re-adding the same source and span
    /// refreshes that part in place instead of making a second one.
    pub fn add(&self, selectors: &[String], options: &AddOptions) -> Result<Report> {
        if selectors.is_empty() {
            return Err(Error::Invalid(
                "nothing to add: give at least one selector".into(),
            ));
        }
        if options.link && options.slot != Slot::Evidence {
            return Err(Error::Invalid("only evidence parts can be links".into()));
        }
        let rank = options.rank.unwrap_or(match options.slot {
            Slot::Evidence => Rank::new(200)?,
            Slot::System => Rank::new(0)?,
            Slot::User => Rank::new(10)?,
        });
        let scan = self.dir.scan()?;
        // (source uri, span) → existing part, so re-adding updates instead of duplicating.
        let mut existing: HashMap<(String, String), PartName> = HashMap::new();
        for file in &scan.parts {
            // Links and copies of the same file are separate parts.
            let is_link = file.name.state == State::Linked;
            if is_link == options.link
                && let Ok(part) = self.dir.load(file)
                && part.has_source
            {
                let key = (
                    part.provenance.source_uri.clone(),
                    part.provenance.span.to_string(),
                );
                existing.insert(key, file.name.clone());
            }
        }
        let mut taken: HashSet<String> = scan.parts.iter().map(|p| p.name.id()).collect();
        let mut pending: Vec<Pending> = Vec::new();
        let mut notes = Vec::new();
        for raw in selectors {
            let selector = Selector::parse(raw)?;
            if options.link && (selector.span != SpanSpec::All || !selector.tags.is_empty()) {
                return Err(Error::Selector {
                    selector: raw.clone(),
                    reason: "a link is always the whole, current file: no range or tags".into(),
                });
            }
            let own_dir = absolute(self.root());
            for path in selector.expand(&options.base)? {
                let full = absolute(&options.base.join(&path));
                // A broad glob (`**/*`) must not swallow the ctx directory itself.
                if selector.is_glob() && full.starts_with(&own_dir) {
                    continue;
                }
                let text = match read_text(&full) {
                    Ok(text) => text,
                    Err(error @ Error::NotText { .. }) if selector.is_glob() => {
                        notes.push(format!("skipped {error}"));
                        continue;
                    }
                    Err(error) => return Err(error),
                };
                let (span, content) = extract(&text, selector.span, raw)?;
                let display = path.to_string_lossy().into_owned();
                let provenance = Provenance {
                    source_uri: file_uri(&full),
                    path: display.clone(),
                    cid: content_id(content.as_bytes()),
                    span,
                    tags: selector.tags.clone(),
                };
                let key = (provenance.source_uri.clone(), span.to_string());
                if pending.iter().any(|p| p.key == key) {
                    continue;
                }
                let name = match existing.get(&key) {
                    Some(name) => name.clone(),
                    None => {
                        let kind = unique_kind(&display, span, rank, options.slot, &taken);
                        let state = if options.link {
                            State::Linked
                        } else {
                            State::Active
                        };
                        let name = PartName {
                            rank,
                            kind,
                            slot: options.slot,
                            state,
                        };
                        taken.insert(name.id());
                        name
                    }
                };
                let link_target = options
                    .link
                    .then(|| relative_path(&absolute(&self.folder_for(Slot::Evidence)), &full));
                let file_text = format!("{}{content}", provenance.header_line());
                pending.push(Pending {
                    name,
                    file_text,
                    link_target,
                    key,
                });
            }
        }
        let mut changes = Vec::new();
        for item in pending {
            let path = self.dir.path_for(&item.name);
            let action = write_part(&path, &item)?;
            changes.push((action, item.name.id(), None));
        }
        self.report("add", changes, notes)
    }
}

/// Writes one part; returns what happened.
fn write_part(path: &Path, item: &Pending) -> Result<&'static str> {
    if let Some(target) = &item.link_target {
        if std::fs::read_link(path).is_ok_and(|current| &current == target) {
            return Ok("unchanged");
        }
        symlink(target, path)?;
        return Ok("linked");
    }
    match std::fs::read_to_string(path) {
        Ok(current) if current == item.file_text => Ok("unchanged"),
        Ok(_) => {
            write_atomic(path, item.file_text.as_bytes())?;
            Ok("updated")
        }
        Err(_) => {
            write_atomic(path, item.file_text.as_bytes())?;
            Ok("added")
        }
    }
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> Result<()> {
    let temporary = link.with_extension(format!("link.tmp{}", std::process::id()));
    std::os::unix::fs::symlink(target, &temporary)
        .and_then(|()| std::fs::rename(&temporary, link))
        .map_err(|error| {
            let _ = std::fs::remove_file(&temporary);
            Error::io("link", link, error)
        })
}

#[cfg(not(unix))]
fn symlink(_target: &Path, link: &Path) -> Result<()> {
    Err(Error::Invalid(format!(
        "cannot create {}: link parts need a Unix system",
        link.display()
    )))
}

/// A kind not yet used at this rank and slot: `src_x_rs`, `src_x_rs_l3_9`, `src_x_rs_2`...
fn unique_kind(path: &str, span: Span, rank: Rank, slot: Slot, taken: &HashSet<String>) -> String {
    let mut base = kind_from_path(path);
    let suffix = span.name_suffix();
    if !suffix.is_empty() {
        base = format!("{base}_{suffix}");
    }
    let id = |kind: &str| format!("{rank}_{kind}.{}", slot.name());
    if !taken.contains(&id(&base)) {
        return base;
    }
    (2..)
        .map(|n| format!("{base}_{n}"))
        .find(|kind| !taken.contains(&id(kind)))
        .unwrap_or(base)
}

/// `to` relative to the directory `from` (both absolute), e.g. `../../src/x.rs`.
fn relative_path(from: &Path, to: &Path) -> PathBuf {
    let from: Vec<Component> = from.components().collect();
    let to_parts: Vec<Component> = to.components().collect();
    let common = from
        .iter()
        .zip(&to_parts)
        .take_while(|(a, b)| a == b)
        .count();
    let mut relative = PathBuf::new();
    for _ in common..from.len() {
        relative.push("..");
    }
    for part in &to_parts[common..] {
        relative.push(part.as_os_str());
    }
    relative
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_walk_up_then_down() {
        assert_eq!(
            relative_path(Path::new("/w/ctx/evidence"), Path::new("/w/src/x.rs")),
            PathBuf::from("../../src/x.rs")
        );
        assert_eq!(
            relative_path(Path::new("/w"), Path::new("/w/a")),
            PathBuf::from("a")
        );
    }

    #[test]
    fn kinds_are_made_unique() {
        let rank = Rank::new(200).unwrap();
        let mut taken = HashSet::new();
        taken.insert("200_a_rs.evidence".to_owned());
        assert_eq!(
            unique_kind("a.rs", Span::All, rank, Slot::Evidence, &taken),
            "a_rs_2"
        );
        assert_eq!(
            unique_kind("a.rs", Span::Lines(3, 9), rank, Slot::Evidence, &taken),
            "a_rs_l3_9"
        );
    }
}
