//! Where a provider's requests go: the URL and headers of each wire, built once; URLs and
//! headers as errors and recordings show them.

use reqwest::header::HeaderMap;

use crate::cassette::{self, REDACTED};
use crate::client::ProviderSlot;
use crate::error::{Error, Result};
use crate::provider::ProviderKind;
use crate::wire::{self, Wire};

/// A URL fit for errors and recordings: credentials in the user-info part and the query (where
/// gateways put `api-key=…`) are removed.
pub(crate) fn redact_url(url: &str) -> String {
    let Ok(mut parsed) = reqwest::Url::parse(url) else {
        return "<unparseable URL>".to_owned();
    };
    let had_query = parsed.query().is_some();
    let _ = parsed.set_username("");
    let _ = parsed.set_password(None);
    parsed.set_query(None);
    let mut shown = parsed.to_string();
    if had_query {
        shown.push_str("?<redacted>");
    }
    shown
}

/// Where a provider's calls of one wire go: the URL (parsed once) and the headers, key
/// included.
#[derive(Debug)]
pub(crate) struct Endpoint {
    pub(super) url: reqwest::Url,
    /// The URL as configured, for errors and recordings (always shown redacted).
    pub(super) text: String,
    pub(super) headers: HeaderMap,
}

/// A provider's endpoints, one per wire, each built at its first call.
#[derive(Debug, Default)]
pub(crate) struct Endpoints([std::sync::OnceLock<Endpoint>; 3]);

impl Endpoints {
    /// The endpoint of `wire`; an error (a missing key, a key that cannot be a header, a bad
    /// base URL) is not kept, so it is reported on every call.
    pub(super) fn get(&self, slot: &ProviderSlot, wire: Wire) -> Result<&Endpoint> {
        let cell = &self.0[match wire {
            Wire::Chat => 0,
            Wire::Responses => 1,
            Wire::Anthropic => 2,
        }];
        if let Some(endpoint) = cell.get() {
            return Ok(endpoint);
        }
        let endpoint = endpoint(slot, wire)?;
        Ok(cell.get_or_init(|| endpoint))
    }
}

/// The URL and headers (including the key) for a provider.
fn endpoint(slot: &ProviderSlot, wire: Wire) -> Result<Endpoint> {
    let config = &slot.config;
    let key = config.require_key()?;
    let mut headers = HeaderMap::new();
    let header = |value: &str| {
        reqwest::header::HeaderValue::from_str(value).map_err(|_| {
            Error::Config(format!(
                "the API key of provider `{}` contains characters not allowed in a header",
                config.name
            ))
        })
    };
    headers.insert(
        reqwest::header::CONTENT_TYPE,
        reqwest::header::HeaderValue::from_static("application/json"),
    );
    let url = match config.kind {
        ProviderKind::OpenAi => {
            if let Some(key) = key {
                let mut value = header(&format!("Bearer {}", key.expose()))?;
                value.set_sensitive(true);
                headers.insert(reqwest::header::AUTHORIZATION, value);
            }
            format!("{}{}", config.base_url, wire.path())
        }
        ProviderKind::Anthropic => {
            if let Some(key) = key {
                let mut value = header(key.expose())?;
                value.set_sensitive(true);
                headers.insert("x-api-key", value);
            }
            headers.insert(
                "anthropic-version",
                reqwest::header::HeaderValue::from_static(wire::anthropic::API_VERSION),
            );
            format!("{}{}", config.base_url, wire.path())
        }
    };
    let parsed = reqwest::Url::parse(&url).map_err(|err| {
        Error::Config(format!(
            "provider `{}` has a base URL that is not a URL ({}): {err}",
            config.name,
            redact_url(&url)
        ))
    })?;
    Ok(Endpoint {
        url: parsed,
        text: url,
        headers,
    })
}

/// Headers as written to a recording: secret values replaced.
pub(super) fn recorded_headers(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| {
            let shown = if value.is_sensitive() || cassette::is_secret_header(name.as_str()) {
                REDACTED.to_owned()
            } else {
                value.to_str().unwrap_or("<binary>").to_owned()
            };
            (name.as_str().to_owned(), shown)
        })
        .collect()
}

#[cfg(test)]
mod redaction_tests {
    use super::*;

    #[test]
    fn urls_lose_credentials_and_queries() {
        assert_eq!(
            redact_url("https://user:secret@gw.example/v1/chat/completions?api-key=abc"),
            "https://gw.example/v1/chat/completions?<redacted>"
        );
        assert_eq!(
            redact_url("http://127.0.0.1:8080/v1/messages"),
            "http://127.0.0.1:8080/v1/messages"
        );
    }
}
