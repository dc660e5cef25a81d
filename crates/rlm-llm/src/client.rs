//! [`LlmClient`]: the entry point. Resolves model strings to providers, enforces the limiter,
//! budget and deadline, and records usage.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

use crate::backend::ChatBackend;
use crate::capabilities::{CapabilityTable, ModelCapabilities};
use crate::cassette::{Recorder, Replayer};
use crate::error::{Error, Result};
use crate::provider::{BUILTIN_PROVIDERS, ModelRef, ProviderConfig};
use crate::retry::RetryPolicy;
use crate::usage::{Ledger, Price, PriceTable};
use crate::{ChatRequest, ChatResponse};

/// Default limit for one attempt until its answer starts: connect, send, the server's queue and
/// prompt processing, up to the first piece of the answer (for an answer that is not streamed,
/// the whole answer). Time spent waiting for the provider's limiter does not count.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// Default limit on the silence between two pieces of a streamed answer once it has started
/// (never more than the request timeout). A model writing steadily is never cut by it, however
/// long it writes; a server that stopped sending is given up on after this long.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Default connect timeout.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A configured provider with its process-wide limiter.
#[derive(Debug)]
pub(crate) struct ProviderSlot {
    pub config: ProviderConfig,
    pub limiter: crate::limiter::Limiter,
    /// The URL and headers of each wire, built at its first call (the key and base URL do
    /// not change once the client is built), so a call does not parse a URL or format a key.
    pub endpoints: crate::call::Endpoints,
}

/// A provider that answers itself ([`ChatBackend`]) with its process-wide limiter.
#[derive(Debug)]
pub(crate) struct BackendSlot {
    pub backend: Arc<dyn ChatBackend>,
    pub limiter: Arc<Semaphore>,
    pub max_concurrency: usize,
}

#[derive(Debug)]
pub(crate) struct Shared {
    pub http: reqwest::Client,
    pub providers: BTreeMap<String, ProviderSlot>,
    /// Providers that are not HTTP services, by name (no name is in both maps).
    pub backends: BTreeMap<String, BackendSlot>,
    pub default_provider: Option<String>,
    pub retry: RetryPolicy,
    pub request_timeout: Duration,
    pub idle_timeout: Duration,
    /// Whether [`LlmClient::chat`] asks for a streamed answer.
    pub stream: bool,
    pub prices: PriceTable,
    pub recorder: Option<Recorder>,
    pub replayer: Option<Replayer>,
    pub capabilities: CapabilityTable,
    /// Whether Anthropic requests carry cache breakpoints ([`LlmClientBuilder::prompt_cache`]).
    pub prompt_cache: bool,
    /// Corrections learned from refusals, by `provider:model`, for the rest of the process.
    pub learned: std::sync::Mutex<BTreeMap<String, ModelCapabilities>>,
    /// What local servers reported about themselves, by provider (`server_props.rs`).
    pub server_props: crate::server_props::PropsCache,
}

/// A handle to every configured provider. Cheap to clone; clones share the HTTP connection pool,
/// the per-provider limiters (so the configured concurrency holds across all callers), the
/// recorder/replayer and — unless replaced with [`LlmClient::with_ledger`] — the usage ledger.
///
/// Build one per process and clone it; a second client built separately has its own limiters.
#[derive(Debug, Clone)]
pub struct LlmClient {
    pub(crate) shared: Arc<Shared>,
    pub(crate) ledger: Arc<Ledger>,
    pub(crate) deadline: Option<Instant>,
}

/// Builds an [`LlmClient`].
#[derive(Debug)]
pub struct LlmClientBuilder {
    providers: Vec<ProviderConfig>,
    backends: Vec<(String, Arc<dyn ChatBackend>, usize)>,
    default_provider: Option<String>,
    retry: RetryPolicy,
    request_timeout: Duration,
    idle_timeout: Duration,
    stream: bool,
    connect_timeout: Duration,
    prices: PriceTable,
    ledger: Arc<Ledger>,
    record: Option<std::path::PathBuf>,
    replay: Option<std::path::PathBuf>,
    capabilities: CapabilityTable,
    prompt_cache: bool,
}

