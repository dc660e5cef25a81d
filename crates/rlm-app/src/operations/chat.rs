//! `chat`: one question to one model.

use std::io::Read as _;

use anyhow::Context as _;
use rlm_llm::{ChatResponse, FinishReason};

use crate::error::{input_error, llm_error};
use crate::events::Event;
use crate::requests::ChatRequest;
use crate::settings::{ChatSettings, Sources};
use crate::{Context, Outcome, Runtime};

/// What `rlm chat --json` prints: one record with the answer and what it cost.
#[derive(Debug, serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChatRecord {
    Answer {
        text: String,
        model: String,
        finish_reason: Option<String>,
        usage: rlm_llm::Usage,
        cost_usd: Option<f64>,
        latency_ms: u64,
        retries: u32,
        /// Whether the answer came from a `--replay` cassette.
        replayed: bool,
        /// One line for a person: model, tokens, cost, time, retries (not in JSON).
        #[serde(skip)]
        usage_line: String,
        /// What to tell a person when the output cap cut the answer (not in JSON, which
        /// has `finish_reason`).
        #[serde(skip)]
        cut_warning: Option<String>,
    },
}

/// Asks the model once; with `stream`, each piece of the answer is an [`Event::Delta`] as it
/// arrives. A warning says when the output cap cut the answer.
pub fn chat(
    sources: &Sources,
    request: &ChatRequest,
    context: &Context,
) -> anyhow::Result<Outcome<ChatRecord>> {
    let settings = ChatSettings::resolve(request, sources)?;
    let prompt = if request.prompt == "-" {
        let mut text = String::new();
        context
            .stdin("the prompt")?
            .read_to_string(&mut text)
            .context("failed to read the prompt from stdin")?;
        text
    } else {
        request.prompt.clone()
    };
    if prompt.trim().is_empty() {
        return Err(input_error("the prompt is empty").into());
    }
    let chat_request = settings.request(prompt);
    let client = settings.llm.build_client()?;
    let runtime = Runtime::new()?;
    let call = async {
        if !request.stream {
            return client.chat(&chat_request).await;
        }
        client
            .chat_streaming(&chat_request, &mut |piece: &str| {
                context.emit(&Event::Delta(piece));
            })
            .await
    };
    let response = runtime
        .until_stopped(&context.stop, call)?
        .map_err(llm_error)?;
    Ok(Outcome::success(vec![ChatRecord::Answer {
        usage_line: usage_line(&response),
        cut_warning: cut_warning(&response, settings.max_tokens),
        text: response.text,
        model: response.model,
        finish_reason: response.finish_reason,
        usage: response.usage,
        cost_usd: response.cost_usd,
        latency_ms: u64::try_from(response.latency.as_millis()).unwrap_or(u64::MAX),
        retries: response.retries,
        replayed: response.replayed,
    }]))
}

/// What to say when the output cap cut the answer (finish reason `length`); `None` otherwise.
/// `--json` carries the reason as `finish_reason` instead.
fn cut_warning(response: &ChatResponse, max_tokens: Option<u32>) -> Option<String> {
    if response.finish() != FinishReason::Length {
        return None;
    }
    let limit = max_tokens.map_or_else(
        || "the output limit".to_owned(),
        |cap| format!("the output limit ({cap} tokens)"),
    );
    Some(format!(
        "the answer was cut at {limit}; raise --max-output-tokens (or --max-tokens) for the rest"
    ))
}

/// One line for stderr: model, tokens, cost (or "unknown"), time, retries.
fn usage_line(response: &ChatResponse) -> String {
    let usage = &response.usage;
    let cost = response
        .cost_usd
        .map_or_else(|| "cost unknown".to_owned(), |cost| format!("${cost:.6}"));
    let source = if response.replayed { " (replayed)" } else { "" };
    format!(
        "{}{source}: {} in, {} out, {} cache read, {} cache write tokens; {cost}; {:.2} s; {} retries",
        response.model,
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
        response.latency.as_secs_f64(),
        response.retries,
    )
}
