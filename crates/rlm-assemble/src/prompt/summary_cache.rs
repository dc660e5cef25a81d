//! Summaries cached on disk by a hash of what produced them, so rebuilding the same prompt
//! costs no second model call. One JSON file per summary in `<cache>/summaries/`.

use std::collections::HashSet;
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
    let mut hash = key_hash(model, prompt, budget);
    for message in messages {
        add_message(&mut hash, message);
    }
    key_text(hash)
}

/// The key of every prefix of `messages` in one pass: `[i]` is
/// [`summary_key`]`(model, prompt, budget, &messages[..=i])`.
pub(crate) fn prefix_keys(
    model: &str,
    prompt: &str,
    budget: u64,
    messages: &[ChatMessage],
) -> Vec<String> {
    let mut hash = key_hash(model, prompt, budget);
    messages
        .iter()
        .map(|message| {
            add_message(&mut hash, message);
            key_text(hash.clone())
        })
        .collect()
}

fn key_hash(model: &str, prompt: &str, budget: u64) -> Sha256 {
    let mut hash = Sha256::new();
    for field in [model, prompt, &budget.to_string()] {
        hash.update((field.len() as u64).to_le_bytes());
        hash.update(field.as_bytes());
    }
    hash
}

fn add_message(hash: &mut Sha256, message: &ChatMessage) {
    for field in [&message.role, &message.content] {
        hash.update((field.len() as u64).to_le_bytes());
        hash.update(field.as_bytes());
    }
}

fn key_text(hash: Sha256) -> String {
    format!("sha256:{}", hex::encode(hash.finalize()))
}

/// The cached summary of the longest proper prefix of `messages` (same model, prompt and
/// budget) and that prefix's length: what a history that grew since it was summarized can be
/// summarized from, with only the messages after it. `None` when there is none.
pub(crate) fn longest_cached_prefix(
    dir: Option<&Path>,
    model: &str,
    prompt: &str,
    budget: u64,
    messages: &[ChatMessage],
) -> Option<(usize, CachedSummary)> {
    let dir = dir?;
    let cached: HashSet<String> = std::fs::read_dir(dir.join("summaries"))
        .ok()?
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            Some(name.strip_suffix(".json")?.to_owned())
        })
        .collect();
    if cached.is_empty() {
        return None;
    }
    let keys = prefix_keys(model, prompt, budget, messages);
    (1..messages.len()).rev().find_map(|length| {
        let key = &keys[length - 1];
        let name = key.strip_prefix("sha256:").unwrap_or(key);
        if !cached.contains(name) {
            return None;
        }
        // A damaged file, or one whose count disagrees with its key, is no base.
        read(Some(dir), key)
            .filter(|entry| entry.messages == length)
            .map(|entry| (length, entry))
    })
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

    #[test]
    fn prefix_keys_are_the_keys_of_prefixes_and_the_longest_cached_one_is_found() {
        let messages: Vec<ChatMessage> = (0..6)
            .map(|index| ChatMessage::new("user", format!("m{index}")))
            .collect();
        let keys = prefix_keys("m", "p", 10, &messages);
        for (index, key) in keys.iter().enumerate() {
            assert_eq!(*key, summary_key("m", "p", 10, &messages[..=index]));
        }
        let dir = tempfile::tempdir().unwrap();
        let found = || longest_cached_prefix(Some(dir.path()), "m", "p", 10, &messages);
        assert_eq!(found(), None);
        for length in [2, 4] {
            let entry = CachedSummary {
                summary: format!("first {length}"),
                messages: length,
            };
            write(dir.path(), &keys[length - 1], &entry).unwrap();
        }
        // The whole history is no prefix of itself: that is the plain cache hit.
        let whole = CachedSummary {
            summary: "all".into(),
            messages: 6,
        };
        write(dir.path(), &keys[5], &whole).unwrap();
        assert_eq!(found().map(|(length, _)| length), Some(4));
        // Another budget, model or prompt shares nothing.
        assert_eq!(
            longest_cached_prefix(Some(dir.path()), "m", "p", 11, &messages),
            None
        );
        // A file whose count disagrees with its key is passed over.
        let wrong = CachedSummary {
            summary: "wrong".into(),
            messages: 3,
        };
        write(dir.path(), &keys[3], &wrong).unwrap();
        assert_eq!(found().map(|(length, _)| length), Some(2));
    }
}