impl Default for LlmClientBuilder {
    fn default() -> Self {
        Self {
            providers: Vec::new(),
            backends: Vec::new(),
            default_provider: None,
            retry: RetryPolicy::default(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            stream: true,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            prices: PriceTable::builtin(),
            ledger: Ledger::new(),
            record: None,
            replay: None,
            capabilities: CapabilityTable::builtin(),
            prompt_cache: true,
        }
    }
}

impl LlmClientBuilder {
    /// Adds every built-in provider (`openai`, `anthropic`, `ollama`, ...), taking keys and base
    /// URLs from `lookup` (pass `|name| std::env::var(name).ok()` for the environment).
    /// Providers added later with [`Self::provider`] under the same name replace these.
    #[must_use]
    pub fn builtin_providers(mut self, lookup: &dyn Fn(&str) -> Option<String>) -> Self {
        for builtin in BUILTIN_PROVIDERS {
            self.providers.push(builtin.configure(lookup));
        }
        self
    }

    /// Adds (or replaces, by name) a provider.
    #[must_use]
    pub fn provider(mut self, config: ProviderConfig) -> Self {
        self.providers
            .retain(|existing| existing.name != config.name);
        self.backends.retain(|(name, _, _)| *name != config.name);
        self.providers.push(config);
        self
    }

    /// Adds (or replaces, by name) a provider that answers itself: model strings
    /// `name:model` go to `backend`, at most `max_concurrency` calls at once (at least 1).
    #[must_use]
    pub fn backend(
        mut self,
        name: impl Into<String>,
        backend: Arc<dyn ChatBackend>,
        max_concurrency: usize,
    ) -> Self {
        let name = name.into();
        self.providers.retain(|existing| existing.name != name);
        self.backends.retain(|(existing, _, _)| *existing != name);
        self.backends.push((
            name,
            backend,
            max_concurrency.clamp(1, crate::CONCURRENCY_CEILING),
        ));
        self
    }

    /// The provider for model strings without a `provider:` prefix.
    #[must_use]
    pub fn default_provider(mut self, name: impl Into<String>) -> Self {
        self.default_provider = Some(name.into());
        self
    }

