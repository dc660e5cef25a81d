//! Providers that are not HTTP services: a [`ChatBackend`] answers a [`ChatRequest`] itself.
//!
//! The first one is the MCP server's sampling (`rlm mcp`: the connected client's own model
//! answers through `sampling/createMessage`), which lives in the binary so that this crate
//! knows nothing of MCP. A backend is added under a provider name with
//! [`crate::LlmClientBuilder::backend`]; model strings `NAME:model` then reach it through the
//! same [`crate::LlmClient`] as every other provider, with its limiter, budget, deadline,
//! ledger and record/replay. What HTTP providers do on the wire (keys, retries, the
//! capability table, prices) is the backend's to say instead.

use std::fmt;
use std::time::Instant;

use futures::future::BoxFuture;

use crate::admission::Admission;
use crate::capabilities::{self, ModelCapabilities};
use crate::client::{BackendSlot, LlmClient};
use crate::error::{Error, Result};
use crate::provider::ModelRef;
use crate::usage::{ESTIMATE_BYTES_PER_TOKEN, Price};
use crate::{ChatRequest, ChatResponse, Usage};

/// A provider that answers requests itself rather than over HTTP.
///
/// `model` in each method is the part of the model string after `NAME:`. Dropping the future
/// of [`ChatBackend::complete`] must cancel the call.
pub trait ChatBackend: Send + Sync + fmt::Debug {
    /// Answers one request: the client has already checked the budget and holds a limiter
    /// slot. Errors should be [`Error::Backend`] with the [`crate::ErrorKind`] that says
    /// what a caller can do about them; they are not retried.
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        model: &'a str,
    ) -> BoxFuture<'a, Result<BackendReply>>;

    /// Whether `model` can be asked at all, checked before a run starts (in place of an HTTP
    /// provider's key check). The default accepts every model.
    fn check(&self, model: &str) -> Result<()> {
        let _ = model;
        Ok(())
    }

    /// What `model` costs this process, `None` when unknown. The client's price table is not
    /// consulted for a backend: the same model name may cost nothing through it.
    fn price(&self, model: &str) -> Option<Price> {
        let _ = model;
        None
    }

    /// What requests to `model` may carry. The default is
    /// [`ModelCapabilities::default`]; a backend without tool calling says `tools: false`,
    /// so callers ask without tools. Stop sequences are applied by the client to every
    /// reply anyway.
    fn capabilities(&self, model: &str) -> ModelCapabilities {
        let _ = model;
        ModelCapabilities::default()
    }
}

/// What a [`ChatBackend`] answered.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BackendReply {
    pub text: String,
    /// Why generation ended, in the wire words [`crate::FinishReason::from_provider`] knows
    /// (`end_turn`, `stop_sequence`, `max_tokens`, ...).
    pub finish_reason: Option<String>,
    /// Token counts when the backend knows them; `None` makes the client estimate them and
    /// mark the answer [`ChatResponse::usage_estimated`].
    pub usage: Option<Usage>,
    /// The model that answered, as the backend names it (it may differ from the one asked
    /// for); logged, while the response keeps the requested `provider:model`.
    pub answered_by: Option<String>,
}

/// Token counts of an answer nobody counted: the request's text and the reply's at
/// [`ESTIMATE_BYTES_PER_TOKEN`] (the budget's own rate, which errs high).
pub fn estimated_usage(request: &ChatRequest, reply: &str) -> Usage {
    let tokens = |bytes: usize| (bytes as u64).div_ceil(ESTIMATE_BYTES_PER_TOKEN);
    let input = request.system.as_deref().map_or(0, str::len)
        + request
            .messages
            .iter()
            .map(|message| message.content.len())
            .sum::<usize>();
    Usage {
        input_tokens: tokens(input),
        output_tokens: tokens(reply.len()),
        ..Usage::default()
    }
}

