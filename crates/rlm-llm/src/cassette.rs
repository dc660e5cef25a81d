//! Record and replay: every answered request as one JSON line, matched back by a stable key.
//!
//! The key is the SHA-256 of the request in canonical form: the resolved model reference
//! (`provider:model`), system prompt, messages, temperature, max tokens, stop sequences and JSON
//! mode. Base URLs, keys, streaming and retry settings are not part of it, so a recording made
//! against one endpoint replays anywhere. A key recorded several times answers in recorded order
//! and then keeps giving the last answer, so loops that repeat a prompt stay deterministic.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::error::{Error, Result};
use crate::{ChatRequest, ChatResponse};

/// Format version written in every line.
///
/// Version 2 fixed the meaning of [`crate::Usage::input_tokens`] to include cached tokens;
/// version 1 lines (where it excluded them) are still read, and converted.
pub const CASSETTE_VERSION: u32 = 2;

/// The oldest version [`Replayer::load`] reads.
const OLDEST_READABLE_VERSION: u32 = 1;

/// Placeholder written instead of secret header values.
pub const REDACTED: &str = "<redacted>";

/// One line of a recording.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CassetteEntry {
    pub version: u32,
    /// Matching key: see the module docs.
    pub key: String,
    /// The request, with `model` resolved to `provider:model`.
    pub request: ChatRequest,
    /// Where it was sent and with which headers, secrets replaced by `<redacted>`.
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub response: ChatResponse,
}

/// The matching key of a request whose `model` is already resolved.
pub fn request_key(request: &ChatRequest) -> String {
    // serde_json writes struct fields in declaration order, which makes this canonical. The
    // schema is left out: the prompt that asks for it fixes it, and recordings made before
    // schemas were sent keep answering.
    let canonical = if request.json_schema.is_some() {
        let mut keyed = request.clone();
        keyed.json_schema = None;
        serde_json::to_vec(&keyed)
    } else {
        serde_json::to_vec(request)
    }
    .unwrap_or_default();
    hex::encode(Sha256::digest(&canonical))
}

/// Whether a header carries a secret and must not be written.
pub fn is_secret_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name == "authorization"
        || name == "proxy-authorization"
        || name.contains("api-key")
        || name.contains("token")
        || name.contains("secret")
}

/// Appends entries to a JSON Lines file.
#[derive(Debug)]
pub struct Recorder {
    path: PathBuf,
    file: Mutex<File>,
}

impl Recorder {
    /// Opens `path` for appending, creating it when missing.
    pub fn open(path: &Path) -> Result<Self> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|err| Error::Recording {
                path: path.to_path_buf(),
                detail: err.to_string(),
            })?;
        Ok(Self {
            path: path.to_path_buf(),
            file: Mutex::new(file),
        })
    }

    /// Writes one entry as a single line (one `write` call, so concurrent calls never interleave).
    pub fn write(&self, entry: &CassetteEntry) -> Result<()> {
        let error = |detail: String| Error::Recording {
            path: self.path.clone(),
            detail,
        };
        let line = serde_json::to_string(entry).map_err(|err| error(err.to_string()))?;
        // A key can reach a recording in more than headers: a prompt quoting a file that holds
        // it, an answer repeating it.
        let mut line = crate::secrets::mask(&line).into_owned();
        line.push('\n');
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        file.write_all(line.as_bytes())
            .map_err(|err| error(err.to_string()))?;
        file.flush().map_err(|err| error(err.to_string()))
    }
}

/// Answers requests from a recording.
#[derive(Debug)]
pub struct Replayer {
    path: PathBuf,
    /// Per key: the recorded answers and how many were handed out.
    entries: Mutex<HashMap<String, (Vec<ChatResponse>, usize)>>,
}