    /// Sets the retry policy.
    #[must_use]
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Sets the per-attempt timeout: how long an attempt may take until its answer starts (see
    /// [`DEFAULT_REQUEST_TIMEOUT`]).
    #[must_use]
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Sets the longest silence accepted between two pieces of a streamed answer (see
    /// [`DEFAULT_IDLE_TIMEOUT`]); a longer request timeout does not lengthen it, a shorter one
    /// shortens it.
    #[must_use]
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Whether [`LlmClient::chat`] streams answers from the provider (default `true`). A
    /// streamed answer is assembled into the same [`ChatResponse`] (usage included: OpenAI
    /// requests ask for it with `stream_options`), and it is bounded by the idle timeout
    /// instead of one total timeout. Turn it off for a server whose streaming is broken.
    /// [`LlmClient::chat_streaming`] always streams.
    #[must_use]
    pub fn streaming(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// Sets the connect timeout.
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Replaces the price table (the default is [`PriceTable::builtin`]).
    #[must_use]
    pub fn prices(mut self, prices: PriceTable) -> Self {
        self.prices = prices;
        self
    }

    /// Replaces the table of which parameters each model accepts (the default is
    /// [`CapabilityTable::builtin`]).
    #[must_use]
    pub fn capabilities(mut self, capabilities: CapabilityTable) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// Whether to ask providers to cache prompt prefixes (default on). On, Anthropic requests
    /// mark the system prompt and the growing conversation with `cache_control` breakpoints,
    /// so each turn of a multi-turn run reads the previous turns from the cache at a tenth of
    /// the input price instead of paying for them again; off, no request carries
    /// `cache_control`. OpenAI-compatible servers cache prefixes automatically either way.
    #[must_use]
    pub fn prompt_cache(mut self, enabled: bool) -> Self {
        self.prompt_cache = enabled;
        self
    }

    /// Uses this ledger (e.g. one with a [`crate::Budget`]).
    #[must_use]
    pub fn ledger(mut self, ledger: Arc<Ledger>) -> Self {
        self.ledger = ledger;
        self
    }

    /// Appends every answered request to this JSON Lines file.
    #[must_use]
    pub fn record(mut self, path: impl AsRef<Path>) -> Self {
        self.record = Some(path.as_ref().to_path_buf());
        self
    }

    /// Answers from this recording instead of the network; no key is needed.
    #[must_use]
    pub fn replay(mut self, path: impl AsRef<Path>) -> Self {
        self.replay = Some(path.as_ref().to_path_buf());
        self
    }

    /// Opens the recording files and builds the HTTP client.
    pub fn build(self) -> Result<LlmClient> {
        let http = reqwest::Client::builder()
            .connect_timeout(self.connect_timeout)
            .user_agent(concat!("rlm/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|err| Error::Config(format!("cannot build the HTTP client: {err}")))?;
        let mut providers = BTreeMap::new();
        for config in self.providers {
            if !(config.base_url.starts_with("http://") || config.base_url.starts_with("https://"))
            {
                return Err(Error::Config(format!(
                    "base URL of provider `{}` must start with http:// or https://: {}",
                    config.name,
                    crate::call::redact_url(&config.base_url)
                )));
            }
            let limiter =
                crate::limiter::Limiter::new(config.concurrency_mode, config.max_concurrency);
            providers.insert(
                config.name.clone(),
                ProviderSlot {
                    config,
                    limiter,
                    endpoints: crate::call::Endpoints::default(),
                },
            );
        }
        let backends: BTreeMap<String, BackendSlot> = self
            .backends
            .into_iter()
            .map(|(name, backend, max_concurrency)| {
                let limiter = Arc::new(Semaphore::new(max_concurrency));
                let slot = BackendSlot {
                    backend,
                    limiter,
                    max_concurrency,
                };
                (name, slot)
            })
            .collect();
        if let Some(name) = &self.default_provider
            && !providers.contains_key(name)
            && !backends.contains_key(name)
        {
            return Err(Error::Config(format!(
                "default provider `{name}` is not configured"
            )));
        }
        let replayer = self.replay.as_deref().map(Replayer::load).transpose()?;
        let recorder = self.record.as_deref().map(Recorder::open).transpose()?;
        Ok(LlmClient {
            shared: Arc::new(Shared {
                http,
                providers,
                backends,
                default_provider: self.default_provider,
                retry: self.retry,
                request_timeout: self.request_timeout,
                idle_timeout: self.idle_timeout.min(self.request_timeout),
                stream: self.stream,
                prices: self.prices,
                recorder,
                replayer,
                capabilities: self.capabilities,
                prompt_cache: self.prompt_cache,
                learned: std::sync::Mutex::default(),
                server_props: crate::server_props::PropsCache::default(),
            }),
            ledger: self.ledger,
            deadline: None,
        })
    }
}

impl LlmClient {
    /// Starts a builder with no providers.
    pub fn builder() -> LlmClientBuilder {
        LlmClientBuilder::default()
    }

    /// Sends one request and waits for the whole answer (streamed from the provider unless
    /// [`LlmClientBuilder::streaming`] turned that off; retried as a whole whatever had
    /// arrived, since nothing was shown yet — except after a timeout once the answer had
    /// started, which another attempt would only repeat).
    ///
    /// Cancel safety: dropping the future aborts the HTTP request and frees its limiter slot;
    /// nothing is recorded for it.
    pub async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse> {
        self.execute(request, None, None).await
    }

    /// Sends one request as [`Self::chat`] does, for a caller that reserved it on a budget of
    /// its own first ([`Ledger::reserve`]: a run's ledger, which this handle's may not be).
    /// That reservation is asked again right before each request goes out, after the wait
    /// for the provider's limiter and before each retry, as this handle's own is
    /// ([`crate::Reservation::check_send`]): once a budget has run out, or a reply has
    /// reported more than its call could use, a call still waiting is refused
    /// ([`Error::BudgetExhausted`]) instead of sent. The reservation is settled with the
    /// reply under `request.model` (failed with a failed call; released when nothing was
    /// sent or the future is dropped) before the next call waiting for the provider may go.
    ///
    /// Cancel safety: as [`Self::chat`].
    pub async fn chat_reserved(
        &self,
        request: &ChatRequest,
        reservation: crate::Reservation,
    ) -> Result<ChatResponse> {
        self.execute(request, None, Some(reservation)).await
    }

    /// Sends one request and calls `on_text` with each piece of the answer as it arrives.
    /// Retries happen only before the first piece; a stream cut later is an error
    /// ([`Error::StreamInterrupted`]). Cancel safety: as [`Self::chat`].
    pub async fn chat_streaming(
        &self,
        request: &ChatRequest,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<ChatResponse> {
        self.execute(request, Some(on_text), None).await
    }

    /// Sends many requests concurrently (bounded by each provider's limiter) and returns one
    /// result per request, in order. A failed item holds its own error; the others still answer.
    /// Cancel safety: dropping the future cancels every unfinished request.
    pub async fn chat_batch(&self, requests: &[ChatRequest]) -> Vec<Result<ChatResponse>> {
        futures::future::join_all(requests.iter().map(|request| self.chat(request))).await
    }

    /// The ledger this handle records into.
    pub fn ledger(&self) -> &Arc<Ledger> {
        &self.ledger
    }

    /// A handle sharing providers and limiters but recording into `ledger` (one per run).
    #[must_use]
    pub fn with_ledger(&self, ledger: Arc<Ledger>) -> Self {
        Self {
            ledger,
            ..self.clone()
        }
    }

    /// A handle whose calls fail with [`Error::DeadlineExceeded`] once `deadline` passes,
    /// including calls waiting for a limiter slot or a retry.
    #[must_use]
    pub fn with_deadline(&self, deadline: Instant) -> Self {
        Self {
            deadline: Some(deadline),
            ..self.clone()
        }
    }

    /// Splits a model string into provider and model using the configured providers.
    pub fn resolve(&self, model: &str) -> Result<ModelRef> {
        ModelRef::parse(
            model,
            &self.provider_names(),
            self.shared.default_provider.as_deref(),
        )
    }

    /// Every configured provider's name, HTTP or backend, in order.
    fn provider_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .shared
            .providers
            .keys()
            .chain(self.shared.backends.keys())
            .map(String::as_str)
            .collect();
        names.sort_unstable();
        names
    }

    /// Checks, before anything is sent or spent, that a call to `model` could go out: the
    /// model string names a configured provider and that provider has the key it needs. Fails
    /// with the error the call itself would end in ([`Error::UnknownProvider`],
    /// [`Error::AmbiguousModel`], [`Error::MissingApiKey`]). When answering from a recording
    /// no key is needed, so only the model string is checked. A backend's model is checked
    /// by the backend ([`ChatBackend::check`]).
    pub fn check_model(&self, model: &str) -> Result<()> {
        let model_ref = self.resolve(model)?;
        if self.shared.replayer.is_some() {
            return Ok(());
        }
        if let Some(slot) = self.backend_slot(&model_ref) {
            return slot.backend.check(&model_ref.model);
        }
        self.slot(&model_ref, model)?.config.require_key()?;
        Ok(())
    }

    /// The backend serving `model_ref`, when its provider is one.
    pub(crate) fn backend_slot(&self, model_ref: &ModelRef) -> Option<&BackendSlot> {
        self.shared.backends.get(&model_ref.provider)
    }

    /// The provider serving `model_ref` (`model` is the string as the caller wrote it).
    pub(crate) fn slot(&self, model_ref: &ModelRef, model: &str) -> Result<&ProviderSlot> {
        self.shared
            .providers
            .get(&model_ref.provider)
            .ok_or_else(|| Error::UnknownProvider {
                provider: model_ref.provider.clone(),
                model: model.to_owned(),
                known: self.provider_names().join(", "),
            })
    }

    /// The price used for a model string, if known.
    pub fn price(&self, model: &str) -> Option<Price> {
        let resolved = self.resolve(model).ok()?;
        self.price_of(&resolved)
    }

    /// The price of a resolved model: the backend's for a backend, else the table's.
    pub(crate) fn price_of(&self, model: &ModelRef) -> Option<Price> {
        match self.backend_slot(model) {
            Some(slot) => slot.backend.price(&model.model),
            None => self.shared.prices.get(&model.model).copied(),
        }
    }

    /// What a model string's model accepts: the table's entry, corrected by any refusal seen
    /// earlier in this process.
    pub fn capabilities(&self, model: &str) -> Result<ModelCapabilities> {
        let resolved = self.resolve(model)?;
        Ok(self.capabilities_of(&resolved))
    }

    pub(crate) fn capabilities_of(&self, model: &ModelRef) -> ModelCapabilities {
        if let Some(slot) = self.backend_slot(model) {
            return slot.backend.capabilities(&model.model);
        }
        let learned = self
            .shared
            .learned
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&model.to_string())
            .copied();
        learned.unwrap_or_else(|| {
            self.shared
                .capabilities
                .lookup_at(Some(&model.provider), &model.model)
        })
    }

    /// Whether a request to `model` with a JSON Schema (and no tools) goes out with it for the
    /// server to enforce (a provider whose model, as far as this process knows, takes it:
    /// `response_format` on OpenAI-compatible servers, a forced answer tool on Anthropic);
    /// otherwise the answer is plain JSON mode, for the caller to validate.
    pub fn constrains_output(&self, model: &str) -> bool {
        let Ok(resolved) = self.resolve(model) else {
            return false;
        };
        !self.is_replaying()
            && self.shared.providers.contains_key(&resolved.provider)
            && self.capabilities_of(&resolved).json_schema
    }

    pub(crate) fn learn(&self, model: &ModelRef, capabilities: ModelCapabilities) {
        self.shared
            .learned
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(model.to_string(), capabilities);
    }

    /// A provider's limit as it stands now and why: configured (or a hosted API's default),
    /// reported by the server, or adapted to its answers (see [`crate::ConcurrencyMode`]).
    pub fn concurrency(&self, provider: &str) -> Option<crate::Concurrency> {
        match self.shared.backends.get(provider) {
            Some(slot) => Some(crate::Concurrency {
                limit: slot.max_concurrency,
                source: crate::ConcurrencySource::Fixed,
            }),
            None => self
                .shared
                .providers
                .get(provider)
                .map(|slot| slot.limiter.current()),
        }
    }

    /// The configured concurrency limit of a provider (for an automatic one, the most it may
    /// reach: [`Self::concurrency`] says where it is now).
    pub fn max_concurrency(&self, provider: &str) -> Option<usize> {
        match self.shared.backends.get(provider) {
            Some(slot) => Some(slot.max_concurrency),
            None => self.shared.providers.get(provider).map(|slot| {
                slot.config
                    .max_concurrency
                    .clamp(1, crate::CONCURRENCY_CEILING)
            }),
        }
    }

    /// Whether answers come from a recording.
    pub fn is_replaying(&self) -> bool {
        self.shared.replayer.is_some()
    }
}
