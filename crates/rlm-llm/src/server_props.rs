//! What a local server says about itself. llama.cpp answers `GET /props` (beside its `/v1`)
//! with the context window every slot has (`default_generation_settings.n_ctx`) and how many
//! requests it serves at once (`total_slots`). Asked next when `/props` says nothing of that:
//! Text Generation Inference's `GET /info` (`max_concurrent_requests`, the requests its router
//! admits at once; more get 429) and SGLang's `GET /get_server_info` (`max_running_requests`,
//! set or computed at start). vLLM and Ollama say nothing of the kind (their limits,
//! `max_num_seqs` and `OLLAMA_NUM_PARALLEL`, are not served), so the adaptive limit is theirs.
//! The probe is asked once per provider per process, only of OpenAI-compatible servers on this
//! machine (or the `llamacpp` provider), so a hosted API never sees it; any failure means
//! "nothing reported". What a server says is input like any other: a body over
//! [`PROPS_BODY_LIMIT`] is not read, each field is read on its own (a malformed one is left out,
//! the others kept), a slot count is held to [`MAX_REPORTED_SLOTS`], and a `llamacpp` provider
//! whose URL is not on this machine is asked for its window only, its slot count not trusted.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::client::LlmClient;
use crate::provider::{ProviderConfig, ProviderKind, is_loopback_url};

/// How long the probe may take: a server on this machine answers at once or not at all.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The largest body the probe reads: llama.cpp's `/props`, chat template included, is a few
/// tens of KiB; a larger answer is not a server describing itself.
pub const PROPS_BODY_LIMIT: usize = 1 << 20;

/// The most requests at once a server's report is taken for. llama.cpp, TGI and SGLang report
/// tens to a few hundred; a larger number (2^61 from a broken or hostile server) would only
/// open that many connections.
pub const MAX_REPORTED_SLOTS: usize = 256;

/// What a server reported about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ServerProps {
    /// Tokens of one request's context (prompt and answer), as the server runs it.
    pub context_window: Option<u64>,
    /// Requests the server works on at once.
    pub total_slots: Option<usize>,
}

/// The probe's answers so far, by provider (`None`: asked, nothing reported).
pub(crate) type PropsCache = tokio::sync::Mutex<BTreeMap<String, Option<ServerProps>>>;

/// A positive whole number, or `None` (a negative, fractional or non-numeric value).
fn positive(value: Option<&Value>) -> Option<u64> {
    value.and_then(Value::as_u64).filter(|&count| count > 0)
}

/// A reported slot count, held to [`MAX_REPORTED_SLOTS`].
fn slots(count: u64) -> usize {
    usize::try_from(count)
        .unwrap_or(usize::MAX)
        .min(MAX_REPORTED_SLOTS)
}

/// Reads a llama.cpp `/props` body (the window at `default_generation_settings.n_ctx`, or at
/// the top in older builds; `total_slots`), each field on its own; `None` when it says
/// nothing this crate uses.
pub(crate) fn parse(body: &[u8]) -> Option<ServerProps> {
    let props: Value = serde_json::from_slice(body).ok()?;
    let context_window = positive(props.pointer("/default_generation_settings/n_ctx"))
        .or_else(|| positive(props.get("n_ctx")));
    let total_slots = positive(props.get("total_slots")).map(slots);
    (context_window.is_some() || total_slots.is_some()).then_some(ServerProps {
        context_window,
        total_slots,
    })
}

/// What of `props` is taken from the server of `config`: a `llamacpp` provider pointed
/// elsewhere than this machine is asked for its window, but the number of requests it
/// serves at once is not taken from it.
pub(crate) fn trusted(config: &ProviderConfig, props: ServerProps) -> ServerProps {
    if is_loopback_url(&config.base_url) {
        props
    } else {
        ServerProps {
            total_slots: None,
            ..props
        }
    }
}

