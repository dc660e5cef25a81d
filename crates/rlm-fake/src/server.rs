//! The HTTP side of the fake server (axum on a local port).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State as AxumState;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::post;
use serde_json::Value;

use super::cache::CacheHit;
use super::reply::{FakeBehavior, FakeReply, SeenRequest, estimated_usage};
use super::{InFlight, State};
use super::{encode, tools};
use crate::Wire;
use rlm_types::{ToolCall, Usage};

/// Pieces a streamed answer is split into (each its own event and body chunk).
const STREAM_PIECES: usize = 4;

pub(crate) async fn spawn(
    state: Arc<State>,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    // Each event of a streamed answer is its own small write; with Nagle's algorithm on, a
    // write waits for the ACK of the previous one, which the client delays (~40 ms on Linux),
    // so every streamed answer would arrive tens of milliseconds late. Real providers flush
    // their events at once.
    let listener = axum::serve::ListenerExt::tap_io(listener, |stream| {
        if let Err(err) = stream.set_nodelay(true) {
            tracing::debug!(error = %err, "fake server: cannot set TCP_NODELAY");
        }
    });
    let router = Router::new()
        .route("/v1/chat/completions", post(openai))
        .route("/v1/messages", post(anthropic))
        .route(super::responses::PATH, post(super::responses::handle))
        .route("/props", axum::routing::get(props))
        .route("/info", axum::routing::get(info))
        .route("/get_server_info", axum::routing::get(info))
        .with_state(state);
    let task = tokio::spawn(async move {
        if let Err(err) = axum::serve(listener, router).await {
            tracing::warn!(error = %err, "fake server stopped");
        }
    });
    Ok((address, task))
}

/// llama.cpp's `GET /props`: what the test set, else 404.
async fn props(AxumState(state): AxumState<Arc<State>>) -> Response {
    state
        .props_requests
        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let body = state
        .props
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let (status, body) = match body {
        Some(body) => (StatusCode::OK, body.to_string()),
        None => (StatusCode::NOT_FOUND, "File Not Found".to_owned()),
    };
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// TGI's `GET /info` and SGLang's `GET /get_server_info`: what the test set, else 404.
async fn info(AxumState(state): AxumState<Arc<State>>, uri: axum::http::Uri) -> Response {
    let body = super::lock(&state.info).get(uri.path()).cloned();
    match body {
        Some(body) => json_response(200, &[], &body),
        None => json_response(404, &[], &serde_json::json!({"detail": "Not Found"})),
    }
}

async fn openai(
    AxumState(state): AxumState<Arc<State>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(state, Wire::OpenAi, headers, body).await
}

async fn anthropic(
    AxumState(state): AxumState<Arc<State>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(state, Wire::Anthropic, headers, body).await
}

pub(crate) fn json_response(status: u16, headers: &[(String, String)], body: &Value) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let map = response.headers_mut();
    map.insert("content-type", HeaderValue::from_static("application/json"));
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            map.insert(name, value);
        }
    }
    response
}

async fn handle(state: Arc<State>, wire: Wire, headers: HeaderMap, body: Bytes) -> Response {
    let received = std::time::Instant::now();
    let guard = InFlight::enter(&state);
    let seen = match decode(wire, &headers, &body) {
        Ok(seen) => Arc::new(seen),
        Err(message) => {
            return json_response(400, &[], &encode::error_body(wire, 400, &message));
        }
    };
    let (_slot, received) = state.take_slot(received).await;
    let reply = state.take_reply(&seen);
    let cached = state.cache_hit(&seen, &reply);
    state.delay(&reply, received).await;
    respond(wire, &seen, reply, cached, guard).await
}

