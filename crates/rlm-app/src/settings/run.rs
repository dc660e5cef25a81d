//! Settings of `rlm run`: models, budget, contexts, prompt overrides and the trajectory log.
//! [`LoopSettings`] is the part that builds the engine, shared with `rlm bench-quality`.
//!
//! Prompt overrides come from `RLM_PROMPT_DIR`, else `$XDG_CONFIG_HOME/rlm/prompts`; the
//! trajectory goes to `--log DIR`, else `$XDG_STATE_HOME/rlm/runs` (none with `--no-log`).

use std::path::PathBuf;
use std::time::Duration;

use rlm_engine::{Prompts, RunLimits};
use rlm_llm::ContextWindows;

use super::size::SizeValue;
use super::{LlmSettings, Setting, Sources, StoreSettings, catalog};
use crate::error::{AppError, input_error};
use crate::requests::{LoopOptions, RunRequest, StoreChoice};

/// Everything `rlm run` needs besides reading the contexts.
#[derive(Debug)]
pub struct RunSettings {
    pub query: String,
    /// The loop itself: models, limits, prompts, sandbox, trajectory directory.
    pub engine: LoopSettings,
    /// In order: `context_0`, `context_1`, … (none with `--store`).
    pub contexts: Vec<ContextSource>,
    /// `--store`: the store is the run's data, through host functions.
    pub store: Option<StoreSettings>,
    /// `--session NAME`: the session this question continues (or starts).
    pub session: Option<super::SessionTarget>,
}

/// The RLM loop's settings from its flags ([`LoopOptions`]): everything `rlm run` and `rlm
/// bench-quality` need to build an engine, apart from what it runs over.
#[derive(Debug)]
pub struct LoopSettings {
    pub llm: LlmSettings,
    /// The root model (required).
    pub model: String,
    /// The sub-call model (defaults to `model`).
    pub subcall_model: String,
    /// Other models code may name with `model=`: `--allow-model`, then `allow_models` in the
    /// `[run]` section.
    pub allowed_models: Vec<String>,
    pub max_depth: u32,
    pub limits: RunLimits,
    pub prompts: Prompts,
    /// Where the trajectory is written; `None` writes none.
    pub log_dir: Option<PathBuf>,
    /// Run the sandbox even where the kernel lacks Landlock or seccomp.
    pub allow_reduced_protection: bool,
    /// Interpreter time one code block may take: `--block-timeout`, else `[run]
    /// block_timeout`, else [`DEFAULT_BLOCK_TIMEOUT`].
    pub block_timeout: Duration,
    /// Context windows: the built-in table with `[run.context_windows]` on top.
    pub context_windows: ContextWindows,
    /// Sub-calls one run keeps in flight at once.
    pub max_concurrent_subcalls: Option<usize>,
    /// What an embedding program added (custom system prompt, setup code, …).
    pub embedding: crate::requests::EmbeddingOptions,
    /// The commands `[run.tools]` declares, as the run's custom tools.
    pub tools: Option<rlm_engine::Toolbox>,
}

impl LoopSettings {
    pub fn resolve(args: &LoopOptions, sources: &Sources) -> anyhow::Result<Self> {
        use crate::requests::checks;
        checks::range("--max-iterations", args.max_iterations, 1..=1000)?;
        checks::range("--max-depth", args.max_depth, 1..=5)?;
        checks::seconds("--timeout", args.max_time)?;
        checks::seconds("--block-timeout", args.block_timeout)?;
        if args.max_concurrent_subcalls == Some(0) {
            return Err(input_error("--max-concurrent-subcalls must be at least 1").into());
        }
        let llm = LlmSettings::resolve(&args.llm, sources)?;
        let model = llm.require_model()?.to_owned();
        let subcall_model = llm.subcall_model.clone().unwrap_or_else(|| model.clone());
        let limits = limits(args, sources)?;
        let context_windows = context_windows(sources)?;
        // The flag replaces the list; an empty flag list is no flag.
        let allow_flag = (!args.allow_models.is_empty()).then(|| args.allow_models.clone());
        let allowed_models = catalog::RUN_ALLOW_MODELS
            .resolve(allow_flag, sources)?
            .value;
        let block = catalog::RUN_BLOCK_TIMEOUT.resolve(args.block_timeout, sources)?;
        let block_timeout = block_seconds(
            block.value,
            &catalog::RUN_BLOCK_TIMEOUT.named_by(&block.origin),
        )?;
        let prompts = sources.prompts_with_overrides(Prompts::with_overrides_from)?;
        let log_dir = if args.no_log {
            None
        } else {
            args.log.clone().or_else(|| sources.dirs().runs())
        };
        // A flag can only allow; the environment can also deny what a file allows.
        let allow_flag = args.allow_reduced_protection.then_some(true);
        let allow_reduced_protection = catalog::SANDBOX_ALLOW_REDUCED_PROTECTION
            .resolve(allow_flag, sources)?
            .value;
        Ok(Self {
            llm,
            model,
            subcall_model,
            allowed_models,
            max_depth: args.max_depth,
            limits,
            prompts,
            log_dir,
            allow_reduced_protection,
            block_timeout,
            context_windows,
            max_concurrent_subcalls: args.max_concurrent_subcalls,
            embedding: args.embedding.clone(),
            tools: crate::command_tools::toolbox(catalog::RUN_TOOLS.read(sources)?)?,
        })
    }
}

