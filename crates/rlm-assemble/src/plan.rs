//! The assembly plan (`ctxplan.json`): which parts go in, in what order, at what cost, and the
//! budget fitting rules.
//!
//! Fitting: the frame, every active system and user part and every active part ranked 000–199
//! must fit, or the build fails naming the largest of them. The remaining active parts are taken
//! in rank order; a part that does not fit in what is left is dropped and reported, and later
//! (smaller) parts still get their chance.

use rlm_context::tokens::Tokenizer;
use serde::Serialize;
use sha2::{Digest as _, Sha256};

use crate::cache::{TokenCache, cache_key};
use crate::ctxdir::{CtxDir, LoadedPart, Scan};
use crate::error::{Error, Result};
use crate::fresh::StalePart;
use crate::part::{Rank, Slot, State};
use crate::render::{FORMAT_VERSION, ORDER_RULE, group_heading, header, section};

/// Whether a part is in the built prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PartStatus {
    /// Included.
    Active,
    /// Switched off (`.skip`).
    Skipped,
    /// Active but left out because it did not fit the budget.
    DroppedOverBudget,
}

/// One part in the plan.
#[derive(Debug, Clone, Serialize)]
pub struct PlanPart {
    /// Rank, three digits.
    pub rank: Rank,
    /// `<rank>_<kind>.<slot>`.
    pub name: String,
    /// The kind from the file name.
    pub kind: String,
    /// Prompt slot (`role` in JSON, as on the command line).
    #[serde(rename = "role")]
    pub slot: Slot,
    /// Whether the part is a `.link`.
    pub linked: bool,
    /// Source URI.
    pub uri: String,
    /// Path as shown in the heading.
    pub path: String,
    /// `sha256:` of the content.
    pub cid: String,
    /// Span of the source.
    pub span: String,
    /// Tags.
    pub tags: Vec<String>,
    /// Bytes of the rendered section.
    pub bytes: u64,
    /// Tokens of the rendered section.
    pub tokens: u64,
    /// In, off, or dropped.
    pub status: PartStatus,
    /// Why it was dropped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Byte offset of the section in `prompt.mdctx` (included parts only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
}

/// Totals over the plan.
#[derive(Debug, Clone, Serialize)]
pub struct Totals {
    /// All parts.
    pub parts: usize,
    /// Parts in the prompt.
    pub included: usize,
    /// Parts switched off.
    pub skipped: usize,
    /// Parts dropped to fit the budget.
    pub dropped: usize,
    /// Bytes of `prompt.mdctx`.
    pub bytes: u64,
    /// Tokens of the prompt (frame plus included parts).
    pub tokens: u64,
    /// Tokens of the header and group headings.
    pub frame_tokens: u64,
    /// The budget, if any.
    pub budget: Option<u64>,
}

/// The plan written as `ctxplan.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// Format version.
    pub version: u32,
    /// Flow id from `ctx.json`.
    pub flow_id: String,
    /// The order rule.
    pub order: &'static str,
    /// Tokenizer used for counts.
    pub tokenizer: &'static str,
    /// Parts in document order (skipped and dropped ones where they would have been).
    pub parts: Vec<PlanPart>,
    /// Totals.
    pub totals: Totals,
    /// sha256 over the included parts' names and content ids, in order.
    pub ctx_digest: String,
    /// Included parts whose source has changed since they were added (what `status` calls
    /// stale); filled by `plan` and `assemble`, which also warn about them.
    pub stale: Vec<StalePart>,
    /// Set when the required parts alone exceed the budget.
    #[serde(skip)]
    pub over_budget: Option<OverBudget>,
}

/// The required parts alone exceed the budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverBudget {
    /// Tokens the required parts need, frame included.
    pub required: u64,
    /// The budget.
    pub budget: u64,
    /// The largest required parts, enough to fit when dropped, as `name (N tokens)`.
    pub suggestions: Vec<String>,
}

impl From<OverBudget> for Error {
    fn from(over: OverBudget) -> Self {
        Self::OverBudget {
            required: over.required,
            budget: over.budget,
            suggestions: over.suggestions,
        }
    }
}

/// Parts loaded and counted, ready to plan.
#[derive(Debug)]
pub struct Counted {
    /// Loaded parts in document order.
    pub parts: Vec<LoadedPart>,
    /// Rendered sections, same order.
    pub sections: Vec<String>,
    /// Token counts of the sections.
    pub tokens: Vec<u64>,
    /// Files that look like parts but are not, with the reason.
    pub ignored: Vec<(String, String)>,
}

