//! Staleness: has a part's source changed since it was added? `status` reports it; `rebase`
//! renumbers ranks and re-finds ranges whose text moved in the source, by content, instead of
//! silently taking whatever now sits at the old line numbers.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::ctx::Ctx;
use crate::ctxdir::{CtxDir, LoadedPart, PartFile, read_text, rename, write_atomic};
use crate::error::{Error, Result};
use crate::part::{PartName, Rank, State};
use crate::plan::{Counted, PartStatus, Plan, parallel_map};
use crate::provenance::{Provenance, content_id, uri_path};
use crate::report::{Report, Summary};
use crate::selector::{Span, extract, line_starts};

/// How a part relates to its source now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum Freshness {
    /// Same content at the same place (links are always current).
    Current,
    /// Written by hand in the ctx directory: no source to compare.
    NoSource,
    /// The part file's content no longer matches its recorded cid (edited in place).
    Edited,
    /// The source file is gone.
    Missing,
    /// The same text is still in the source, at another place.
    Moved {
        /// Where it is now.
        span: Span,
    },
    /// The text is no longer in the source.
    Changed,
}

impl Freshness {
    /// Whether `status` calls the part stale.
    pub fn is_stale(&self) -> bool {
        !matches!(self, Self::Current | Self::NoSource)
    }

    /// What `status` shows (`current`, `stale: source changed`, ...).
    pub fn label(&self) -> String {
        match self {
            Self::Current => "current".into(),
            Self::NoSource => "-".into(),
            Self::Edited => "stale: edited in ctx".into(),
            Self::Missing => "stale: source missing".into(),
            Self::Moved { span } => format!("stale: moved to {span} (run rebase)"),
            Self::Changed => "stale: source changed".into(),
        }
    }
}

/// Compares a loaded part with its source. A part whose text equals its span of the source is
/// current; otherwise it was edited in the ctx directory (its text no longer matches its
/// recorded content id), or the source moved, changed or is gone. The source is read only
/// where `dir` allows ([`CtxDir::check`]): a header can name any file.
pub fn freshness(part: &LoadedPart, dir: &CtxDir) -> Result<Freshness> {
    if part.file.name.state == State::Linked {
        return Ok(Freshness::Current);
    }
    if !part.has_source {
        return Ok(Freshness::NoSource);
    }
    let provenance = &part.provenance;
    let Some(path) = uri_path(&provenance.source_uri) else {
        return Ok(Freshness::Missing);
    };
    dir.check(&path)?;
    Ok(compare(part, &path))
}

/// [`freshness`] of a part with a source at `path`.
fn compare(part: &LoadedPart, path: &std::path::Path) -> Freshness {
    let provenance = &part.provenance;
    // The usual case, a whole file unchanged, compares bytes without decoding them.
    if provenance.span == Span::All
        && std::fs::read(path).is_ok_and(|bytes| bytes == part.body.as_bytes())
    {
        return Freshness::Current;
    }
    let Ok(source) = read_text(path) else {
        return Freshness::Missing;
    };
    let spec = match provenance.span {
        Span::All => crate::selector::SpanSpec::All,
        Span::Lines(start, end) => crate::selector::SpanSpec::Lines {
            start,
            end: Some(end),
        },
        Span::Bytes(start, end) => crate::selector::SpanSpec::Bytes {
            start,
            end: Some(end),
        },
    };
    if let Ok((_, text)) = extract(&source, spec, "")
        && text == part.body
    {
        return Freshness::Current;
    }
    // Hashed only now: the usual part equals its source, and `assemble` checks every part.
    if content_id(part.body.as_bytes()) != provenance.cid {
        return Freshness::Edited;
    }
    match refind(&source, &part.body, provenance.span) {
        Some(span) => Freshness::Moved { span },
        None => Freshness::Changed,
    }
}

/// Where `body` sits in `source` now, nearest to its old place; line spans must start at a
/// line start.
fn refind(source: &str, body: &str, old: Span) -> Option<Span> {
    if body.is_empty() || old == Span::All {
        return None;
    }
    let starts = line_starts(source);
    let old_offset = match old {
        Span::Lines(start, _) => starts.get(start - 1).copied().unwrap_or(source.len()),
        Span::Bytes(start, _) => start,
        Span::All => 0,
    };
    let finder = memchr::memmem::Finder::new(body.as_bytes());
    let best = finder
        .find_iter(source.as_bytes())
        .filter(|&at| {
            !matches!(old, Span::Lines(..)) || at == 0 || source.as_bytes()[at - 1] == b'\n'
        })
        .min_by_key(|&at| at.abs_diff(old_offset))?;
    Some(match old {
        Span::Lines(..) => {
            let start = starts.partition_point(|&s| s <= best);
            let lines = line_starts(body).len();
            Span::Lines(start, start + lines - 1)
        }
        _ => Span::Bytes(best, best + body.len()),
    })
}

