//! `rlm mcp --http`: the MCP server over streamable HTTP on loopback, driven by the official
//! Python SDK's streamable HTTP client (see `mcp.rs` for how `RLM_TEST_MCP_PYTHON` is set) and
//! by hand-written HTTP requests for what a client library would not send: a foreign
//! `Origin` or `Host`, a deleted session.
#![expect(clippy::panic, reason = "a test fails by panicking")]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::support::{assert_tool_error, rlm_process, rlm_store_process, rlm_with_store, text};

const CLIENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cli/mcp/client_http.py");

/// How long a server gets to start, answer or stop before the test gives up on it (a guard
/// against a hung test, not a measure of speed).
const PATIENCE: Duration = Duration::from_secs(120);

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn python() -> Option<PathBuf> {
    let Some(python) = std::env::var_os("RLM_TEST_MCP_PYTHON") else {
        eprintln!(
            "skipped: set RLM_TEST_MCP_PYTHON to a Python with the `mcp` package (scripts/test does)"
        );
        return None;
    };
    Some(PathBuf::from(python))
}

/// A running `rlm mcp --http 127.0.0.1:0`, its stderr collected; killed if the test fails.
pub(crate) struct Listening {
    child: Child,
    pub(crate) url: String,
    port: u16,
    stderr: Option<JoinHandle<String>>,
}

