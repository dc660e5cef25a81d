//! A run's REPL session, opened when the run first needs it: a run whose model answers without
//! running code starts no sandbox worker (a process start, the larger part of such a run's cost
//! from Python). Runs that set the REPL up before the first turn (a session's restored
//! variables, tool values, setup code, compaction's `history`) open it at once.

use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;

use crate::repl::{ExecOutcome, ReplError, ReplFactory, ReplSession, SessionSpec};

/// Where a session that could not be opened leaves its error, for the loop to end the run with
/// (as an eager open would have, before the first turn).
pub(super) type OpenFailure = Arc<Mutex<Option<ReplError>>>;

/// A session opened on its first execution or variable read.
pub(super) struct LazySession {
    factory: Arc<dyn ReplFactory>,
    spec: Option<SessionSpec>,
    session: Option<Box<dyn ReplSession>>,
    failure: OpenFailure,
}

impl std::fmt::Debug for LazySession {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("LazySession")
            .field("open", &self.session.is_some())
            .finish_non_exhaustive()
    }
}

impl LazySession {
    pub fn new(factory: Arc<dyn ReplFactory>, spec: SessionSpec, failure: OpenFailure) -> Self {
        Self {
            factory,
            spec: Some(spec),
            session: None,
            failure,
        }
    }

    /// The session, opened (and its `answer` bound) if it was not yet.
    async fn open(&mut self) -> Result<&mut Box<dyn ReplSession>, ReplError> {
        if self.session.is_none() {
            let spec = self
                .spec
                .take()
                .ok_or_else(|| ReplError::new("the REPL could not be opened earlier"))?;
            match open(self.factory.as_ref(), spec).await {
                Ok(session) => self.session = Some(session),
                Err(error) => {
                    *self.failure.lock().unwrap_or_else(PoisonError::into_inner) =
                        Some(error.clone());
                    return Err(error);
                }
            }
        }
        self.session
            .as_mut()
            .ok_or_else(|| ReplError::new("the REPL is not open"))
    }
}

/// Opens a session and binds the initial `answer`.
pub(super) async fn open(
    factory: &dyn ReplFactory,
    spec: SessionSpec,
) -> Result<Box<dyn ReplSession>, ReplError> {
    let mut session = factory.open(spec).await?;
    let outcome = session.execute(super::answer::INITIAL_ANSWER).await?;
    match outcome.error {
        None => Ok(session),
        Some(error) => Err(ReplError::new(format!(
            "could not bind the `answer` variable: {error}"
        ))),
    }
}

impl ReplSession for LazySession {
    fn execute<'a>(&'a mut self, code: &'a str) -> BoxFuture<'a, Result<ExecOutcome, ReplError>> {
        Box::pin(async move { self.open().await?.execute(code).await })
    }

    fn variable<'a>(
        &'a mut self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<serde_json::Value>, ReplError>> {
        Box::pin(async move {
            // Unopened, `answer` is still the initial one, which holds no answer.
            if self.session.is_none() && name == "answer" {
                return Ok(None);
            }
            self.open().await?.variable(name).await
        })
    }

    fn variables(&mut self) -> BoxFuture<'_, Result<Vec<(String, String)>, ReplError>> {
        Box::pin(async move {
            match self.session.as_mut() {
                // No code ran: the model defined nothing.
                None => Ok(Vec::new()),
                Some(session) => session.variables().await,
            }
        })
    }

    fn variable_repr<'a>(
        &'a mut self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, ReplError>> {
        Box::pin(async move {
            match self.session.as_mut() {
                None => Ok(None),
                Some(session) => session.variable_repr(name).await,
            }
        })
    }
}
