//! What an operation tells its front end while it works: progress, notes, warnings and the
//! errors it reported and went on after. Operations never print; the CLI prints these on
//! stderr, the MCP server sends them as progress notifications (and puts problems in the
//! result), the Python package hands them to callbacks.

use std::sync::Arc;

use crate::reply::ReplyLimit;
use crate::stop::StopHandle;

/// One thing an operation says while it works.
#[derive(Debug)]
#[non_exhaustive]
pub enum Event<'a> {
    /// A line for a person, shown as it is (a session resumed, a choice made).
    Info(&'a str),
    /// A note (`note: …`): something a person may want to know; not shown with `--quiet`.
    Note(&'a str),
    /// A warning (`warning: …`): shown even with `--quiet`, because a result may rest on it.
    Warning(&'a str),
    /// An error the operation reported and went on after (a path `load` could not read): shown
    /// as the error that ends a command is, `error:` / `hint:`.
    Problem(&'a anyhow::Error),
    /// Progress of `load`, as the store reports it.
    Load(&'a rlm_store::LoadEvent<'a>),
    /// A load's writing is done (before any embedding): what it did and how long it took.
    Loaded {
        report: &'a rlm_store::LoadReport,
        seconds: f64,
    },
    /// The BM25 index rebuilt so far (`reindex`).
    Indexing(rlm_store::IndexProgress),
    /// Buffers copied so far (`store copy`).
    Copying { done: u64, total: u64 },
    /// Vectors computed so far (`embed`, and `load` when it embeds).
    Embedding(rlm_store::EmbedProgress),
    /// Vectors done: how many and how long it took.
    Embedded {
        chunks: u64,
        model: &'a str,
        seconds: f64,
    },
    /// The RLM loop's events (`run`, `bench-quality`).
    Run(&'a rlm_engine::Event<'a>),
    /// `query`'s pipeline events.
    Query(&'a rlm_query::QueryEvent<'a>),
    /// A piece of an answer as it streams in (`chat`).
    Delta(&'a str),
}

/// Who hears an operation's events. Called from whatever thread the work runs on. A front end
/// that shows progress in place (a terminal line redrawn) clears it before anything else.
pub trait Events: Send + Sync {
    fn event(&self, event: &Event<'_>);
}

/// Hears nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoEvents;

impl Events for NoEvents {
    fn event(&self, _event: &Event<'_>) {}
}

/// What an operation runs with besides its request and settings: who hears its events, the
/// handle that stops it, and whether it may read the process's standard input (`-` in a
/// request: only a command line has one to give; elsewhere stdin may carry a protocol).
#[derive(Clone)]
pub struct Context {
    pub events: Arc<dyn Events>,
    pub stop: Arc<StopHandle>,
    pub stdin: bool,
    /// The most one answer carries when the front end holds it whole ([`crate::reply`]):
    /// [`ReplyLimit::DEFAULT`] unless the front end says otherwise (the command line, which
    /// streams, has none).
    pub reply: ReplyLimit,
    /// Whether the front end keeps the records an operation returns (by default). `rlm load`
    /// without `--json` prints only its closing line: `load` then counts the buffers it wrote
    /// and left unchanged instead of listing each in its record, so that loading many files
    /// takes no memory per file for a list no one reads (the events still tell each buffer).
    pub keeps_records: bool,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("stop", &self.stop)
            .finish_non_exhaustive()
    }
}

impl Context {
    pub fn new(events: Arc<dyn Events>, stop: Arc<StopHandle>) -> Self {
        Self {
            events,
            stop,
            stdin: false,
            reply: ReplyLimit::DEFAULT,
            keeps_records: true,
        }
    }

    /// This context, for a front end that drops the records it gets (see
    /// [`Context::keeps_records`]).
    #[must_use]
    pub fn dropping_records(mut self) -> Self {
        self.keeps_records = false;
        self
    }

    /// This context, its answers bounded by `limit`.
    #[must_use]
    pub fn with_reply_limit(mut self, limit: ReplyLimit) -> Self {
        self.reply = limit;
        self
    }

    /// This context, allowed to read the process's standard input.
    #[must_use]
    pub fn with_stdin(mut self) -> Self {
        self.stdin = true;
        self
    }

    /// The process's standard input, or an input error naming `what` wanted it.
    pub fn stdin(&self, what: &str) -> anyhow::Result<std::io::Stdin> {
        if self.stdin {
            return Ok(std::io::stdin());
        }
        Err(crate::error::AppError::input(anyhow::anyhow!(
            "{what}: standard input (`-`) is not available here"
        ))
        .with_hint("give a file or the text itself")
        .into())
    }

    /// No one listens, and only [`StopHandle::stop`] on the returned handle stops it.
    pub fn silent() -> Self {
        Self::new(Arc::new(NoEvents), StopHandle::new())
    }

    pub fn emit(&self, event: &Event<'_>) {
        self.events.event(event);
    }

    pub fn info(&self, text: &str) {
        self.emit(&Event::Info(text));
    }

    pub fn note(&self, text: &str) {
        self.emit(&Event::Note(text));
    }

    pub fn warn(&self, text: &str) {
        self.emit(&Event::Warning(text));
    }

    pub fn problem(&self, err: &anyhow::Error) {
        self.emit(&Event::Problem(err));
    }

    /// The RLM loop's event sink, forwarding to these events.
    pub fn run_events(&self) -> Arc<dyn rlm_engine::EventSink> {
        Arc::new(Forward(self.events.clone()))
    }

    /// `query`'s event sink, forwarding to these events.
    pub fn query_events(&self) -> Arc<dyn rlm_query::QueryEvents> {
        Arc::new(Forward(self.events.clone()))
    }
}

/// Library events as [`Event`]s.
struct Forward(Arc<dyn Events>);

impl std::fmt::Debug for Forward {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Forward")
    }
}

impl rlm_engine::EventSink for Forward {
    fn event(&self, event: &rlm_engine::Event<'_>) {
        self.0.event(&Event::Run(event));
    }
}

impl rlm_query::QueryEvents for Forward {
    fn event(&self, event: &rlm_query::QueryEvent<'_>) {
        self.0.event(&Event::Query(event));
    }
}
