//! The public entry point: [`Rlm::builder`] → [`Rlm::completion`].

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use rlm_llm::ContextWindows;
use rlm_trace::{new_run_id, root_stem_named};

use crate::context::ContextPart;
use crate::error::Error;
use crate::events::EventSink;
use crate::functions::HostFunctions;
use crate::host::RunScope;
use crate::limits::{RunAccount, RunLimits};
use crate::model::ModelClient;
use crate::prompt::Prompts;
use crate::repl::ReplFactory;
use crate::resume::Resume;
use crate::run::{RunResult, run_loop};
use crate::tools::Toolbox;

/// Printed output per code block that reaches the model, in chars.
pub const DEFAULT_OUTPUT_LIMIT: usize = 10_000;
/// What the prompt tells the root model a sub-model can read, in chars (~100k tokens).
pub const DEFAULT_SUBCALL_WINDOW_CHARS: usize = 400_000;
/// The chunk size the prompt suggests for fan-outs, in chars.
pub const DEFAULT_CHUNK_CHARS: usize = 200_000;
/// Child runs one run keeps open at once (each holds a REPL session).
pub const DEFAULT_MAX_CONCURRENT_CHILDREN: usize = 4;
/// The stop sequence that ends a reply at the close of its code block.
pub const CODE_BLOCK_STOP: &str = "\n```\n";

/// Settings shared by a run and all its children.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The model writing code at the root.
    pub root_model: String,
    /// The model answering `llm_query` and running child runs.
    pub subcall_model: String,
    /// Models code may name in `llm_query(..., model=)` besides the root and sub-call models.
    pub allowed_models: Vec<String>,
    /// Depth of `rlm_query` recursion: 1 = `rlm_query` is a plain `llm_query`.
    pub max_depth: u32,
    /// Limits of the root run.
    pub limits: RunLimits,
    /// Limits of each child run (still bounded by what the parent has left).
    pub child_limits: RunLimits,
    /// Prompt templates.
    pub prompts: Prompts,
    /// Printed output per block shown to the model.
    pub output_limit: usize,
    /// Sub-model window the prompt announces, in chars.
    pub subcall_window_chars: usize,
    /// Chunk size the prompt suggests, in chars.
    pub chunk_chars: usize,
    /// Documentation of the sandbox's native helpers, inserted in the system prompt.
    pub helpers_doc: String,
    /// Name of the REPL backend, for the trajectory metadata.
    pub environment_name: String,
    /// Stop sequences of root-model turns.
    pub stop: Vec<String>,
    /// Output-token cap of root-model turns.
    pub root_max_output_tokens: Option<u32>,
    /// Output-token cap of sub-calls.
    pub subcall_max_output_tokens: Option<u32>,
    /// Sampling temperature of root turns (`None`: the provider's default).
    pub root_temperature: Option<f32>,
    /// Sampling temperature of sub-calls.
    pub subcall_temperature: Option<f32>,
    /// Child runs one run keeps open at once.
    pub max_concurrent_children: usize,
    /// Where trajectory logs go; `None` disables logging.
    pub log_dir: Option<PathBuf>,
    /// Context windows of models: a request that clearly does not fit is not sent.
    pub context_windows: ContextWindows,
    /// The user's instructions in place of the system prompt's own (the sandbox section still
    /// follows them, so the model knows what the REPL offers).
    pub custom_system_prompt: Option<String>,
    /// Sections appended to the system prompt (tool documentation the user writes).
    pub system_sections: Vec<String>,
    /// Code run in each root session before the first turn (the user's helper functions).
    pub setup_code: Option<String>,
    /// The root run's custom tools.
    pub tools: Toolbox,
    /// The custom tools of `rlm_query` child runs.
    pub sub_tools: Toolbox,
    /// Sub-calls (`llm_query` items and child runs) one run keeps in flight at once; `None`
    /// leaves plain calls to the providers' limiters.
    pub max_concurrent_subcalls: Option<usize>,
    /// The first word of trajectory file names (`rlm` gives `rlm_<time>_<id>.jsonl`).
    pub log_name: String,
    /// Compaction: when the root's conversation reaches this share of the root model's
    /// window, the model summarizes and the conversation restarts from the summary (the
    /// turns it replaced stay in the REPL's `history`). `None`: never.
    pub compaction: Option<f64>,
}

/// What every run of one [`Rlm`] shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub client: Arc<dyn ModelClient>,
    pub repl: Arc<dyn ReplFactory>,
    pub settings: Settings,
    pub events: Option<Arc<dyn EventSink>>,
    /// Functions bound in every run's session besides the sub-calls (child runs inherit them).
    pub functions: Option<Arc<dyn HostFunctions>>,
}

