//! The engine's access to language models: one chat completion, in `rlm-llm`'s vocabulary.
//!
//! The engine talks to models only through [`ModelClient`], so the loop can be driven by an
//! in-memory fake in unit tests and by the `rlm-llm` provider layer in the product.

use std::fmt;

use futures::FutureExt as _;
use futures::future::BoxFuture;
use rlm_llm::{ChatRequest, ChatResponse, LlmClient, Price, Reservation};

/// Sends chat completions to a model.
///
/// Implementations own retries, rate limiting and concurrency limits; the engine calls
/// [`ModelClient::complete`] concurrently for batched sub-calls and expects the client to queue
/// them. Errors keep their [`rlm_llm::ErrorKind`], which the caller maps to what a user
/// should do. Dropping the returned future cancels the call.
pub trait ModelClient: Send + Sync + fmt::Debug {
    /// Runs one completion that the engine has admitted under the run's budget with
    /// `reservation`. The client asks it again right before anything is sent — after any wait
    /// for a concurrency slot and before each retry ([`Reservation::check_send`]) — and
    /// refuses with [`rlm_llm::Error::BudgetExhausted`], sending nothing, when the budget has
    /// run out meanwhile. It settles the reservation with the reply under `request.model`
    /// (fails it with a failed call) before a call waiting behind this one may be sent;
    /// dropping the future releases it.
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        reservation: Reservation,
    ) -> BoxFuture<'a, Result<ChatResponse, rlm_llm::Error>>;

    /// The price of `model`, if known: the engine reserves a call's worst-case cost against
    /// the run's budget before sending it, and refuses it under a cost limit when unknown.
    fn price(&self, model: &str) -> Option<Price>;

    /// Whether `model` can be called at all (a known provider with the key it needs), checked
    /// before a run starts. The default accepts every model.
    fn check(&self, model: &str) -> Result<(), rlm_llm::Error> {
        let _ = model;
        Ok(())
    }
}

/// Retries, the per-provider limiter, prices and record/replay all come from the client.
impl ModelClient for LlmClient {
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        reservation: Reservation,
    ) -> BoxFuture<'a, Result<ChatResponse, rlm_llm::Error>> {
        self.chat_reserved(request, reservation).boxed()
    }

    fn price(&self, model: &str) -> Option<Price> {
        LlmClient::price(self, model)
    }

    fn check(&self, model: &str) -> Result<(), rlm_llm::Error> {
        self.check_model(model)
    }
}