/// A part that goes into the prompt although `status` calls it stale.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StalePart {
    /// `<rank>_<kind>.<slot>`.
    pub name: String,
    /// How it relates to its source now.
    #[serde(flatten)]
    pub freshness: Freshness,
}

/// The included parts of a snapshot that `status` calls stale, in prompt order. Sources are
/// read on all cores; one outside the root `dir` was opened within refuses them all.
pub(crate) fn stale_included(
    dir: &CtxDir,
    counted: &Counted,
    plan: &Plan,
) -> Result<Vec<StalePart>> {
    let included: Vec<(&LoadedPart, &str)> = counted
        .parts
        .iter()
        .zip(&plan.parts)
        .filter(|(_, planned)| planned.status == PartStatus::Active)
        .map(|(loaded, planned)| (loaded, planned.name.as_str()))
        .collect();
    let checked = parallel_map(&included, |(loaded, name)| {
        let freshness = freshness(loaded, dir)?;
        Ok(freshness.is_stale().then(|| StalePart {
            name: (*name).to_owned(),
            freshness,
        }))
    });
    match checked {
        Ok(stale) => Ok(stale.into_iter().flatten().collect()),
        Err(refused @ Error::OutsideRoot(_)) => Err(refused),
        // Otherwise only a panicking worker fails, and then nothing is reported.
        Err(_) => Ok(Vec::new()),
    }
}

/// One row of `status`.
#[derive(Debug, Clone, Serialize)]
pub struct StatusPart {
    /// `<rank>_<kind>.<slot>`.
    pub name: String,
    /// active, skipped or linked.
    pub state: State,
    /// In the prompt, off, or dropped by the budget.
    pub status: PartStatus,
    /// Bytes of its section.
    pub bytes: u64,
    /// Tokens of its section.
    pub tokens: u64,
    /// Relation to its source.
    pub freshness: Freshness,
}

/// Output of [`Ctx::status`].
#[derive(Debug, Clone, Serialize)]
pub struct StatusReport {
    /// Always `"ctx"`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Every part.
    pub parts: Vec<StatusPart>,
    /// Names of stale parts.
    pub stale: Vec<String>,
    /// Files that look like parts but are not, with the reason.
    pub ignored: Vec<(String, String)>,
    /// Running total.
    pub total: Summary,
}

impl std::fmt::Display for StatusReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for part in &self.parts {
            let state = match (part.state, part.status) {
                (State::Linked, _) => "linked",
                (_, PartStatus::Skipped) => "off",
                (_, PartStatus::DroppedOverBudget) => "dropped",
                _ => "on",
            };
            writeln!(
                f,
                "{:<7} {:<44} {:>9} bytes {:>8} tokens  {}",
                state,
                part.name,
                part.bytes,
                part.tokens,
                part.freshness.label()
            )?;
        }
        for (file, reason) in &self.ignored {
            writeln!(f, "ignored {file}: {reason}")?;
        }
        if !self.stale.is_empty() {
            writeln!(
                f,
                "{} stale part(s): {}",
                self.stale.len(),
                self.stale.join(", ")
            )?;
        }
        writeln!(f, "{}", self.total)
    }
}

impl Ctx {
    /// Every part with its state, cost and freshness.
    pub fn status(&self) -> Result<StatusReport> {
        let snapshot = self.snapshot()?;
        let mut parts = Vec::new();
        let mut stale = Vec::new();
        for (loaded, planned) in snapshot.counted.parts.iter().zip(&snapshot.plan.parts) {
            let fresh = freshness(loaded, &self.dir)?;
            if fresh.is_stale() {
                stale.push(planned.name.clone());
            }
            parts.push(StatusPart {
                name: planned.name.clone(),
                state: loaded.file.name.state,
                status: planned.status,
                bytes: planned.bytes,
                tokens: planned.tokens,
                freshness: fresh,
            });
        }
        Ok(StatusReport {
            kind: "ctx",
            parts,
            stale,
            ignored: snapshot.counted.ignored.clone(),
            total: Summary::of(&snapshot.plan),
        })
    }

