//! One attempt of a call, holding a slot of the provider's limiter: the request sent within
//! the request timeout, a refusal read as an error that says whether to retry, and the
//! answer read whole or as a stream (each gap within the idle timeout), cut at the stop
//! sequences the client applies itself.

use std::time::{Duration, Instant};

use futures::StreamExt as _;
use reqwest::header::HeaderMap;
use tracing::debug;

use super::TextSink;
use super::endpoint::{Endpoint, redact_url};
use super::plan::Plan;
use crate::capabilities::{self, Rejected, StopCutter};
use crate::client::{LlmClient, ProviderSlot};
use crate::error::Error;
use crate::limiter::Permit;
use crate::provider::{ModelRef, ProviderKind};
use crate::retry::is_retryable_status;
use crate::sse::SseParser;
use crate::wire::{self, EventError, Parsed, StreamDecoder};

/// A failed attempt: the error, whether another attempt may help, and the response headers
/// (for `retry-after`).
pub(super) struct AttemptError {
    pub(super) error: Error,
    pub(super) retryable: bool,
    pub(super) headers: Option<HeaderMap>,
    /// A parameter the provider refused that the request can do without (HTTP 400 only).
    pub(super) rejected: Option<Rejected>,
}

impl AttemptError {
    pub(super) fn fatal(error: Error) -> Self {
        Self {
            error,
            retryable: false,
            headers: None,
            rejected: None,
        }
    }
}

/// An attempt's answer, with the limiter slot it still holds and how long until the answer
/// started (what the adaptive limit learns from).
pub(super) struct Answered<'slot> {
    pub(super) parsed: Parsed,
    pub(super) permit: Permit<'slot>,
    pub(super) first_token: Duration,
}

impl LlmClient {
    /// One attempt holding a slot of the limiter (`permit`), under the per-attempt timeout.
    /// An answer comes back with the slot still held, so that the caller accounts for it
    /// before the next call may go out.
    #[expect(
        clippy::too_many_arguments,
        reason = "one attempt's inputs, borrowed from the call that retries it"
    )]
    pub(super) async fn attempt<'slot>(
        &self,
        slot: &'slot ProviderSlot,
        permit: Permit<'slot>,
        model_ref: &ModelRef,
        endpoint: &Endpoint,
        plan: &Plan,
        on_text: &mut TextSink<'_>,
        emitted: &mut bool,
    ) -> Result<Answered<'slot>, AttemptError> {
        let clock = AttemptClock {
            model_ref,
            timeout: self.shared.request_timeout,
            idle: self.shared.idle_timeout,
            overall: self.deadline.map(tokio::time::Instant::from_std),
        };
        let remaining = match self.deadline {
            Some(deadline) => deadline
                .checked_duration_since(Instant::now())
                .ok_or_else(|| clock.deadline_error())?,
            None => Duration::MAX,
        };
        // Counted from here, after the limiter: time queued behind other calls to the same
        // provider is not the server's. Headers, a whole (non-streamed) body and, when
        // streaming, the first piece of the answer share this deadline; once the answer has
        // started, each gap between two chunks gets the idle timeout instead, since a long
        // answer legitimately takes minutes.
        let reading = Reading {
            slot,
            model_ref,
            url: endpoint.text.as_str(),
            clock,
            deadline: instant_after(self.shared.request_timeout.min(remaining)),
            sent_at: Instant::now(),
        };
        let send = self
            .shared
            .http
            .post(endpoint.url.clone())
            .headers(endpoint.headers.clone())
            .body(plan.body.clone())
            .send();
        let response = match tokio::time::timeout_at(reading.deadline, send).await {
            Err(_) => return Err(reading.clock.timed_out(reading.url)),
            Ok(Err(err)) => return Err(transport_error(reading.url, err)),
            Ok(Ok(response)) => response,
        };
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            slot.limiter.refused(status);
            return Err(status_error(
                response,
                reading.deadline,
                slot.config.name.clone(),
                model_ref.model.clone(),
            )
            .await);
        }
        let (mut parsed, first_token) = if plan.stream {
            reading.stream(response, plan, on_text, emitted).await?
        } else {
            (
                reading.whole(response, plan).await?,
                reading.sent_at.elapsed(),
            )
        };
        apply_client_stops(slot.config.kind, &mut parsed, &plan.client_stops);
        Ok(Answered {
            parsed,
            permit,
            first_token,
        })
    }
}

