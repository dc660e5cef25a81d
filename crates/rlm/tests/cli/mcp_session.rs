//! One MCP session over stdio with raw JSON-RPC lines: the server's messages read on a thread
//! of their own, requests matched to their answers by id.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

/// How long the server gets to answer before the test gives up on it (a guard against a
/// hung test, not a measure of speed).
const PATIENCE: Duration = Duration::from_secs(120);

/// One stdio session with a server, initialised.
pub struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    /// The server's messages, one a line, read on a thread of their own.
    messages: Receiver<String>,
    next_id: u64,
}

impl Session {
    /// The server `command` starts, initialised by a client that declares no capabilities.
    pub fn start(command: &mut std::process::Command) -> Self {
        Self::start_with(command, serde_json::json!({}))
    }

    /// The server `command` starts, initialised by a client declaring `capabilities`.
    pub fn start_with(
        command: &mut std::process::Command,
        capabilities: serde_json::Value,
    ) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (sender, messages) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let mut session = Self {
            stdin: child.stdin.take(),
            messages,
            child,
            next_id: 1,
        };
        let initialized = session.request(
            "initialize",
            serde_json::json!({
                "protocolVersion": "2025-06-18",
                "capabilities": capabilities,
                "clientInfo": {"name": "raw", "version": "0"},
            }),
        );
        assert_eq!(
            initialized["result"]["serverInfo"]["name"], "rlm",
            "{initialized}"
        );
        session.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        session
    }

    pub fn send(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next message from the server.
    pub fn receive(&mut self) -> serde_json::Value {
        let line = self
            .messages
            .recv_timeout(PATIENCE)
            .expect("the server did not answer");
        serde_json::from_str(&line)
            .map_err(|err| format!("{err}: {line:?}"))
            .unwrap()
    }

    /// Sends a request and returns the response to it.
    pub fn request(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        self.request_line(method, params).0
    }

    /// Sends a request and returns the response to it, and the bytes of its line.
    pub fn request_line(
        &mut self,
        method: &str,
        params: serde_json::Value,
    ) -> (serde_json::Value, usize) {
        let id = self.next_id;
        self.next_id += 1;
        let message = serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": method, "params": params,
        });
        self.send(message.to_string().as_bytes());
        loop {
            let line = self
                .messages
                .recv_timeout(PATIENCE)
                .expect("the server did not answer");
            let answer: serde_json::Value = serde_json::from_str(&line)
                .map_err(|err| format!("{err}: {line:?}"))
                .unwrap();
            if answer["id"] == id {
                return (answer, line.len());
            }
        }
    }

    /// Calls a tool; returns its result (`isError`, `content`, `structuredContent`).
    pub fn call(&mut self, tool: &str, arguments: serde_json::Value) -> serde_json::Value {
        let answer = self.request(
            "tools/call",
            serde_json::json!({ "name": tool, "arguments": arguments }),
        );
        answer["result"].clone()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Closing stdin ends the session; a server that failed the test is not waited for.
        drop(self.stdin.take());
        if std::thread::panicking() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}
