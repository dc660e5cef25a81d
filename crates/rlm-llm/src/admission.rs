//! What one call is sent under: the client's reservation on its own ledger and, when the
//! caller reserved the call on a budget of its own ([`LlmClient::chat_reserved`]), that one
//! too. Both are asked again right before every request goes out, and both are settled before
//! the provider's slot is given to the next call, so a call waiting for that slot sees the
//! reply before it (an over-report included) counted.
//!
//! [`LlmClient::chat_reserved`]: crate::LlmClient::chat_reserved

use std::time::Duration;

use crate::error::Result;
use crate::usage::Reservation;
use crate::{ChatRequest, ChatResponse};

/// A call's holds on the budgets it is sent under.
#[derive(Debug)]
pub(crate) struct Admission {
    own: Reservation,
    /// The caller's reservation, settled under the caller's name for the model.
    caller: Option<(Reservation, String)>,
}

impl Admission {
    pub fn new(own: Reservation, caller: Option<Reservation>, request: &ChatRequest) -> Self {
        Self {
            own,
            caller: caller.map(|reservation| (reservation, request.model.clone())),
        }
    }

    /// Refuses a send when a budget the call was admitted under has run out since, or a reply
    /// reporting more than its call could use has stopped it ([`Reservation::check_send`]).
    pub fn check_send(&self) -> Result<()> {
        self.own.check_send()?;
        match &self.caller {
            Some((reservation, _)) => reservation.check_send(),
            None => Ok(()),
        }
    }

    /// Replaces the holds with the answered call: the client's under `response.model`, the
    /// caller's under the caller's own name.
    pub fn settle(self, response: &ChatResponse) {
        self.own.settle(&response.model, response);
        if let Some((reservation, model)) = self.caller {
            reservation.settle(&model, response);
        }
    }

    /// Replaces the holds with a failed call.
    pub fn fail(self, label: &str, latency: Duration, retries: u32) {
        self.own.fail(label, latency, retries);
        if let Some((reservation, model)) = self.caller {
            reservation.fail(&model, latency, retries);
        }
    }
}
