//! Model settings, highest precedence first: flags, environment, the `[llm]` configuration
//! section (project file over user file), defaults. Every command that calls a model uses
//! [`LlmSettings::resolve`] and [`LlmSettings::build_client`]; `rlm chat` wraps them in
//! [`ChatSettings`].
//!
//! ```toml
//! [llm]
//! model = "anthropic:claude-sonnet-4-5"
//! subcall_model = "anthropic:claude-haiku-4-5"
//! max_concurrency = 16        # per provider; default 16, automatic for a server on this
//!                             # machine (its /props total_slots, else adaptive up to 16)
//! timeout_secs = 300          # per request, until its answer starts
//! idle_timeout_secs = 60      # longest silence inside a streamed answer
//! stream = true               # stream answers (false: whole bodies, for broken servers)
//! max_retries = 4
//! max_output_tokens = 8192    # per answer; default 8192, 32768 for reasoning models
//! default_provider = "ollama" # for model names without `provider:`
//! prompt_cache = true         # Anthropic cache breakpoints on the system prompt and the
//!                             # growing conversation (default true; `--no-prompt-cache`)
//!
//! [llm.providers.local]       # add or override a provider
//! kind = "openai"             # or "anthropic"
//! base_url = "http://localhost:8000/v1"
//! api_key_env = "LOCAL_KEY"   # or api_key = "..." (redacted in `rlm config show`)
//! max_concurrency = 4         # default automatic here: the base URL is on this machine
//!
//! [llm.prices."my-model"]     # USD per million tokens; extends the built-in table
//! input_per_mtok = 1.0
//! output_per_mtok = 2.0
//!
//! [llm.capabilities."my-reasoner"]  # models whose name starts with this; extends the
//! stop = false                      # built-in table (`rlm_llm::capabilities`); omitted
//! temperature = false               # fields mean "accepted"
//! max_tokens_field = "max_completion_tokens"
//! tools = false                     # no native tool calling (rlm query's report asks plainly)
//! api = "responses"                 # OpenAI's /responses endpoint ("chat_completions" default)
//! json_schema = false               # no structured output: plain JSON mode (a key written
//!                                   # "provider:" covers every model of that provider)
//! ```

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use rlm_llm::{
    CapabilityTable, LlmClient, MaxTokensField, PriceTable, ProviderConfig, RetryPolicy,
};

use super::env;
use super::{ModelBackend, Sources, catalog};
use crate::error::{AppError, input_error, llm_error};
use crate::requests::{ChatRequest, LlmOptions};

/// Merged model settings. `Debug` shows no secrets (keys are `ApiKey`).
#[derive(Debug, Clone)]
pub struct LlmSettings {
    /// Main model, if any was configured.
    pub model: Option<String>,
    /// Sub-call model; falls back to `model`.
    pub subcall_model: Option<String>,
    pub record: Option<PathBuf>,
    pub replay: Option<PathBuf>,
    pub providers: Vec<ProviderConfig>,
    pub default_provider: Option<String>,
    /// How long a request may take until its answer starts.
    pub request_timeout: Duration,
    /// Longest silence inside a streamed answer once it has started.
    pub idle_timeout: Duration,
    /// Whether answers are streamed from the provider (also those a command shows whole).
    pub stream: bool,
    pub retry: RetryPolicy,
    pub prices: PriceTable,
    /// Which parameters each model family accepts: built-in rules plus `[llm.capabilities]`.
    pub capabilities: CapabilityTable,
    /// The output-token cap set by flag, environment or file; see [`LlmSettings::output_cap`].
    pub max_output_tokens: Option<u32>,
    /// Whether requests ask for prompt caching (Anthropic `cache_control` breakpoints).
    pub prompt_cache: bool,
    /// Providers the front end offers besides the configured ones ([`ModelBackend`]).
    pub backends: Vec<ModelBackend>,
}

/// Output-token cap of one answer when none is configured: a reply of the RLM loop is a code
/// block or an answer, far below it, while a model that never stops is cut in bounded time.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u32 = 8_192;

/// The least default cap a small window gives (a quarter of a 1k window would leave no room
/// for a block of code).
const MIN_WINDOW_OUTPUT_TOKENS: u32 = 256;
/// The same for reasoning models, whose hidden thinking counts against the cap.
pub const DEFAULT_REASONING_MAX_OUTPUT_TOKENS: u32 = 32_768;

