//! The fake server's `POST /v1/responses`: OpenAI's Responses API, whole or streamed, as the
//! real endpoint shapes it. Like the real API it refuses parameters it does not know (`stop`,
//! `messages`, `max_tokens`), so a request built for chat completions cannot pass here.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State as AxumState;
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Value, json};

use super::encode::{self, event, pieces};
use super::reply::{FakeBehavior, SeenRequest, estimated_usage};
use super::server::{End, body_response, header_pairs, json_response, paced_response};
use super::{InFlight, State, tools};
use crate::Wire;
use rlm_types::ToolCall;
use rlm_types::ToolOutput;
use rlm_types::{Message, Usage};

/// The path the fake server serves this wire on.
pub(crate) const PATH: &str = "/v1/responses";

/// Top-level request fields the real endpoint accepts (the ones a client of ours could send).
const KNOWN_FIELDS: &[&str] = &[
    "model",
    "input",
    "instructions",
    "max_output_tokens",
    "temperature",
    "top_p",
    "text",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "stream",
    "store",
    "reasoning",
    "metadata",
    "previous_response_id",
    "include",
    "truncation",
    "user",
];

pub(crate) async fn handle(
    AxumState(state): AxumState<Arc<State>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let received = std::time::Instant::now();
    let guard = InFlight::enter(&state);
    let seen = match decode(&headers, &body) {
        Ok(seen) => Arc::new(seen),
        Err(refusal) => return json_response(400, &[], &refusal),
    };
    let (_slot, received) = state.take_slot(received).await;
    let reply = state.take_reply(&seen);
    state.delay(&reply, received).await;
    let status = match reply.finish_reason.as_deref() {
        Some("length") => "incomplete",
        _ => "completed",
    };
    match reply.behavior {
        FakeBehavior::Status {
            status,
            headers,
            message,
        } => json_response(
            status,
            &headers,
            &encode::error_body(Wire::OpenAi, status, &message),
        ),
        FakeBehavior::Body { status, body } => json_response(status, &[], &body),
        FakeBehavior::Text(text) => {
            let usage = reply.usage.unwrap_or_else(|| estimated_usage(&seen, &text));
            answer(&seen, &text, &[], status, &usage, guard)
        }
        FakeBehavior::ToolCalls { text, calls } => {
            let calls = tools::with_ids(Wire::OpenAi, calls);
            let arguments: String = calls.iter().map(|call| call.arguments.as_str()).collect();
            let usage = reply
                .usage
                .unwrap_or_else(|| estimated_usage(&seen, &(text.clone() + &arguments)));
            answer(&seen, &text, &calls, status, &usage, guard)
        }
        FakeBehavior::SlowStream { text, pieces, gap } => {
            let usage = reply.usage.unwrap_or_else(|| estimated_usage(&seen, &text));
            let whole = response_object(&seen.model, &text, &[], status, &usage);
            if !seen.stream {
                tokio::time::sleep(gap.saturating_mul(u32::try_from(pieces).unwrap_or(u32::MAX)))
                    .await;
                return json_response(200, &[], &whole);
            }
            let mut events = head(&seen.model);
            let first = events.len();
            let text_pieces = super::encode::pieces(&text, pieces);
            let gaps = (first..first + text_pieces.len()).collect();
            events.extend(text_pieces.into_iter().map(delta));
            events.push(event(
                Some("response.completed"),
                &json!({"type": "response.completed", "response": whole}),
            ));
            paced_response(events, End::Clean, gap, gaps, guard)
        }
        FakeBehavior::ErrorEvent(message) if seen.stream => {
            let failed = json!({"type": "response.failed", "response": {
                "id": "resp_fake", "object": "response", "status": "failed", "output": [],
                "error": {"code": "server_error", "message": message}}});
            body_response(
                vec![event(Some("response.failed"), &failed)],
                End::Clean,
                guard,
            )
        }
        FakeBehavior::ErrorEvent(message) => {
            json_response(500, &[], &encode::error_body(Wire::OpenAi, 500, &message))
        }
        FakeBehavior::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            drop(guard);
            json_response(
                500,
                &[],
                &encode::error_body(Wire::OpenAi, 500, "hang ended"),
            )
        }
        FakeBehavior::Stall(partial) => {
            let mut events = head(&seen.model);
            events.extend(deltas(&partial));
            body_response(events, End::Stall, guard)
        }
        FakeBehavior::CutStream(partial) => {
            let mut events = head(&seen.model);
            events.extend(deltas(&partial));
            body_response(events, End::Cut, guard)
        }
        FakeBehavior::MalformedJson => body_response(
            vec!["data: {\"type\": \"response.output_text.delta\", \n\n".to_owned()],
            End::Clean,
            guard,
        ),
    }
}

