//! `rlm prompt`: one prompt per agent turn, in four sections with their own token budgets.
//!
//! 1. **System** — the brief, with the completion signal `<promise>COMPLETE</promise>`.
//! 2. **Stage** — instructions for `planning`, `coding`, `review`, `testing` or `error-fixing`.
//! 3. **Conversation** — the history; above a trigger share of its budget the older messages
//!    are replaced by a model-written summary (feature `summarize`) and the recent ones stay
//!    verbatim.
//! 4. **Context** — notes, logs, sources, test results, ADRs, library docs, by priority.
//!
//! Token counts go through the crate's [`TokenCache`] and items are fitted by the same
//! [`BudgetRoom`](crate::BudgetRoom) rule `rlm ctx` uses. The result is a system and a user
//! message plus a [`PromptPlan`] saying what went in, what was cut and why.
//!
//! ```
//! use rlm_assemble::prompt::{ChatMessage, ContextItem, ItemKind, PromptAssembler, PromptInputs, PromptOptions, Stage};
//! use rlm_context::tokens::Tokenizer;
//!
//! let options = PromptOptions { tokenizer: Tokenizer::Approx, ..PromptOptions::default() };
//! let mut assembler = PromptAssembler::new(options)?;
//! let inputs = PromptInputs {
//!     stage: Stage::ErrorFixing,
//!     history: vec![ChatMessage::new("user", "The build fails.")],
//!     items: vec![ContextItem { kind: ItemKind::BuildLogs, name: "ci.log".into(), text: "error[E0308]\n".into() }],
//! };
//! let built = assembler.build_offline(&inputs)?;
//! assert_eq!(built.messages[0].role, "system");
//! assert!(built.messages[1].content.contains("error[E0308]"));
//! # Ok::<(), rlm_assemble::Error>(())
//! ```

mod assemble;
mod context;
#[cfg(feature = "summarize")]
mod degenerate;
mod history;
mod load;
mod outcome;
#[cfg(feature = "summarize")]
mod summarize;
mod summary_cache;
mod texts;

use std::path::PathBuf;

use rlm_context::tokens::Tokenizer;
use serde::Serialize;

pub use assemble::PromptAssembler;
pub use context::{ContextItem, ItemKind, ItemStatus, PlannedItem, Priorities};
pub use history::{ChatMessage, parse_history};
pub use load::load_items;
pub use outcome::{
    BuiltPrompt, HistoryAction, HistoryReport, ModelCall, PromptPlan, SectionPlan, SummaryEstimate,
};
#[cfg(feature = "summarize")]
pub use summarize::{Summarizer, SummaryProgress};
pub use texts::PromptTexts;

/// The stage of the task, which picks the stage instructions and the material used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// Working out the approach.
    Planning,
    /// Writing the change.
    Coding,
    /// Reviewing a change.
    Review,
    /// Running and reading tests.
    Testing,
    /// Fixing a failure from logs.
    ErrorFixing,
}

impl Stage {
    /// Every stage.
    pub const ALL: [Self; 5] = [
        Self::Planning,
        Self::Coding,
        Self::Review,
        Self::Testing,
        Self::ErrorFixing,
    ];

    /// The name used on the command line and in prompt file names.
    pub fn name(self) -> &'static str {
        match self {
            Self::Planning => "planning",
            Self::Coding => "coding",
            Self::Review => "review",
            Self::Testing => "testing",
            Self::ErrorFixing => "error-fixing",
        }
    }

    /// The stage named `name`; an unknown name gives `coding` and a warning to show.
    pub fn parse_or_coding(name: &str) -> (Self, Option<String>) {
        let wanted = name.trim().to_ascii_lowercase().replace('_', "-");
        match Self::ALL.into_iter().find(|stage| stage.name() == wanted) {
            Some(stage) => (stage, None),
            None => (
                Self::Coding,
                Some(format!(
                    "warning: unknown stage `{name}`, using `coding` (stages: {})",
                    Self::ALL.map(Self::name).join(", ")
                )),
            ),
        }
    }

    /// Whether material of `kind` belongs in a prompt for this stage. Notes always do; logs
    /// only when fixing errors.
    pub fn uses(self, kind: ItemKind) -> bool {
        use ItemKind::{Adrs, Libraries, Notes, SourceFiles, TestResults};
        match self {
            Self::ErrorFixing => true,
            Self::Planning => matches!(kind, Notes | SourceFiles | Adrs | Libraries),
            Self::Coding => matches!(kind, Notes | SourceFiles | TestResults | Adrs | Libraries),
            Self::Review => matches!(kind, Notes | SourceFiles | TestResults | Adrs),
            Self::Testing => matches!(kind, Notes | SourceFiles | TestResults | Libraries),
        }
    }
}

/// Token budgets per section. The total caps the sum; unset, it is the sum of the four.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromptBudgets {
    /// The system section.
    pub system: u64,
    /// The stage section.
    pub agent: u64,
    /// The conversation.
    pub history: u64,
    /// The other context.
    pub other: u64,
    /// The whole prompt.
    pub total: Option<u64>,
}

impl Default for PromptBudgets {
    fn default() -> Self {
        Self {
            system: 1_000,
            agent: 1_500,
            history: 10_000,
            other: 15_000,
            total: None,
        }
    }
}

impl PromptBudgets {
    /// The total budget.
    pub fn total(&self) -> u64 {
        self.total
            .unwrap_or(self.system + self.agent + self.history + self.other)
    }
}

/// When and how the history is summarized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryOptions {
    /// Summarize when the history exceeds this percentage of its budget (1–100).
    pub threshold_percentage: u32,
    /// Share of the history budget kept for verbatim recent messages (1–100).
    pub recent_share_percentage: u32,
    /// The summarizing model (`provider:name`), if any.
    pub model: Option<String>,
    /// The summarizing model's context window in tokens: larger inputs are summarized in
    /// pieces first.
    pub window_tokens: u64,
    /// Ask for a new summary even when one is cached (and replace it).
    pub refresh: bool,
}

impl Default for HistoryOptions {
    fn default() -> Self {
        Self {
            threshold_percentage: 80,
            recent_share_percentage: 50,
            model: None,
            window_tokens: 100_000,
            refresh: false,
        }
    }
}

/// Everything a [`PromptAssembler`] needs besides one turn's inputs.
#[derive(Debug, Clone, Default)]
pub struct PromptOptions {
    /// Section budgets.
    pub budgets: PromptBudgets,
    /// History summarization.
    pub history: HistoryOptions,
    /// Priorities of the context kinds.
    pub priorities: Priorities,
    /// How tokens are counted.
    pub tokenizer: Tokenizer,
    /// The prompts (built in unless overridden).
    pub texts: PromptTexts,
    /// Where token counts (`tokens/`) and summaries (`summaries/`) are cached; `None` keeps
    /// them in memory only.
    pub cache_dir: Option<PathBuf>,
}

/// One turn's inputs.
#[derive(Debug, Clone)]
pub struct PromptInputs {
    /// The task's stage.
    pub stage: Stage,
    /// The conversation so far, oldest first.
    pub history: Vec<ChatMessage>,
    /// The material, in any order (priorities decide).
    pub items: Vec<ContextItem>,
}

/// Input tokens one summarizing call may carry: the model's window less the prompt, the answer
/// and a margin for the message framing and tokenizer differences.
pub(crate) fn piece_limit(window: u64, prompt_tokens: u64, answer_tokens: u64) -> u64 {
    window
        .saturating_sub(prompt_tokens + answer_tokens + 512)
        .max(256)
}

#[cfg(test)]
mod tests;
