//! One call: replay or send with retries, limiter, timeouts, and accounting.

use std::time::{Duration, Instant};

use futures::StreamExt as _;
use reqwest::header::HeaderMap;
use tracing::{debug, warn};

use crate::admission::Admission;
use crate::capabilities::{self, ModelCapabilities, Rejected, StopCutter};
use crate::cassette::{self, CassetteEntry, REDACTED};
use crate::client::{LlmClient, ProviderSlot};
use crate::error::{Error, Result};
use crate::limiter::Permit;
use crate::provider::{ModelRef, ProviderKind};
use crate::retry::is_retryable_status;
use crate::sse::SseParser;
use crate::usage::Reservation;
use crate::wire::{self, EventError, Parsed, StreamDecoder, Wire};
use crate::{ChatRequest, ChatResponse};

/// A failed attempt: the error, whether another attempt may help, and the response headers
/// (for `retry-after`).
struct AttemptError {
    error: Error,
    retryable: bool,
    headers: Option<HeaderMap>,
    /// A parameter the provider refused that the request can do without (HTTP 400 only).
    rejected: Option<Rejected>,
}

impl AttemptError {
    fn fatal(error: Error) -> Self {
        Self {
            error,
            retryable: false,
            headers: None,
            rejected: None,
        }
    }
}

/// The end-of-turn tokens of common chat templates. A local server (llama.cpp, Ollama, vLLM)
/// serving a model whose template it does not know returns them as text, and the model goes
/// on to write the next turn itself (`<|im_end|>user Your reply had no …`): the client cuts a
/// reply at the first of them, as at a stop sequence. OpenAI-compatible servers only;
/// Anthropic's API never returns them.
const TURN_END_TOKENS: &[&str] = &[
    "<|im_end|>",
    "<|eot_id|>",
    "<|end_of_text|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|end|>",
    "<｜end▁of▁sentence｜>",
];

/// What goes on the wire for one request given what the model accepts, and the stop sequences
/// the client applies itself.
struct Plan {
    body: bytes::Bytes,
    /// Whether the body asks for a streamed answer.
    stream: bool,
    client_stops: Vec<String>,
    wire: Wire,
    /// Whether the body carries the request's JSON Schema (so a 400 refusing a schema is
    /// about it).
    sends_schema: bool,
    /// On Anthropic, the tool whose input is the answer ([`wire::anthropic::answer_tool`]).
    answer_tool: Option<String>,
}

impl Plan {
    fn new(
        kind: ProviderKind,
        request: &ChatRequest,
        model: &str,
        stream: bool,
        capabilities: ModelCapabilities,
        prompt_cache: bool,
    ) -> Result<Self> {
        let wire = Wire::of(kind, capabilities);
        let strip_stop = !capabilities.stop || !wire.has_stop();
        let strip_temperature = !capabilities.temperature;
        let strip_schema = !capabilities.json_schema;
        let mut client_stops = Vec::new();
        // Copied only when a field the model refuses must go.
        let sent = if (strip_stop && !request.stop.is_empty())
            || (strip_temperature && request.temperature.is_some())
            || (strip_schema && request.json_schema.is_some())
        {
            let mut sent = request.clone();
            if strip_schema {
                sent.json_schema = None;
            }
            if strip_stop {
                client_stops = std::mem::take(&mut sent.stop);
            }
            if strip_temperature {
                sent.temperature = None;
            }
            std::borrow::Cow::Owned(sent)
        } else {
            std::borrow::Cow::Borrowed(request)
        };
        let body = wire::request_bytes(
            wire,
            &sent,
            model,
            stream,
            capabilities.max_tokens_field,
            prompt_cache,
        )
        .map_err(|err| Error::Config(err.to_string()))?;
        if kind == ProviderKind::OpenAi {
            client_stops.extend(TURN_END_TOKENS.iter().map(|&token| token.to_owned()));
        }
        let answer_tool = (wire == Wire::Anthropic)
            .then(|| wire::anthropic::answer_tool(&sent))
            .flatten()
            .map(|schema| schema.name.clone());
        Ok(Self {
            // Shared, not copied, by every attempt.
            body: bytes::Bytes::from(body),
            stream,
            client_stops,
            wire,
            sends_schema: sent.json_schema.is_some()
                && (wire != Wire::Anthropic || answer_tool.is_some()),
            answer_tool,
        })
    }
}