/// The per-block time limit when none is configured (the sandbox's own default).
pub const DEFAULT_BLOCK_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest per-block time limit accepted: a day, as for the run's `--timeout`.
const MAX_BLOCK_SECONDS: f64 = 86_400.0;

/// Where one context comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContextSource {
    File(PathBuf),
    Stdin,
    Inline(String),
}

impl RunSettings {
    pub fn resolve(args: &RunRequest, sources: &Sources) -> anyhow::Result<Self> {
        let engine = LoopSettings::resolve(&args.run_loop, sources)?;
        if args.query.trim().is_empty() {
            return Err(input_error("the query is empty").into());
        }
        let session = match &args.session {
            Some(name) => Some(super::SessionTarget::resolve(name, sources)?),
            None => None,
        };
        let store = match &args.store {
            None | Some(StoreChoice::Default(false)) => None,
            Some(StoreChoice::Default(true)) => Some(StoreSettings::resolve(sources)?),
            Some(StoreChoice::Directory(dir)) => {
                Some(StoreSettings::at(Some(dir.clone()), sources)?)
            }
        };
        let contexts = match store {
            // A session's question may leave the contexts to the session.
            None => context_sources(args, session.is_some())?,
            Some(_) if args.context_files.is_empty() && args.context.is_none() => Vec::new(),
            Some(_) => {
                return Err(AppError::input(anyhow::anyhow!(
                    "--store cannot be combined with --context-file or --context"
                ))
                .with_hint(
                    "load the files into the store (`rlm load FILE`) and run with --store alone, \
                     or leave out --store",
                )
                .into());
            }
        };
        Ok(Self {
            query: args.query.clone(),
            engine,
            contexts,
            store,
            session,
        })
    }
}

/// A per-block time limit, refused (naming where it was set) unless it is more than 0 and
/// at most a day.
fn block_seconds(seconds: f64, origin: &str) -> anyhow::Result<Duration> {
    if seconds.is_finite() && seconds > 0.0 && seconds <= MAX_BLOCK_SECONDS {
        return Ok(Duration::from_secs_f64(seconds));
    }
    Err(AppError::input(anyhow::anyhow!(
        "{origin} = {seconds} is not a time limit for one code block"
    ))
    .with_hint(format!(
        "give seconds greater than 0 and at most {MAX_BLOCK_SECONDS} (the default is {})",
        DEFAULT_BLOCK_TIMEOUT.as_secs()
    ))
    .into())
}

