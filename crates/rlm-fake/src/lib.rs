//! A fake model provider for tests: a dev-dependency of the crates whose tests and benches call
//! models, kept out of `rlm-llm` so that nothing of it is built into rlm.
//!
//! [`FakeServer`] listens on `127.0.0.1:0` and speaks the wire formats exactly:
//! `POST /v1/chat/completions` (OpenAI), `POST /v1/responses` (OpenAI's Responses API) and
//! `POST /v1/messages` (Anthropic), whole or streamed as real SSE split over several body
//! chunks. Each request gets, in order of precedence:
//! 1. the next reply scripted for its model ([`FakeServer::script`]), so a root model `root` and
//!    a sub-model `sub` have independent queues;
//! 2. otherwise the responder closure ([`FakeServer::respond_with`]), which sees the decoded
//!    request and can compute the answer from the prompt;
//! 3. otherwise a 400 error saying nothing was scripted for that model.
//!
//! As the real APIs do, an Anthropic request that forces a tool (`tool_choice: {"type":
//! "tool"}`) is answered by a call of that tool: a text reply becomes its `input`. Anthropic
//! `tools` without an object `input_schema`, or a forced tool not offered, get a 400.
//!
//! A test builds its client from the server's address with `rlm_llm::testing`
//! (`client_builder(server.address())`), so this crate needs nothing of rlm but its shared
//! types (`rlm-types`): no dependency loop with the client it tests.

mod cache;
mod clock;
mod encode;
mod reply;
mod responses;
mod server;
mod tools;

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

pub use cache::MIN_CACHED_TOKENS;
pub use reply::{FakeBehavior, FakeReply, SeenRequest};

/// The wire format a request came in: OpenAI's (chat completions or Responses) or Anthropic's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    OpenAi,
    Anthropic,
}

type Responder = Arc<dyn Fn(&SeenRequest) -> FakeReply + Send + Sync>;

/// The fake server's default pause between two body chunks of a streamed answer.
pub const DEFAULT_STREAM_GAP: Duration = Duration::from_millis(1);