impl Replayer {
    /// Loads a recording. Blank lines are skipped; a malformed line is an error naming its number.
    pub fn load(path: &Path) -> Result<Self> {
        let error = |detail: String| Error::Recording {
            path: path.to_path_buf(),
            detail,
        };
        let file = File::open(path).map_err(|err| error(err.to_string()))?;
        let mut entries: HashMap<String, (Vec<ChatResponse>, usize)> = HashMap::new();
        for (index, line) in BufReader::new(file).lines().enumerate() {
            let line = line.map_err(|err| error(err.to_string()))?;
            if line.trim().is_empty() {
                continue;
            }
            let mut entry: CassetteEntry = serde_json::from_str(&line)
                .map_err(|err| error(format!("line {}: {err}", index + 1)))?;
            if !(OLDEST_READABLE_VERSION..=CASSETTE_VERSION).contains(&entry.version) {
                return Err(error(format!(
                    "line {}: version {} is not supported (expected {OLDEST_READABLE_VERSION} to {CASSETTE_VERSION})",
                    index + 1,
                    entry.version
                )));
            }
            if entry.version == 1 {
                upgrade_usage_from_version_1(&mut entry.response.usage);
            }
            entries.entry(entry.key).or_default().0.push(entry.response);
        }
        Ok(Self {
            path: path.to_path_buf(),
            entries: Mutex::new(entries),
        })
    }

    /// The next recorded answer for `request` (already resolved), or a miss error.
    pub fn answer(&self, request: &ChatRequest) -> Result<ChatResponse> {
        let key = request_key(request);
        let mut entries = self
            .entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some((answers, handed_out)) = entries.get_mut(&key) else {
            return Err(Error::ReplayMiss {
                path: self.path.clone(),
                model: request.model.clone(),
                key,
            });
        };
        let index = (*handed_out).min(answers.len().saturating_sub(1));
        *handed_out += 1;
        answers.get(index).cloned().ok_or(Error::ReplayMiss {
            path: self.path.clone(),
            model: request.model.clone(),
            key,
        })
    }
}

/// Version 1 counted cached prompt tokens beside `input_tokens` rather than inside it.
fn upgrade_usage_from_version_1(usage: &mut crate::Usage) {
    usage.input_tokens += usage.cache_read_tokens + usage.cache_write_tokens;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_is_stable_and_sensitive_to_content() {
        let a = ChatRequest::new("openai:m").system("s").user("hello");
        let b = ChatRequest::new("openai:m").system("s").user("hello");
        assert_eq!(request_key(&a), request_key(&b));
        assert_ne!(request_key(&a), request_key(&b.clone().user("more")));
        assert_ne!(request_key(&a), request_key(&a.clone().temperature(0.2)));
        // The key is part of the file format: changing it breaks existing recordings.
        assert_eq!(request_key(&a).len(), 64);
    }

    /// Tool fields are left out of a request without tools, so recordings made before tool
    /// calling existed keep matching: this key was computed before they were added.
    #[test]
    fn keys_of_requests_without_tools_are_unchanged() {
        let plain = ChatRequest::new("openai:m").system("s").user("hello");
        assert_eq!(
            request_key(&plain),
            "dccf5e543cd0d0a48463963effb23c3fa22b8961eddbbe6a1be8a6c1c9079b08"
        );
        let tool = crate::ToolDefinition::new("t", "d", serde_json::json!({"type": "object"}));
        assert_ne!(request_key(&plain.clone().tool(tool)), request_key(&plain));
    }

    #[test]
    fn version_1_usage_is_read_with_cached_tokens_counted_as_input() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.jsonl");
        let request = ChatRequest::new("anthropic:m").user("hi");
        let line = serde_json::json!({
            "version": 1,
            "key": request_key(&request),
            "request": request,
            "url": "https://example.invalid/v1/messages",
            "headers": [],
            "response": {
                "text": "hello", "model": "anthropic:m", "latency": 5, "retries": 0,
                "usage": {"input_tokens": 5, "output_tokens": 2,
                          "cache_read_tokens": 100, "cache_write_tokens": 30},
            },
        });
        std::fs::write(&path, format!("{line}\n")).unwrap();
        let answer = Replayer::load(&path).unwrap().answer(&request).unwrap();
        assert_eq!(answer.usage.input_tokens, 135);
        assert_eq!(answer.usage.cache_read_tokens, 100);
    }

    #[test]
    fn secret_headers_are_recognised() {
        for name in ["Authorization", "x-api-key", "api-key", "X-Auth-Token"] {
            assert!(is_secret_header(name), "{name}");
        }
        assert!(!is_secret_header("anthropic-version"));
        assert!(!is_secret_header("content-type"));
    }
}
