//! `add`: turn selectors into evidence files (or `.link` symlinks).
//!
//! Every selector is parsed, expanded and read before anything is written, so a bad selector
//! anywhere in the list leaves the directory untouched.

use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};

use crate::coverage::{overlaps, uncovered};
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
    /// Let globs descend through symbolic links to directories (off by default, so a link to
    /// `/etc` in the tree does not pull `/etc` in).
    pub follow: bool,
}

/// One file ready to be written.
struct Pending {
    name: PartName,
    file_text: String,
    link_target: Option<PathBuf>,
    key: (String, String),
}

/// A span of a source file the ctx holds (or will hold): its part and where it came from.
struct Held {
    span: Span,
    part: String,
}

/// State of one `add`: what exists, what is about to be written, what to tell.
struct Adding<'a> {
    ctx: &'a Ctx,
    options: &'a AddOptions,
    rank: Rank,
    /// (source uri, span) → existing part, so re-adding updates instead of duplicating.
    existing: HashMap<(String, String), PartName>,
    /// Source uri → the spans of it that parts hold, existing and pending.
    held: HashMap<String, Vec<Held>>,
    taken: HashSet<String>,
    pending: Vec<Pending>,
    notes: Vec<String>,
}

impl Ctx {
    /// Adds evidence (or system/user parts) from selectors. Re-adding the same source and span
    /// refreshes that part in place instead of making a second one. A glob adds only what the
    /// ctx does not hold yet: of a file with ranges already in parts, the rest of it; of a file
    /// held whole, nothing. Named files and ranges are added as asked, with a note when they
    /// overlap a part.
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
        let mut adding = Adding {
            ctx: self,
            options,
            rank,
            existing: HashMap::new(),
            held: HashMap::new(),
            taken: scan.parts.iter().map(|p| p.name.id()).collect(),
            pending: Vec::new(),
            notes: Vec::new(),
        };
        for file in &scan.parts {
            let Ok(part) = self.dir.load(file) else {
                continue;
            };
            if !part.has_source {
                continue;
            }
            let uri = part.provenance.source_uri.clone();
            adding.held.entry(uri.clone()).or_default().push(Held {
                span: part.provenance.span,
                part: file.name.id(),
            });
            // Links and copies of the same file are separate parts.
            if (file.name.state == State::Linked) == options.link {
                let key = (uri, part.provenance.span.to_string());
                adding.existing.insert(key, file.name.clone());
            }
        }
        let mut parsed = Vec::with_capacity(selectors.len());
        for raw in selectors {
            let selector = Selector::parse(raw)?;
            if options.link && (selector.span != SpanSpec::All || !selector.tags.is_empty()) {
                return Err(Error::Selector {
                    selector: raw.clone(),
                    reason: "a link is always the whole, current file: no range or tags".into(),
                });
            }
            parsed.push((raw, selector));
        }
        // Named files first: a glob then adds only what they and the existing parts leave.
        parsed.sort_by_key(|(_, selector)| selector.is_glob());
        for (raw, selector) in &parsed {
            adding.selector(raw, selector)?;
        }
        let Adding { pending, notes, .. } = adding;
        let mut changes = Vec::new();
        for item in pending {
            let path = self.dir.path_for(&item.name);
            let action = write_part(&path, &item)?;
            changes.push((action, item.name.id(), None));
        }
        self.report("add", changes, notes)
    }
}

