//! The "other context" section: notes, logs, source files, test results, ADRs and library docs,
//! taken by priority within a budget. Logs that do not fit whole keep their last lines.

use serde::Serialize;

use super::Stage;
use crate::cache::{TokenCache, derived_key};
use crate::plan::BudgetRoom;

/// What a piece of material is; decides its priority and whether a stage uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ItemKind {
    /// The task's notes (every stage).
    Notes,
    /// Build or CI output.
    BuildLogs,
    /// Logs of running pods or services.
    PodLogs,
    /// Source files.
    SourceFiles,
    /// Test results (JUnit XML or any text).
    TestResults,
    /// Architecture decision records.
    Adrs,
    /// Library documentation.
    Libraries,
}

impl ItemKind {
    /// Every kind, in default priority order.
    pub const ALL: [Self; 7] = [
        Self::Notes,
        Self::BuildLogs,
        Self::PodLogs,
        Self::SourceFiles,
        Self::TestResults,
        Self::Adrs,
        Self::Libraries,
    ];

    /// The configuration key (`[prompt.context_priority]`).
    pub fn key(self) -> &'static str {
        match self {
            Self::Notes => "notes",
            Self::BuildLogs => "build_logs",
            Self::PodLogs => "pod_logs",
            Self::SourceFiles => "source_files",
            Self::TestResults => "test_results",
            Self::Adrs => "adrs",
            Self::Libraries => "libraries",
        }
    }

    /// The kind for a configuration key.
    pub fn from_key(key: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.key() == key)
    }

    fn label(self) -> &'static str {
        match self {
            Self::Notes => "Notes",
            Self::BuildLogs => "Build log",
            Self::PodLogs => "Pod log",
            Self::SourceFiles => "Source",
            Self::TestResults => "Test results",
            Self::Adrs => "ADR",
            Self::Libraries => "Library docs",
        }
    }

    /// Logs are cut to their tail rather than left out: the errors are at the end.
    fn keeps_tail(self) -> bool {
        matches!(self, Self::BuildLogs | Self::PodLogs | Self::TestResults)
    }
}

/// Priorities per kind (higher goes in first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Priorities([u32; 7]);

impl Default for Priorities {
    fn default() -> Self {
        Self([100, 90, 85, 80, 75, 50, 40])
    }
}

impl Priorities {
    /// The priority of `kind`.
    pub fn get(&self, kind: ItemKind) -> u32 {
        self.0[kind as usize]
    }

    /// Sets the priority of `kind`.
    pub fn set(&mut self, kind: ItemKind, priority: u32) {
        self.0[kind as usize] = priority;
    }
}

/// One piece of material offered to the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextItem {
    /// What it is.
    pub kind: ItemKind,
    /// Its name in the prompt and the plan (usually a path).
    pub name: String,
    /// The text.
    pub text: String,
}

/// What happened to an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ItemStatus {
    /// In the prompt, whole.
    Included,
    /// In the prompt, cut to its last lines.
    Tail,
    /// Left out (see the reason).
    Skipped,
}

/// An item's line in the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannedItem {
    /// What it is.
    pub kind: ItemKind,
    /// Its name.
    pub name: String,
    /// Its priority.
    pub priority: u32,
    /// Tokens of the whole item as rendered.
    pub tokens: u64,
    /// Tokens it takes in the prompt (0 when skipped).
    pub used_tokens: u64,
    /// In, cut, or out.
    pub status: ItemStatus,
    /// Why it was cut or left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The heading of the section.
pub(crate) const CONTEXT_HEADING: &str = "## Context\n";

/// The smallest tail worth keeping of a log, in tokens.
const MIN_TAIL_TOKENS: u64 = 64;

/// Renders one item: a heading and the text in a fence longer than any backtick run inside.
fn render(kind: ItemKind, name: &str, text: &str, note: &str) -> String {
    let fence = rlm_context::fence::backtick_fence(text);
    format!(
        "### {}: {}{note}\n{fence}\n{}\n{fence}\n",
        kind.label(),
        rlm_context::one_line(name),
        text.trim_end_matches('\n')
    )
}

