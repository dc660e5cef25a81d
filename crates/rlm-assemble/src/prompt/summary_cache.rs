//! Summaries cached on disk by a hash of what produced them, so rebuilding the same prompt
//! costs no second model call. One JSON file per summary in `<cache>/summaries/`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use super::ChatMessage;

/// A cached summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CachedSummary {
    /// The summary text.
    pub summary: String,
    /// How many messages it replaces.
    pub messages: usize,
}

/// The key: model, prompt, token budget and every summarized message (role and content, with
/// separators that cannot be confused with text boundaries).
pub(crate) fn summary_key(
    model: &str,
    prompt: &str,
    budget: u64,
    messages: &[ChatMessage],
) -> String {
    let mut hash = Sha256::new();
    for field in [model, prompt, &budget.to_string()] {
        hash.update((field.len() as u64).to_le_bytes());
        hash.update(field.as_bytes());
    }
    for message in messages {
        for field in [&message.role, &message.content] {
            hash.update((field.len() as u64).to_le_bytes());
            hash.update(field.as_bytes());
        }
    }
    format!("sha256:{}", hex::encode(hash.finalize()))
}

fn path_of(dir: &Path, key: &str) -> PathBuf {
    let name = key.strip_prefix("sha256:").unwrap_or(key);
    dir.join("summaries").join(format!("{name}.json"))
}

/// The cached summary for `key`; a missing or damaged file is a miss.
pub(crate) fn read(dir: Option<&Path>, key: &str) -> Option<CachedSummary> {
    let text = std::fs::read_to_string(path_of(dir?, key)).ok()?;
    serde_json::from_str(&text).ok()
}

/// Stores a summary (temp file renamed over the target). Failing to cache is not an error
/// for the build: it is logged by the caller.
#[cfg_attr(
    not(feature = "summarize"),
    allow(
        dead_code,
        reason = "written by the summarizer; tests use it without the feature"
    )
)]
pub(crate) fn write(dir: &Path, key: &str, entry: &CachedSummary) -> crate::Result<()> {
    let path = path_of(dir, key);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| crate::Error::io("create", parent, e))?;
    }
    let text = serde_json::to_string(entry)
        .map_err(|e| crate::Error::Invalid(format!("cannot encode a summary: {e}")))?;
    crate::ctxdir::write_atomic(&path, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_changes_with_every_input_and_entries_round_trip() {
        let messages = [
            ChatMessage::new("user", "ab"),
            ChatMessage::new("user", "c"),
        ];
        let base = summary_key("m", "p", 10, &messages);
        assert_ne!(base, summary_key("n", "p", 10, &messages));
        assert_ne!(base, summary_key("m", "q", 10, &messages));
        assert_ne!(base, summary_key("m", "p", 11, &messages));
        let moved = [
            ChatMessage::new("user", "a"),
            ChatMessage::new("user", "bc"),
        ];
        assert_ne!(base, summary_key("m", "p", 10, &moved));
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(Some(dir.path()), &base), None);
        let entry = CachedSummary {
            summary: "s".into(),
            messages: 2,
        };
        write(dir.path(), &base, &entry).unwrap();
        assert_eq!(read(Some(dir.path()), &base), Some(entry));
    }
}