/// Reading the answer of one attempt whose request the server accepted.
struct Reading<'a> {
    slot: &'a ProviderSlot,
    model_ref: &'a ModelRef,
    url: &'a str,
    clock: AttemptClock<'a>,
    /// Until the answer starts (a whole body: until it is read).
    deadline: tokio::time::Instant,
    sent_at: Instant,
}

impl Reading<'_> {
    fn decode_error(&self, detail: String) -> AttemptError {
        AttemptError::fatal(Error::Decode {
            provider: self.slot.config.name.clone(),
            model: self.model_ref.model.clone(),
            detail,
        })
    }

    /// A body cut off, or a provider error reported inside a 200 stream: as transient as a
    /// dropped connection or the same status.
    fn interrupted(&self, message: Option<String>) -> AttemptError {
        let provider = self.slot.config.name.clone();
        let model = self.model_ref.model.clone();
        AttemptError {
            error: match message {
                Some(message) => Error::StreamError {
                    provider,
                    model,
                    message: crate::secrets::mask_provider_text(&message),
                },
                None => Error::StreamInterrupted { provider, model },
            },
            retryable: true,
            headers: None,
            rejected: None,
        }
    }

    /// A whole (non-streamed) answer, read within the deadline.
    async fn whole(
        &self,
        response: reqwest::Response,
        plan: &Plan,
    ) -> Result<Parsed, AttemptError> {
        let bytes = match tokio::time::timeout_at(self.deadline, response.bytes()).await {
            // The server had started its answer: asking again would start it over.
            Err(_) => return Err(producing_timed_out(self.clock.timed_out(self.url))),
            Ok(Err(err)) => return Err(transport_error(self.url, err)),
            Ok(Ok(bytes)) => bytes,
        };
        wire::parse_response(plan.wire, &bytes, plan.answer_tool.as_deref())
            .map_err(|detail| self.decode_error(detail))
    }

    /// A streamed answer: its pieces to `on_text` as they arrive (`emitted` says whether any
    /// did, after which the call is not retried), cut at a client-side stop sequence; the
    /// parsed answer and how long until it started.
    async fn stream(
        &self,
        response: reqwest::Response,
        plan: &Plan,
        on_text: &mut TextSink<'_>,
        emitted: &mut bool,
    ) -> Result<(Parsed, Duration), AttemptError> {
        let mut cutter = StopCutter::new(plan.client_stops.clone());
        let mut decoder = StreamDecoder::new(plan.wire, plan.answer_tool.as_deref());
        let mut parser = SseParser::default();
        let mut chunks = response.bytes_stream();
        // Nobody sees the pieces: a stream cut at a client-side stop sequence is read to its
        // end, as a whole body would have been, for the usage the provider reports last.
        let drain = on_text.is_none();
        // Bytes of the body arrived: a timeout from now on is not retried.
        let mut producing = false;
        // Until the answer started: what grows when requests queue in the server.
        let mut first_token = None;
        while !decoder.is_done() && (!cutter.stopped() || drain) {
            let started = decoder.started();
            let limit = if started {
                let gap_end = instant_after(self.clock.idle);
                self.clock
                    .overall
                    .map_or(gap_end, |deadline| gap_end.min(deadline))
            } else {
                self.deadline
            };
            let chunk = match tokio::time::timeout_at(limit, chunks.next()).await {
                Err(_) if started => return Err(self.clock.stalled(self.url)),
                Err(_) if producing => {
                    return Err(producing_timed_out(self.clock.timed_out(self.url)));
                }
                Err(_) => return Err(self.clock.timed_out(self.url)),
                Ok(None | Some(Err(_))) => return Err(self.interrupted(None)),
                Ok(Some(Ok(chunk))) => chunk,
            };
            producing = true;
            for event in parser.push(&chunk) {
                let decoded = decoder.on_event(&event).map_err(|err| match err {
                    EventError::Malformed(detail) => self.decode_error(detail),
                    EventError::Provider(message) => self.interrupted(Some(message)),
                })?;
                if first_token.is_none() && decoder.started() {
                    first_token = Some(self.sent_at.elapsed());
                }
                let Some(piece) = decoded else { continue };
                let passed = cutter.push(&piece);
                if !passed.is_empty()
                    && let Some(sink) = on_text.as_mut()
                {
                    *emitted = true;
                    sink(&passed);
                }
                if cutter.stopped() && !drain {
                    // As a provider would: nothing after the stop sequence. Leaving the loop
                    // drops the body stream, which closes the connection.
                    break;
                }
            }
        }
        drop(chunks);
        let rest = cutter.finish();
        if !rest.is_empty()
            && let Some(sink) = on_text.as_mut()
        {
            *emitted = true;
            sink(&rest);
        }
        let first_token = first_token.unwrap_or_else(|| self.sent_at.elapsed());
        Ok((decoder.finish(), first_token))
    }
}