impl LlmClient {
    /// One call to a backend: under its limiter and the deadline, no retries; stop
    /// sequences cut here whatever the backend did with them.
    pub(crate) async fn execute_backend(
        &self,
        slot: &BackendSlot,
        model_ref: &ModelRef,
        request: &ChatRequest,
        admission: Admission,
        started: Instant,
        on_text: Option<&mut (dyn FnMut(&str) + Send)>,
    ) -> Result<ChatResponse> {
        let label = model_ref.to_string();
        let price = slot.backend.price(&model_ref.model);
        let permit = match self.backend_permit(slot, model_ref).await {
            Ok(permit) => permit,
            Err(error) => {
                admission.fail(&label, started.elapsed(), 0);
                return Err(error);
            }
        };
        // After the wait for the slot: a budget that ran out meanwhile sends nothing, and
        // the holds are released (nothing was asked).
        admission.check_send()?;
        let answered = self.ask_backend(slot, model_ref, request).await;
        let latency = started.elapsed();
        let mut reply = match answered {
            Ok(reply) => reply,
            Err(error) => {
                tracing::debug!(error = %error, "model call failed");
                admission.fail(&label, latency, 0);
                return Err(error);
            }
        };
        if capabilities::cut_at_stop(&mut reply.text, &request.stop) {
            reply.finish_reason = Some("stop_sequence".to_owned());
        }
        let (usage, usage_estimated) = match reply.usage {
            Some(usage) => (usage, false),
            None => (estimated_usage(request, &reply.text), true),
        };
        tracing::debug!(
            answered_by = reply.answered_by.as_deref().unwrap_or("?"),
            output_bytes = reply.text.len(),
            latency_ms = latency.as_millis() as u64,
            "model call done"
        );
        if let Some(sink) = on_text {
            sink(&reply.text);
        }
        let response = ChatResponse {
            text: reply.text,
            tool_calls: Vec::new(),
            model: label,
            finish_reason: reply.finish_reason,
            usage,
            usage_estimated,
            cost_usd: price.map(|price| price.cost(&usage)),
            latency,
            retries: 0,
            replayed: false,
        };
        admission.settle(&response);
        // The next call waiting for this backend sees this one counted.
        drop(permit);
        let mut resolved = request.clone();
        resolved.model.clone_from(&response.model);
        self.record(resolved, format!("{}:", model_ref.provider), &[], &response);
        Ok(response)
    }

    /// A slot of the backend's limiter, waited for until the deadline at most.
    async fn backend_permit<'slot>(
        &self,
        slot: &'slot BackendSlot,
        model_ref: &ModelRef,
    ) -> Result<tokio::sync::SemaphorePermit<'slot>> {
        let remaining = self.remaining(model_ref)?;
        tokio::time::timeout(remaining, slot.limiter.acquire())
            .await
            .map_err(|_| Error::DeadlineExceeded {
                model: model_ref.to_string(),
            })?
            .map_err(|_| Error::Config("limiter closed".to_owned()))
    }

    /// Time left before the deadline (`Duration::MAX` without one).
    fn remaining(&self, model_ref: &ModelRef) -> Result<std::time::Duration> {
        match self.deadline {
            Some(deadline) => deadline
                .checked_duration_since(Instant::now())
                .ok_or_else(|| Error::DeadlineExceeded {
                    model: model_ref.to_string(),
                }),
            None => Ok(std::time::Duration::MAX),
        }
    }

    /// Asks the backend, holding a slot of its limiter.
    async fn ask_backend(
        &self,
        slot: &BackendSlot,
        model_ref: &ModelRef,
        request: &ChatRequest,
    ) -> Result<BackendReply> {
        if !request.tools.is_empty() && !slot.backend.capabilities(&model_ref.model).tools {
            return Err(Error::Backend {
                provider: model_ref.provider.clone(),
                model: model_ref.model.clone(),
                message: "this provider does not take tools; ask without them".to_owned(),
                kind: crate::ErrorKind::Input,
            });
        }
        let deadline_error = || Error::DeadlineExceeded {
            model: model_ref.to_string(),
        };
        let timeout = self.shared.request_timeout;
        let limit = timeout.min(self.remaining(model_ref)?);
        tokio::time::timeout(limit, slot.backend.complete(request, &model_ref.model))
            .await
            .map_err(|_| {
                if self
                    .deadline
                    .is_some_and(|deadline| Instant::now() >= deadline)
                {
                    deadline_error()
                } else {
                    Error::Backend {
                        provider: model_ref.provider.clone(),
                        model: model_ref.model.clone(),
                        message: format!("no answer within {timeout:?}"),
                        kind: crate::ErrorKind::Transient,
                    }
                }
            })?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_count_every_text_at_the_budget_rate() {
        let request = ChatRequest::new("b:m")
            .system("x".repeat(30))
            .user("y".repeat(6))
            .assistant("z");
        let usage = estimated_usage(&request, "answer");
        // 37 bytes of input and 6 of output at 3 bytes a token, rounded up.
        assert_eq!((usage.input_tokens, usage.output_tokens), (13, 2));
        assert_eq!(usage.cache_read_tokens + usage.cache_write_tokens, 0);
    }
}
