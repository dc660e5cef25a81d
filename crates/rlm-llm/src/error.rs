//! The one error type of this crate.

use std::path::PathBuf;
use std::time::Duration;

/// Everything that can go wrong while talking to a model.
///
/// Messages never contain API keys: keys live in [`crate::ApiKey`], whose `Display` is redacted,
/// and the provider's own error text quoted here (cut to a few hundred bytes) has every
/// configured key, any part of one of 8 characters or more, and key-like words masked
/// ([`crate::secrets`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The model string names a provider that is not configured.
    #[error("unknown provider `{provider}` in model `{model}` (known: {known})")]
    UnknownProvider {
        provider: String,
        model: String,
        known: String,
    },
    /// A model string without a `provider:` prefix that no rule maps to a provider.
    #[error(
        "cannot tell which provider serves model `{model}`; write it as `provider:{model}` (e.g. `openai:{model}`)"
    )]
    AmbiguousModel { model: String },
    /// The provider needs a key and none was configured.
    #[error("no API key for provider `{provider}`: set the environment variable {variable}")]
    MissingApiKey { provider: String, variable: String },
    /// The request could not be sent or the connection broke (after retries).
    #[error("request to {url} failed")]
    Transport {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    /// One attempt's answer did not start within the per-request timeout (after retries), or
    /// an answer that is not streamed did not finish within it.
    #[error("request to {url} timed out after {timeout:?}")]
    Timeout { url: String, timeout: Duration },
    /// A streamed answer had started and then nothing more arrived for the idle timeout (not
    /// retried: the server was generating, and another attempt would start over).
    #[error("the answer from {url} stalled: nothing arrived for {idle:?}")]
    Stalled { url: String, idle: Duration },
    /// The overall deadline passed before an answer arrived.
    #[error("deadline passed before model `{model}` answered")]
    DeadlineExceeded { model: String },
    /// The provider answered with an error status (after retries when it was retryable).
    #[error("{provider} returned HTTP {status} for model `{model}`: {message}")]
    Status {
        provider: String,
        model: String,
        status: u16,
        message: String,
    },
    /// The response body was not the JSON the wire format promises.
    #[error("could not decode the response of {provider} for model `{model}`: {detail}")]
    Decode {
        provider: String,
        model: String,
        detail: String,
    },
    /// The provider sent an error event in the middle of a stream (after retries when no text
    /// had been delivered yet).
    #[error("{provider} reported an error mid-stream for model `{model}`: {message}")]
    StreamError {
        provider: String,
        model: String,
        message: String,
    },
    /// A streamed response ended before its final event.
    #[error("the stream from {provider} for model `{model}` ended before completion")]
    StreamInterrupted { provider: String, model: String },
    /// The budget refused the call before it was sent.
    #[error("{limit} budget exhausted: {detail}")]
    BudgetExhausted {
        limit: crate::usage::Exhausted,
        detail: String,
    },
    /// The request clearly does not fit the model's context window; it was not sent.
    #[error(
        "the request to `{model}` is about {estimated_tokens} tokens, over the model's context \
         window of {window}; it was not sent"
    )]
    ContextWindow {
        model: String,
        estimated_tokens: u64,
        window: u64,
    },
    /// Replay mode found no recorded answer for this request.
    #[error("no recorded response in {path} matches this request to `{model}` (key {key})")]
    ReplayMiss {
        path: PathBuf,
        model: String,
        key: String,
    },
    /// A recording file could not be read, parsed or written.
    #[error("recording file {path}: {detail}")]
    Recording { path: PathBuf, detail: String },
    /// Invalid settings (bad URL, zero concurrency, ...).
    #[error("invalid LLM settings: {0}")]
    Config(String),
    /// A provider that is not an HTTP service ([`crate::ChatBackend`]) could not answer; it
    /// says what kind of failure that is.
    #[error("provider `{provider}` could not answer for model `{model}`: {message}")]
    Backend {
        provider: String,
        model: String,
        message: String,
        kind: ErrorKind,
    },
}

/// What kind of failure an [`Error`] is, which decides what a caller should do about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The request or the settings are wrong (model, key, recording, a 4xx refusal): asking
    /// again unchanged fails again; the user has to change something.
    Input,
    /// The provider or the network failed (after retries): the same request may work later.
    Transient,
    /// Anything else: an answer that could not be decoded, a spent budget or deadline.
    Fatal,
}

impl Error {
    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Backend { kind, .. } => *kind,
            Self::UnknownProvider { .. }
            | Self::AmbiguousModel { .. }
            | Self::MissingApiKey { .. }
            | Self::Config(_)
            | Self::ReplayMiss { .. }
            | Self::Recording { .. }
            | Self::Status {
                status: 400 | 401 | 403 | 404,
                ..
            } => ErrorKind::Input,
            Self::Status { status, .. } if crate::retry::is_retryable_status(*status) => {
                ErrorKind::Transient
            }
            Self::Transport { .. }
            | Self::Timeout { .. }
            | Self::Stalled { .. }
            | Self::StreamError { .. }
            | Self::StreamInterrupted { .. } => ErrorKind::Transient,
            Self::Status { .. }
            | Self::DeadlineExceeded { .. }
            | Self::Decode { .. }
            | Self::ContextWindow { .. }
            | Self::BudgetExhausted { .. } => ErrorKind::Fatal,
        }
    }

    /// Whether the error says something about the request itself (bad model, key, settings),
    /// as opposed to a failure of the provider or the network.
    pub fn is_input_error(&self) -> bool {
        self.kind() == ErrorKind::Input
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_follow_what_the_user_can_do() {
        let missing_key = Error::MissingApiKey {
            provider: "openai".into(),
            variable: "OPENAI_API_KEY".into(),
        };
        assert_eq!(missing_key.kind(), ErrorKind::Input);
        let status = |status| Error::Status {
            provider: "p".into(),
            model: "m".into(),
            status,
            message: String::new(),
        };
        assert_eq!(status(401).kind(), ErrorKind::Input);
        assert_eq!(status(429).kind(), ErrorKind::Transient);
        assert_eq!(status(529).kind(), ErrorKind::Transient);
        assert_eq!(status(418).kind(), ErrorKind::Fatal);
        assert_eq!(
            Error::DeadlineExceeded { model: "m".into() }.kind(),
            ErrorKind::Fatal
        );
    }
}