/// Provider variables read through `rlm_llm::BUILTIN_PROVIDERS`.
const PROVIDER_VARIABLES: [&str; 9] = [
    env::OPENAI_API_KEY,
    env::OPENAI_BASE_URL,
    env::ANTHROPIC_API_KEY,
    env::ANTHROPIC_BASE_URL,
    env::OPENROUTER_API_KEY,
    env::OLLAMA_BASE_URL,
    env::VLLM_BASE_URL,
    env::LLAMACPP_BASE_URL,
    env::LMSTUDIO_BASE_URL,
];

impl LlmSettings {
    /// Merges flags > environment > the `[llm]` section of the configuration files > defaults,
    /// then the front end's backends and providers.
    pub fn resolve(args: &LlmOptions, sources: &Sources) -> anyhow::Result<Self> {
        let env = sources.env();
        // Names only, never values: enough to debug "why is my key not used".
        let present: Vec<&str> = PROVIDER_VARIABLES
            .iter()
            .copied()
            .filter(|name| env.var(name).is_some())
            .collect();
        tracing::debug!(variables = ?present, "provider variables set");
        let mut settings = Self::merge(args, sources)?;
        settings.offer_backends(sources.model_backends());
        settings.apply_front_end_providers(sources.providers());
        Ok(settings)
    }

    /// Providers the front end sets (the Python package's `backend_kwargs`): above every other
    /// source, a key they carry included; a new name is added as given. An empty base URL
    /// keeps the configured one (a front end that sets only a key).
    fn apply_front_end_providers(&mut self, providers: &[ProviderConfig]) {
        for given in providers {
            match self.providers.iter_mut().find(|p| p.name == given.name) {
                Some(existing) => {
                    existing.kind = given.kind;
                    if !given.base_url.is_empty() && existing.base_url != given.base_url {
                        existing.base_url.clone_from(&given.base_url);
                        existing.max_concurrency = given.max_concurrency;
                    }
                    if given.api_key.is_some() {
                        existing.api_key.clone_from(&given.api_key);
                    }
                }
                None if given.base_url.is_empty() => {}
                None => self.providers.push(given.clone()),
            }
        }
    }

    /// Registers every API key the settings name (environment variables, `[llm.providers.*]`)
    /// with `rlm_llm::secrets`, for a command that shows text from logs without calling a
    /// model (`rlm view`): the keys are masked there as in the run that wrote them. Settings
    /// that do not resolve are left to the commands that use them.
    pub fn register_keys(sources: &Sources) {
        // Making each `ApiKey` registers it; the settings themselves are not needed.
        let _ = Self::resolve(&LlmOptions::default(), sources);
    }

    /// Adds the front end's backends; the first one with a default model supplies the model
    /// when none is configured (the sub-call model too, unless one is configured).
    fn offer_backends(&mut self, backends: &[ModelBackend]) {
        self.backends = backends.to_vec();
        if self.model.is_some() {
            return;
        }
        let Some(fallback) = backends
            .iter()
            .find_map(|backend| backend.default_model.clone())
        else {
            return;
        };
        tracing::debug!(model = %fallback, "no model configured; using the front end's");
        if self.subcall_model.is_none() {
            self.subcall_model = Some(fallback.clone());
        }
        self.model = Some(fallback);
    }