async fn respond(
    wire: Wire,
    seen: &SeenRequest,
    reply: FakeReply,
    cached: CacheHit,
    guard: InFlight,
) -> Response {
    let FakeReply {
        behavior,
        usage,
        finish_reason,
        ..
    } = reply;
    let behavior = tools::forced_call(wire, &seen.body, behavior);
    let finish = finish_reason.unwrap_or_else(|| {
        match wire {
            Wire::OpenAi => "stop",
            Wire::Anthropic => "end_turn",
        }
        .to_owned()
    });
    match behavior {
        FakeBehavior::Status {
            status,
            headers,
            message,
        } => json_response(
            status,
            &headers,
            &encode::error_body(wire, status, &message),
        ),
        FakeBehavior::Body { status, body } => json_response(status, &[], &body),
        FakeBehavior::Hang => {
            // Held until the client gives up and the connection is dropped (or the test ends).
            tokio::time::sleep(Duration::from_secs(3600)).await;
            drop(guard);
            json_response(500, &[], &encode::error_body(wire, 500, "hang ended"))
        }
        FakeBehavior::MalformedJson if seen.stream => sse_response(
            vec!["data: {\"choices\": [ {\"delta\": \n\n".to_owned()],
            false,
            guard,
        ),
        FakeBehavior::MalformedJson => {
            let mut response = Response::new(Body::from("{\"choices\": [ {\"message\": "));
            response
                .headers_mut()
                .insert("content-type", HeaderValue::from_static("application/json"));
            response
        }
        FakeBehavior::Text(text) => text_reply(wire, seen, text, finish, usage, &cached, guard),
        FakeBehavior::ToolCalls { text, calls } => {
            tool_reply(wire, seen, &text, calls, finish, usage, &cached, guard)
        }
        FakeBehavior::ErrorEvent(message) if seen.stream => {
            let usage = usage.unwrap_or_default();
            let mut events = encode::stream_head(wire, &seen.model, &usage);
            events.push(encode::stream_error(wire, &message));
            sse_response(events, false, guard)
        }
        FakeBehavior::ErrorEvent(message) => {
            json_response(529, &[], &encode::error_body(wire, 529, &message))
        }
        FakeBehavior::SlowStream { text, pieces, gap } => {
            let usage = usage.unwrap_or_else(|| estimated_usage(seen, &text));
            if !seen.stream {
                tokio::time::sleep(gap.saturating_mul(u32::try_from(pieces).unwrap_or(u32::MAX)))
                    .await;
                let body = encode::full_body(wire, &seen.model, &text, &finish, &usage);
                return json_response(200, &[], &body);
            }
            let mut events = encode::stream_head(wire, &seen.model, &usage);
            let head = events.len();
            let text_pieces = encode::pieces(&text, pieces);
            let gaps = (head..head + text_pieces.len()).collect();
            for piece in text_pieces {
                events.push(encode::stream_delta(wire, &seen.model, piece));
            }
            events.extend(encode::stream_tail(wire, &seen.model, &finish, &usage));
            paced_response(events, End::Clean, gap, gaps, guard)
        }
        FakeBehavior::Stall(partial) => {
            let usage = usage.unwrap_or_else(|| estimated_usage(seen, &partial));
            partial_reply(wire, seen, &partial, &finish, &usage, End::Stall, guard)
        }
        FakeBehavior::CutStream(partial) => {
            let usage = usage.unwrap_or_else(|| estimated_usage(seen, &partial));
            partial_reply(wire, seen, &partial, &finish, &usage, End::Cut, guard)
        }
    }
}

/// A text reply, whole or streamed, ending before the first stop sequence the request gave
/// (as the real APIs do: Anthropic says so in `stop_reason`; OpenAI reports a plain "stop").
fn text_reply(
    wire: Wire,
    seen: &SeenRequest,
    mut text: String,
    mut finish: String,
    usage: Option<Usage>,
    cached: &CacheHit,
    guard: InFlight,
) -> Response {
    if let Some(at) = stop_sequences(wire, &seen.body)
        .iter()
        .filter_map(|stop| text.find(stop.as_str()))
        .min()
    {
        text.truncate(at);
        if wire == Wire::Anthropic && reply_finish_is_default(&finish, wire) {
            finish = "stop_sequence".to_owned();
        }
    }
    // Counted on what is sent.
    let usage = usage.unwrap_or_else(|| cached.apply(estimated_usage(seen, &text)));
    if !seen.stream {
        return json_response(
            200,
            &[],
            &encode::full_body(wire, &seen.model, &text, &finish, &usage),
        );
    }
    let mut events = encode::stream_head(wire, &seen.model, &usage);
    for piece in encode::pieces(&text, STREAM_PIECES) {
        events.push(encode::stream_delta(wire, &seen.model, piece));
    }
    events.extend(encode::stream_tail(wire, &seen.model, &finish, &usage));
    sse_response(events, false, guard)
}