impl Adding<'_> {
    fn selector(&mut self, raw: &str, selector: &Selector) -> Result<()> {
        let own_dir = absolute(self.ctx.root());
        for path in selector.expand(&self.options.base, self.options.follow)? {
            let full = absolute(&self.options.base.join(&path));
            // A broad glob (`**/*`) must not swallow the ctx directory itself.
            if selector.is_glob() && full.starts_with(&own_dir) {
                continue;
            }
            let text = match read_text(&full) {
                Ok(text) => text,
                Err(error @ Error::NotText { .. }) if selector.is_glob() => {
                    self.notes.push(format!("skipped {error}"));
                    continue;
                }
                Err(error) => return Err(error),
            };
            let display = path.to_string_lossy().into_owned();
            let uri = file_uri(&full);
            // A file this kind of part already holds whole is refreshed in place, as named files
            // are; of a file held in ranges (or by the other kind) a glob adds the rest.
            let held_whole = self
                .existing
                .contains_key(&(uri.clone(), Span::All.to_string()));
            let spans = match self.held.get(&uri) {
                Some(held) if selector.is_glob() && !held_whole && !held.is_empty() => {
                    let (rest, note) = rest_of(&text, &display, held, self.options.link);
                    self.notes.push(note);
                    rest
                }
                _ => vec![selector.span],
            };
            for span in spans {
                self.file_span(raw, selector, &text, &display, &full, span)?;
            }
        }
        Ok(())
    }

    fn file_span(
        &mut self,
        raw: &str,
        selector: &Selector,
        text: &str,
        display: &str,
        full: &Path,
        spec: SpanSpec,
    ) -> Result<()> {
        let (span, content) = extract(text, spec, raw)?;
        let provenance = Provenance {
            source_uri: file_uri(full),
            path: display.to_owned(),
            cid: content_id(content.as_bytes()),
            span,
            tags: selector.tags.clone(),
        };
        let key = (provenance.source_uri.clone(), span.to_string());
        if self.pending.iter().any(|p| p.key == key) {
            return Ok(());
        }
        let name = match self.existing.get(&key) {
            Some(name) => name.clone(),
            None => {
                let kind = unique_kind(display, span, self.rank, self.options.slot, &self.taken);
                let state = if self.options.link {
                    State::Linked
                } else {
                    State::Active
                };
                let name = PartName {
                    rank: self.rank,
                    kind,
                    slot: self.options.slot,
                    state,
                };
                self.taken.insert(name.id());
                name
            }
        };
        let id = name.id();
        let held = self.held.entry(key.0.clone()).or_default();
        let overlapping: Vec<&str> = held
            .iter()
            .filter(|other| other.part != id && overlaps(text, other.span, span))
            .map(|other| other.part.as_str())
            .collect();
        if !overlapping.is_empty() {
            self.notes.push(format!(
                "{display} ({span}) overlaps {}: the prompt holds that text twice (switch one off with `rlm ctx toggle off NAME`)",
                overlapping.join(", ")
            ));
        }
        held.push(Held { span, part: id });
        let link_target = self
            .options
            .link
            .then(|| relative_path(&absolute(&self.ctx.folder_for(Slot::Evidence)), full));
        let file_text = format!("{}{content}", provenance.header_line());
        self.pending.push(Pending {
            name,
            file_text,
            link_target,
            key,
        });
        Ok(())
    }
}