/// The body of a successful answer, unless it is over [`PROPS_BODY_LIMIT`] (then `None`,
/// with at most that much read).
async fn capped_body(mut response: reqwest::Response) -> Option<Vec<u8>> {
    if !response.status().is_success()
        || response
            .content_length()
            .is_some_and(|length| length > PROPS_BODY_LIMIT as u64)
    {
        return None;
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.ok()? {
        if body.len() + chunk.len() > PROPS_BODY_LIMIT {
            return None;
        }
        body.extend_from_slice(&chunk);
    }
    Some(body)
}

/// The concurrency in a TGI `/info` or SGLang `/get_server_info` body (at the top, or in
/// SGLang's first `internal_states` entry), if it is a positive number.
pub(crate) fn parse_concurrency(body: &[u8]) -> Option<usize> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let field = |value: &serde_json::Value| {
        ["max_concurrent_requests", "max_running_requests"]
            .iter()
            .find_map(|name| value.get(name).and_then(serde_json::Value::as_u64))
    };
    field(&value)
        .or_else(|| value.pointer("/internal_states/0").and_then(field))
        .filter(|&count| count > 0)
        .map(slots)
}

/// The paths after a server's origin that say how many requests it serves at once, after
/// `/props`: TGI's, then SGLang's.
const CONCURRENCY_PATHS: [&str; 2] = ["/info", "/get_server_info"];

/// The `/props` URL of a provider worth asking, or `None`.
fn props_url(config: &ProviderConfig) -> Option<String> {
    if config.kind != ProviderKind::OpenAi
        || !(config.name == "llamacpp" || is_loopback_url(&config.base_url))
    {
        return None;
    }
    let base = config.base_url.trim_end_matches('/');
    let origin = base.strip_suffix("/v1").unwrap_or(base);
    Some(format!("{origin}/props"))
}