/// A reply that calls tools (with the provider's ids), whole or streamed.
#[expect(
    clippy::too_many_arguments,
    reason = "one reply's parts, as `respond` took them apart"
)]
fn tool_reply(
    wire: Wire,
    seen: &SeenRequest,
    text: &str,
    calls: Vec<ToolCall>,
    finish: String,
    usage: Option<Usage>,
    cached: &CacheHit,
    guard: InFlight,
) -> Response {
    let calls = tools::with_ids(wire, calls);
    let finish = if reply_finish_is_default(&finish, wire) {
        tool_finish(wire).to_owned()
    } else {
        finish
    };
    let arguments: String = calls.iter().map(|call| call.arguments.as_str()).collect();
    let usage = usage
        .unwrap_or_else(|| cached.apply(estimated_usage(seen, &(text.to_owned() + &arguments))));
    if !seen.stream {
        let body = tools::full_body(wire, &seen.model, text, &calls, &finish, &usage);
        return json_response(200, &[], &body);
    }
    let events = tools::stream_events(wire, &seen.model, text, &calls, &finish, &usage);
    sse_response(events, false, guard)
}

/// The start of a reply, then `end`: a stall leaves the connection open, a cut breaks it (a
/// whole body: half of it; a stream: the pieces of `partial`, and for a cut half of one more
/// event).
fn partial_reply(
    wire: Wire,
    seen: &SeenRequest,
    partial: &str,
    finish: &str,
    usage: &Usage,
    end: End,
    guard: InFlight,
) -> Response {
    if !seen.stream {
        let full = encode::full_body(wire, &seen.model, partial, finish, usage).to_string();
        let half = full.get(..full.len() / 2).unwrap_or_default().to_owned();
        return body_response(vec![half], end, guard);
    }
    let mut events = encode::stream_head(wire, &seen.model, usage);
    for piece in encode::pieces(partial, STREAM_PIECES) {
        events.push(encode::stream_delta(wire, &seen.model, piece));
    }
    if end == End::Cut {
        // Half of one more event, then the connection is cut.
        let next = encode::stream_delta(wire, &seen.model, "never finished");
        events.push(next.get(..next.len() / 2).unwrap_or_default().to_owned());
    }
    body_response(events, end, guard)
}

/// A streamed body: each event is sent as its own chunk, and the first event is split in two
/// chunks so clients must buffer partial events. `cut` ends with a transport error instead of a
/// clean end of body.
fn sse_response(events: Vec<String>, cut: bool, guard: InFlight) -> Response {
    body_response(events, if cut { End::Cut } else { End::Clean }, guard)
}

/// How a streamed body ends.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum End {
    Clean,
    /// A transport error.
    Cut,
    /// Nothing more is sent and the connection stays open (until the client gives up).
    Stall,
}

pub(crate) fn body_response(events: Vec<String>, end: End, guard: InFlight) -> Response {
    paced_response(events, end, Duration::ZERO, Vec::new(), guard)
}