/// The run's limits, from the budget flags (sizes: flag, else the `[run]` section).
fn limits(args: &LoopOptions, sources: &Sources) -> anyhow::Result<RunLimits> {
    let size = |setting: &Setting<SizeValue, SizeValue>, flag: &Option<String>| {
        let size = setting.resolve(flag.clone().map(SizeValue::Text), sources)?;
        size.value.bytes().map_err(|err| {
            anyhow::Error::from(input_error(format!(
                "{}: {err}",
                setting.named_by(&size.origin)
            )))
        })
    };
    let max_prompt_bytes = size(&catalog::RUN_MAX_PROMPT_SIZE, &args.max_prompt_size)?;
    let max_answer_bytes = size(&catalog::RUN_MAX_ANSWER_SIZE, &args.max_answer_size)?;
    let (max_cost, max_tokens) = super::budget(&args.budget)?;
    if args.max_errors == 0 {
        return Err(input_error("--max-errors must be at least 1").into());
    }
    // A run with no sub-calls left would end before its first turn.
    if args.max_subcalls == Some(0) {
        return Err(
            AppError::input(anyhow::anyhow!("--max-subcalls must be at least 1"))
                .with_hint("leave --max-subcalls out for no sub-call limit")
                .into(),
        );
    }
    Ok(RunLimits {
        max_iterations: args.max_iterations,
        spend: rlm_llm::Budget {
            max_tokens,
            max_cost_usd: max_cost,
            ..rlm_llm::Budget::default()
        },
        timeout: args.max_time.map(Duration::from_secs_f64),
        max_subcalls: args.max_subcalls,
        max_consecutive_errors: args.max_errors,
        max_prompt_bytes,
        max_answer_bytes,
    })
}

/// The windows `[run.context_windows]` sets (and only those), for commands that ask a server
/// for a window when the configuration gives none (`rlm query`).
pub fn configured_windows(sources: &Sources) -> anyhow::Result<ContextWindows> {
    let configured = catalog::RUN_CONTEXT_WINDOWS.read(sources)?;
    // Checked as `rlm run` checks them (a zero window is refused).
    context_windows(sources)?;
    let mut windows = ContextWindows::empty();
    for (model, tokens) in configured {
        windows.insert(model, tokens);
    }
    Ok(windows)
}

/// The built-in context windows with `[run.context_windows]` on top.
fn context_windows(sources: &Sources) -> anyhow::Result<ContextWindows> {
    let mut windows = ContextWindows::builtin();
    for (model, tokens) in catalog::RUN_CONTEXT_WINDOWS.read(sources)? {
        if tokens == 0 {
            return Err(input_error(format!(
                "[run.context_windows] {model:?} = 0: a window needs at least one token"
            ))
            .into());
        }
        windows.insert(model, tokens);
    }
    Ok(windows)
}

/// Every `--context-file` (in order), then `--context`; at most one of them may be `-`.
fn context_sources(args: &RunRequest, may_be_empty: bool) -> anyhow::Result<Vec<ContextSource>> {
    let mut contexts: Vec<ContextSource> = args
        .context_files
        .iter()
        .map(|path| {
            if path.as_os_str() == "-" {
                ContextSource::Stdin
            } else {
                ContextSource::File(path.clone())
            }
        })
        .collect();
    match args.context.as_deref() {
        Some("-") => contexts.push(ContextSource::Stdin),
        Some(text) => contexts.push(ContextSource::Inline(text.to_owned())),
        None => {}
    }
    let stdin_uses = contexts
        .iter()
        .filter(|source| **source == ContextSource::Stdin)
        .count();
    if stdin_uses > 1 {
        return Err(input_error("stdin (`-`) can be used for one context only").into());
    }
    if contexts.is_empty() && !may_be_empty {
        return Err(AppError::input(anyhow::anyhow!("no context given"))
            .with_hint(
                "pass --context-file FILE (repeatable), --context TEXT, or --context - for stdin",
            )
            .into());
    }
    Ok(contexts)
}

#[cfg(all(test, feature = "clap"))]
mod tests {
    use super::*;
    use crate::settings::tests::Layout;

    /// `rlm run ARGS…` as the command line would parse it.
    fn run_args(args: &[&str]) -> RunRequest {
        crate::requests::parse(args)
    }

    const USER: &str = "[llm]\nmodel = 'user:m'\nsubcall_model = 'user:s'\n";
    const PROJECT: &str = "[llm]\nmodel = 'project:m'\n";