/// A configured recursive language model. Cheap to share; each
/// [`completion`](Rlm::completion) is an independent run with its own budget.
#[derive(Debug, Clone)]
pub struct Rlm {
    shared: Arc<Shared>,
}

impl Rlm {
    /// Starts configuring an RLM.
    pub fn builder() -> RlmBuilder {
        RlmBuilder::default()
    }

    /// The settings in force.
    pub fn settings(&self) -> &Settings {
        &self.shared.settings
    }

    /// Answers `query` over `contexts`.
    ///
    /// Limits, model mistakes and a failing root model end the run with a
    /// [`Status`](crate::Status) in the result (the model's error, typed, in
    /// [`RunResult::error`]); `Err` means the run could not start or its log could not be
    /// written.
    ///
    /// Cancel safety: dropping the future stops the run; the trajectory keeps every line
    /// written so far.
    pub async fn completion(
        &self,
        query: &str,
        contexts: Vec<ContextPart>,
    ) -> Result<RunResult, Error> {
        self.run(query, contexts, None).await
    }

    /// Answers `query` over `contexts`, continuing earlier runs: `resume`'s plain-data
    /// variables are restored into the REPL and its conversations bound as `history_0 …
    /// history_n` before the first turn, and the first user message says so (the
    /// [`Prompts::session`] template). Take `resume` from the earlier runs'
    /// [`RunResult::variables`] and [`RunResult::conversation`].
    ///
    /// Errors and cancel safety as [`Rlm::completion`].
    pub async fn completion_resuming(
        &self,
        query: &str,
        contexts: Vec<ContextPart>,
        resume: &Resume,
    ) -> Result<RunResult, Error> {
        self.run(query, contexts, Some(resume)).await
    }

    async fn run(
        &self,
        query: &str,
        contexts: Vec<ContextPart>,
        resume: Option<&Resume>,
    ) -> Result<RunResult, Error> {
        let settings = &self.shared.settings;
        let account = RunAccount::root(settings.limits.clone());
        let run_id = new_run_id();
        let log = settings
            .log_dir
            .as_ref()
            .map(|dir| (dir.clone(), root_stem_named(&settings.log_name, &run_id)));
        let scope = Arc::new(RunScope::new(
            Arc::clone(&self.shared),
            0,
            run_id,
            settings.root_model.clone(),
            Arc::clone(&account),
            account,
            log,
            Arc::new(AtomicUsize::new(0)),
        ));
        run_loop(scope, query, contexts, None, resume).await
    }
}

/// Builds an [`Rlm`]. A model client, a REPL factory and a root model are required.
#[derive(Debug, Default)]
pub struct RlmBuilder {
    client: Option<Arc<dyn ModelClient>>,
    repl: Option<Arc<dyn ReplFactory>>,
    events: Option<Arc<dyn EventSink>>,
    functions: Option<Arc<dyn HostFunctions>>,
    root_model: Option<String>,
    subcall_model: Option<String>,
    allowed_models: Option<Vec<String>>,
    max_depth: Option<u32>,
    limits: Option<RunLimits>,
    child_limits: Option<RunLimits>,
    prompts: Option<Prompts>,
    output_limit: Option<usize>,
    subcall_window_chars: Option<usize>,
    chunk_chars: Option<usize>,
    helpers_doc: Option<String>,
    environment_name: Option<String>,
    stop: Option<Vec<String>>,
    root_max_output_tokens: Option<u32>,
    subcall_max_output_tokens: Option<u32>,
    root_temperature: Option<f32>,
    subcall_temperature: Option<f32>,
    max_concurrent_children: Option<usize>,
    log_dir: Option<PathBuf>,
    context_windows: Option<ContextWindows>,
    custom_system_prompt: Option<String>,
    system_sections: Option<Vec<String>>,
    setup_code: Option<String>,
    tools: Option<Toolbox>,
    sub_tools: Option<Toolbox>,
    max_concurrent_subcalls: Option<usize>,
    log_name: Option<String>,
    compaction: Option<f64>,
}

