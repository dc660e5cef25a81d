//! Who else hears a command's progress: `rlm mcp` runs `run` and `query` in its own process, on
//! a thread per call, and turns their events into MCP progress notifications. It sets the
//! observers for that thread ([`observe`]); the commands ask for them where they pick their
//! progress printer, and an observer replaces the printer (MCP calls are `--quiet` anyway).

use std::cell::RefCell;
use std::sync::Arc;

use rlm_engine::EventSink;
use rlm_query::QueryEvents;

/// The receivers of one command's events.
#[derive(Clone, Default)]
pub struct Observers {
    /// `rlm run`'s engine events.
    pub run: Option<Arc<dyn EventSink>>,
    /// `rlm query`'s pipeline events.
    pub query: Option<Arc<dyn QueryEvents>>,
}

thread_local! {
    static OBSERVERS: RefCell<Option<Observers>> = const { RefCell::new(None) };
}

/// Runs `f` on this thread with `observers` hearing the events of the command it runs.
#[cfg_attr(
    not(feature = "mcp"),
    expect(dead_code, reason = "only `rlm mcp` observes commands")
)]
pub fn observe<R>(observers: Observers, f: impl FnOnce() -> R) -> R {
    OBSERVERS.set(Some(observers));
    let result = f();
    OBSERVERS.set(None);
    result
}

/// The observer of `rlm run`'s events on this thread, if any.
pub fn run_events() -> Option<Arc<dyn EventSink>> {
    OBSERVERS.with_borrow(|observers| observers.as_ref()?.run.clone())
}

/// The observer of `rlm query`'s events on this thread, if any.
pub fn query_events() -> Option<Arc<dyn QueryEvents>> {
    OBSERVERS.with_borrow(|observers| observers.as_ref()?.query.clone())
}