/// The clocks one attempt runs against, and the errors it fails with when one runs out: past
/// the call's overall deadline, always [`Error::DeadlineExceeded`] (not retried).
struct AttemptClock<'a> {
    model_ref: &'a ModelRef,
    /// Until the answer starts.
    timeout: Duration,
    /// Between two pieces of a streamed answer.
    idle: Duration,
    /// The whole call's deadline, retries included.
    overall: Option<tokio::time::Instant>,
}

impl AttemptClock<'_> {
    fn deadline_error(&self) -> AttemptError {
        AttemptError::fatal(Error::DeadlineExceeded {
            model: self.model_ref.to_string(),
        })
    }

    fn past_overall(&self) -> bool {
        self.overall
            .is_some_and(|deadline| tokio::time::Instant::now() >= deadline)
    }

    /// No answer (or no whole body) within the request timeout: retried.
    fn timed_out(&self, url: &str) -> AttemptError {
        if self.past_overall() {
            return self.deadline_error();
        }
        AttemptError {
            error: Error::Timeout {
                url: redact_url(url),
                timeout: self.timeout,
            },
            retryable: true,
            headers: None,
            rejected: None,
        }
    }

    /// A started answer went silent for the idle timeout: not retried.
    fn stalled(&self, url: &str) -> AttemptError {
        if self.past_overall() {
            return self.deadline_error();
        }
        AttemptError::fatal(Error::Stalled {
            url: redact_url(url),
            idle: self.idle,
        })
    }
}

/// The error of a response with a status outside 2xx: the provider's message from its body
/// (read within the attempt's deadline), retried as the status and headers say, and the
/// parameter a 400 rejected, if it names one.
async fn status_error(
    response: reqwest::Response,
    deadline: tokio::time::Instant,
    provider: String,
    model: String,
) -> AttemptError {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = tokio::time::timeout_at(deadline, response.bytes())
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    AttemptError {
        error: Error::Status {
            provider,
            model,
            status,
            message: wire::error_message(&body),
        },
        retryable: should_retry(status, &headers),
        headers: Some(headers),
        rejected: (status == 400)
            .then(|| capabilities::rejected_parameter(&body))
            .flatten(),
    }
}

/// Cuts a reply at a stop sequence the server was not given, reporting the finish reason the
/// provider would have (OpenAI `stop`, Anthropic `stop_sequence`). A reply cut mid-stream has
/// no usage report when the provider sends it last (OpenAI); it counts as zero tokens.
fn apply_client_stops(kind: ProviderKind, parsed: &mut Parsed, stops: &[String]) {
    if capabilities::cut_at_stop(&mut parsed.text, stops) {
        parsed.finish_reason = Some(
            match kind {
                ProviderKind::OpenAi => "stop",
                ProviderKind::Anthropic => "stop_sequence",
            }
            .to_owned(),
        );
    }
}

/// A timeout that fired while the server was sending its answer is not retried: a model that
/// does not stop would run until the timeout again, each attempt costing a whole timeout.
fn producing_timed_out(mut failed: AttemptError) -> AttemptError {
    if failed.retryable {
        debug!("timed out while the server was answering; not retried");
        failed.retryable = false;
    }
    failed
}

/// Now plus `duration`, saturating far in the future instead of overflowing.
fn instant_after(duration: Duration) -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    now.checked_add(duration)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 3600))
}

/// The status decides, unless the server says otherwise with `x-should-retry` (sent by OpenAI
/// and Anthropic); a 400/401/403 is never retried whatever the header says.
fn should_retry(status: u16, headers: &HeaderMap) -> bool {
    if matches!(status, 400 | 401 | 403) {
        return false;
    }
    match headers.get("x-should-retry").and_then(|v| v.to_str().ok()) {
        Some("true") => true,
        Some("false") => false,
        _ => is_retryable_status(status),
    }
}

fn transport_error(url: &str, err: reqwest::Error) -> AttemptError {
    AttemptError {
        // Bodies are decoded by this crate, so a reqwest "decode" error is a broken body
        // stream, as transient as a dropped connection.
        retryable: err.is_connect()
            || err.is_timeout()
            || err.is_request()
            || err.is_body()
            || err.is_decode(),
        error: Error::Transport {
            url: redact_url(url),
            source: err.without_url(),
        },
        headers: None,
        rejected: None,
    }
}
