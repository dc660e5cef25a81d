//! Settings of `rlm query`: the store, the models, the pipeline's choices and limits, prompt
//! overrides and the trajectory log.
//!
//! ```toml
//! [query]
//! batch_size = 10        # chunks per extractor call (otherwise the plan decides)
//! top_k = 40             # chunks analysed at most (otherwise the plan decides)
//! max_concurrency = 16   # extractor calls in flight (also --max-concurrency, RLM_MAX_CONCURRENCY)
//! threshold = "low"      # least relevance reaching the report: low, medium, high
//! max_tool_rounds = 3    # tool rounds of the report's writer; 0 = no tools (also --max-tool-rounds)
//! ```

use std::path::PathBuf;
use std::time::Duration;

use rlm_query::{QueryOptions, QueryPrompts};

use super::{LlmSettings, Origin, Sources, StoreSettings, catalog};
use crate::error::{AppError, input_error};
use crate::requests::QueryRequest;

/// Everything `rlm query` runs with.
#[derive(Debug)]
pub struct QuerySettings {
    pub question: String,
    pub llm: LlmSettings,
    pub store: StoreSettings,
    pub options: QueryOptions,
    pub prompts: QueryPrompts,
    /// Where the trajectory is written; `None` writes none.
    pub log_dir: Option<PathBuf>,
}

impl QuerySettings {
    pub fn resolve(args: &QueryRequest, sources: &Sources) -> anyhow::Result<Self> {
        crate::requests::checks::seconds("--timeout", args.timeout)?;
        if args.question.trim().is_empty() {
            return Err(AppError::input(anyhow::anyhow!("the question is empty"))
                .with_hint("rlm query \"what do these files say about X?\"")
                .into());
        }
        let llm = LlmSettings::resolve(&args.llm, sources)?;
        let model = llm.require_model()?.to_owned();
        let subcall_model = llm.subcall_model.clone().unwrap_or_else(|| model.clone());
        let batch_size = catalog::QUERY_BATCH_SIZE.resolve(args.batch_size, sources)?;
        if batch_size.value == Some(0) {
            return Err(AppError::input(anyhow::anyhow!(
                "{} must be at least 1",
                catalog::QUERY_BATCH_SIZE.named_by(&batch_size.origin)
            ))
            .with_hint("use --batch-size N with N from 1 (one chunk per call) to about 50")
            .into());
        }
        let top_k = catalog::QUERY_TOP_K.resolve(args.k, sources)?;
        if top_k.value == Some(0) {
            let named = catalog::QUERY_TOP_K.named_by(&top_k.origin);
            return Err(input_error(format!("{named} must be at least 1")).into());
        }
        let flag = args.llm.max_concurrency.map(|n| n as usize);
        let concurrency = catalog::QUERY_MAX_CONCURRENCY.resolve(flag, sources)?;
        if concurrency.value == 0 {
            let named = catalog::QUERY_MAX_CONCURRENCY.named_by(&concurrency.origin);
            return Err(input_error(format!("{named} must be at least 1")).into());
        }
        let (max_cost, max_tokens) = super::budget(&args.budget)?;
        let rounds = catalog::QUERY_MAX_TOOL_ROUNDS.resolve(args.max_tool_rounds, sources)?;
        let max_tool_rounds = u32::try_from(rounds.value)
            .ok()
            .filter(|rounds| *rounds <= rlm_query::MAX_TOOL_ROUNDS)
            .ok_or_else(|| {
                AppError::input(anyhow::anyhow!(
                    "{} {} is not between 0 and {}",
                    catalog::QUERY_MAX_TOOL_ROUNDS.named_by(&rounds.origin),
                    rounds.value,
                    rlm_query::MAX_TOOL_ROUNDS
                ))
                .with_hint("use --max-tool-rounds 0 to write the report without tools")
            })?;

        let mut options = QueryOptions::new(model, subcall_model);
        options.mode = args.mode;
        options.scan = args.scan.unwrap_or_default();
        options.top_k = top_k.value;
        options.batch_size = batch_size.value;
        options.buffers.clone_from(&args.buffers);
        options.path_glob.clone_from(&args.path);
        options.max_concurrency = concurrency.value;
        // Unless chosen, the fan-out follows what a local server says it serves at once.
        options.concurrency_from_server = matches!(concurrency.origin, Origin::Default);
        options.budget = rlm_llm::Budget {
            max_tokens,
            max_cost_usd: max_cost,
            ..rlm_llm::Budget::default()
        };
        options.timeout = args.timeout.map(Duration::from_secs_f64);
        options.skip_plan = args.skip_plan;
        options.threshold = catalog::QUERY_THRESHOLD
            .resolve(args.threshold, sources)?
            .value;
        options.max_tool_rounds = max_tool_rounds;
        // Every call of the query obeys the user's output cap, below its own.
        options.max_output_tokens = llm.max_output_tokens;

        let log_dir = if args.no_log {
            None
        } else {
            args.log.clone().or_else(|| sources.dirs().runs())
        };
        Ok(Self {
            question: args.question.clone(),
            llm,
            store: StoreSettings::resolve(sources)?,
            options,
            prompts: sources.prompts_with_overrides(QueryPrompts::with_overrides_from)?,
            log_dir,
        })
    }
}

