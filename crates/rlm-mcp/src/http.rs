//! `rlm mcp --http ADDR`: the same server over MCP streamable HTTP, on loopback only.
//!
//! rmcp's `StreamableHttpService` speaks the transport: POST, GET and DELETE on one endpoint,
//! sessions named by `Mcp-Session-Id`, responses as server-sent events, and the `Host` and
//! `Origin` checks that keep a web page from reaching the server through DNS rebinding (403).
//! This file binds the listener, serves that service with hyper (HTTP/1.1) at `/mcp`, and
//! stops on Ctrl-C or SIGTERM. Each session gets a server of its own from `new_server`, as
//! each stdio process does.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::signal::unix::{SignalKind, signal};

use super::Server;
use rlm_app::error::AppError;

/// The one path the MCP endpoint answers on.
const ENDPOINT: &str = "/mcp";

/// How long a session lives without a message in either direction. rmcp counts a tool call
/// in progress as silence, so this also bounds the longest call; a client whose session ended
/// gets 404 and starts a new one, as the transport specifies.
const SESSION_IDLE_LIMIT: Duration = Duration::from_secs(24 * 60 * 60);

/// How long open connections get to finish after Ctrl-C or SIGTERM before the process exits.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The names a request's `Host` may carry (any port): the loopback names, plus the address
/// the server is bound to when it is another loopback address (127.0.0.2, ...).
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

type Service = StreamableHttpService<Server, LocalSessionManager>;

/// What ended the server.
enum Stop {
    Interrupt,
    Terminate,
}

/// Serves MCP at `http://ADDRESS/mcp` until Ctrl-C (exit 130) or SIGTERM (exit 0).
/// `address` is a loopback address (`cli::mcp` refuses any other).
pub async fn serve(
    address: SocketAddr,
    new_server: impl Fn() -> Server + Send + Sync + 'static,
) -> anyhow::Result<ExitCode> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|err| {
            AppError::input(anyhow::anyhow!("cannot listen on {address}: {err}"))
                .with_hint("pick another port, or pass port 0 for a free one (--http 127.0.0.1:0)")
        })?;
    let local = listener
        .local_addr()
        .context("cannot read the address the server listens on")?;
    // Registered before the URL is printed, so a client (or a test) that sends a signal as
    // soon as it reads the URL finds the handlers in place.
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot watch for Ctrl-C")?;
    let mut terminate = signal(SignalKind::terminate()).context("cannot watch for SIGTERM")?;
    let service: Service = StreamableHttpService::new(
        move || Ok(new_server()),
        Arc::new(session_manager()),
        transport_config(local),
    );
    // Cancelling it ends every session and its open event streams.
    let sessions = service.config.cancellation_token.clone();
    eprintln!("rlm mcp: listening on http://{local}{ENDPOINT}");

    let connections = GracefulShutdown::new();
    let stop = loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let service = service.clone();
                    let requests = hyper::service::service_fn(move |request| {
                        route(service.clone(), request)
                    });
                    let connection = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), requests);
                    let connection = connections.watch(connection);
                    tokio::spawn(async move {
                        if let Err(err) = connection.await {
                            tracing::debug!(%err, "an HTTP connection ended with an error");
                        }
                    });
                }
                Err(err) => {
                    // Out of file descriptors, say: the error repeats until a connection
                    // closes, so wait a little rather than spin.
                    tracing::warn!(%err, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            _ = interrupt.recv() => break Stop::Interrupt,
            _ = terminate.recv() => break Stop::Terminate,
        }
    };
    drop(listener);
    sessions.cancel();
    if tokio::time::timeout(SHUTDOWN_GRACE, connections.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("connections still open after {SHUTDOWN_GRACE:?}; closing them");
    }
    eprintln!("rlm mcp: stopped");
    match stop {
        Stop::Interrupt => Err(AppError::interrupted().into()),
        Stop::Terminate => Ok(ExitCode::SUCCESS),
    }
}

/// One request: the MCP endpoint, or 404 for any other path; 400 for a request with more
/// than one `Host` or `Origin` header, of which the transport's checks read only the first
/// (HTTP/1.1 requires exactly one `Host`, RFC 9112 §3.2; a browser sends at most one
/// `Origin`, RFC 6454 §7).
async fn route(
    service: Service,
    request: Request<Incoming>,
) -> Result<Response<BoxBody<Bytes, Infallible>>, Infallible> {
    for (header, name) in [
        (hyper::header::HOST, "Host"),
        (hyper::header::ORIGIN, "Origin"),
    ] {
        if request.headers().get_all(header).iter().count() > 1 {
            return Ok(plain(
                StatusCode::BAD_REQUEST,
                format!("Bad Request: more than one {name} header\n"),
            ));
        }
    }
    if request.uri().path() == ENDPOINT {
        return Ok(service.handle(request).await);
    }
    Ok(plain(
        StatusCode::NOT_FOUND,
        format!("rlm mcp serves the Model Context Protocol at {ENDPOINT}\n"),
    ))
}

/// A plain-text answer with `status`.
fn plain(status: StatusCode, body: String) -> Response<BoxBody<Bytes, Infallible>> {
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() = status;
    response
}

/// Sessions live until the client deletes them, the server stops, or [`SESSION_IDLE_LIMIT`].
fn session_manager() -> LocalSessionManager {
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(SESSION_IDLE_LIMIT);
    manager
}

/// The transport's settings: rmcp's defaults (sessions, event streams), with the `Host`
/// and `Origin` checks on. Only loopback names are accepted as `Host` (a DNS name an attacker
/// rebinds to 127.0.0.1 is refused), and a request from a browser must come from a page on
/// this machine (`Origin: http://localhost:*` and the like, any port); a client that is not a
/// browser sends no `Origin` and passes.
fn transport_config(local: SocketAddr) -> StreamableHttpServerConfig {
    let mut hosts: Vec<String> = LOOPBACK_HOSTS.iter().map(|host| host.to_string()).collect();
    let bound = local.ip().to_string();
    if !hosts.contains(&bound) {
        hosts.push(bound);
    }
    let origins: Vec<String> = hosts
        .iter()
        .flat_map(|host| {
            let host = if host.contains(':') {
                format!("[{host}]")
            } else {
                host.clone()
            };
            ["http", "https"].map(|scheme| format!("{scheme}://{host}:*"))
        })
        .collect();
    StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        // One limit for a message on either transport (rmcp's default body limit is 4 MiB);
        // a larger body is answered 413.
        .with_max_request_body_bytes(super::stdio::MAX_MESSAGE_BYTES)
}