impl LlmClient {
    /// What the server behind `model` (`provider:name`) reports about itself, asked once per
    /// provider per process; `None` for a provider not on this machine, a recording being
    /// replayed, or a server that does not answer `/props`. A slot count it reports becomes the
    /// provider's limit when that limit is automatic ([`LlmClient::concurrency`] then says
    /// `Server`), so a caller can size its fan-out by it before the first call.
    ///
    /// Cancel safety: dropping the future drops the probe; a later call asks again.
    pub async fn server_props(&self, model: &str) -> Option<ServerProps> {
        if self.is_replaying() {
            return None;
        }
        let model_ref = self.resolve(model).ok()?;
        let slot = self.slot(&model_ref, model).ok()?;
        let url = props_url(&slot.config)?;
        let mut known = self.shared.server_props.lock().await;
        if let Some(props) = known.get(&model_ref.provider) {
            return *props;
        }
        let get = |url: String| {
            let mut request = self.shared.http.get(url).timeout(PROBE_TIMEOUT);
            if let Some(key) = &slot.config.api_key {
                request = request.bearer_auth(key.expose());
            }
            async move { capped_body(request.send().await.ok()?).await }
        };
        let mut props = get(url.clone()).await.and_then(|body| parse(&body));
        if props.is_none_or(|props| props.total_slots.is_none()) {
            let origin = url.strip_suffix("/props").unwrap_or(&url);
            for path in CONCURRENCY_PATHS {
                let Some(count) = get(format!("{origin}{path}"))
                    .await
                    .and_then(|body| parse_concurrency(&body))
                else {
                    continue;
                };
                let found = props.get_or_insert_with(ServerProps::default);
                found.total_slots = Some(count);
                break;
            }
        }
        let props = props.map(|props| trusted(&slot.config, props));
        tracing::debug!(provider = %model_ref.provider, ?props, "server properties");
        // Whoever asks first (a call, or a caller sizing its work), the provider's automatic
        // limit takes the count from then on.
        if let Some(slots) = props.and_then(|props| props.total_slots) {
            slot.limiter.server_reported(slots);
        }
        known.insert(model_ref.provider, props);
        props
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn props_are_read_from_llama_cpp_bodies_old_and_new() {
        let new = br#"{"default_generation_settings": {"n_ctx": 8192, "temperature": 0.8}, "total_slots": 1, "chat_template": "..."}"#;
        assert_eq!(
            parse(new),
            Some(ServerProps {
                context_window: Some(8_192),
                total_slots: Some(1)
            })
        );
        let old = br#"{"n_ctx": 4096}"#;
        assert_eq!(parse(old).unwrap().context_window, Some(4_096));
        for nothing in [&b"{}"[..], b"not json", br#"{"n_ctx": 0}"#] {
            assert_eq!(parse(nothing), None);
        }
    }

    #[test]
    fn one_malformed_field_keeps_the_others_and_counts_are_clamped() {
        // A negative window beside a valid slot count: the count is kept.
        let body = br#"{"default_generation_settings": {"n_ctx": -1}, "total_slots": 2}"#;
        assert_eq!(
            parse(body),
            Some(ServerProps {
                context_window: None,
                total_slots: Some(2)
            })
        );
        let body = br#"{"n_ctx": 4096, "total_slots": "many"}"#;
        assert_eq!(parse(body).unwrap().context_window, Some(4_096));
        let body = br#"{"default_generation_settings": [], "n_ctx": 512, "total_slots": 1e300}"#;
        assert_eq!(
            parse(body),
            Some(ServerProps {
                context_window: Some(512),
                total_slots: None
            })
        );
        let huge = format!(r#"{{"total_slots": {}}}"#, 1_u64 << 61);
        assert_eq!(
            parse(huge.as_bytes()).unwrap().total_slots,
            Some(MAX_REPORTED_SLOTS)
        );
        let huge = format!(r#"{{"max_concurrent_requests": {}}}"#, u64::MAX);
        assert_eq!(parse_concurrency(huge.as_bytes()), Some(MAX_REPORTED_SLOTS));
    }

    #[test]
    fn a_remote_llamacpp_server_is_not_trusted_for_its_slots() {
        let props = ServerProps {
            context_window: Some(8_192),
            total_slots: Some(64),
        };
        let remote =
            ProviderConfig::new("llamacpp", ProviderKind::OpenAi, "http://gpu-box:8080/v1");
        assert_eq!(
            trusted(&remote, props),
            ServerProps {
                context_window: Some(8_192),
                total_slots: None
            }
        );
        let local =
            ProviderConfig::new("llamacpp", ProviderKind::OpenAi, "http://127.0.0.1:8080/v1");
        assert_eq!(trusted(&local, props), props);
    }

    #[test]
    fn tgi_and_sglang_say_their_concurrency() {
        let tgi = br#"{"model_id": "m", "max_concurrent_requests": 128, "max_best_of": 2}"#;
        assert_eq!(parse_concurrency(tgi), Some(128));
        let sglang = br#"{"model_path": "m", "max_running_requests": 48, "tp_size": 1}"#;
        assert_eq!(parse_concurrency(sglang), Some(48));
        let computed =
            br#"{"max_running_requests": null, "internal_states": [{"max_running_requests": 4}]}"#;
        assert_eq!(parse_concurrency(computed), Some(4));
        for nothing in [&b"{}"[..], b"not json", br#"{"max_running_requests": 0}"#] {
            assert_eq!(parse_concurrency(nothing), None);
        }
    }

    #[test]
    fn only_local_openai_servers_are_asked() {
        let local = ProviderConfig::new("vllm", ProviderKind::OpenAi, "http://127.0.0.1:8000/v1");
        assert_eq!(
            props_url(&local).as_deref(),
            Some("http://127.0.0.1:8000/props")
        );
        let named = ProviderConfig::new("llamacpp", ProviderKind::OpenAi, "http://gpu-box:8080/v1");
        assert_eq!(
            props_url(&named).as_deref(),
            Some("http://gpu-box:8080/props")
        );
        let hosted =
            ProviderConfig::new("openai", ProviderKind::OpenAi, "https://api.openai.com/v1");
        assert_eq!(props_url(&hosted), None);
        let anthropic =
            ProviderConfig::new("local", ProviderKind::Anthropic, "http://localhost:9000");
        assert_eq!(props_url(&anthropic), None);
    }
}