/// Loads every part of `dir` and counts its tokens through `cache`. Reading, rendering and
/// hashing are spread over the available cores; the order of the result does not depend on it.
pub fn load_and_count(dir: &CtxDir, scan: &Scan, cache: &mut TokenCache) -> Result<Counted> {
    let prepared = parallel_map(&scan.parts, |file| {
        let part = dir.load(file)?;
        let text = section(&part);
        let key = cache_key(&text);
        Ok((part, text, key))
    })?;
    let mut prepared = prepared;
    prepared.sort_by_cached_key(|(p, _, _)| (p.file.name.slot, p.file.name.rank, p.file.name.id()));
    let mut parts = Vec::with_capacity(prepared.len());
    let mut sections = Vec::with_capacity(prepared.len());
    let mut keys = Vec::with_capacity(prepared.len());
    for (part, text, key) in prepared {
        parts.push(part);
        sections.push(text);
        keys.push(key);
    }
    let texts: Vec<&str> = sections.iter().map(String::as_str).collect();
    let tokens = cache.count_keyed(&texts, &keys);
    Ok(Counted {
        parts,
        sections,
        tokens,
        ignored: scan.ignored.clone(),
    })
}

/// Applies `work` to every item on all cores, keeping input order; the first error wins.
pub(crate) fn parallel_map<T: Sync, R: Send>(
    items: &[T],
    work: impl Fn(&T) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if threads < 2 || items.len() < 64 {
        return items.iter().map(&work).collect();
    }
    let chunk = items.len().div_ceil(threads);
    let work = &work;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|run| scope.spawn(move || run.iter().map(work).collect::<Result<Vec<R>>>()))
            .collect();
        let mut all = Vec::with_capacity(items.len());
        for handle in handles {
            match handle.join() {
                Ok(run) => all.extend(run?),
                // Only a bug can panic here; surface it as an error instead of aborting.
                Err(_) => return Err(Error::Invalid("a worker thread panicked".into())),
            }
        }
        Ok(all)
    })
}

fn is_included(part: &LoadedPart) -> bool {
    part.file.name.state != State::Skipped
}

fn is_required(part: &LoadedPart) -> bool {
    part.file.name.slot != Slot::Evidence || part.file.name.rank.get() < Rank::REQUIRED_BELOW
}

/// The frame text (header and group headings) for the parts that will be included.
fn frame_text(flow_id: &str, counted: &Counted) -> String {
    let mut frame = header(flow_id);
    for slot in [Slot::System, Slot::User] {
        let present = counted
            .parts
            .iter()
            .any(|p| p.file.name.slot == slot && is_included(p));
        if present && let Some(heading) = group_heading(slot) {
            frame.push_str(heading);
        }
    }
    frame
}

/// Builds the plan for `budget` (None: no limit).
pub fn plan(dir: &CtxDir, counted: &Counted, cache: &mut TokenCache, budget: Option<u64>) -> Plan {
    let tokenizer: Tokenizer = cache.tokenizer();
    let frame = frame_text(&dir.config.flow_id, counted);
    let frame_tokens = cache.count(&[&frame])[0];
    let required: u64 = frame_tokens
        + counted
            .parts
            .iter()
            .zip(&counted.tokens)
            .filter(|(p, _)| is_included(p) && is_required(p))
            .map(|(_, t)| *t)
            .sum::<u64>();
    let mut over_budget = None;
    let mut statuses: Vec<(PartStatus, Option<String>)> = Vec::new();
    let mut room = BudgetRoom::new(budget, required);
    for (part, &tokens) in counted.parts.iter().zip(&counted.tokens) {
        let status = if !is_included(part) {
            (PartStatus::Skipped, None)
        } else if is_required(part) {
            (PartStatus::Active, None)
        } else {
            match room.take(tokens) {
                Ok(()) => (PartStatus::Active, None),
                Err(short) => (PartStatus::DroppedOverBudget, Some(short.to_string())),
            }
        };
        statuses.push(status);
    }
    let used = room.used();
    if let Some(limit) = budget
        && required > limit
    {
        over_budget = Some(over_budget_error(counted, required, limit));
    }
    let mut parts = Vec::with_capacity(counted.parts.len());
    let mut offset = Offsets {
        next: header(&dir.config.flow_id).len() as u64,
        opened: Vec::new(),
    };
    let mut digest = Sha256::new();
    let mut bytes = frame.len() as u64;
    for ((part, (status, reason)), (text, &tokens)) in counted
        .parts
        .iter()
        .zip(statuses)
        .zip(counted.sections.iter().zip(&counted.tokens))
    {
        let name = &part.file.name;
        let at = (status == PartStatus::Active).then(|| offset.place(name.slot, text.len()));
        if status == PartStatus::Active {
            digest.update(name.id().as_bytes());
            digest.update(b"\n");
            digest.update(part.provenance.cid.as_bytes());
            digest.update(b"\n");
            bytes += text.len() as u64;
        }
        parts.push(PlanPart {
            rank: name.rank,
            name: name.id(),
            kind: name.kind.clone(),
            slot: name.slot,
            linked: name.state == State::Linked,
            uri: part.provenance.source_uri.clone(),
            path: part.provenance.path.clone(),
            cid: part.provenance.cid.clone(),
            span: part.provenance.span.to_string(),
            tags: part.provenance.tags.clone(),
            bytes: text.len() as u64,
            tokens,
            status,
            reason,
            offset: at,
        });
    }
    let count = |status| parts.iter().filter(|p| p.status == status).count();
    let totals = Totals {
        parts: parts.len(),
        included: count(PartStatus::Active),
        skipped: count(PartStatus::Skipped),
        dropped: count(PartStatus::DroppedOverBudget),
        bytes,
        tokens: used,
        frame_tokens,
        budget,
    };
    Plan {
        version: FORMAT_VERSION,
        flow_id: dir.config.flow_id.clone(),
        order: ORDER_RULE,
        tokenizer: tokenizer.name(),
        parts,
        totals,
        ctx_digest: format!("sha256:{}", hex::encode(digest.finalize())),
        stale: Vec::new(),
        over_budget,
    }
}