    #[test]
    fn models_follow_flag_env_project_user_default() {
        let args = run_args(&["q", "--context", "text"]);
        let err = RunSettings::resolve(&args, &Layout::new(None, None).sources(&[])).unwrap_err();
        assert!(err.to_string().contains("no model configured"), "{err}");

        let user = Layout::new(Some(USER), None);
        let settings = RunSettings::resolve(&args, &user.sources(&[])).unwrap();
        assert_eq!(
            (
                settings.engine.model.as_str(),
                settings.engine.subcall_model.as_str()
            ),
            ("user:m", "user:s")
        );

        let both = Layout::new(Some(USER), Some(PROJECT));
        let settings = RunSettings::resolve(&args, &both.sources(&[])).unwrap();
        assert_eq!(
            (
                settings.engine.model.as_str(),
                settings.engine.subcall_model.as_str()
            ),
            ("project:m", "user:s")
        );

        let env = [("RLM_MODEL", "env:m"), ("RLM_SUBCALL_MODEL", "env:s")];
        let settings = RunSettings::resolve(&args, &both.sources(&env)).unwrap();
        assert_eq!(
            (
                settings.engine.model.as_str(),
                settings.engine.subcall_model.as_str()
            ),
            ("env:m", "env:s")
        );

        let flagged = run_args(&["q", "--context", "text", "-m", "flag:m"]);
        let settings = RunSettings::resolve(&flagged, &both.sources(&env)).unwrap();
        assert_eq!(
            (
                settings.engine.model.as_str(),
                settings.engine.subcall_model.as_str()
            ),
            ("flag:m", "env:s")
        );

        let only_root = Layout::new(None, Some(PROJECT));
        let settings = RunSettings::resolve(&args, &only_root.sources(&[])).unwrap();
        assert_eq!(
            settings.engine.subcall_model, "project:m",
            "sub-calls default to the root model"
        );
    }

    #[test]
    fn store_is_the_flag_value_then_rlm_store_then_dot_rlm_and_excludes_contexts() {
        let layout = Layout::new(Some(USER), None);
        let store_dir = |args: &[&str], env: &[(&str, &str)]| {
            let settings = RunSettings::resolve(&run_args(args), &layout.sources(env)).unwrap();
            assert!(settings.contexts.is_empty());
            settings
                .store
                .and_then(|store| store.dir().map(PathBuf::from))
        };
        assert_eq!(
            store_dir(&["--store", "q"], &[]),
            Some(PathBuf::from(".rlm"))
        );
        assert_eq!(
            store_dir(&["--store", "q"], &[("RLM_STORE", "/env/store")]),
            Some(PathBuf::from("/env/store"))
        );
        assert_eq!(
            store_dir(&["--store=/flag", "q"], &[("RLM_STORE", "/env/store")]),
            Some(PathBuf::from("/flag"))
        );
        let both = run_args(&["--store", "--context", "text", "q"]);
        let err = RunSettings::resolve(&both, &layout.sources(&[])).unwrap_err();
        assert!(
            err.to_string().contains("--store cannot be combined"),
            "{err}"
        );
        let plain = RunSettings::resolve(&run_args(&["--context", "t", "q"]), &layout.sources(&[]));
        assert!(plain.unwrap().store.is_none());
    }

    #[test]
    fn log_directory_is_flag_then_xdg_state_then_home_or_none() {
        let layout = Layout::new(Some(USER), None);
        let args = run_args(&["q", "--context", "text"]);
        let settings =
            RunSettings::resolve(&args, &layout.sources(&[("HOME", "/home/u")])).unwrap();
        assert_eq!(
            settings.engine.log_dir,
            Some(PathBuf::from("/home/u/.local/state/rlm/runs"))
        );
        let sources = layout.sources(&[("HOME", "/home/u"), ("XDG_STATE_HOME", "/state")]);
        let settings = RunSettings::resolve(&args, &sources).unwrap();
        assert_eq!(
            settings.engine.log_dir,
            Some(PathBuf::from("/state/rlm/runs"))
        );
        let flagged = run_args(&["q", "--context", "text", "--log", "/flag"]);
        let settings = RunSettings::resolve(&flagged, &sources).unwrap();
        assert_eq!(settings.engine.log_dir, Some(PathBuf::from("/flag")));
        let off = run_args(&["q", "--context", "text", "--no-log"]);
        assert_eq!(
            RunSettings::resolve(&off, &sources).unwrap().engine.log_dir,
            None
        );
        assert_eq!(
            RunSettings::resolve(&args, &layout.sources(&[]))
                .unwrap()
                .engine
                .log_dir,
            None,
            "no HOME and no XDG_STATE_HOME: nowhere to log"
        );
    }

