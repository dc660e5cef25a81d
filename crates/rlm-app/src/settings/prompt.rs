//! `rlm prompt` settings, highest precedence first: flags, environment, the `[prompt]`
//! section (project file over user file), defaults.
//!
//! ```toml
//! [prompt]
//! system_prompt_budget = 1000
//! agent_prompt_budget = 1500
//! chat_history_budget = 10000
//! other_context_budget = 15000
//! total_budget = 27500          # optional cap; default: the sum
//! tokenizer = "o200k"
//!
//! [prompt.rlm]
//! model = "anthropic:claude-haiku-4-5"   # the summarizing model
//! threshold_percentage = 80              # summarize above this share of the history budget
//! recent_share_percentage = 50           # share kept verbatim for recent messages
//! window_tokens = 100000                 # the summarizing model's window (default: what a
//!                                        # local server reports at /props, else 100000)
//!
//! [prompt.context_priority]     # higher goes in first
//! notes = 100
//! build_logs = 90
//! pod_logs = 85
//! source_files = 80
//! test_results = 75
//! adrs = 50
//! libraries = 40
//! ```

use rlm_assemble::prompt::{ItemKind, PromptOptions, PromptTexts};
use rlm_context::tokens::Tokenizer;

use super::{LlmSettings, Origin, Setting, Sources, catalog};
use crate::error::input_error;
use crate::requests::PromptBuildRequest;

/// Everything `rlm prompt` runs with.
#[derive(Debug)]
pub struct PromptSettings {
    /// Options for the assembler (budgets, priorities, texts, cache directory).
    pub options: PromptOptions,
    /// How to reach the summarizing model (record/replay, providers, prices).
    pub llm: LlmSettings,
    /// The window was set by flag or file; otherwise a server's own report may replace the
    /// default.
    pub window_tokens_set: bool,
}

impl PromptSettings {
    pub fn resolve(args: &PromptBuildRequest, sources: &Sources) -> anyhow::Result<Self> {
        let llm = LlmSettings::resolve(&args.llm, sources)?;
        let mut options = Self::merge(args, sources)?;
        let window = catalog::PROMPT_WINDOW_TOKENS.resolve(args.window_tokens, sources)?;
        options.texts = sources.prompts_with_overrides(PromptTexts::with_overrides_from)?;
        options.cache_dir = sources
            .dirs()
            .state
            .as_ref()
            .map(|dir| dir.join("prompt-cache"));
        Ok(Self {
            options,
            llm,
            window_tokens_set: window.origin != Origin::Default,
        })
    }

    /// Flags > environment > files > defaults, for everything but the texts and the cache.
    fn merge(args: &PromptBuildRequest, sources: &Sources) -> anyhow::Result<PromptOptions> {
        let mut options = PromptOptions::default();
        let budgets = &mut options.budgets;
        for (setting, flag, slot) in [
            (
                &catalog::PROMPT_SYSTEM_BUDGET,
                args.system_budget,
                &mut budgets.system,
            ),
            (
                &catalog::PROMPT_AGENT_BUDGET,
                args.agent_budget,
                &mut budgets.agent,
            ),
            (
                &catalog::PROMPT_HISTORY_BUDGET,
                args.history_budget,
                &mut budgets.history,
            ),
            (
                &catalog::PROMPT_CONTEXT_BUDGET,
                args.context_budget,
                &mut budgets.other,
            ),
        ] {
            *slot = positive(setting.resolve(flag, sources)?.value, setting)?;
        }
        let total = &catalog::PROMPT_TOTAL_BUDGET;
        if let Some(value) = total.resolve(args.budget_total, sources)?.value {
            budgets.total = Some(positive(value, total)?);
        }
        let history = &mut options.history;
        let threshold = &catalog::PROMPT_THRESHOLD;
        history.threshold_percentage =
            percent(threshold.resolve(args.threshold, sources)?.value, threshold)?;
        let share = &catalog::PROMPT_RECENT_SHARE;
        history.recent_share_percentage =
            percent(share.resolve(args.recent_share, sources)?.value, share)?;
        let window = &catalog::PROMPT_WINDOW_TOKENS;
        history.window_tokens =
            positive(window.resolve(args.window_tokens, sources)?.value, window)?;
        history.refresh = args.refresh_summary;
        history.model = catalog::PROMPT_MODEL
            .resolve(args.llm.model.clone(), sources)?
            .value;
        for (key, value) in catalog::PROMPT_CONTEXT_PRIORITY.read(sources)? {
            let kind = ItemKind::from_key(&key).ok_or_else(|| {
                let known: Vec<&str> = ItemKind::ALL.iter().map(|kind| kind.key()).collect();
                input_error(format!(
                    "unknown key `{key}` in [prompt.context_priority] (known: {})",
                    known.join(", ")
                ))
            })?;
            let priority = u32::try_from(value).map_err(|_| {
                input_error(format!(
                    "[prompt.context_priority] {key} must be 0 or more, not {value}"
                ))
            })?;
            options.priorities.set(kind, priority);
        }
        options.tokenizer = match args.tokenizer {
            Some(tokenizer) => tokenizer,
            None => catalog::PROMPT_TOKENIZER
                .read(sources)?
                .value
                .parse::<Tokenizer>()
                .map_err(|error| input_error(format!("[prompt] tokenizer: {error}")))?,
        };
        Ok(options)
    }
}