type TextSink<'a> = Option<&'a mut (dyn FnMut(&str) + Send)>;

impl LlmClient {
    #[tracing::instrument(name = "llm_call", skip_all, fields(model = %request.model))]
    pub(crate) async fn execute(
        &self,
        request: &ChatRequest,
        mut on_text: TextSink<'_>,
        caller: Option<Reservation>,
    ) -> Result<ChatResponse> {
        let started = Instant::now();
        let model_ref = self.resolve(&request.model)?;
        let model_label = model_ref.to_string();
        let price = self.price_of(&model_ref);
        let reservation = self
            .ledger
            .reserve(crate::usage::Estimate::of(request, price.as_ref()))?;
        let admission = Admission::new(reservation, caller, request);
        // The request as a recording keys it: built only to replay or record.
        let resolved = |model: &str| {
            let mut resolved = request.clone();
            model.clone_into(&mut resolved.model);
            resolved
        };

        if let Some(replayer) = &self.shared.replayer {
            let mut response = replayer.answer(&resolved(&model_label))?;
            if let Some(sink) = on_text.as_mut() {
                sink(&response.text);
            }
            response.model.clone_from(&model_label);
            response.replayed = true;
            response.retries = 0;
            response.latency = started.elapsed();
            response.cost_usd = price.map(|p| p.cost(&response.usage));
            admission.settle(&response);
            return Ok(response);
        }

        if let Some(backend) = self.backend_slot(&model_ref) {
            return self
                .execute_backend(backend, &model_ref, request, admission, started, on_text)
                .await;
        }
        let slot = self.slot(&model_ref, &request.model)?;
        if slot.limiter.wants_probe() {
            // The limiter takes a reported slot count from the answer (`server_props`).
            self.server_props(&request.model).await;
        }
        let sent = self
            .send(slot, &model_ref, request, &admission, &mut on_text)
            .await?;
        let latency = started.elapsed();
        let (answered, endpoint, retries) = match sent {
            Sent::Answered {
                answered,
                endpoint,
                retries,
            } => (answered, endpoint, retries),
            Sent::Failed { error, retries } => {
                debug!(error = %error, retries, "model call failed");
                admission.fail(&model_label, latency, retries);
                return Err(error);
            }
            // Nothing went out: the holds are released, nothing is counted.
            Sent::Refused { error, retries: 0 } => return Err(error),
            Sent::Refused { error, retries } => {
                admission.fail(&model_label, latency, retries);
                return Err(error);
            }
        };
        let Answered {
            mut parsed,
            permit,
            first_token,
        } = answered;
        if request.json {
            wire::clean_json_answer(slot.config.kind, &mut parsed.text);
        }
        let cost_usd = price.map(|p| p.cost(&parsed.usage));
        debug!(
            input = parsed.usage.input_tokens,
            output = parsed.usage.output_tokens,
            cache_read = parsed.usage.cache_read_tokens,
            cache_write = parsed.usage.cache_write_tokens,
            latency_ms = latency.as_millis() as u64,
            retries,
            "model call done"
        );
        let response = ChatResponse {
            text: parsed.text,
            tool_calls: parsed.tool_calls,
            model: model_label,
            finish_reason: parsed.finish_reason,
            usage: parsed.usage,
            usage_estimated: false,
            cost_usd,
            latency,
            retries,
            replayed: false,
        };
        admission.settle(&response);
        // Only now may the next call waiting for this provider go out (a slot returned, or
        // one the adaptive limit adds): it sees this reply counted, an over-report included.
        slot.limiter.succeeded(first_token);
        drop(permit);
        if self.shared.recorder.is_some() {
            self.record(
                resolved(&response.model),
                redact_url(&endpoint.text),
                &recorded_headers(&endpoint.headers),
                &response,
            );
        }
        Ok(response)
    }