    /// Each setting by its descriptor: flag > environment > files > default.
    fn merge(args: &LlmOptions, sources: &Sources) -> anyhow::Result<Self> {
        use crate::requests::checks;
        checks::optional_range("--max-concurrency", args.max_concurrency, 1..=4096)?;
        checks::optional_range("--max-retries", args.max_retries, 0..=100)?;
        checks::optional_range("--max-output-tokens", args.max_output_tokens, 1..=u32::MAX)?;
        checks::seconds("--request-timeout", args.timeout)?;
        checks::seconds("--idle-timeout", args.idle_timeout)?;
        let model = catalog::LLM_MODEL
            .resolve(args.model.clone(), sources)?
            .value;
        let subcall_model = catalog::LLM_SUBCALL_MODEL
            .resolve(args.subcall_model.clone(), sources)?
            .value
            .or_else(|| model.clone());
        let record = catalog::LLM_RECORD
            .resolve(args.record.clone(), sources)?
            .value;
        let replay = catalog::LLM_REPLAY
            .resolve(args.replay.clone(), sources)?
            .value;
        if record.is_some() && replay.is_some() {
            return Err(input_error("--record and --replay cannot be used together").into());
        }
        let concurrency = catalog::LLM_MAX_CONCURRENCY.resolve(args.max_concurrency, sources)?;
        let timeout = catalog::LLM_TIMEOUT.resolve(args.timeout, sources)?.value;
        let idle = catalog::LLM_IDLE_TIMEOUT
            .resolve(args.idle_timeout, sources)?
            .value;
        let max_retries = catalog::LLM_MAX_RETRIES
            .resolve(args.max_retries, sources)?
            .value;
        let max_output_tokens = catalog::LLM_MAX_OUTPUT_TOKENS
            .resolve(args.max_output_tokens, sources)?
            .value;
        if max_output_tokens == Some(0) {
            return Err(input_error("max_output_tokens must be at least 1").into());
        }
        // The flag can only turn caching off.
        let no_cache = args.no_prompt_cache.then_some(false);
        let mut prices = PriceTable::builtin();
        for (model, price) in catalog::LLM_PRICES.read(sources)? {
            prices.insert(model, price);
        }
        let mut capabilities = CapabilityTable::builtin();
        for (prefix, accepted) in catalog::LLM_CAPABILITIES.read(sources)? {
            capabilities.insert(prefix, accepted);
        }
        Ok(Self {
            model,
            subcall_model,
            record,
            replay,
            providers: super::providers::merge(sources, &concurrency)?,
            default_provider: catalog::LLM_DEFAULT_PROVIDER.read(sources)?.value,
            request_timeout: positive_duration(timeout, "timeout")?,
            idle_timeout: positive_duration(idle, "idle timeout")?,
            stream: catalog::LLM_STREAM.read(sources)?.value,
            retry: RetryPolicy {
                max_retries,
                ..RetryPolicy::default()
            },
            prices,
            capabilities,
            max_output_tokens,
            prompt_cache: catalog::LLM_PROMPT_CACHE.resolve(no_cache, sources)?.value,
            backends: Vec::new(),
        })
    }

    /// The output-token cap for `model` (`provider:name`) whose context window is `window`
    /// when known: the configured one, else the default (larger for reasoning models, those
    /// sent `max_completion_tokens`) but no more than a quarter of the window, so that on a
    /// 4k local server one long answer does not fill the window the next turns need (every
    /// answer stays in the conversation).
    pub fn output_cap(&self, model: &str, window: Option<u64>) -> u32 {
        if let Some(cap) = self.max_output_tokens {
            return cap;
        }
        let name = model.split_once(':').map_or(model, |(_, name)| name);
        let default = match self.capabilities.lookup(name).max_tokens_field {
            MaxTokensField::MaxCompletionTokens => DEFAULT_REASONING_MAX_OUTPUT_TOKENS,
            MaxTokensField::MaxTokens => DEFAULT_MAX_OUTPUT_TOKENS,
        };
        match window {
            Some(window) => {
                let quarter = u32::try_from(window / 4).unwrap_or(u32::MAX);
                default.min(quarter.max(MIN_WINDOW_OUTPUT_TOKENS))
            }
            None => default,
        }
    }

    /// The main model, or an input error saying how to set one.
    pub fn require_model(&self) -> anyhow::Result<&str> {
        self.model.as_deref().ok_or_else(|| {
            AppError::input(anyhow::anyhow!("no model configured"))
                .with_hint(format!(
                    "pass --model provider:name (e.g. openai:gpt-4o-mini), set {}, or set `model` in the [llm] section of rlm.toml",
                    env::RLM_MODEL
                ))
                .into()
        })
    }

    /// Builds the client (one per process; clone it for concurrent callers).
    pub fn build_client(&self) -> anyhow::Result<LlmClient> {
        let mut builder = LlmClient::builder()
            .retry(self.retry)
            .request_timeout(self.request_timeout)
            .idle_timeout(self.idle_timeout)
            .streaming(self.stream)
            .prices(self.prices.clone())
            .capabilities(self.capabilities.clone())
            .prompt_cache(self.prompt_cache);
        for provider in &self.providers {
            builder = builder.provider(provider.clone());
        }
        for offered in &self.backends {
            builder = builder.backend(
                offered.name.clone(),
                offered.backend.clone(),
                offered.max_concurrency,
            );
        }
        if let Some(name) = &self.default_provider {
            builder = builder.default_provider(name.clone());
        }
        if let Some(path) = &self.record {
            builder = builder.record(path);
        }
        if let Some(path) = &self.replay {
            builder = builder.replay(path);
        }
        builder
            .build()
            .map_err(llm_error)
            .context("cannot set up the model client")
    }
}