impl Listening {
    /// Starts `rlm mcp --http 127.0.0.1:0 --root DIR ARGS` over `dir`'s store and waits for
    /// the URL it prints.
    pub(crate) fn start(dir: &Path, args: &[&str]) -> Self {
        let mut child = rlm_store_process(dir)
            .args(["mcp", "--http", "127.0.0.1:0", "--root"])
            .arg(dir)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (sender, receiver) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut sender = Some(sender);
            let mut seen = String::new();
            for line in BufReader::new(stderr).lines() {
                let line = line.unwrap();
                if let Some(url) = line.strip_prefix("rlm mcp: listening on ")
                    && let Some(sender) = sender.take()
                {
                    sender.send(url.to_owned()).unwrap();
                }
                seen.push_str(&line);
                seen.push('\n');
            }
            seen
        });
        let Ok(url) = receiver.recv_timeout(PATIENCE) else {
            let _ = child.kill();
            panic!(
                "the server printed no URL:\n{}",
                reader.join().unwrap_or_default()
            );
        };
        let port = url
            .strip_prefix("http://127.0.0.1:")
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("unexpected URL {url}"));
        assert_ne!(port, 0, "port 0 must be replaced by the port picked");
        Self {
            child,
            url,
            port,
            stderr: Some(reader),
        }
    }

    /// Sends `signal` (`-INT`, `-TERM`) and returns the exit code and everything on stderr.
    fn stop(&mut self, signal: &str) -> (Option<i32>, String) {
        let status = std::process::Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let status = wait_for_exit(
            &mut self.child,
            &format!("the server did not stop after {signal}"),
        );
        let stderr = self.stderr.take().unwrap().join().unwrap();
        (status.code(), stderr)
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        // Already gone after `stop`; otherwise a failed test must not leave a server behind.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_for_exit(child: &mut Child, what: &str) -> ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if started.elapsed() > PATIENCE {
            let _ = child.kill();
            panic!("{what}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// An HTTP answer's status and headers (names in lower case).
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// Sends one HTTP/1.1 request to the server on `port` (with `Host: 127.0.0.1:PORT` and the
/// MCP `Accept` and `Content-Type` unless `headers` name them) and reads the answer's head.
fn request(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    let defaults = [
        ("host", format!("127.0.0.1:{port}")),
        ("accept", "application/json, text/event-stream".to_owned()),
        ("content-type", "application/json".to_owned()),
    ];
    for (name, value) in defaults {
        if !headers
            .iter()
            .any(|(given, _)| given.eq_ignore_ascii_case(name))
        {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    ));
    stream.write_all(head.as_bytes()).unwrap();
    // The head only: an event stream's body may stay open.
    let mut received = Vec::new();
    let mut byte = [0u8; 1];
    while !received.ends_with(b"\r\n\r\n") {
        let read = stream.read(&mut byte).unwrap();
        assert_eq!(
            read, 1,
            "the connection closed before the answer's head ended"
        );
        received.push(byte[0]);
    }
    let received = text(&received);
    let mut lines = received.lines();
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {received}"));
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    Answer { status, headers }
}

/// A text long enough for several small chunks, loaded into `dir`'s store.
fn loaded_story(dir: &Path) {
    let paragraphs = [
        "The lighthouse keeper climbed the stairs every evening at dusk.",
        "Ships passed the rocks safely because the lamp never failed.",
        "One winter the keeper found a letter wedged in the lens housing.",
        "It named a harbour far to the south and a date long past.",
    ];
    std::fs::write(dir.join("story.txt"), paragraphs.join("\n\n") + "\n").unwrap();
    rlm_with_store(dir)
        .args(["load", "story.txt", "--chunk-size", "70"])
        .assert()
        .success();
}

#[test]
fn the_python_sdk_client_uses_tools_and_resources_over_http() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    loaded_story(dir.path());
    let mut server = Listening::start(dir.path(), &["--page-size", "3"]);

    let mut client = std::process::Command::new(&python);
    client.arg(CLIENT).arg(&server.url);
    // Loopback requests must not go to a proxy from the caller's environment.
    for proxy in ["http_proxy", "https_proxy", "all_proxy"] {
        client
            .env_remove(proxy)
            .env_remove(proxy.to_ascii_uppercase());
    }
    let output = client.output().unwrap();
    let client_stderr = text(&output.stderr);
    assert!(
        output.status.success(),
        "the client failed (is RLM_TEST_MCP_PYTHON's `mcp` installed?):\n{client_stderr}"
    );
    let seen: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();

    assert_eq!(seen["server"], "rlm");
    let tools = seen["tools"].as_object().unwrap();
    for name in [
        "inspect",
        "load",
        "list_buffers",
        "search",
        "grep",
        "peek",
        "run",
    ] {
        assert_eq!(tools[name]["type"], "object", "{name}: {}", tools[name]);
    }

    // search over the loaded store: the chunk with both words ranks first.
    let search = &seen["search"];
    assert_eq!(search["is_error"], false, "{search}");
    let hits = search["structured"]["records"].as_array().unwrap();
    assert_eq!(hits[0]["type"], "hit", "{search}");
    assert!(
        hits[0]["snippet"]
            .as_str()
            .unwrap()
            .contains("lighthouse keeper"),
        "{search}"
    );
    assert_tool_error(&seen["outside"], "outside the server's root");

    // Two sessions, each with its own id, over the same store.
    let first = seen["session"].as_str().unwrap();
    let other = seen["other_session"].as_str().unwrap();
    assert!(!first.is_empty() && first != other, "{seen}");
    assert_eq!(
        seen["other_list"]["structured"]["records"][0]["name"], "story.txt",
        "{seen}"
    );

    // Resources, three a page: the buffer then each of its chunks, each once.
    let pages: Vec<Vec<String>> = serde_json::from_value(seen["resource_pages"].clone()).unwrap();
    assert!(pages.len() >= 2, "{pages:?}");
    assert!(pages.iter().all(|page| page.len() <= 3 && !page.is_empty()));
    let uris: Vec<&String> = pages.iter().flatten().collect();
    assert!(uris[0].starts_with("rlm://buffer/"), "{uris:?}");
    let unique: std::collections::HashSet<_> = uris.iter().collect();
    assert_eq!(unique.len(), uris.len(), "{uris:?}");
    assert!(
        seen["chunk_text"].as_str().unwrap().contains("lighthouse"),
        "{seen}"
    );

    // The SDK ended its sessions with DELETE on the way out: the server no longer knows them.
    let gone = request(
        server.port,
        "POST",
        "/mcp",
        &[
            ("mcp-session-id", first),
            ("mcp-protocol-version", seen["protocol"].as_str().unwrap()),
        ],
        INITIALIZED,
    );
    assert_eq!(gone.status, 404);

    // SIGTERM ends the server cleanly.
    let (code, stderr) = server.stop("-TERM");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("rlm mcp: stopped"), "{stderr}");
}