macro_rules! setter {
    ($(#[$doc:meta])* $name:ident: $ty:ty) => {
        $(#[$doc])*
        #[must_use]
        pub fn $name(mut self, value: $ty) -> Self {
            self.$name = Some(value);
            self
        }
    };
}

impl RlmBuilder {
    setter!(/// The model client (required).
        client: Arc<dyn ModelClient>);
    setter!(/// The REPL factory (required).
        repl: Arc<dyn ReplFactory>);
    setter!(/// Where progress events go.
        events: Arc<dyn EventSink>);
    setter!(/// Functions the run's code can call besides the sub-calls (e.g. a store's
        /// search), in `rlm_query` child runs too; the first message then describes the data
        /// with their `describe()`.
        functions: Arc<dyn HostFunctions>);
    setter!(/// Models code may pick with `model=` besides the root and sub-call models
        /// (default: none).
        allowed_models: Vec<String>);
    setter!(/// Recursion depth (default 1: `rlm_query` is a plain sub-call).
        max_depth: u32);
    setter!(/// Limits of the root run (default: [`RunLimits::default`]).
        limits: RunLimits);
    setter!(/// Limits of each child run (default: the root's iteration and error limits).
        child_limits: RunLimits);
    setter!(/// Prompt templates (default: the compiled-in ones).
        prompts: Prompts);
    setter!(/// Output chars per block shown to the model.
        output_limit: usize);
    setter!(/// Sub-model window announced in the prompt, in chars.
        subcall_window_chars: usize);
    setter!(/// Chunk size suggested in the prompt, in chars.
        chunk_chars: usize);
    setter!(/// Text describing the sandbox's native helpers, for the system prompt.
        helpers_doc: String);
    setter!(/// Name of the REPL backend for the trajectory.
        environment_name: String);
    setter!(/// Stop sequences of root turns (default: cut after a code block).
        stop: Vec<String>);
    setter!(/// Output-token cap of root turns.
        root_max_output_tokens: u32);
    setter!(/// Output-token cap of sub-calls.
        subcall_max_output_tokens: u32);
    setter!(/// Sampling temperature of root turns.
        root_temperature: f32);
    setter!(/// Sampling temperature of sub-calls.
        subcall_temperature: f32);
    setter!(/// Child runs one run keeps open at once.
        max_concurrent_children: usize);
    setter!(/// Directory for trajectory logs (default: no log).
        log_dir: PathBuf);
    setter!(/// Context windows of models (default: [`ContextWindows::builtin`]).
        context_windows: ContextWindows);
    setter!(/// The user's instructions in place of the system prompt's own; the sandbox section
        /// follows them.
        custom_system_prompt: String);
    setter!(/// Sections appended to the system prompt.
        system_sections: Vec<String>);
    setter!(/// Code run in the root session before the first turn.
        setup_code: String);
    setter!(/// The root run's custom tools (default: none).
        tools: Toolbox);
    setter!(/// The custom tools of `rlm_query` child runs (default: the root's).
        sub_tools: Toolbox);
    setter!(/// Sub-calls one run keeps in flight at once (default: no bound besides the
        /// providers' limiters; child runs are bounded by `max_concurrent_children`).
        max_concurrent_subcalls: usize);
    setter!(/// The first word of trajectory file names (default `rlm`).
        log_name: String);
    setter!(/// Compacts the root's conversation at this share of the model's window (0 to 1;
        /// default: never).
        compaction: f64);

    /// The root model (required).
    #[must_use]
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.root_model = Some(model.into());
        self
    }

    /// The sub-call model (default: the root model).
    #[must_use]
    pub fn subcall_model(mut self, model: impl Into<String>) -> Self {
        self.subcall_model = Some(model.into());
        self
    }

    /// Checks the configuration and that every model the run may call can be called (a known
    /// provider with its key, [`Error::Model`] otherwise), and builds the RLM.
    pub fn build(self) -> Result<Rlm, Error> {
        let client = self
            .client
            .ok_or_else(|| Error::Config("no model client".into()))?;
        let repl = self
            .repl
            .ok_or_else(|| Error::Config("no REPL factory".into()))?;
        let root_model = self
            .root_model
            .filter(|m| !m.trim().is_empty())
            .ok_or_else(|| Error::Config("no root model".into()))?;
        let limits = self.limits.unwrap_or_default();
        check_limits(&limits)?;
        let max_depth = self.max_depth.unwrap_or(1);
        if max_depth == 0 {
            return Err(Error::Config("max_depth must be at least 1".into()));
        }
        let child_limits = self.child_limits.unwrap_or_else(|| RunLimits {
            max_iterations: limits.max_iterations,
            max_consecutive_errors: limits.max_consecutive_errors,
            max_prompt_bytes: limits.max_prompt_bytes,
            max_answer_bytes: limits.max_answer_bytes,
            ..RunLimits::default()
        });
        let settings = Settings {
            subcall_model: self.subcall_model.unwrap_or_else(|| root_model.clone()),
            root_model,
            allowed_models: self.allowed_models.unwrap_or_default(),
            max_depth,
            limits,
            child_limits,
            prompts: self.prompts.unwrap_or_default(),
            output_limit: self.output_limit.unwrap_or(DEFAULT_OUTPUT_LIMIT),
            subcall_window_chars: self
                .subcall_window_chars
                .unwrap_or(DEFAULT_SUBCALL_WINDOW_CHARS),
            chunk_chars: self.chunk_chars.unwrap_or(DEFAULT_CHUNK_CHARS),
            helpers_doc: self.helpers_doc.unwrap_or_default(),
            environment_name: self.environment_name.unwrap_or_else(|| "repl".into()),
            stop: self
                .stop
                .unwrap_or_else(|| vec![CODE_BLOCK_STOP.to_owned()]),
            root_max_output_tokens: self.root_max_output_tokens,
            subcall_max_output_tokens: self.subcall_max_output_tokens,
            root_temperature: self.root_temperature,
            subcall_temperature: self.subcall_temperature,
            max_concurrent_children: self
                .max_concurrent_children
                .or(self.max_concurrent_subcalls)
                .unwrap_or(DEFAULT_MAX_CONCURRENT_CHILDREN),
            log_dir: self.log_dir,
            context_windows: self.context_windows.unwrap_or_else(ContextWindows::builtin),
            custom_system_prompt: self.custom_system_prompt,
            system_sections: self.system_sections.unwrap_or_default(),
            setup_code: self.setup_code.filter(|code| !code.trim().is_empty()),
            sub_tools: self
                .sub_tools
                .or_else(|| self.tools.clone())
                .unwrap_or_default(),
            tools: self.tools.unwrap_or_default(),
            max_concurrent_subcalls: self.max_concurrent_subcalls,
            log_name: self.log_name.unwrap_or_else(|| "rlm".to_owned()),
            compaction: self.compaction,
        };
        settings.check(self.functions.as_deref())?;
        // A sub-call's error only reaches model code as text, so a model the run can never
        // call (no key, unknown provider) is refused here, typed, before the first turn.
        let models = [&settings.root_model, &settings.subcall_model]
            .into_iter()
            .chain(&settings.allowed_models);
        for model in models {
            client.check(model).map_err(|source| Error::Model {
                model: model.clone(),
                source,
            })?;
        }
        Ok(Rlm {
            shared: Arc::new(Shared {
                client,
                repl,
                settings,
                events: self.events,
                functions: self.functions,
            }),
        })
    }
}

/// A run needs at least one turn, one error before it stops, and room for a prompt and an
/// answer.
fn check_limits(limits: &RunLimits) -> Result<(), Error> {
    if limits.max_iterations == 0 {
        return Err(Error::Config("max_iterations must be at least 1".into()));
    }
    if limits.max_consecutive_errors == 0 {
        return Err(Error::Config(
            "max_consecutive_errors must be at least 1".into(),
        ));
    }
    if limits.max_prompt_bytes == 0 || limits.max_answer_bytes == 0 {
        return Err(Error::Config(
            "max_prompt_bytes and max_answer_bytes must be at least 1".into(),
        ));
    }
    Ok(())
}

impl Settings {
    /// The settings a builder could not check field by field: the compaction share, the
    /// sub-call cap, the log name, and tools named as the run's functions.
    fn check(&self, functions: Option<&dyn HostFunctions>) -> Result<(), Error> {
        if let Some(share) = self.compaction
            && !(share > 0.0 && share <= 1.0)
        {
            return Err(Error::Config(format!(
                "the compaction threshold must be above 0 and at most 1, not {share}"
            )));
        }
        if self.max_concurrent_subcalls == Some(0) {
            return Err(Error::Config(
                "max_concurrent_subcalls must be at least 1".into(),
            ));
        }
        if !rlm_trace::is_run_id(&self.log_name) {
            return Err(Error::Config(format!(
                "log name {:?} must be 1 to 64 letters, digits, `-` or `_`",
                self.log_name
            )));
        }
        if let Some(functions) = functions {
            let names: Vec<String> = functions.functions().into_iter().map(|f| f.name).collect();
            for tool in self.tools.tools().iter().chain(self.sub_tools.tools()) {
                if names.contains(&tool.name) {
                    return Err(Error::Config(format!(
                        "tool {:?} has the name of one of the run's functions ({})",
                        tool.name,
                        names.join(", ")
                    )));
                }
            }
        }
        Ok(())
    }
}