/// `seconds` as a duration, or an input error naming `what` when it is not positive.
fn positive_duration(seconds: f64, what: &str) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            input_error(format!(
                "{what} {seconds} is not a positive number of seconds"
            ))
            .into()
        })
}

/// Everything `rlm chat` sends besides the prompt.
#[derive(Debug, Clone)]
pub struct ChatSettings {
    pub llm: LlmSettings,
    /// The model asked (required).
    pub model: String,
    pub system: Option<String>,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
    pub stop: Vec<String>,
    pub json_mode: bool,
}

impl ChatSettings {
    pub fn resolve(args: &ChatRequest, sources: &Sources) -> anyhow::Result<Self> {
        crate::requests::checks::optional_range("--max-tokens", args.max_tokens, 1..=u32::MAX)?;
        let llm = LlmSettings::resolve(&args.llm, sources)?;
        let model = llm.require_model()?.to_owned();
        // One answer and no turns after it: the window does not lower the default.
        let max_tokens = Some(
            args.max_tokens
                .unwrap_or_else(|| llm.output_cap(&model, None)),
        );
        Ok(Self {
            llm,
            model,
            system: args.system.clone(),
            temperature: args.temperature,
            max_tokens,
            stop: args.stop.clone(),
            json_mode: args.json_mode,
        })
    }

    /// The request for one prompt.
    pub fn request(&self, prompt: String) -> rlm_llm::ChatRequest {
        let mut request = rlm_llm::ChatRequest::new(self.model.clone())
            .user(prompt)
            .json(self.json_mode);
        request.system = self.system.clone();
        request.temperature = self.temperature;
        request.max_tokens = self.max_tokens;
        request.stop = self.stop.clone();
        request
    }
}

#[cfg(test)]
mod tests {
    use rlm_llm::{ModelCapabilities, ProviderKind};

    use super::*;

    use crate::settings::tests::Layout;