/// A successful answer, whole or as the event sequence the real endpoint streams.
fn answer(
    seen: &SeenRequest,
    text: &str,
    calls: &[ToolCall],
    status: &str,
    usage: &Usage,
    guard: InFlight,
) -> Response {
    let whole = response_object(&seen.model, text, calls, status, usage);
    if !seen.stream {
        return json_response(200, &[], &whole);
    }
    let mut events = head(&seen.model);
    events.extend(deltas(text));
    let last = if status == "completed" {
        "response.completed"
    } else {
        "response.incomplete"
    };
    events.push(event(
        Some(last),
        &json!({"type": last, "sequence_number": 99, "response": whole}),
    ));
    body_response(events, End::Clean, guard)
}

fn head(model: &str) -> Vec<String> {
    let created = json!({"type": "response.created", "sequence_number": 0, "response": {
        "id": "resp_fake", "object": "response", "model": model, "status": "in_progress",
        "output": []}});
    vec![event(Some("response.created"), &created)]
}

fn deltas(text: &str) -> Vec<String> {
    pieces(text, 4).into_iter().map(delta).collect()
}

fn delta(piece: &str) -> String {
    event(
        Some("response.output_text.delta"),
        &json!({"type": "response.output_text.delta", "item_id": "msg_fake",
            "output_index": 0, "content_index": 0, "delta": piece}),
    )
}

fn response_object(
    model: &str,
    text: &str,
    calls: &[ToolCall],
    status: &str,
    usage: &Usage,
) -> Value {
    let mut output = vec![json!({"type": "reasoning", "id": "rs_fake", "summary": []})];
    if !text.is_empty() || calls.is_empty() {
        output.push(
            json!({"type": "message", "id": "msg_fake", "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}),
        );
    }
    output.extend(calls.iter().map(|call| {
        json!({"type": "function_call", "id": format!("fc_{}", call.id), "call_id": call.id,
            "name": call.name, "arguments": call.arguments, "status": "completed"})
    }));
    let incomplete = (status == "incomplete").then(|| json!({"reason": "max_output_tokens"}));
    json!({
        "id": "resp_fake",
        "object": "response",
        "model": model,
        "status": status,
        "incomplete_details": incomplete,
        "output": output,
        "usage": {
            "input_tokens": usage.input_tokens,
            "input_tokens_details": {"cached_tokens": usage.cache_read_tokens},
            "output_tokens": usage.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage.total(),
        },
    })
}

/// The real endpoint's refusal of a field it does not know.
fn unknown_parameter(name: &str) -> Value {
    json!({"error": {"message": format!("Unknown parameter: '{name}'."),
        "type": "invalid_request_error", "param": name, "code": "unknown_parameter"}})
}

fn invalid(message: impl Into<String>) -> Value {
    json!({"error": {"message": message.into(), "type": "invalid_request_error",
        "param": null, "code": null}})
}

/// Decodes a request into a [`SeenRequest`] (`wire` is OpenAI; `endpoint` says which), or the
/// error body the real endpoint would answer.
fn decode(headers: &HeaderMap, body: &[u8]) -> Result<SeenRequest, Value> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|err| invalid(format!("request body is not JSON: {err}")))?;
    let object = value.as_object().ok_or_else(|| invalid("not an object"))?;
    if let Some(unknown) = object
        .keys()
        .find(|key| !KNOWN_FIELDS.contains(&key.as_str()))
    {
        return Err(unknown_parameter(unknown));
    }
    let model = value
        .get("model")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("Missing required parameter: 'model'."))?
        .to_owned();
    let mut system = value
        .get("instructions")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let messages = match value.get("input") {
        Some(Value::String(text)) => vec![Message::user(text.clone())],
        Some(Value::Array(items)) => input_messages(items, &mut system).map_err(invalid)?,
        _ => return Err(invalid("Missing required parameter: 'input'.")),
    };
    Ok(SeenRequest {
        wire: Wire::OpenAi,
        endpoint: PATH.to_owned(),
        model,
        system,
        messages,
        stream: value
            .get("stream")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        headers: header_pairs(headers),
        body: value,
    })
}