#[cfg(all(test, feature = "clap"))]
mod tests {
    use rlm_query::Threshold;

    use super::*;
    use crate::settings::tests::Layout;

    fn query_args(args: &[&str]) -> QueryRequest {
        crate::requests::parse(args)
    }

    #[test]
    fn flags_beat_the_query_section_beats_defaults() {
        let layout = Layout::new(
            None,
            Some(
                "[llm]\nmodel = 'p:m'\n[query]\nbatch_size = 7\ntop_k = 30\nthreshold = 'medium'\n",
            ),
        );
        let settings = QuerySettings::resolve(&query_args(&["q"]), &layout.sources(&[])).unwrap();
        assert_eq!(settings.options.batch_size, Some(7));
        assert_eq!(settings.options.top_k, Some(30));
        assert_eq!(settings.options.threshold, Threshold::Medium);
        assert_eq!(settings.options.subcall_model, "p:m");
        assert_eq!(
            settings.options.max_concurrency,
            rlm_query::DEFAULT_MAX_CONCURRENCY
        );
        assert_eq!(
            settings.options.max_tool_rounds,
            rlm_query::DEFAULT_MAX_TOOL_ROUNDS
        );
        let rounds = Layout::new(
            None,
            Some("[llm]\nmodel = 'p:m'\n[query]\nmax_tool_rounds = 5\n"),
        );
        let settings = QuerySettings::resolve(&query_args(&["q"]), &rounds.sources(&[])).unwrap();
        assert_eq!(settings.options.max_tool_rounds, 5);
        let settings = QuerySettings::resolve(
            &query_args(&["q", "--max-tool-rounds", "0"]),
            &rounds.sources(&[]),
        )
        .unwrap();
        assert_eq!(settings.options.max_tool_rounds, 0, "the flag wins");

        let args = query_args(&[
            "q",
            "--batch-size",
            "2",
            "--threshold",
            "high",
            "--max-concurrency",
            "50",
        ]);
        let settings =
            QuerySettings::resolve(&args, &layout.sources(&[("RLM_MAX_CONCURRENCY", "9")]))
                .unwrap();
        assert_eq!(settings.options.batch_size, Some(2));
        assert_eq!(settings.options.threshold, Threshold::High);
        assert_eq!(settings.options.max_concurrency, 50);
        let settings = QuerySettings::resolve(
            &query_args(&["q"]),
            &layout.sources(&[("RLM_MAX_CONCURRENCY", "9")]),
        )
        .unwrap();
        assert_eq!(settings.options.max_concurrency, 9);
    }

    #[test]
    fn bad_values_are_input_errors() {
        let layout = Layout::new(None, Some("[llm]\nmodel = 'p:m'\n"));
        for args in [
            vec![" "],
            vec!["q", "--batch-size", "0"],
            vec!["q", "--top-k", "0"],
            vec!["q", "--max-cost", "-1"],
            vec!["q", "--max-tokens", "0"],
            vec!["q", "--max-tool-rounds", "-1"],
            vec!["q", "--max-tool-rounds", "21"],
        ] {
            let err = QuerySettings::resolve(&query_args(&args), &layout.sources(&[])).unwrap_err();
            let cli = err.downcast_ref::<AppError>().expect("a AppError");
            assert_eq!(cli.kind, crate::error::Kind::Input, "{args:?}: {err}");
        }
    }
}