/// What a glob adds of a file whose spans parts already hold — the rest of it, nothing for a
/// link — and the note that says so.
fn rest_of(text: &str, display: &str, held: &[Held], link: bool) -> (Vec<SpanSpec>, String) {
    let holders: Vec<String> = held
        .iter()
        .map(|held| match held.span {
            Span::All => held.part.clone(),
            span => format!("{} ({span})", held.part),
        })
        .collect();
    let spans: Vec<Span> = held.iter().map(|held| held.span).collect();
    let rest = if link {
        Vec::new()
    } else {
        uncovered(text, &spans)
    };
    let what = if rest.is_empty() {
        "skipped"
    } else {
        "added only the rest of"
    };
    let note = format!("{what} {display}: already in {}", holders.join(", "));
    (rest, note)
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

    /// A project with `src/flow.sh` (7 lines) and a ctx directory.
    fn project() -> (tempfile::TempDir, Ctx, AddOptions) {
        let work = tempfile::tempdir().unwrap();
        std::fs::create_dir(work.path().join("src")).unwrap();
        std::fs::write(
            work.path().join("src/flow.sh"),
            "deploy() {\n  echo go\n}\n\nbuild() {\n  make\n}\n",
        )
        .unwrap();
        let options = crate::InitOptions {
            tokenizer: rlm_context::tokens::Tokenizer::Approx,
            ..crate::InitOptions::default()
        };
        let (ctx, _) = Ctx::init(&work.path().join("ctx"), options).unwrap();
        let add = AddOptions {
            rank: None,
            slot: Slot::Evidence,
            link: false,
            base: work.path().into(),
            follow: false,
        };
        (work, ctx, add)
    }

    fn added(report: &Report) -> Vec<(&str, &str)> {
        report
            .changes
            .iter()
            .map(|change| (change.action, change.part.as_str()))
            .collect()
    }

    #[test]
    fn a_glob_adds_only_what_a_range_left_of_a_file() {
        let (_work, ctx, options) = project();
        let critical = AddOptions {
            rank: Some(Rank::new(100).unwrap()),
            ..options.clone()
        };
        ctx.add(&["src/flow.sh::1,3".to_owned()], &critical)
            .unwrap();
        let report = ctx.add(&["src/*.sh".to_owned()], &options).unwrap();
        assert_eq!(added(&report), [("added", "200_src_flow_sh_l5_7.evidence")]);
        assert_eq!(
            report.notes,
            [
                "added only the rest of src/flow.sh: already in 100_src_flow_sh_l1_3.evidence (lines:1-3)"
            ]
        );
        ctx.assemble().unwrap();
        let prompt = std::fs::read_to_string(ctx.root().join("build/prompt.mdctx")).unwrap();
        assert_eq!(prompt.matches("echo go").count(), 1);
        assert_eq!(prompt.matches("make").count(), 1);

        // Again: nothing left to add.
        let report = ctx.add(&["src/*.sh".to_owned()], &options).unwrap();
        assert_eq!(added(&report), []);
        assert!(report.notes[0].starts_with("skipped src/flow.sh: already in "));

        // Named, the whole file is added as asked, with a note about the overlap.
        let report = ctx.add(&["src/flow.sh".to_owned()], &options).unwrap();
        assert_eq!(added(&report), [("added", "200_src_flow_sh.evidence")]);
        assert!(
            report.notes[0]
                .contains("overlaps 100_src_flow_sh_l1_3.evidence, 200_src_flow_sh_l5_7.evidence"),
            "{:?}",
            report.notes
        );
    }

    #[test]
    fn a_glob_after_a_range_in_the_same_call_adds_the_rest() {
        let (_work, ctx, options) = project();
        let selectors = ["src/*".to_owned(), "src/flow.sh::5,7".to_owned()];
        let report = ctx.add(&selectors, &options).unwrap();
        assert_eq!(
            added(&report),
            [
                ("added", "200_src_flow_sh_l5_7.evidence"),
                ("added", "200_src_flow_sh_l1_3.evidence")
            ]
        );
    }

    #[cfg(unix)]
    #[test]
    fn globs_follow_directory_links_only_when_asked() {
        let (work, ctx, options) = project();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.conf"), "password = hunter2\n").unwrap();
        std::fs::write(work.path().join("src/app.conf"), "port = 8080\n").unwrap();
        std::os::unix::fs::symlink(outside.path(), work.path().join("src/etc")).unwrap();

        let report = ctx.add(&["**/*.conf".to_owned()], &options).unwrap();
        assert_eq!(added(&report), [("added", "200_src_app_conf.evidence")]);

        // Named literally, the linked directory is what the user asked for.
        let report = ctx.add(&["src/etc/*.conf".to_owned()], &options).unwrap();
        assert_eq!(
            added(&report),
            [("added", "200_src_etc_secret_conf.evidence")]
        );

        let (work, ctx, options) = project();
        std::fs::write(work.path().join("src/app.conf"), "port = 8080\n").unwrap();
        std::os::unix::fs::symlink(outside.path(), work.path().join("src/etc")).unwrap();
        let follow = AddOptions {
            follow: true,
            ..options
        };
        let report = ctx.add(&["**/*.conf".to_owned()], &follow).unwrap();
        assert_eq!(
            added(&report),
            [
                ("added", "200_src_app_conf.evidence"),
                ("added", "200_src_etc_secret_conf.evidence")
            ]
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
