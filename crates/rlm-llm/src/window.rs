//! Context windows: how many tokens a model reads, so an oversized request is refused before
//! it is sent (and paid for) instead of failing at the provider.
//!
//! The table knows a few well-known families by name prefix (longest prefix wins, as prices
//! do); a model it does not know has no window and is never refused here.

use std::collections::BTreeMap;

use crate::ChatRequest;

/// Bytes per token assumed when checking a request against a window. Generous on purpose
/// (English prose runs about 4 bytes a token): the check refuses what clearly cannot fit and
/// leaves the borderline to the provider.
pub const WINDOW_BYTES_PER_TOKEN: u64 = 4;

/// Context windows in tokens of well-known model families, by name prefix.
const BUILTIN_WINDOWS: &[(&str, u64)] = &[
    ("claude-", 200_000),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-5", 400_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
];

/// Model name prefix → context window in tokens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContextWindows {
    windows: BTreeMap<String, u64>,
}

impl ContextWindows {
    /// An empty table: no window known, nothing refused.
    pub fn empty() -> Self {
        Self::default()
    }

    /// The windows of the well-known families.
    pub fn builtin() -> Self {
        Self {
            windows: BUILTIN_WINDOWS
                .iter()
                .map(|(prefix, window)| ((*prefix).to_owned(), *window))
                .collect(),
        }
    }

    /// Sets the window of the models whose name (with or without `provider:`) starts with
    /// `prefix`.
    pub fn insert(&mut self, prefix: impl Into<String>, tokens: u64) {
        self.windows.insert(prefix.into(), tokens);
    }

    /// The window of `model` (`provider:name` or a bare name), if known: the entry for the
    /// whole reference first, else the longest prefix of the name.
    pub fn get(&self, model: &str) -> Option<u64> {
        let name = model.split_once(':').map_or(model, |(_, name)| name);
        [model, name].into_iter().find_map(|key| {
            self.windows
                .iter()
                .filter(|(prefix, _)| key.starts_with(prefix.as_str()))
                .max_by_key(|(prefix, _)| prefix.len())
                .map(|(_, window)| *window)
        })
    }

    /// `Err` with the estimated size when `request` clearly does not fit `model`'s window.
    pub fn check(&self, request: &ChatRequest) -> Result<(), TooLong> {
        let Some(window) = self.get(&request.model) else {
            return Ok(());
        };
        let tokens = estimate_input_tokens(request);
        if tokens > window {
            Err(TooLong {
                estimated_tokens: tokens,
                window,
            })
        } else {
            Ok(())
        }
    }
}

/// A request over its model's window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLong {
    /// The request's input, estimated at [`WINDOW_BYTES_PER_TOKEN`].
    pub estimated_tokens: u64,
    /// The model's window.
    pub window: u64,
}

/// The input tokens of `request`, estimated from its bytes at [`WINDOW_BYTES_PER_TOKEN`].
pub fn estimate_input_tokens(request: &ChatRequest) -> u64 {
    let bytes = request.system.as_deref().map_or(0, str::len)
        + request
            .messages
            .iter()
            .map(|message| message.content.len())
            .sum::<usize>();
    (bytes as u64).div_ceil(WINDOW_BYTES_PER_TOKEN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_by_longest_prefix_and_overrides() {
        let mut windows = ContextWindows::builtin();
        assert_eq!(windows.get("openai:gpt-4o-mini"), Some(128_000));
        assert_eq!(windows.get("anthropic:claude-sonnet-4-5"), Some(200_000));
        assert_eq!(windows.get("gpt-4.1-nano"), Some(1_047_576));
        assert_eq!(windows.get("ollama:llama3"), None);
        windows.insert("ollama:llama3", 8_192);
        windows.insert("gpt-4o-mini", 64_000);
        assert_eq!(windows.get("ollama:llama3"), Some(8_192));
        assert_eq!(windows.get("openai:gpt-4o-mini-2024"), Some(64_000));
        assert_eq!(windows.get("openai:gpt-4o"), Some(128_000));
    }

    #[test]
    fn a_request_over_the_window_is_refused_and_unknown_models_never_are() {
        let windows = ContextWindows::builtin();
        let big = "x".repeat(600_000);
        let request = ChatRequest::new("openai:gpt-4o").user(big.as_str());
        let error = windows.check(&request).unwrap_err();
        assert_eq!(error.estimated_tokens, 150_000);
        assert_eq!(error.window, 128_000);
        assert!(
            windows
                .check(&ChatRequest::new("openai:gpt-4o").user("hi"))
                .is_ok()
        );
        assert!(
            windows
                .check(&ChatRequest::new("ollama:x").user(big.as_str()))
                .is_ok()
        );
    }
}