/// `input` items as neutral messages: role messages, `function_call` items joined to the
/// assistant turn before them, `function_call_output` items as tool results.
fn input_messages(items: &[Value], system: &mut Option<String>) -> Result<Vec<Message>, String> {
    let mut messages: Vec<Message> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let text = |field: &str| -> Result<String, String> {
            match item.get(field) {
                Some(Value::String(text)) => Ok(text.clone()),
                Some(Value::Array(parts)) => Ok(parts
                    .iter()
                    .filter_map(|part| part.get("text").and_then(Value::as_str))
                    .collect()),
                _ => Err(format!("input[{index}].{field} is missing")),
            }
        };
        match item.get("type").and_then(Value::as_str) {
            Some("function_call") => {
                let call = ToolCall::new(
                    item.get("call_id").and_then(Value::as_str).unwrap_or(""),
                    item.get("name").and_then(Value::as_str).unwrap_or(""),
                    item.get("arguments").and_then(Value::as_str).unwrap_or(""),
                );
                match messages.last_mut() {
                    Some(last) if last.role == rlm_types::Role::Assistant => {
                        last.tool_calls.push(call);
                    }
                    _ => messages.push(Message::assistant_tool_calls("", vec![call])),
                }
            }
            Some("function_call_output") => {
                let id = item
                    .get("call_id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("input[{index}] has no call_id"))?;
                messages.push(Message::tool_result(id, ToolOutput::ok(text("output")?)));
            }
            Some("message") | None => match item.get("role").and_then(Value::as_str) {
                Some("system" | "developer") => *system = Some(text("content")?),
                Some("user") => messages.push(Message::user(text("content")?)),
                Some("assistant") => messages.push(Message::assistant(text("content")?)),
                other => return Err(format!("input[{index}] has an unknown role {other:?}")),
            },
            Some(other) => return Err(format!("input[{index}] has an unknown type `{other}`")),
        }
    }
    Ok(messages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_decoded_and_unknown_fields_refused_as_the_real_endpoint_does() {
        let body = json!({"model": "o3-pro", "instructions": "sys", "store": false, "input": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "looking"},
            {"type": "function_call", "call_id": "c1", "name": "grep", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "3 lines"}]});
        let seen = decode(&HeaderMap::new(), body.to_string().as_bytes()).unwrap();
        assert_eq!(seen.endpoint, PATH);
        assert_eq!(seen.system.as_deref(), Some("sys"));
        assert_eq!(seen.messages.len(), 3);
        assert_eq!(seen.messages[1].tool_calls[0].id, "c1");
        assert_eq!(seen.tool_results()[0].content, "3 lines");

        for field in ["stop", "messages", "max_tokens", "stream_options"] {
            let mut body = body.clone();
            body[field] = json!(1);
            let refusal = decode(&HeaderMap::new(), body.to_string().as_bytes()).unwrap_err();
            assert_eq!(refusal["error"]["param"], field);
            assert_eq!(refusal["error"]["code"], "unknown_parameter");
        }
    }
}
