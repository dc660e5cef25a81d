//! What commands return: what changed, each part's bytes and tokens, and the running total
//! against the budget. Every report is `Serialize` (for `--json`) and `Display` (for people).

use std::fmt;

use serde::Serialize;

use crate::plan::{PartStatus, Plan};

/// One change made by a command.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// `added`, `updated`, `unchanged`, `linked`, `on`, `off`, `renamed`, `removed`, `rebased`...
    pub action: &'static str,
    /// The part (`<rank>_<kind>.<slot>`), or another file of the ctx directory (`ctx.json`).
    pub part: String,
    /// Bytes of the part's section in the prompt; absent for a file that is not a part.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Tokens of the part's section; absent for a file that is not a part.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// More about the change (`was 200_x.evidence`, `lines 3-9 → 5-11`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The running total after a command.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Parts that go into the prompt.
    pub included: usize,
    /// Parts switched off.
    pub skipped: usize,
    /// Active parts left out by the budget.
    pub dropped: usize,
    /// Bytes of the prompt.
    pub bytes: u64,
    /// Tokens of the prompt.
    pub tokens: u64,
    /// Tokenizer used.
    pub tokenizer: &'static str,
    /// Budget, if any.
    pub budget: Option<u64>,
    /// Whether the required parts alone exceed the budget.
    pub over_budget: bool,
}

impl Summary {
    /// The summary of a plan.
    pub fn of(plan: &Plan) -> Self {
        Self {
            included: plan.totals.included,
            skipped: plan.totals.skipped,
            dropped: plan.totals.dropped,
            bytes: plan.totals.bytes,
            tokens: plan.totals.tokens,
            tokenizer: plan.tokenizer,
            budget: plan.totals.budget,
            over_budget: plan.over_budget.is_some(),
        }
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "total: {} parts in, {} off, {} dropped; {} bytes, {} tokens ({})",
            self.included, self.skipped, self.dropped, self.bytes, self.tokens, self.tokenizer
        )?;
        match self.budget {
            Some(budget) => {
                let percent = self.tokens.saturating_mul(100) / budget.max(1);
                write!(f, " of {budget} budget ({percent}%)")?;
                if self.over_budget {
                    write!(f, " — required parts exceed the budget")?;
                }
                Ok(())
            }
            None => write!(f, ", no budget"),
        }
    }
}

/// The result of a command that changes the ctx directory.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Always `"ctx"`, for JSON consumers reading mixed streams.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The subcommand.
    pub command: &'static str,
    /// What changed.
    pub changes: Vec<Change>,
    /// Remarks (skipped files, parts that could not be rebased...).
    pub notes: Vec<String>,
    /// Running total.
    pub total: Summary,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.changes.is_empty() {
            writeln!(f, "{}: nothing changed", self.command)?;
        }
        for change in &self.changes {
            write!(f, "{:<9} {}", change.action, change.part)?;
            if let (Some(bytes), Some(tokens)) = (change.bytes, change.tokens) {
                write!(f, "  {bytes} bytes  {tokens} tokens")?;
            }
            match &change.detail {
                Some(detail) => writeln!(f, "  ({detail})")?,
                None => writeln!(f)?,
            }
        }
        for note in &self.notes {
            writeln!(f, "note: {note}")?;
        }
        writeln!(f, "{}", self.total)
    }
}

/// `plan` and `budget` output: the plan plus how to show it.
#[derive(Debug, Clone, Serialize)]
pub struct PlanReport {
    /// Always `"ctx"`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// `plan`, `budget` or `assemble`.
    pub command: &'static str,
    /// The plan.
    pub plan: Plan,
    /// Files written (assemble only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub written: Vec<String>,
    /// Parts whose tokens had to be counted (not in the cache).
    pub counted_parts: usize,
}

impl fmt::Display for PlanReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plan = &self.plan;
        writeln!(
            f,
            "{:<4} {:<8} {:<44} {:>9} {:>8}  status",
            "rank", "role", "part", "bytes", "tokens"
        )?;
        for part in &plan.parts {
            let status = match part.status {
                PartStatus::Active if part.linked => "linked",
                PartStatus::Active => "in",
                PartStatus::Skipped => "off",
                PartStatus::DroppedOverBudget => "dropped",
            };
            write!(
                f,
                "{:<4} {:<8} {:<44} {:>9} {:>8}  {status}",
                part.rank.to_string(),
                part.slot.name(),
                part.name,
                part.bytes,
                part.tokens
            )?;
            let stale = plan.stale.iter().find(|stale| stale.name == part.name);
            match (&part.reason, stale) {
                (Some(reason), _) => writeln!(f, ": {reason}")?,
                (None, Some(stale)) => writeln!(f, " ({})", stale.freshness.label())?,
                (None, None) => writeln!(f)?,
            }
        }
        if self.command == "budget" {
            writeln!(
                f,
                "frame (header and headings): {} tokens",
                plan.totals.frame_tokens
            )?;
        }
        for path in &self.written {
            writeln!(f, "wrote {path}")?;
        }
        writeln!(f, "ctx_digest: {}", plan.ctx_digest)?;
        writeln!(f, "{}", Summary::of(plan))
    }
}