/// Fits `items` into `budget` for `stage`; returns the section text (empty when nothing is in)
/// and the plan lines, in priority order.
pub(crate) fn fit(
    items: &[ContextItem],
    stage: Stage,
    priorities: &Priorities,
    budget: u64,
    cache: &mut TokenCache,
) -> (String, Vec<PlannedItem>) {
    let mut order: Vec<usize> = (0..items.len()).collect();
    // Stable: equal priorities keep kind order, then the order given.
    order.sort_by_key(|&index| {
        let kind = items[index].kind;
        (std::cmp::Reverse(priorities.get(kind)), kind)
    });
    let rendered: Vec<String> = order
        .iter()
        .map(|&index| {
            render(
                items[index].kind,
                &items[index].name,
                &items[index].text,
                "",
            )
        })
        .collect();
    let texts: Vec<&str> = rendered.iter().map(String::as_str).collect();
    let tokens = cache.count(&texts);
    let heading_tokens = cache.count(&[CONTEXT_HEADING])[0];
    let mut room = BudgetRoom::new(Some(budget), heading_tokens);
    let mut body = String::new();
    let mut planned = Vec::with_capacity(items.len());
    for ((&index, text), &tokens) in order.iter().zip(&rendered).zip(&tokens) {
        let item = &items[index];
        let mut line = PlannedItem {
            kind: item.kind,
            name: item.name.clone(),
            priority: priorities.get(item.kind),
            tokens,
            used_tokens: 0,
            status: ItemStatus::Skipped,
            reason: None,
        };
        if !stage.uses(item.kind) {
            line.reason = Some(format!("not used in the {} stage", stage.name()));
            planned.push(line);
            continue;
        }
        match room.take(tokens) {
            Ok(()) => {
                body.push_str(text);
                line.used_tokens = tokens;
                line.status = ItemStatus::Included;
            }
            Err(short) if item.kind.keeps_tail() && short.left >= MIN_TAIL_TOKENS => {
                let (tail, tail_tokens, kept, total) = tail_that_fits(item, short.left, cache);
                if room.take(tail_tokens).is_ok() && kept > 0 {
                    body.push_str(&tail);
                    line.used_tokens = tail_tokens;
                    line.status = ItemStatus::Tail;
                    line.reason = Some(format!("{short}: kept the last {kept} of {total} lines"));
                } else {
                    line.reason = Some(short.to_string());
                }
            }
            Err(short) => line.reason = Some(short.to_string()),
        }
        planned.push(line);
    }
    let section = if body.is_empty() {
        String::new()
    } else {
        format!("{CONTEXT_HEADING}{body}")
    };
    (section, planned)
}

/// The largest tail of `item`'s lines whose rendering fits in `left` tokens: (text, tokens,
/// lines kept, lines in all). Binary search on the number of lines kept, each probe a full
/// count; the answer is remembered in the token cache, so a rebuild with the same item and room
/// renders and counts once.
fn tail_that_fits(
    item: &ContextItem,
    left: u64,
    cache: &mut TokenCache,
) -> (String, u64, usize, usize) {
    let lines: Vec<&str> = item.text.trim_end_matches('\n').split('\n').collect();
    let total = lines.len();
    let render_tail = |kept: usize| {
        let note = format!(" (last {kept} of {total} lines)");
        render(
            item.kind,
            &item.name,
            &lines[total - kept..].join("\n"),
            &note,
        )
    };
    let search = |cache: &mut TokenCache| {
        let (mut low, mut high) = (0, total);
        while low < high {
            let middle = (low + high).div_ceil(2);
            if cache.count_uncached(&render_tail(middle)) <= left {
                low = middle;
            } else {
                high = middle - 1;
            }
        }
        low as u64
    };
    let key = derived_key(
        "prompt tail that fits, v1",
        &[
            item.kind.key().as_bytes(),
            item.name.as_bytes(),
            item.text.as_bytes(),
            &left.to_le_bytes(),
        ],
    );
    let mut low = usize::try_from(cache.remembered(key, search)).unwrap_or(total);
    let mut text = render_tail(low.min(total));
    let mut tokens = cache.count(&[&text])[0];
    if low > total || tokens > left {
        // A remembered answer that no longer holds (a damaged cache): search again.
        cache.forget(&key);
        low = usize::try_from(cache.remembered(key, search)).unwrap_or(0);
        text = render_tail(low);
        tokens = cache.count(&[&text])[0];
    }
    (text, tokens, low, total)
}