    fn env_of<'a>(pairs: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        pairs.to_vec()
    }

    /// The text of a project file.
    fn config(text: &str) -> String {
        text.to_owned()
    }

    /// The settings from `file` as the project file and `env` as the environment.
    fn merge(args: &LlmOptions, file: String, env: &[(&str, &str)]) -> anyhow::Result<LlmSettings> {
        let layout = Layout::new(None, Some(file.as_str()));
        LlmSettings::merge(args, &layout.sources(env))
    }

    #[test]
    fn flags_beat_env_beat_config() {
        let file = "[llm]\nmodel = 'file:m'\nsubcall_model = 'file:s'\nmax_retries = 9\n";
        let lookup = env_of(&[("RLM_MODEL", "env:m"), ("RLM_MAX_RETRIES", "2")]);
        let args = LlmOptions::default();
        let merged = merge(&args, config(file), &lookup).unwrap();
        assert_eq!(merged.model.as_deref(), Some("env:m"));
        assert_eq!(merged.subcall_model.as_deref(), Some("file:s"));
        assert_eq!(merged.retry.max_retries, 2);

        let args = LlmOptions {
            model: Some("flag:m".into()),
            max_retries: Some(0),
            ..LlmOptions::default()
        };
        let merged = merge(&args, config(file), &lookup).unwrap();
        assert_eq!(merged.model.as_deref(), Some("flag:m"));
        assert_eq!(merged.retry.max_retries, 0);

        let merged = merge(&LlmOptions::default(), String::new(), &env_of(&[])).unwrap();
        assert_eq!(merged.model, None);
        assert!(merged.require_model().is_err());
    }

    /// Each layer in turn is the highest one set: flag > env > project file > user file >
    /// default, through the real file loading.
    #[test]
    fn each_layer_beats_the_ones_below() {
        let user = "[llm]\nmodel = 'user:m'\nsubcall_model = 'user:s'\ntimeout_secs = 11\nmax_retries = 1\n";
        let project = "[llm]\nmodel = 'project:m'\ntimeout_secs = 12\n";
        let env = [("RLM_MODEL", "env:m"), ("RLM_TIMEOUT", "13")];
        let flags = LlmOptions {
            model: Some("flag:m".into()),
            ..LlmOptions::default()
        };
        let resolve = |layout: &Layout, env: &[(&str, &str)], args: &LlmOptions| {
            LlmSettings::resolve(args, &layout.sources(env)).unwrap()
        };

        let none = Layout::new(None, None);
        let merged = resolve(&none, &[], &LlmOptions::default());
        assert_eq!(merged.model, None);
        assert_eq!(merged.request_timeout, rlm_llm::DEFAULT_REQUEST_TIMEOUT);
        assert_eq!(merged.retry.max_retries, RetryPolicy::default().max_retries);

        let user_only = Layout::new(Some(user), None);
        let merged = resolve(&user_only, &[], &LlmOptions::default());
        assert_eq!(merged.model.as_deref(), Some("user:m"));
        assert_eq!(merged.request_timeout, Duration::from_secs(11));
        assert_eq!(merged.retry.max_retries, 1);

        let both = Layout::new(Some(user), Some(project));
        let merged = resolve(&both, &[], &LlmOptions::default());
        assert_eq!(merged.model.as_deref(), Some("project:m"));
        assert_eq!(merged.subcall_model.as_deref(), Some("user:s"));
        assert_eq!(merged.request_timeout, Duration::from_secs(12));
        assert_eq!(
            merged.retry.max_retries, 1,
            "a key the project file lacks stays the user's"
        );

        let merged = resolve(&both, &env, &LlmOptions::default());
        assert_eq!(merged.model.as_deref(), Some("env:m"));
        assert_eq!(merged.request_timeout, Duration::from_secs(13));

        let merged = resolve(&both, &env, &flags);
        assert_eq!(merged.model.as_deref(), Some("flag:m"));
        assert_eq!(merged.request_timeout, Duration::from_secs(13));
    }

    #[test]
    fn prompt_caching_is_on_unless_a_layer_turns_it_off() {
        let resolve = |file: Option<&str>, env: &[(&str, &str)], off_flag: bool| {
            let args = LlmOptions {
                no_prompt_cache: off_flag,
                ..LlmOptions::default()
            };
            LlmSettings::resolve(&args, &Layout::new(None, file).sources(env))
                .unwrap()
                .prompt_cache
        };
        let off = Some("[llm]\nprompt_cache = false\n");
        let on = Some("[llm]\nprompt_cache = true\n");
        assert!(resolve(None, &[], false));
        assert!(!resolve(off, &[], false));
        assert!(resolve(off, &[("RLM_PROMPT_CACHE", "1")], false));
        assert!(!resolve(on, &[("RLM_PROMPT_CACHE", "off")], false));
        assert!(!resolve(on, &[("RLM_PROMPT_CACHE", "true")], true));
        let bad = LlmSettings::resolve(
            &LlmOptions::default(),
            &Layout::new(None, None).sources(&[("RLM_PROMPT_CACHE", "sometimes")]),
        )
        .unwrap_err();
        assert!(bad.to_string().contains("RLM_PROMPT_CACHE"), "{bad}");
    }

    #[test]
    fn chat_settings_need_a_model_and_carry_the_request_options() {
        let layout = Layout::new(None, Some("[llm]\nmodel = 'openai:gpt-4o'\n"));
        let args = ChatRequest {
            prompt: "hi".into(),
            system: Some("be brief".into()),
            temperature: Some(0.5),
            max_tokens: Some(9),
            stop: vec!["END".into()],
            json_mode: true,
            stream: false,
            llm: LlmOptions::default(),
        };
        let settings = ChatSettings::resolve(&args, &layout.sources(&[])).unwrap();
        let request = settings.request("hello".into());
        assert_eq!(request.model, "openai:gpt-4o");
        assert_eq!(request.system.as_deref(), Some("be brief"));
        assert_eq!((request.max_tokens, request.stop.len()), (Some(9), 1));

        let err = ChatSettings::resolve(&args, &Layout::new(None, None).sources(&[])).unwrap_err();
        assert!(err.to_string().contains("no model configured"), "{err}");
    }

    #[test]
    fn providers_merge_and_keys_stay_hidden() {
        let file = "[llm]\nmax_concurrency = 3\n[llm.providers.openai]\nbase_url = 'http://x/v1/'\n\
                    [llm.providers.local]\nkind = 'anthropic'\nbase_url = 'http://y'\napi_key = 'file-secret'\nmax_concurrency = 7\n";
        let lookup = env_of(&[("OPENAI_API_KEY", "env-secret")]);
        let merged = merge(&LlmOptions::default(), config(file), &lookup).unwrap();
        let openai = merged
            .providers
            .iter()
            .find(|p| p.name == "openai")
            .unwrap();
        assert_eq!(openai.base_url, "http://x/v1");
        assert_eq!(openai.api_key.as_ref().unwrap().expose(), "env-secret");
        assert_eq!(openai.max_concurrency, 3);
        let local = merged.providers.iter().find(|p| p.name == "local").unwrap();
        assert_eq!(local.kind, ProviderKind::Anthropic);
        assert_eq!(local.max_concurrency, 7);
        let shown = format!("{merged:?}");
        assert!(
            !shown.contains("env-secret") && !shown.contains("file-secret"),
            "{shown}"
        );

        let flag = LlmOptions {
            max_concurrency: Some(2),
            ..LlmOptions::default()
        };
        let merged = merge(&flag, config(file), &lookup).unwrap();
        assert!(merged.providers.iter().all(|p| p.max_concurrency == 2));
    }

    /// A provider on this machine — built in (`ollama`), pointed there by a URL variable
    /// (`openai`) or by a file (`local`) — gets an automatic limit unless a setting says
    /// otherwise, which fixes it; a hosted one sixteen; a file moving a built-in away from
    /// this machine moves its default too.
    #[test]
    fn servers_on_this_machine_default_to_an_automatic_limit() {
        use rlm_llm::ConcurrencyMode::{Auto, Fixed};
        let concurrency = |merged: &LlmSettings, name: &str| {
            let provider = merged.providers.iter().find(|p| p.name == name).unwrap();
            (provider.max_concurrency, provider.concurrency_mode)
        };
        let file = "[llm.providers.local]\nkind = 'openai'\nbase_url = 'http://127.0.0.1:8080/v1'\n\
                    [llm.providers.vllm]\nbase_url = 'https://gpu.example/v1'\n";
        let env = env_of(&[("OPENAI_BASE_URL", "http://localhost:8080/v1")]);
        let merged = merge(&LlmOptions::default(), config(file), &env).unwrap();
        let local = (rlm_llm::ADAPTIVE_MAX_CONCURRENCY, Auto);
        let hosted = (rlm_llm::DEFAULT_MAX_CONCURRENCY, Fixed);
        assert_eq!(concurrency(&merged, "ollama"), local);
        assert_eq!(concurrency(&merged, "openai"), local);
        assert_eq!(concurrency(&merged, "local"), local);
        assert_eq!(concurrency(&merged, "anthropic"), hosted);
        assert_eq!(concurrency(&merged, "vllm"), hosted);

        let pinned = format!("{file}[llm.providers.ollama]\nmax_concurrency = 4\n");
        let merged = merge(&LlmOptions::default(), config(&pinned), &env).unwrap();
        assert_eq!(concurrency(&merged, "ollama"), (4, Fixed));
        let everywhere = format!("[llm]\nmax_concurrency = 3\n{file}");
        let merged = merge(&LlmOptions::default(), config(&everywhere), &env).unwrap();
        assert_eq!(concurrency(&merged, "local"), (3, Fixed));
        let env = env_of(&[("RLM_MAX_CONCURRENCY", "2")]);
        let merged = merge(&LlmOptions::default(), config(file), &env).unwrap();
        assert_eq!(concurrency(&merged, "ollama"), (2, Fixed));
    }

    #[test]
    fn idle_timeout_and_streaming_follow_the_layers() {
        let none = merge(&LlmOptions::default(), String::new(), &env_of(&[])).unwrap();
        assert_eq!(none.idle_timeout, rlm_llm::DEFAULT_IDLE_TIMEOUT);
        assert!(none.stream);
        let file = "[llm]\nidle_timeout_secs = 5\nstream = false\n";
        let from_file = merge(&LlmOptions::default(), config(file), &env_of(&[])).unwrap();
        assert_eq!(from_file.idle_timeout, Duration::from_secs(5));
        assert!(!from_file.stream);
        let env = env_of(&[("RLM_IDLE_TIMEOUT", "7"), ("RLM_STREAM", "1")]);
        let from_env = merge(&LlmOptions::default(), config(file), &env).unwrap();
        assert_eq!(from_env.idle_timeout, Duration::from_secs(7));
        assert!(from_env.stream);
        let flag = LlmOptions {
            idle_timeout: Some(0.5),
            ..LlmOptions::default()
        };
        let from_flag = merge(&flag, config(file), &env).unwrap();
        assert_eq!(from_flag.idle_timeout, Duration::from_millis(500));
        for bad in [
            "[llm]\nidle_timeout_secs = 0\n",
            "[llm]\nidle_timeout_secs = -1\n",
        ] {
            let err = merge(&LlmOptions::default(), config(bad), &env_of(&[])).unwrap_err();
            assert!(err.to_string().contains("idle timeout"), "{err}");
        }
        let err = merge(
            &LlmOptions::default(),
            String::new(),
            &env_of(&[("RLM_STREAM", "sometimes")]),
        )
        .unwrap_err();
        assert!(err.to_string().contains("RLM_STREAM"), "{err}");
    }

    #[test]
    fn output_caps_are_set_by_default_and_follow_the_layers() {
        let none = merge(&LlmOptions::default(), String::new(), &env_of(&[])).unwrap();
        assert_eq!(
            none.output_cap("openai:gpt-4o", None),
            DEFAULT_MAX_OUTPUT_TOKENS
        );
        assert_eq!(
            none.output_cap("ollama:qwen2.5:7b", None),
            DEFAULT_MAX_OUTPUT_TOKENS
        );
        assert_eq!(
            none.output_cap("openai:gpt-5-mini", None),
            DEFAULT_REASONING_MAX_OUTPUT_TOKENS
        );
        let file = "[llm]\nmax_output_tokens = 300\n";
        let from_file = merge(&LlmOptions::default(), config(file), &env_of(&[])).unwrap();
        assert_eq!(from_file.output_cap("openai:gpt-5", None), 300);
        // A configured cap holds whatever the window.
        assert_eq!(from_file.output_cap("openai:gpt-5", Some(1_000)), 300);
        let env = env_of(&[("RLM_MAX_OUTPUT_TOKENS", "200")]);
        let from_env = merge(&LlmOptions::default(), config(file), &env).unwrap();
        assert_eq!(from_env.output_cap("m", None), 200);
        let flag = LlmOptions {
            max_output_tokens: Some(100),
            ..LlmOptions::default()
        };
        let from_flag = merge(&flag, config(file), &env).unwrap();
        assert_eq!(from_flag.output_cap("m", None), 100);
        let zero = merge(
            &LlmOptions::default(),
            config("[llm]\nmax_output_tokens = 0\n"),
            &env_of(&[]),
        );
        assert!(zero.is_err());
    }

    #[test]
    fn a_known_small_window_lowers_the_default_cap() {
        let none = merge(&LlmOptions::default(), String::new(), &env_of(&[])).unwrap();
        // A 4k local server: a quarter of it, so the next turns still fit.
        assert_eq!(none.output_cap("openai:smollm2", Some(4_096)), 1_024);
        // A large window keeps the default; a tiny one keeps room for a block of code.
        assert_eq!(
            none.output_cap("openai:gpt-4o", Some(128_000)),
            DEFAULT_MAX_OUTPUT_TOKENS
        );
        assert_eq!(none.output_cap("openai:tiny", Some(512)), 256);
        assert_eq!(
            none.output_cap("openai:gpt-5-mini", Some(400_000)),
            DEFAULT_REASONING_MAX_OUTPUT_TOKENS
        );
    }

    #[test]
    fn configured_capabilities_extend_the_builtin_table() {
        let file = "[llm.capabilities.'my-reasoner']\nstop = false\nmax_tokens_field = 'max_completion_tokens'\n";
        let merged = merge(&LlmOptions::default(), config(file), &env_of(&[])).unwrap();
        let custom = merged.capabilities.lookup("my-reasoner-7b");
        assert!(!custom.stop);
        assert!(custom.temperature, "an omitted field means accepted");
        assert_eq!(
            custom.max_tokens_field,
            rlm_llm::MaxTokensField::MaxCompletionTokens
        );
        assert_eq!(
            merged.capabilities.lookup("gpt-5"),
            ModelCapabilities::REASONING
        );
        assert_eq!(custom.api, rlm_llm::OpenAiApi::ChatCompletions);
        let moved = "[llm.capabilities.'in-house']\napi = 'responses'\n";
        let merged = merge(&LlmOptions::default(), config(moved), &env_of(&[])).unwrap();
        assert_eq!(
            merged.capabilities.lookup("in-house-2").api,
            rlm_llm::OpenAiApi::Responses
        );
        let typo = "[llm.capabilities.'m']\nstops = false\n";
        let refused = merge(&LlmOptions::default(), config(typo), &env_of(&[])).unwrap_err();
        assert!(
            refused.to_string().contains("unknown field `stops`"),
            "unknown capability fields are refused: {refused}"
        );
    }

    #[test]
    fn env_module_lists_every_provider_variable() {
        for builtin in rlm_llm::BUILTIN_PROVIDERS {
            for name in [builtin.api_key_env, builtin.base_url_env]
                .into_iter()
                .flatten()
            {
                assert!(
                    PROVIDER_VARIABLES.contains(&name),
                    "{name} missing from env.rs"
                );
            }
        }
    }

    /// A backend that is never asked: the settings only pass it on.
    #[derive(Debug)]
    struct Unused;

    impl rlm_llm::ChatBackend for Unused {
        fn complete<'a>(
            &'a self,
            _request: &'a rlm_llm::ChatRequest,
            _model: &'a str,
        ) -> std::pin::Pin<
            Box<dyn Future<Output = rlm_llm::Result<rlm_llm::BackendReply>> + Send + 'a>,
        > {
            Box::pin(async { unreachable!("the settings tests send nothing") })
        }
    }

    #[test]
    fn a_front_end_backend_is_offered_and_supplies_the_model_only_when_none_is_configured() {
        let backend = ModelBackend {
            name: "front".into(),
            backend: std::sync::Arc::new(Unused),
            max_concurrency: 3,
            default_model: Some("front:any".into()),
        };
        let layout = Layout::new(None, None);
        let sources = layout.sources(&[]).with_model_backend(backend.clone());
        let settings = LlmSettings::resolve(&LlmOptions::default(), &sources).unwrap();
        assert_eq!(settings.model.as_deref(), Some("front:any"));
        assert_eq!(settings.subcall_model.as_deref(), Some("front:any"));
        let client = settings.build_client().unwrap();
        client.check_model("front:any").unwrap();
        assert_eq!(client.max_concurrency("front"), Some(3));

        // A configured model wins; a configured sub-call model stays with the fallback root.
        let configured = layout.sources(&[("RLM_MODEL", "openai:gpt-4o")]);
        let settings = LlmSettings::resolve(
            &LlmOptions::default(),
            &configured.with_model_backend(backend.clone()),
        )
        .unwrap();
        assert_eq!(settings.model.as_deref(), Some("openai:gpt-4o"));
        assert_eq!(settings.backends.len(), 1, "still offered by name");
        let sub_only = layout.sources(&[("RLM_SUBCALL_MODEL", "ollama:small")]);
        let settings = LlmSettings::resolve(
            &LlmOptions::default(),
            &sub_only.with_model_backend(backend),
        )
        .unwrap();
        assert_eq!(settings.model.as_deref(), Some("front:any"));
        assert_eq!(settings.subcall_model.as_deref(), Some("ollama:small"));

        // Without a front end nothing changes.
        let plain = LlmSettings::resolve(&LlmOptions::default(), &layout.sources(&[])).unwrap();
        assert_eq!((plain.model, plain.backends.len()), (None, 0));
    }

    #[test]
    fn bad_values_are_input_errors() {
        let lookup = env_of(&[("RLM_TIMEOUT", "soon")]);
        let err = merge(&LlmOptions::default(), String::new(), &lookup).unwrap_err();
        assert!(err.to_string().contains("RLM_TIMEOUT"), "{err}");
        let file = "[llm.providers.new]\nbase_url = 'http://z'\n";
        assert!(merge(&LlmOptions::default(), config(file), &env_of(&[])).is_err());
    }
}