fn over_budget_error(counted: &Counted, required: u64, budget: u64) -> OverBudget {
    let mut candidates: Vec<(&LoadedPart, u64)> = counted
        .parts
        .iter()
        .zip(counted.tokens.iter().copied())
        .filter(|(p, _)| is_included(p) && is_required(p))
        .collect();
    // Largest first; ties by name so the message is stable.
    candidates.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then_with(|| a.0.file.name.id().cmp(&b.0.file.name.id()))
    });
    let mut remaining = required;
    let mut suggestions = Vec::new();
    for (part, tokens) in candidates {
        if remaining <= budget {
            break;
        }
        remaining -= tokens;
        suggestions.push(format!("{} ({tokens} tokens)", part.file.name.id()));
    }
    OverBudget {
        required,
        budget,
        suggestions,
    }
}

/// The crate's one budget-fitting rule, shared by `rlm ctx` and `rlm prompt`: what must go in
/// is counted first; optional items are then offered in order and each is taken only when it
/// fits in what is left, so one item too large does not stop smaller later ones. Counts saturate
/// instead of going below zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetRoom {
    budget: Option<u64>,
    used: u64,
}

/// An item that did not fit: what it needed and what was left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shortfall {
    /// Tokens the item needs.
    pub needed: u64,
    /// Tokens left in the budget when it was offered.
    pub left: u64,
}

impl std::fmt::Display for Shortfall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "needs {} tokens, {} left in the budget",
            self.needed, self.left
        )
    }
}

impl BudgetRoom {
    /// A budget (`None`: no limit) with `required` tokens already spoken for.
    pub fn new(budget: Option<u64>, required: u64) -> Self {
        Self {
            budget,
            used: required,
        }
    }

    /// Takes `tokens` if they fit in what is left.
    pub fn take(&mut self, tokens: u64) -> Result<(), Shortfall> {
        match self.budget {
            Some(limit) if self.used.saturating_add(tokens) > limit => Err(Shortfall {
                needed: tokens,
                left: limit.saturating_sub(self.used),
            }),
            _ => {
                self.used = self.used.saturating_add(tokens);
                Ok(())
            }
        }
    }

    /// Tokens left (`u64::MAX` without a limit).
    pub fn left(&self) -> u64 {
        self.budget
            .map_or(u64::MAX, |limit| limit.saturating_sub(self.used))
    }

    /// Tokens taken so far, the required ones included.
    pub fn used(&self) -> u64 {
        self.used
    }
}

/// Tracks where the next section lands, inserting the group headings once.
struct Offsets {
    next: u64,
    opened: Vec<Slot>,
}

impl Offsets {
    fn place(&mut self, slot: Slot, length: usize) -> u64 {
        if !self.opened.contains(&slot) {
            self.opened.push(slot);
            if let Some(heading) = group_heading(slot) {
                self.next += heading.len() as u64;
            }
        }
        let at = self.next;
        self.next += length as u64;
        at
    }
}

/// Renders `prompt.mdctx` for a plan.
pub fn document(plan: &Plan, counted: &Counted) -> String {
    let mut text = String::with_capacity(plan.totals.bytes as usize);
    text.push_str(&header(&plan.flow_id));
    let mut opened: Vec<Slot> = Vec::new();
    for (part, section) in plan.parts.iter().zip(&counted.sections) {
        if part.status != PartStatus::Active {
            continue;
        }
        if !opened.contains(&part.slot) {
            opened.push(part.slot);
            if let Some(heading) = group_heading(part.slot) {
                text.push_str(heading);
            }
        }
        text.push_str(section);
    }
    text
}