#[test]
fn foreign_origins_and_hosts_are_refused_and_local_ones_served() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Listening::start(dir.path(), &[]);
    let port = server.port;
    let rebound_host = format!("evil.example:{port}");
    let local_origin = format!("http://localhost:{port}");

    // A web page elsewhere, or a DNS name rebound to 127.0.0.1: 403 before any session.
    for headers in [
        [("origin", "http://evil.example")],
        [("origin", "null")],
        [("host", rebound_host.as_str())],
    ] {
        let refused = request(port, "POST", "/mcp", &headers, INITIALIZE);
        assert_eq!(refused.status, 403, "{headers:?}");
        assert_eq!(refused.header("mcp-session-id"), None);
    }

    // A page on this machine (any port) gets a session; so does a client sending no Origin.
    let local = request(
        port,
        "POST",
        "/mcp",
        &[("origin", local_origin.as_str())],
        INITIALIZE,
    );
    assert_eq!(local.status, 200);
    let session = local.header("mcp-session-id").unwrap().to_owned();
    let plain = request(port, "POST", "/mcp", &[], INITIALIZE);
    assert_eq!(plain.status, 200);
    assert_ne!(plain.header("mcp-session-id"), Some(session.as_str()));

    // Only /mcp is served.
    assert_eq!(request(port, "POST", "/", &[], INITIALIZE).status, 404);

    // The session takes messages until the client deletes it.
    let in_session = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-06-18"),
    ];
    let accepted = request(port, "POST", "/mcp", &in_session, INITIALIZED);
    assert_eq!(accepted.status, 202);
    let deleted = request(port, "DELETE", "/mcp", &in_session, "");
    assert!((200..300).contains(&deleted.status), "{}", deleted.status);
    let gone = request(port, "POST", "/mcp", &in_session, INITIALIZED);
    assert_eq!(gone.status, 404);

    // Ctrl-C ends the server as it ends any rlm command.
    let (code, stderr) = server.stop("-INT");
    assert_eq!(code, Some(130), "{stderr}");
    assert!(stderr.contains("rlm mcp: stopped"), "{stderr}");
}

/// Runs `rlm mcp ARGS` in `dir` to its end and returns its exit code and stderr.
fn refused(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let mut child = rlm_process(dir)
        .arg("mcp")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_for_exit(
        &mut child,
        "the server started where it should have refused",
    );
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (status.code(), stderr)
}

#[test]
fn an_address_off_loopback_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for address in ["0.0.0.0:8765", "192.168.1.10:8765", "[::]:8765"] {
        let (code, stderr) = refused(dir.path(), &["--http", address]);
        assert_eq!(code, Some(2), "{address}: {stderr}");
        assert!(
            stderr.contains("is not a loopback address"),
            "{address}: {stderr}"
        );
    }
    let (code, stderr) = refused(dir.path(), &["--http", "localhost"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("127.0.0.1:8765"), "{stderr}");
}

#[test]
fn a_port_in_use_is_an_error_naming_the_address_and_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let (code, stderr) = refused(dir.path(), &["--http", &address]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("cannot listen on {address}")),
        "{stderr}"
    );
    assert!(stderr.contains("in use"), "{stderr}");
    assert!(stderr.contains("--http 127.0.0.1:0"), "{stderr}");
    drop(taken);
}

#[test]
fn a_request_with_two_host_headers_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = Listening::start(dir.path(), &[]);
    let port = server.port;
    let local = format!("127.0.0.1:{port}");
    let rebound = format!("evil.example:{port}");
    // The transport's check reads one of them; HTTP/1.1 allows exactly one (RFC 9112 §3.2).
    for hosts in [[&local, &rebound], [&local, &local]] {
        let headers = [("host", hosts[0].as_str()), ("host", hosts[1].as_str())];
        let refused = request(port, "POST", "/mcp", &headers, INITIALIZE);
        assert_eq!(refused.status, 400, "{hosts:?}");
        assert_eq!(refused.header("mcp-session-id"), None);
    }
    // One is served.
    assert_eq!(request(port, "POST", "/mcp", &[], INITIALIZE).status, 200);
}

/// Two `Origin` headers were checked on the first only: a page elsewhere could hide behind a
/// local one. Refused as two `Host`s are.
#[test]
fn a_request_with_two_origin_headers_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = Listening::start(dir.path(), &[]);
    let port = server.port;
    let local = format!("http://localhost:{port}");
    for origins in [
        [local.as_str(), "https://evil.example"],
        [local.as_str(), local.as_str()],
    ] {
        let headers = [("origin", origins[0]), ("origin", origins[1])];
        let refused = request(port, "POST", "/mcp", &headers, INITIALIZE);
        assert_eq!(refused.status, 400, "{origins:?}");
        assert_eq!(refused.header("mcp-session-id"), None);
    }
    let one = request(
        port,
        "POST",
        "/mcp",
        &[("origin", local.as_str())],
        INITIALIZE,
    );
    assert_eq!(one.status, 200);
}
