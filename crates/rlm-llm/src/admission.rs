//! What one call is sent under: the client's reservation on its own ledger and, when the
//! caller reserved the call on a budget of its own ([`LlmClient::chat_reserved`]), that one
//! too. Both are asked again right before every request goes out, and both are settled before
//! the provider's slot is given to the next call, so a call waiting for that slot sees the
//! reply before it (an over-report included) counted.
//!
//! [`LlmClient::chat_reserved`]: crate::LlmClient::chat_reserved

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::error::Result;
use crate::usage::{ESTIMATE_BYTES_PER_TOKEN, Price, Reservation};
use crate::{ChatRequest, ChatResponse, Usage};

/// What one call has on the wire, watched so a call cut off after its request went out (a
/// deadline, or its future dropped on a stop) is counted with the tokens it likely used.
#[derive(Debug, Default)]
pub(crate) struct CallProgress {
    /// An attempt's request is out and its answer not read yet.
    out: AtomicBool,
    /// The last attempt was cut while it was out: by the call's deadline, or by the request or
    /// idle timeout.
    cut: AtomicBool,
    /// Bytes of answer text (or tool-call arguments) streamed so far by the current attempt.
    streamed: AtomicU64,
}

impl CallProgress {
    /// An attempt's request goes out.
    pub fn sending(&self) {
        self.streamed.store(0, Ordering::Relaxed);
        self.out.store(true, Ordering::Relaxed);
    }

    /// The attempt ended; `cut` when a deadline or a timeout ended it while out.
    pub fn ended(&self, cut: bool) {
        self.out.store(false, Ordering::Relaxed);
        self.cut.store(cut, Ordering::Relaxed);
    }

    /// `bytes` more of the answer arrived.
    pub fn streamed(&self, bytes: usize) {
        self.streamed.fetch_add(bytes as u64, Ordering::Relaxed);
    }
}

/// A call's holds on the budgets it is sent under.
#[derive(Debug)]
pub(crate) struct Admission {
    own: Option<Reservation>,
    /// The caller's reservation, settled under the caller's name for the model.
    caller: Option<(Reservation, String)>,
    progress: Arc<CallProgress>,
    /// The model as the client's ledger names it, its price, and when the call started: for a
    /// call dropped while out.
    label: String,
    price: Option<Price>,
    started: Instant,
}

impl Admission {
    pub fn new(
        own: Reservation,
        caller: Option<Reservation>,
        request: &ChatRequest,
        label: &str,
        price: Option<Price>,
    ) -> Self {
        Self {
            own: Some(own),
            caller: caller.map(|reservation| (reservation, request.model.clone())),
            progress: Arc::default(),
            label: label.to_owned(),
            price,
            started: Instant::now(),
        }
    }

    /// What the call has on the wire.
    pub fn progress(&self) -> &Arc<CallProgress> {
        &self.progress
    }

    /// Refuses a send when a budget the call was admitted under has run out since, or a reply
    /// reporting more than its call could use has stopped it ([`Reservation::check_send`]).
    pub fn check_send(&self) -> Result<()> {
        if let Some(own) = &self.own {
            own.check_send()?;
        }
        match &self.caller {
            Some((reservation, _)) => reservation.check_send(),
            None => Ok(()),
        }
    }

    /// Replaces the holds with the answered call: the client's under `response.model`, the
    /// caller's under the caller's own name.
    pub fn settle(mut self, response: &ChatResponse) {
        if let Some(own) = self.own.take() {
            own.settle(&response.model, response);
        }
        if let Some((reservation, model)) = self.caller.take() {
            reservation.settle(&model, response);
        }
    }

    /// Replaces the holds with a failed call: one cut off by its deadline or a timeout while out is
    /// counted with its estimated tokens ([`Self::cut_off`]).
    pub fn fail(mut self, label: &str, latency: Duration, retries: u32) {
        if self.progress.cut.load(Ordering::Relaxed) {
            self.cut_off(label, latency, retries);
            return;
        }
        if let Some(own) = self.own.take() {
            own.fail(label, latency, retries);
        }
        if let Some((reservation, model)) = self.caller.take() {
            reservation.fail(&model, latency, retries);
        }
    }

    /// Replaces the holds with a call cut off while out: its input as estimated when it was
    /// admitted, its output from the bytes streamed before the cut.
    fn cut_off(&mut self, label: &str, latency: Duration, retries: u32) {
        let Some(own) = self.own.take() else {
            return;
        };
        let usage = Usage {
            input_tokens: own.estimate().input_tokens,
            output_tokens: self
                .progress
                .streamed
                .load(Ordering::Relaxed)
                .div_ceil(ESTIMATE_BYTES_PER_TOKEN),
            ..Usage::default()
        };
        let cost = self.price.as_ref().map(|price| price.cost(&usage));
        own.cut_off(label, &usage, cost, latency, retries);
        if let Some((reservation, model)) = self.caller.take() {
            reservation.cut_off(&model, &usage, cost, latency, retries);
        }
    }
}

impl Drop for Admission {
    /// A call dropped with its request out (its future cancelled: a stopped run, a deadline
    /// above it) is counted as cut off; one dropped before anything went out, as nothing.
    fn drop(&mut self) {
        if self.own.is_some() && self.progress.out.load(Ordering::Relaxed) {
            let label = std::mem::take(&mut self.label);
            self.cut_off(&label, self.started.elapsed(), 0);
        }
    }
}