    #[test]
    fn prompt_overrides_come_from_env_dir_else_user_config_dir() {
        let layout = Layout::new(Some(USER), None);
        let user_prompts = layout.path("xdg/rlm/prompts");
        let env_prompts = layout.path("env-prompts");
        std::fs::create_dir_all(&user_prompts).unwrap();
        std::fs::create_dir_all(&env_prompts).unwrap();
        std::fs::write(user_prompts.join("system.md"), "USER SYSTEM PROMPT").unwrap();
        std::fs::write(env_prompts.join("system.md"), "ENV SYSTEM PROMPT").unwrap();
        let args = run_args(&["q", "--context", "text"]);

        let settings = RunSettings::resolve(&args, &layout.sources(&[])).unwrap();
        assert_eq!(settings.engine.prompts.system, "USER SYSTEM PROMPT");
        let env = [("RLM_PROMPT_DIR", env_prompts.to_str().unwrap())];
        let settings = RunSettings::resolve(&args, &layout.sources(&env)).unwrap();
        assert_eq!(settings.engine.prompts.system, "ENV SYSTEM PROMPT");
        assert_eq!(
            settings.engine.prompts.first_turn,
            Prompts::default().first_turn
        );
    }

    #[test]
    fn reduced_protection_follows_flag_env_config_and_defaults_to_off() {
        let args = run_args(&["q", "--context", "text"]);
        let plain = Layout::new(Some(USER), None);
        let allow = |args: &RunRequest, sources: &Sources| {
            RunSettings::resolve(args, sources)
                .unwrap()
                .engine
                .allow_reduced_protection
        };
        assert!(!allow(&args, &plain.sources(&[])));
        let allowing = Layout::new(
            Some(USER),
            Some("[sandbox]\nallow_reduced_protection = true\n"),
        );
        assert!(allow(&args, &allowing.sources(&[])));
        let env_off = [("RLM_ALLOW_REDUCED_PROTECTION", "0")];
        assert!(!allow(&args, &allowing.sources(&env_off)));
        let env_on = [("RLM_ALLOW_REDUCED_PROTECTION", "1")];
        assert!(allow(&args, &plain.sources(&env_on)));
        let flagged = run_args(&["q", "--context", "text", "--allow-reduced-protection"]);
        assert!(allow(&flagged, &plain.sources(&env_off)));
        let odd = [("RLM_ALLOW_REDUCED_PROTECTION", "maybe")];
        assert!(RunSettings::resolve(&args, &plain.sources(&odd)).is_err());
    }

    #[test]
    fn budget_and_contexts_come_from_flags() {
        let layout = Layout::new(Some(USER), None);
        let args = run_args(&[
            "q",
            "--context-file",
            "a.txt",
            "--context-file",
            "-",
            "--context",
            "inline",
            "--max-iterations",
            "4",
            "--max-cost",
            "0.5",
            "--timeout",
            "2",
        ]);
        let settings = RunSettings::resolve(&args, &layout.sources(&[])).unwrap();
        assert_eq!(
            settings.contexts,
            [
                ContextSource::File("a.txt".into()),
                ContextSource::Stdin,
                ContextSource::Inline("inline".into())
            ]
        );
        assert_eq!(settings.engine.limits.max_iterations, 4);
        assert_eq!(settings.engine.limits.spend.max_cost_usd, Some(0.5));
        assert_eq!(settings.engine.limits.timeout, Some(Duration::from_secs(2)));
        assert_eq!(settings.engine.limits.max_consecutive_errors, 5);
        let flagged = run_args(&["q", "--context", "x", "--max-errors", "2"]);
        let settings = RunSettings::resolve(&flagged, &layout.sources(&[])).unwrap();
        assert_eq!(settings.engine.limits.max_consecutive_errors, 2);

        for bad in [
            &["q", "--context", "-", "--context-file", "-"][..],
            &["q"],
            &["q", "--context", "x", "--max-cost=-1"],
            &["q", "--context", "x", "--max-tokens", "0"],
            &["q", "--context", "x", "--max-errors", "0"],
            &["q", "--context", "x", "--max-subcalls", "0"],
            &[" ", "--context", "x"],
        ] {
            let err = RunSettings::resolve(&run_args(bad), &layout.sources(&[])).unwrap_err();
            let cli = err.downcast_ref::<AppError>().expect("an input error");
            assert_eq!(cli.kind, crate::error::Kind::Input, "{bad:?}: {err}");
        }
    }