#[derive(Default)]
pub(crate) struct State {
    scripts: Mutex<HashMap<String, VecDeque<FakeReply>>>,
    responder: Mutex<Option<Responder>>,
    latency: Mutex<Duration>,
    /// The pause between two body chunks of a streamed answer; `None` is
    /// [`DEFAULT_STREAM_GAP`].
    stream_gap: Mutex<Option<Duration>>,
    /// Shared, not copied: a request's body is recorded on every call, read by few tests.
    requests: Mutex<Vec<Arc<SeenRequest>>>,
    in_flight: AtomicUsize,
    peak_in_flight: AtomicUsize,
    /// Models that refuse what OpenAI's reasoning models refuse.
    reasoning_models: Mutex<Vec<String>>,
    /// Simulated prompt caches of both wire formats.
    caches: Mutex<cache::PromptCaches>,
    /// Keeps reply delays to the microsecond.
    pub(crate) clock: clock::Clock,
    /// What `GET /props` answers, as llama.cpp's server does; `None` answers 404.
    pub(crate) props: Mutex<Option<serde_json::Value>>,
    /// `GET /props` requests seen.
    pub(crate) props_requests: AtomicUsize,
    /// What `GET /info` (TGI) and `GET /get_server_info` (SGLang) answer, by path; a path
    /// not set answers 404.
    pub(crate) info: Mutex<HashMap<String, serde_json::Value>>,
    /// Requests answered at once ([`FakeServer::set_slots`]); `None`: no limit.
    pub(crate) slots: Mutex<Option<Arc<tokio::sync::Semaphore>>>,
    /// The longest a request waited for a slot, in microseconds.
    pub(crate) longest_queue_wait: std::sync::atomic::AtomicU64,
    /// Requests that found every slot taken.
    pub(crate) queued: AtomicUsize,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl State {
    /// Records the request and picks its reply.
    pub(crate) fn take_reply(&self, seen: &Arc<SeenRequest>) -> FakeReply {
        lock(&self.requests).push(Arc::clone(seen));
        if lock(&self.reasoning_models).contains(&seen.model)
            && let Some(refusal) = encode::reasoning_refusal(seen.wire, &seen.body)
        {
            return FakeReply::of(FakeBehavior::Body {
                status: 400,
                body: refusal,
            });
        }
        if let Some(reply) = lock(&self.scripts)
            .get_mut(&seen.model)
            .and_then(VecDeque::pop_front)
        {
            return reply;
        }
        let responder = lock(&self.responder).clone();
        match responder {
            Some(responder) => responder(seen),
            None => FakeReply::status(
                400,
                format!(
                    "fake server: no scripted reply for model `{}` and no responder",
                    seen.model
                ),
            ),
        }
    }

    /// What `seen` reads from and writes to the simulated prompt cache, for a reply that
    /// answers (an error or a fault caches nothing) and whose usage is not scripted.
    pub(crate) fn cache_hit(&self, seen: &SeenRequest, reply: &FakeReply) -> cache::CacheHit {
        let answers = matches!(
            reply.behavior,
            FakeBehavior::Text(_) | FakeBehavior::ToolCalls { .. }
        );
        if !answers || reply.usage.is_some() {
            return cache::CacheHit::default();
        }
        lock(&self.caches).account(seen)
    }

    /// Waits the reply's own delay, else the server's latency, counted from `received`: as a
    /// provider's latency counts from when the request reached it, the fake's own decoding and
    /// choosing of the reply are part of it, not added to it.
    pub(crate) async fn delay(&self, reply: &FakeReply, received: std::time::Instant) {
        let delay = reply.delay.unwrap_or_else(|| *lock(&self.latency));
        if !delay.is_zero() {
            // An absurd delay (`Duration::MAX`) waits "forever" instead of overflowing.
            let deadline = received
                .checked_add(delay)
                .unwrap_or_else(|| received + Duration::from_secs(100 * 365 * 24 * 3600));
            self.clock.sleep_until(deadline).await;
        }
    }

    /// Waits for a slot when the server has a limited number ([`FakeServer::set_slots`]),
    /// noting the wait; returns the slot and when the request's work starts (`received`
    /// without a limit).
    pub(crate) async fn take_slot(
        &self,
        received: std::time::Instant,
    ) -> (
        Option<tokio::sync::OwnedSemaphorePermit>,
        std::time::Instant,
    ) {
        let slots = lock(&self.slots).clone();
        let Some(slots) = slots else {
            return (None, received);
        };
        if let Ok(permit) = Arc::clone(&slots).try_acquire_owned() {
            return (Some(permit), received);
        }
        self.queued.fetch_add(1, Ordering::SeqCst);
        let arrived = std::time::Instant::now();
        // The semaphore is never closed.
        let permit = slots.acquire_owned().await.ok();
        let started = std::time::Instant::now();
        let waited = u64::try_from((started - arrived).as_micros()).unwrap_or(u64::MAX);
        self.longest_queue_wait.fetch_max(waited, Ordering::SeqCst);
        (permit, started)
    }

    pub(crate) fn stream_gap(&self) -> Duration {
        lock(&self.stream_gap).unwrap_or(DEFAULT_STREAM_GAP)
    }
}

/// Counts a request as in flight until dropped (also when the client disconnects mid-answer).
pub(crate) struct InFlight(Arc<State>);

impl InFlight {
    pub(crate) fn enter(state: &Arc<State>) -> Self {
        let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        state.peak_in_flight.fetch_max(now, Ordering::SeqCst);
        Self(Arc::clone(state))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A running fake provider. Stops when dropped.
pub struct FakeServer {
    address: SocketAddr,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for FakeServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeServer")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

impl FakeServer {
    /// Binds `127.0.0.1:0` and serves in a background task of the current runtime.
    pub async fn start() -> std::io::Result<Self> {
        let state = Arc::new(State::default());
        let (address, task) = server::spawn(Arc::clone(&state)).await?;
        Ok(Self {
            address,
            state,
            task,
        })
    }

    /// The socket address it listens on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Answers `GET /props` with `body` from now on, as llama.cpp's server does (e.g.
    /// `{"default_generation_settings": {"n_ctx": 8192}, "total_slots": 1}`); until then it
    /// answers 404.
    pub fn set_props(&self, body: serde_json::Value) {
        *lock(&self.state.props) = Some(body);
    }

    /// Answers `GET /info` as Text Generation Inference does, saying it admits
    /// `max_concurrent_requests` at once (with the other fields TGI sends).
    pub fn set_tgi_info(&self, max_concurrent_requests: usize) {
        let body = serde_json::json!({"model_id": "fake", "model_dtype": "torch.float16",
            "max_concurrent_requests": max_concurrent_requests, "max_best_of": 2,
            "max_stop_sequences": 4, "max_input_tokens": 4095, "max_total_tokens": 4096,
            "router": "text-generation-router", "version": "3.0.0"});
        lock(&self.state.info).insert("/info".to_owned(), body);
    }

    /// Answers `GET /get_server_info` as SGLang does, its server arguments including
    /// `max_running_requests`.
    pub fn set_sglang_info(&self, max_running_requests: usize) {
        let body = serde_json::json!({"model_path": "fake", "tp_size": 1,
            "max_running_requests": max_running_requests, "max_total_num_tokens": 65536,
            "version": "0.4.0"});
        lock(&self.state.info).insert("/get_server_info".to_owned(), body);
    }

    /// Answers at most `slots` requests at once, as a server with that many slots: the others
    /// wait in a queue, in arrival order, and a reply's latency counts from when its slot was
    /// taken. The slot is held until the answer is ready to send.
    pub fn set_slots(&self, slots: usize) {
        *lock(&self.state.slots) = Some(Arc::new(tokio::sync::Semaphore::new(slots.max(1))));
    }

    /// Requests that found every slot taken and waited in the queue ([`Self::set_slots`]).
    pub fn queued_requests(&self) -> usize {
        self.state.queued.load(Ordering::SeqCst)
    }

    /// The longest any request waited in the queue for a slot ([`Self::set_slots`]).
    pub fn longest_queue_wait(&self) -> Duration {
        Duration::from_micros(self.state.longest_queue_wait.load(Ordering::SeqCst))
    }

    /// `GET /props` requests seen so far.
    pub fn props_requests(&self) -> usize {
        self.state.props_requests.load(Ordering::SeqCst)
    }

    /// Base URL for an OpenAI-compatible provider (`http://127.0.0.1:PORT/v1`).
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.address)
    }

    /// Base URL for an Anthropic provider (`http://127.0.0.1:PORT`).
    pub fn anthropic_base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Appends replies to the queue of `model` (the model name as sent, without prefix).
    pub fn script(&self, model: &str, replies: impl IntoIterator<Item = FakeReply>) {
        lock(&self.state.scripts)
            .entry(model.to_owned())
            .or_default()
            .extend(replies);
    }

    /// Replies still queued for `model`.
    pub fn remaining(&self, model: &str) -> usize {
        lock(&self.state.scripts)
            .get(model)
            .map_or(0, VecDeque::len)
    }

    /// Sets the closure answering requests that have no scripted reply.
    pub fn respond_with(
        &self,
        responder: impl Fn(&SeenRequest) -> FakeReply + Send + Sync + 'static,
    ) {
        *lock(&self.state.responder) = Some(Arc::new(responder));
    }

    /// Makes `model` refuse, as OpenAI's reasoning models (`gpt-5*`, `o1`/`o3`/`o4`) do, a
    /// `stop`, a `temperature` other than 1 and `max_tokens`, with OpenAI's HTTP 400 body
    /// (`unsupported_parameter` / `unsupported_value`) on the OpenAI endpoint. A refused request
    /// is still listed in [`Self::requests`] and takes no scripted reply.
    pub fn reasoning_model(&self, model: &str) {
        lock(&self.state.reasoning_models).push(model.to_owned());
    }

    /// Latency added to every reply that sets no delay of its own.
    pub fn set_latency(&self, latency: Duration) {
        *lock(&self.state.latency) = latency;
    }

    /// The pause between two body chunks of a streamed answer: by default
    /// [`DEFAULT_STREAM_GAP`], so that each chunk is a write of its own and clients are tested
    /// on events split across reads. Benchmarks set zero: the events then go out back to back,
    /// as one chunk of the chunked body, and a streamed answer takes no longer than a whole
    /// one.
    pub fn set_stream_gap(&self, gap: Duration) {
        *lock(&self.state.stream_gap) = Some(gap);
    }

    /// Every request received, in arrival order.
    pub fn requests(&self) -> Vec<SeenRequest> {
        lock(&self.state.requests)
            .iter()
            .map(|seen| SeenRequest::clone(seen))
            .collect()
    }

    /// The requests received for one model.
    pub fn requests_for(&self, model: &str) -> Vec<SeenRequest> {
        lock(&self.state.requests)
            .iter()
            .filter(|seen| seen.model == model)
            .map(|seen| SeenRequest::clone(seen))
            .collect()
    }

    /// How many requests arrived.
    pub fn request_count(&self) -> usize {
        lock(&self.state.requests).len()
    }

    /// The most requests that were being answered at the same moment.
    pub fn peak_in_flight(&self) -> usize {
        self.state.peak_in_flight.load(Ordering::SeqCst)
    }

    /// Requests being answered now.
    pub fn in_flight(&self) -> usize {
        self.state.in_flight.load(Ordering::SeqCst)
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
