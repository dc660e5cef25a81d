//! The attempts of one call: a slot of the provider's limiter for each, the budget asked again
//! before anything goes out, retries as the failure allows, and a refused parameter left out.

use std::time::{Duration, Instant};

use tracing::debug;

use super::TextSink;
use super::attempt::{Answered, AttemptError};
use super::endpoint::Endpoint;
use super::plan::Plan;
use crate::ChatRequest;
use crate::admission::Admission;
use crate::capabilities::Rejected;
use crate::client::{LlmClient, ProviderSlot};
use crate::error::{Error, Result};
use crate::limiter::Permit;
use crate::provider::ModelRef;

impl LlmClient {
    /// The attempts of one call to an HTTP provider: each waits for a slot of the limiter,
    /// asks `admission` whether it may still go out, and is retried as the failure allows
    /// (a refused parameter is left out once). Errors before anything is sent (a bad
    /// endpoint) are returned as such.
    pub(super) async fn send<'slot>(
        &self,
        slot: &'slot ProviderSlot,
        model_ref: &ModelRef,
        request: &ChatRequest,
        admission: &Admission,
        on_text: &mut TextSink<'_>,
    ) -> Result<Sent<'slot>> {
        // Streamed even without a caller's sink, so the idle timeout, not one total timeout,
        // bounds an answer in progress.
        let stream = on_text.is_some() || self.shared.stream;
        let kind = slot.config.kind;
        let mut capabilities = self.capabilities_of(model_ref);
        let prompt_cache = self.shared.prompt_cache;
        let plan_for = |capabilities| {
            Plan::new(
                kind,
                request,
                &model_ref.model,
                stream,
                capabilities,
                prompt_cache,
            )
        };
        let mut plan = plan_for(capabilities)?;
        // A refused parameter never changes the endpoint, so the URL holds for every attempt.
        let endpoint = slot.endpoints.get(slot, plan.wire)?;
        let mut retries = 0u32;
        loop {
            let mut emitted = false;
            let permit = match self.acquire(slot, model_ref).await {
                Ok(permit) => permit,
                // Waiting in our own queue is no model failure: nothing went out this time,
                // so the call counts only if an earlier attempt did.
                Err(failed) => {
                    return Ok(Sent::Refused {
                        error: failed.error,
                        retries,
                    });
                }
            };
            // After the wait for the slot and before anything goes out: a budget the call was
            // admitted under may have run out meanwhile (a reply before it reported more than
            // its call could use). Nothing is sent then.
            if let Err(error) = admission.check_send() {
                return Ok(Sent::Refused { error, retries });
            }
            let progress = admission.progress();
            progress.sending();
            let attempt = self
                .attempt(
                    slot,
                    permit,
                    model_ref,
                    endpoint,
                    &plan,
                    on_text,
                    (&mut emitted, progress),
                )
                .await;
            progress.ended(matches!(&attempt, Err(failed) if cut_while_out(&failed.error)));
            let failed = match attempt {
                Ok(answered) => {
                    return Ok(Sent::Answered {
                        answered,
                        endpoint,
                        retries,
                    });
                }
                Err(failed) => failed,
            };
            if let Some(rejected) = failed.rejected
                && (rejected != Rejected::JsonSchema || plan.sends_schema)
                && let Some(corrected) = capabilities.without(rejected)
            {
                // Once per parameter: `without` refuses a change already made.
                debug!(
                    model = %model_ref,
                    ?rejected,
                    "the provider refused a parameter; sending the request without it"
                );
                self.learn(model_ref, corrected);
                capabilities = corrected;
                plan = plan_for(capabilities)?;
                continue;
            }
            let can_retry = failed.retryable && !emitted && retries < self.shared.retry.max_retries;
            if !can_retry {
                return Ok(Sent::Failed {
                    error: failed.error,
                    retries,
                });
            }
            let delay = self.shared.retry.delay(retries, failed.headers.as_ref());
            if let Some(deadline) = self.deadline
                && Instant::now() + delay >= deadline
            {
                return Ok(Sent::Failed {
                    error: Error::DeadlineExceeded {
                        model: model_ref.to_string(),
                    },
                    retries,
                });
            }
            debug!(error = %failed.error, ?delay, retry = retries + 1, "retrying");
            tokio::time::sleep(delay).await;
            retries += 1;
        }
    }

    /// Waits for a slot of the provider's limiter, until the overall deadline at most.
    async fn acquire<'slot>(
        &self,
        slot: &'slot ProviderSlot,
        model_ref: &ModelRef,
    ) -> Result<Permit<'slot>, AttemptError> {
        let deadline_error = || {
            AttemptError::fatal(Error::DeadlineExceeded {
                model: model_ref.to_string(),
            })
        };
        let remaining = match self.deadline {
            Some(deadline) => deadline
                .checked_duration_since(Instant::now())
                .ok_or_else(deadline_error)?,
            None => Duration::MAX,
        };
        tokio::time::timeout(remaining, slot.limiter.acquire())
            .await
            .map_err(|_| deadline_error())?
            .map_err(|_| AttemptError::fatal(Error::Config("limiter closed".to_owned())))
    }
}

/// How the attempts of one call ended.
pub(super) enum Sent<'slot> {
    Answered {
        answered: Answered<'slot>,
        endpoint: &'slot Endpoint,
        retries: u32,
    },
    Failed {
        error: Error,
        retries: u32,
    },
    /// Refused before an attempt went out: a budget the call was admitted under ran out while
    /// it waited ([`Admission::check_send`]), or the deadline passed while it waited for a
    /// slot of the limiter.
    Refused {
        error: Error,
        retries: u32,
    },
}

/// A call that ended without an answer.
pub(super) struct Failure {
    error: Error,
    retries: u32,
    /// Whether any attempt went out (a refusal before the first did not).
    sent: bool,
}

impl Failure {
    /// The call's error, counted first when something went out (`admission` records the
    /// attempts); otherwise the holds are released and nothing is counted.
    pub(super) fn counted(self, admission: Admission, model: &str, latency: Duration) -> Error {
        if self.sent {
            debug!(error = %self.error, retries = self.retries, "model call failed");
            admission.fail(model, latency, self.retries);
        }
        self.error
    }
}

impl<'slot> Sent<'slot> {
    /// The answer, how it was reached and after how many retries; or how the call failed.
    pub(super) fn answer(self) -> Result<(Answered<'slot>, &'slot Endpoint, u32), Failure> {
        match self {
            Sent::Answered {
                answered,
                endpoint,
                retries,
            } => Ok((answered, endpoint, retries)),
            Sent::Failed { error, retries } => Err(Failure {
                error,
                retries,
                sent: true,
            }),
            Sent::Refused { error, retries } => Err(Failure {
                error,
                retries,
                sent: retries > 0,
            }),
        }
    }
}

/// Whether an attempt that failed so was cut while its request was out: by the call's deadline,
/// or by the request or idle timeout (the server had the prompt and may have been generating).
fn cut_while_out(error: &crate::Error) -> bool {
    matches!(
        error,
        crate::Error::DeadlineExceeded { .. }
            | crate::Error::Timeout { .. }
            | crate::Error::Stalled { .. }
    )
}