    /// Renumbers ranks within each band (000–099, 100–199, ...) to even steps, keeping order,
    /// and moves the recorded span of parts whose text moved in the source. Parts whose text is
    /// gone from the source are kept as they are and reported.
    pub fn rebase(&self) -> Result<Report> {
        let scan = self.dir.scan()?;
        let mut changes = Vec::new();
        let mut notes = Vec::new();
        for file in &scan.parts {
            let part = self.dir.load(file)?;
            match freshness(&part, &self.dir)? {
                Freshness::Moved { span } => {
                    let provenance = Provenance {
                        span,
                        ..part.provenance.clone()
                    };
                    let text = format!("{}{}", provenance.header_line(), part.body);
                    write_atomic(&file.path, text.as_bytes())?;
                    let detail = format!("{} → {span}", part.provenance.span);
                    changes.push(("refound", file.name.id(), Some(detail)));
                }
                Freshness::Changed => notes.push(format!(
                    "{}: its text is no longer in {}; kept as added (re-add to refresh)",
                    file.name.id(),
                    part.provenance.path
                )),
                Freshness::Missing => notes.push(format!(
                    "{}: source {} is missing; kept as added",
                    file.name.id(),
                    part.provenance.path
                )),
                Freshness::Edited => notes.push(format!(
                    "{}: edited in the ctx directory; left alone",
                    file.name.id()
                )),
                Freshness::Current | Freshness::NoSource => {}
            }
        }
        for (part, rank) in renumbering(&scan.parts)? {
            let renamed = PartName {
                rank,
                ..part.name.clone()
            };
            rename(&part.path, &part.path.with_file_name(renamed.file_name()))?;
            changes.push((
                "renumbered",
                renamed.id(),
                Some(format!("was {}", part.name.id())),
            ));
        }
        self.report("rebase", changes, notes)
    }
}

/// New ranks: within each band the distinct ranks, in order, get `band + i·step` with step 10
/// (or 100 / count when a band has more than 10 distinct ranks). The list is ordered so that no
/// rename lands on a name not yet moved away: moves down go first in ascending order, then
/// moves up in descending order.
fn renumbering(parts: &[PartFile]) -> Result<Vec<(PartFile, Rank)>> {
    let mut bands: BTreeMap<u16, Vec<u16>> = BTreeMap::new();
    for part in parts {
        let rank = part.name.rank.get();
        let ranks = bands.entry(rank / 100).or_default();
        if !ranks.contains(&rank) {
            ranks.push(rank);
        }
    }
    let mut mapping: BTreeMap<u16, u16> = BTreeMap::new();
    for (band, mut ranks) in bands {
        ranks.sort_unstable();
        let step = if ranks.len() <= 10 {
            10
        } else {
            (100 / ranks.len()) as u16
        };
        for (index, rank) in ranks.into_iter().enumerate() {
            mapping.insert(rank, band * 100 + index as u16 * step);
        }
    }
    let mut down = Vec::new();
    let mut up = Vec::new();
    for part in parts {
        let old = part.name.rank.get();
        let new = mapping.get(&old).copied().unwrap_or(old);
        if new < old {
            down.push((part.clone(), Rank::new(new)?));
        } else if new > old {
            up.push((part.clone(), Rank::new(new)?));
        }
    }
    down.sort_by_key(|(p, _)| p.name.rank);
    up.sort_by_key(|(p, _)| std::cmp::Reverse(p.name.rank));
    down.extend(up);
    Ok(down)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refinds_moved_lines_nearest_to_the_old_place() {
        let source = "a\nb\nX\nY\nc\nX\nY\n";
        // The block was at lines 2-3 ("X\nY\n" was there); it now occurs at 3-4 and 6-7.
        assert_eq!(
            refind(source, "X\nY\n", Span::Lines(2, 3)),
            Some(Span::Lines(3, 4))
        );
        assert_eq!(
            refind(source, "X\nY\n", Span::Lines(7, 8)),
            Some(Span::Lines(6, 7))
        );
        assert_eq!(refind(source, "Z\n", Span::Lines(1, 1)), None);
        // Line spans only match at line starts.
        assert_eq!(refind("aX\n", "X\n", Span::Lines(1, 1)), None);
        assert_eq!(
            refind("aX\n", "X", Span::Bytes(0, 1)),
            Some(Span::Bytes(1, 2))
        );
    }

    #[test]
    fn renumbering_keeps_order_and_avoids_collisions() {
        let parts: Vec<PartFile> = [
            "000_p.system.md",
            "005_q.user.md",
            "150_a.evidence.md",
            "199_b.evidence.md",
            "199_c.evidence.md",
        ]
        .iter()
        .map(|name| PartFile {
            name: PartName::parse(name).unwrap().unwrap(),
            path: name.into(),
        })
        .collect();
        let moves: Vec<(String, u16)> = renumbering(&parts)
            .unwrap()
            .into_iter()
            .map(|(p, r)| (p.name.id(), r.get()))
            .collect();
        assert_eq!(
            moves,
            [
                ("150_a.evidence".to_owned(), 100),
                ("199_b.evidence".to_owned(), 110),
                ("199_c.evidence".to_owned(), 110),
                ("005_q.user".to_owned(), 10),
            ]
        );
    }
}
