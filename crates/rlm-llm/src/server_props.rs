//! What a local server says about itself. llama.cpp answers `GET /props` (beside its `/v1`)
//! with the context window every slot has (`default_generation_settings.n_ctx`) and how many
//! requests it serves at once (`total_slots`). Asked next when `/props` says nothing of that:
//! Text Generation Inference's `GET /info` (`max_concurrent_requests`, the requests its router
//! admits at once; more get 429) and SGLang's `GET /get_server_info` (`max_running_requests`,
//! set or computed at start). vLLM and Ollama say nothing of the kind (their limits,
//! `max_num_seqs` and `OLLAMA_NUM_PARALLEL`, are not served), so the adaptive limit is theirs.
//! The probe is asked once per provider per process, only of OpenAI-compatible servers on this
//! machine (or the `llamacpp` provider), so a hosted API never sees it; any failure means
//! "nothing reported".

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use crate::client::LlmClient;
use crate::provider::{ProviderConfig, ProviderKind, is_loopback_url};

/// How long the probe may take: a server on this machine answers at once or not at all.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

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

/// llama.cpp's `/props`, the fields read (older builds put `n_ctx` at the top).
#[derive(Deserialize)]
struct Props {
    default_generation_settings: Option<GenerationSettings>,
    n_ctx: Option<u64>,
    total_slots: Option<usize>,
}

#[derive(Deserialize)]
struct GenerationSettings {
    n_ctx: Option<u64>,
}

/// Reads a `/props` body; `None` when it says nothing this crate uses.
pub(crate) fn parse(body: &[u8]) -> Option<ServerProps> {
    let props: Props = serde_json::from_slice(body).ok()?;
    let context_window = props
        .default_generation_settings
        .and_then(|settings| settings.n_ctx)
        .or(props.n_ctx)
        .filter(|&tokens| tokens > 0);
    let total_slots = props.total_slots.filter(|&slots| slots > 0);
    (context_window.is_some() || total_slots.is_some()).then_some(ServerProps {
        context_window,
        total_slots,
    })
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
        .and_then(|count| usize::try_from(count).ok())
        .filter(|&count| count > 0)
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
    /// replayed, or a server that does not answer `/props`.
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
            async move {
                match request.send().await {
                    Ok(response) if response.status().is_success() => response.bytes().await.ok(),
                    _ => None,
                }
            }
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
        tracing::debug!(provider = %model_ref.provider, ?props, "server properties");
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
