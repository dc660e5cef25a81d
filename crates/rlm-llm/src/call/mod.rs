//! One call, by phase: the call itself (replay, reserve, send, settle, record: here), what
//! goes on the wire for the model (`plan.rs`), the attempts with their retries and the
//! limiter's slots (`send.rs`), one attempt and how its answer is read (`attempt.rs`), and
//! where a provider's requests go (`endpoint.rs`).

mod attempt;
mod endpoint;
mod plan;
mod send;

use std::time::Instant;

use tracing::{debug, warn};

use crate::admission::Admission;
use crate::cassette::{self, CassetteEntry};
use crate::client::LlmClient;
use crate::error::Result;
use crate::usage::Reservation;
use crate::wire;
use crate::{ChatRequest, ChatResponse};

use attempt::Answered;
use endpoint::recorded_headers;
pub(crate) use endpoint::{Endpoints, redact_url};

/// Where a streamed answer's text goes as it arrives, if anywhere.
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
            response.model = model_label;
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
        let (answered, endpoint, retries) = match sent.answer() {
            Ok(answer) => answer,
            Err(failure) => return Err(failure.counted(admission, &model_label, latency)),
        };
        let Answered {
            mut parsed,
            permit,
            first_token,
        } = answered;
        if request.json {
            wire::clean_json_answer(slot.config.kind, &mut parsed.text);
        }
        let response = ChatResponse {
            cost_usd: price.map(|p| p.cost(&parsed.usage)),
            text: parsed.text,
            tool_calls: parsed.tool_calls,
            model: model_label,
            finish_reason: parsed.finish_reason,
            usage: parsed.usage,
            usage_estimated: false,
            latency,
            retries,
            replayed: false,
        };
        debug!(
            input = response.usage.input_tokens,
            output = response.usage.output_tokens,
            cache_read = response.usage.cache_read_tokens,
            cache_write = response.usage.cache_write_tokens,
            latency_ms = latency.as_millis() as u64,
            retries,
            "model call done"
        );
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
}