    /// The attempts of one call to an HTTP provider: each waits for a slot of the limiter,
    /// asks `admission` whether it may still go out, and is retried as the failure allows
    /// (a refused parameter is left out once). Errors before anything is sent (a bad
    /// endpoint) are returned as such.
    async fn send<'slot>(
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
                Err(failed) => {
                    return Ok(Sent::Failed {
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
            let attempt = self
                .attempt(
                    slot,
                    permit,
                    model_ref,
                    endpoint,
                    &plan,
                    on_text,
                    &mut emitted,
                )
                .await;
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

    /// Appends an answered call to the recording, if one is being made. `resolved` is the
    /// request with its `provider:model`, `url` and `headers` already redacted.
    pub(crate) fn record(
        &self,
        resolved: ChatRequest,
        url: String,
        headers: &[(String, String)],
        response: &ChatResponse,
    ) {
        let Some(recorder) = &self.shared.recorder else {
            return;
        };
        let entry = CassetteEntry {
            version: cassette::CASSETTE_VERSION,
            key: cassette::request_key(&resolved),
            request: resolved,
            url,
            headers: headers.to_vec(),
            response: response.clone(),
        };
        // The answer is already paid for: a failed write is reported, not turned into a
        // failed call.
        if let Err(err) = recorder.write(&entry) {
            warn!(error = %err, "could not record the response");
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

    /// One attempt holding a slot of the limiter (`permit`), under the per-attempt timeout.
    /// An answer comes back with the slot still held, so that the caller accounts for it
    /// before the next call may go out.
    #[expect(
        clippy::too_many_arguments,
        reason = "one attempt's inputs, borrowed from the call that retries it"
    )]
    async fn attempt<'slot>(
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
        let deadline_error = || clock.deadline_error();
        let timeout = self.shared.request_timeout;
        let remaining = match self.deadline {
            Some(deadline) => deadline
                .checked_duration_since(Instant::now())
                .ok_or_else(deadline_error)?,
            None => Duration::MAX,
        };
        // Counted from here, after the limiter: time queued behind other calls to the same
        // provider is not the server's. Headers, a whole (non-streamed) body and, when
        // streaming, the first piece of the answer share this deadline; once the answer has
        // started, each gap between two chunks gets the idle timeout instead, since a long
        // answer legitimately takes minutes.
        let attempt_deadline = instant_after(timeout.min(remaining));
        let sent_at = Instant::now();
        let overall_deadline = clock.overall;
        let timed_out = |url: &str| clock.timed_out(url);
        let stalled = |url: &str| clock.stalled(url);
        let url = endpoint.text.as_str();
        let send = self
            .shared
            .http
            .post(endpoint.url.clone())
            .headers(endpoint.headers.clone())
            .body(plan.body.clone())
            .send();
        let response = match tokio::time::timeout_at(attempt_deadline, send).await {
            Err(_) => return Err(timed_out(url)),
            Ok(Err(err)) => return Err(transport_error(url, err)),
            Ok(Ok(response)) => response,
        };
        let status = response.status().as_u16();
        let provider = slot.config.name.clone();
        let model = model_ref.model.clone();
        if !(200..300).contains(&status) {
            slot.limiter.refused(status);
            return Err(status_error(response, attempt_deadline, provider, model).await);
        }
        let decode_error = |detail: String| {
            AttemptError::fatal(Error::Decode {
                provider: slot.config.name.clone(),
                model: model_ref.model.clone(),
                detail,
            })
        };
        if !plan.stream {
            let bytes = match tokio::time::timeout_at(attempt_deadline, response.bytes()).await {
                // The server had started its answer: asking again would start it over.
                Err(_) => return Err(producing_timed_out(timed_out(url))),
                Ok(Err(err)) => return Err(transport_error(url, err)),
                Ok(Ok(bytes)) => bytes,
            };
            let mut parsed = wire::parse_response(plan.wire, &bytes, plan.answer_tool.as_deref())
                .map_err(decode_error)?;
            apply_client_stops(slot.config.kind, &mut parsed, &plan.client_stops);
            return Ok(Answered {
                parsed,
                permit,
                first_token: sent_at.elapsed(),
            });
        }
        let mut cutter = StopCutter::new(plan.client_stops.clone());
        let mut decoder = StreamDecoder::new(plan.wire, plan.answer_tool.as_deref());
        let mut parser = SseParser::default();
        let mut chunks = response.bytes_stream();
        let interrupted = || AttemptError {
            error: Error::StreamInterrupted {
                provider: slot.config.name.clone(),
                model: model_ref.model.clone(),
            },
            retryable: true,
            headers: None,
            rejected: None,
        };
        let idle = self.shared.idle_timeout;
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
                let gap_end = instant_after(idle);
                overall_deadline.map_or(gap_end, |deadline| gap_end.min(deadline))
            } else {
                attempt_deadline
            };
            let chunk = match tokio::time::timeout_at(limit, chunks.next()).await {
                Err(_) if started => return Err(stalled(url)),
                Err(_) if producing => return Err(producing_timed_out(timed_out(url))),
                Err(_) => return Err(timed_out(url)),
                Ok(None) => return Err(interrupted()),
                Ok(Some(Err(_))) => return Err(interrupted()),
                Ok(Some(Ok(chunk))) => chunk,
            };
            producing = true;
            for event in parser.push(&chunk) {
                let decoded = decoder.on_event(&event).map_err(|err| match err {
                    EventError::Malformed(detail) => decode_error(detail),
                    // Overload or rate errors reported inside a 200 stream are as transient as
                    // the same status would be.
                    EventError::Provider(message) => AttemptError {
                        error: Error::StreamError {
                            provider: slot.config.name.clone(),
                            model: model_ref.model.clone(),
                            message: crate::secrets::mask_provider_text(&message),
                        },
                        retryable: true,
                        headers: None,
                        rejected: None,
                    },
                })?;
                if first_token.is_none() && decoder.started() {
                    first_token = Some(sent_at.elapsed());
                }
                if let Some(piece) = decoded {
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
        }
        drop(chunks);
        let rest = cutter.finish();
        if !rest.is_empty()
            && let Some(sink) = on_text.as_mut()
        {
            *emitted = true;
            sink(&rest);
        }
        let mut parsed = decoder.finish();
        apply_client_stops(slot.config.kind, &mut parsed, &plan.client_stops);
        Ok(Answered {
            parsed,
            permit,
            first_token: first_token.unwrap_or_else(|| sent_at.elapsed()),
        })
    }
}

/// How the attempts of one call ended.
enum Sent<'slot> {
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
    /// it waited ([`Admission::check_send`]).
    Refused {
        error: Error,
        retries: u32,
    },
}

/// An attempt's answer, with the limiter slot it still holds and how long until the answer
/// started (what the adaptive limit learns from).
struct Answered<'slot> {
    parsed: Parsed,
    permit: Permit<'slot>,
    first_token: Duration,
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

/// A URL fit for errors and recordings: credentials in the user-info part and the query (where
/// gateways put `api-key=…`) are removed.
pub(crate) fn redact_url(url: &str) -> String {
    let Ok(mut parsed) = reqwest::Url::parse(url) else {
        return "<unparseable URL>".to_owned();
    };
    let had_query = parsed.query().is_some();
    let _ = parsed.set_username("");
    let _ = parsed.set_password(None);
    parsed.set_query(None);
    let mut shown = parsed.to_string();
    if had_query {
        shown.push_str("?<redacted>");
    }
    shown
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

/// Where a provider's calls of one wire go: the URL (parsed once) and the headers, key
/// included.
#[derive(Debug)]
pub(crate) struct Endpoint {
    url: reqwest::Url,
    /// The URL as configured, for errors and recordings (always shown redacted).
    text: String,
    headers: HeaderMap,
}

/// A provider's endpoints, one per wire, each built at its first call.
#[derive(Debug, Default)]
pub(crate) struct Endpoints([std::sync::OnceLock<Endpoint>; 3]);

impl Endpoints {
    /// The endpoint of `wire`; an error (a missing key, a key that cannot be a header, a bad
    /// base URL) is not kept, so it is reported on every call.
    fn get(&self, slot: &ProviderSlot, wire: Wire) -> Result<&Endpoint> {
        let cell = &self.0[match wire {
            Wire::Chat => 0,
            Wire::Responses => 1,
            Wire::Anthropic => 2,
        }];
        if let Some(endpoint) = cell.get() {
            return Ok(endpoint);
        }
        let endpoint = endpoint(slot, wire)?;
        Ok(cell.get_or_init(|| endpoint))
    }
}

/// The URL and headers (including the key) for a provider.
fn endpoint(slot: &ProviderSlot, wire: Wire) -> Result<Endpoint> {
    let config = &slot.config;
    let key = config.require_key()?;
    let mut headers = HeaderMap::new();
    let header = |value: &str| {
        reqwest::header::HeaderValue::from_str(value).map_err(|_| {
            Error::Config(format!(
                "the API key of provider `{}` contains characters not allowed in a header",
                config.name
            ))
        })
    };
    headers.insert(
        reqwest::header::CONTENT_TYPE,
        reqwest::header::HeaderValue::from_static("application/json"),
    );
    let url = match config.kind {
        ProviderKind::OpenAi => {
            if let Some(key) = key {
                let mut value = header(&format!("Bearer {}", key.expose()))?;
                value.set_sensitive(true);
                headers.insert(reqwest::header::AUTHORIZATION, value);
            }
            format!("{}{}", config.base_url, wire.path())
        }
        ProviderKind::Anthropic => {
            if let Some(key) = key {
                let mut value = header(key.expose())?;
                value.set_sensitive(true);
                headers.insert("x-api-key", value);
            }
            headers.insert(
                "anthropic-version",
                reqwest::header::HeaderValue::from_static(wire::anthropic::API_VERSION),
            );
            format!("{}{}", config.base_url, wire.path())
        }
    };
    let parsed = reqwest::Url::parse(&url).map_err(|err| {
        Error::Config(format!(
            "provider `{}` has a base URL that is not a URL ({}): {err}",
            config.name,
            redact_url(&url)
        ))
    })?;
    Ok(Endpoint {
        url: parsed,
        text: url,
        headers,
    })
}

/// Headers as written to a recording: secret values replaced.
fn recorded_headers(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| {
            let shown = if value.is_sensitive() || cassette::is_secret_header(name.as_str()) {
                REDACTED.to_owned()
            } else {
                value.to_str().unwrap_or("<binary>").to_owned()
            };
            (name.as_str().to_owned(), shown)
        })
        .collect()
}

#[cfg(test)]
mod redaction_tests {
    use super::*;

    #[test]
    fn urls_lose_credentials_and_queries() {
        assert_eq!(
            redact_url("https://user:secret@gw.example/v1/chat/completions?api-key=abc"),
            "https://gw.example/v1/chat/completions?<redacted>"
        );
        assert_eq!(
            redact_url("http://127.0.0.1:8080/v1/messages"),
            "http://127.0.0.1:8080/v1/messages"
        );
    }
}