    #[test]
    fn size_caps_and_windows_come_from_flags_else_the_run_section() {
        let args = run_args(&["q", "--context", "text"]);
        let defaults =
            RunSettings::resolve(&args, &Layout::new(Some(USER), None).sources(&[])).unwrap();
        assert_eq!(defaults.engine.limits.max_prompt_bytes, 10_000_000);
        assert_eq!(defaults.engine.limits.max_answer_bytes, 50_000_000);
        assert_eq!(
            defaults.engine.context_windows.get("openai:gpt-4o"),
            Some(128_000)
        );

        let layout = Layout::new(
            Some(USER),
            Some(
                "[run]\nmax_prompt_size = '2MiB'\nmax_answer_size = 1000\n\
                 [run.context_windows]\n'ollama:llama3' = 8192\n",
            ),
        );
        let settings = RunSettings::resolve(&args, &layout.sources(&[])).unwrap();
        assert_eq!(settings.engine.limits.max_prompt_bytes, 2 << 20);
        assert_eq!(settings.engine.limits.max_answer_bytes, 1000);
        assert_eq!(
            settings.engine.context_windows.get("ollama:llama3:8b"),
            Some(8192)
        );
        let flagged = run_args(&["q", "--context", "x", "--max-answer-size", "3kb"]);
        let settings = RunSettings::resolve(&flagged, &layout.sources(&[])).unwrap();
        assert_eq!(settings.engine.limits.max_answer_bytes, 3000);
        assert_eq!(settings.engine.limits.max_prompt_bytes, 2 << 20);
    }

    #[test]
    fn allowed_models_come_from_the_flag_else_the_run_section() {
        let layout = Layout::new(
            Some("[llm]\nmodel = 'user:m'\n[run]\nallow_models = ['a:x', 'b:y']\n"),
            None,
        );
        let args = run_args(&["q", "--context", "text"]);
        let settings = RunSettings::resolve(&args, &layout.sources(&[])).unwrap();
        assert_eq!(settings.engine.allowed_models, ["a:x", "b:y"]);
        let flagged = run_args(&["q", "--context", "text", "--allow-model", "c:z"]);
        let settings = RunSettings::resolve(&flagged, &layout.sources(&[])).unwrap();
        assert_eq!(settings.engine.allowed_models, ["c:z"]);
        let none = Layout::new(Some(USER), None);
        let settings = RunSettings::resolve(&args, &none.sources(&[])).unwrap();
        assert!(settings.engine.allowed_models.is_empty());
    }

    #[test]
    fn block_timeout_is_flag_then_run_section_then_the_sandbox_default() {
        let block = |args: &[&str], layout: &Layout| {
            RunSettings::resolve(&run_args(args), &layout.sources(&[]))
                .map(|settings| settings.engine.block_timeout)
        };
        let plain = Layout::new(Some(USER), None);
        let configured = Layout::new(Some(USER), Some("[run]\nblock_timeout = 2.5\n"));
        let args = ["q", "--context", "x"];
        assert_eq!(block(&args, &plain).unwrap(), DEFAULT_BLOCK_TIMEOUT);
        assert_eq!(
            DEFAULT_BLOCK_TIMEOUT,
            rlm_sandbox::Limits::default().timeout,
            "the default is the sandbox's own"
        );
        assert_eq!(
            block(&args, &configured).unwrap(),
            Duration::from_millis(2500)
        );
        let flagged = ["q", "--context", "x", "--block-timeout", "7"];
        assert_eq!(
            block(&flagged, &configured).unwrap(),
            Duration::from_secs(7)
        );
        for bad in ["0", "-1", "1e9", "nan"] {
            let layout = Layout::new(Some(USER), Some(&format!("[run]\nblock_timeout = {bad}\n")));
            let err = block(&args, &layout).unwrap_err();
            let cli = err.downcast_ref::<AppError>().expect("an input error");
            assert_eq!(cli.kind, crate::error::Kind::Input, "{bad}: {err}");
            assert!(err.to_string().contains("block_timeout in [run]"), "{err}");
        }
        for bad in ["0", "-1", "100000", "soon"] {
            let flag = format!("--block-timeout={bad}");
            let parsed = crate::requests::try_parse::<RunRequest>(&["q", "--context", "x", &flag]);
            let err = parsed.unwrap_err();
            assert!(err.to_string().contains("--block-timeout"), "{bad}: {err}");
        }
    }
}