/// [`body_response`] waiting `gap` before each event whose index is in `gaps`.
pub(crate) fn paced_response(
    events: Vec<String>,
    end: End,
    gap: Duration,
    gaps: Vec<usize>,
    guard: InFlight,
) -> Response {
    let pause = guard.0.stream_gap();
    if pause.is_zero() && gaps.is_empty() && end == End::Clean {
        // Back to back: the whole event stream as one chunk of a chunked body, as a provider
        // that answers at once sends it.
        let body = futures::stream::once(async move {
            let _guard = guard;
            Ok::<_, std::io::Error>(Bytes::from(events.concat()))
        });
        return event_stream(Body::from_stream(body));
    }
    let (sender, receiver) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    tokio::spawn(async move {
        let _guard = guard;
        let mut first = true;
        for (index, event) in events.into_iter().enumerate() {
            if gaps.contains(&index) {
                tokio::time::sleep(gap).await;
            }
            let mut parts = vec![event];
            if index == 0 && parts[0].len() > 8 {
                let first = parts.remove(0);
                let mut middle = first.len() / 2;
                while !first.is_char_boundary(middle) {
                    middle -= 1;
                }
                parts = vec![first[..middle].to_owned(), first[middle..].to_owned()];
            }
            for part in parts {
                // A pause between chunks makes them separate writes on the socket. None after
                // the last: the request stops counting as in flight as soon as it is all sent.
                if !first && !pause.is_zero() {
                    tokio::time::sleep(pause).await;
                }
                first = false;
                if sender.send(Ok(Bytes::from(part))).await.is_err() {
                    return;
                }
            }
        }
        if end == End::Stall {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
        if end == End::Cut {
            let _ = sender
                .send(Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    "fake stream cut",
                )))
                .await;
        }
    });
    let stream = futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|item| (item, receiver))
    });
    event_stream(Body::from_stream(stream))
}

fn event_stream(body: Body) -> Response {
    let mut response = Response::new(body);
    response.headers_mut().insert(
        "content-type",
        HeaderValue::from_static("text/event-stream"),
    );
    response
}

/// Decodes a request body of either format into a [`SeenRequest`].
/// The request's stop sequences: OpenAI `stop` (a string or an array), Anthropic
/// `stop_sequences` (an array). Empty strings never match.
fn stop_sequences(wire: Wire, body: &Value) -> Vec<String> {
    let field = match wire {
        Wire::OpenAi => "stop",
        Wire::Anthropic => "stop_sequences",
    };
    match body.get(field) {
        Some(Value::String(stop)) => vec![stop.clone()],
        Some(Value::Array(stops)) => stops
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
    .into_iter()
    .filter(|stop| !stop.is_empty())
    .collect()
}

fn tool_finish(wire: Wire) -> &'static str {
    match wire {
        Wire::OpenAi => "tool_calls",
        Wire::Anthropic => "tool_use",
    }
}

fn reply_finish_is_default(finish: &str, wire: Wire) -> bool {
    match wire {
        Wire::OpenAi => finish == "stop",
        Wire::Anthropic => finish == "end_turn",
    }
}

fn decode(wire: Wire, headers: &HeaderMap, body: &[u8]) -> Result<SeenRequest, String> {
    let value: Value =
        serde_json::from_slice(body).map_err(|err| format!("request body is not JSON: {err}"))?;
    let model = value
        .get("model")
        .and_then(Value::as_str)
        .ok_or("request has no `model`")?
        .to_owned();
    let raw_messages = value
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("request has no `messages` array")?;
    let mut system: Option<String> = match wire {
        Wire::Anthropic => match value.get("system") {
            Some(Value::String(text)) => Some(text.clone()),
            Some(Value::Array(blocks)) => Some(
                blocks
                    .iter()
                    .filter_map(|block| block.get("text").and_then(Value::as_str))
                    .collect(),
            ),
            _ => None,
        },
        Wire::OpenAi => None,
    };
    if wire == Wire::Anthropic && value.get("max_tokens").is_none() {
        return Err("max_tokens: Field required".to_owned());
    }
    if wire == Wire::Anthropic {
        tools::check_anthropic_tools(&value)?;
    }
    let messages = tools::decode_messages(wire, raw_messages, &mut system)?;
    Ok(SeenRequest {
        wire,
        endpoint: match wire {
            Wire::OpenAi => "/v1/chat/completions",
            Wire::Anthropic => "/v1/messages",
        }
        .to_owned(),
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

/// Request headers as (lower-cased name, value) pairs for [`SeenRequest::headers`].
pub(crate) fn header_pairs(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                value.to_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}