/// A setting by its flag and its file key: `--history-budget ([prompt] chat_history_budget)`.
fn named<T, R>(setting: &Setting<T, R>) -> String {
    let (table, name) = setting.table_and_name();
    format!("{} ([{table}] {name})", setting.flag.unwrap_or_default())
}

fn positive<T, R>(value: i64, setting: &Setting<T, R>) -> anyhow::Result<u64> {
    u64::try_from(value)
        .ok()
        .filter(|value| *value > 0)
        .ok_or_else(|| {
            input_error(format!(
                "{} must be a positive number of tokens, not {value}",
                named(setting)
            ))
            .into()
        })
}

fn percent<T, R>(value: i64, setting: &Setting<T, R>) -> anyhow::Result<u32> {
    u32::try_from(value)
        .ok()
        .filter(|value| (1..=100).contains(value))
        .ok_or_else(|| {
            input_error(format!(
                "{} must be between 1 and 100, not {value}",
                named(setting)
            ))
            .into()
        })
}

#[cfg(all(test, feature = "clap"))]
mod tests {
    use super::*;
    use crate::settings::tests::Layout;

    fn args(line: &[&str]) -> PromptBuildRequest {
        crate::requests::parse(line)
    }

    #[test]
    fn flags_beat_env_beat_files_beat_defaults() {
        let user = "[prompt]\nchat_history_budget = 7000\nother_context_budget = 9000\n\
                    [prompt.rlm]\nmodel = 'user:m'\nthreshold_percentage = 70\n";
        let project =
            "[prompt]\nchat_history_budget = 8000\n[prompt.context_priority]\nadrs = 95\n";
        let layout = Layout::new(Some(user), Some(project));
        let settings = PromptSettings::resolve(&args(&[]), &layout.sources(&[])).unwrap();
        let options = &settings.options;
        assert_eq!(options.budgets.history, 8000);
        assert_eq!(options.budgets.other, 9000);
        assert_eq!(options.budgets.system, 1000);
        assert_eq!(options.history.threshold_percentage, 70);
        assert_eq!(options.history.model.as_deref(), Some("user:m"));
        assert_eq!(options.priorities.get(ItemKind::Adrs), 95);

        let sources = layout.sources(&[("RLM_PROMPT_MODEL", "env:m")]);
        let settings = PromptSettings::resolve(
            &args(&["--history-budget", "500", "--threshold", "90"]),
            &sources,
        )
        .unwrap();
        assert_eq!(settings.options.budgets.history, 500);
        assert_eq!(settings.options.history.threshold_percentage, 90);
        assert_eq!(settings.options.history.model.as_deref(), Some("env:m"));
        let settings = PromptSettings::resolve(&args(&["-m", "flag:m"]), &sources).unwrap();
        assert_eq!(settings.options.history.model.as_deref(), Some("flag:m"));
    }

    #[test]
    fn zero_negative_and_unknown_values_are_input_errors() {
        let layout = Layout::new(None, None);
        for line in [
            &["--budget-total", "0"][..],
            &["--context-budget", "-5"][..],
            &["--threshold", "150"][..],
        ] {
            let error = PromptSettings::resolve(&args(line), &layout.sources(&[])).unwrap_err();
            let cli = error.downcast_ref::<crate::error::AppError>().unwrap();
            assert_eq!(cli.kind, crate::error::Kind::Input, "{line:?}");
        }
        let bad = Layout::new(None, Some("[prompt.context_priority]\nwiki = 3\n"));
        let error = PromptSettings::resolve(&args(&[]), &bad.sources(&[])).unwrap_err();
        assert!(error.to_string().contains("unknown key `wiki`"), "{error}");
    }
}
