//! MCP sampling as a model provider: the client's own model answers rlm's model calls.
//!
//! When the client declared the `sampling` capability at initialize, the `run` tool's command
//! gets a provider named `mcp` ([`ModelBackend`]): a call to `mcp:NAME` becomes one
//! `sampling/createMessage` request to the client (the system prompt as `systemPrompt`, the
//! turns as text messages, `maxTokens`, `stopSequences`, `temperature`, and NAME as a model
//! hint; `mcp:client` hints at nothing and lets the client choose). With no model configured
//! at all, `run` uses `mcp:client` for the root model and the sub-calls, so a server without
//! API keys still answers. The client reports no token counts: the usage is estimated from the
//! texts' sizes and marked so, and the cost to this process is 0.
//!
//! Without the capability the provider is still there (so `model: "mcp"` names something),
//! but every check and call fails with an input error saying why.
//!
//! rmcp marks the sampling types deprecated (SEP-2577 drops server-to-client requests from
//! the protocol version after 2025-11-25); clients on current versions still offer it.
#![expect(
    deprecated,
    reason = "sampling/createMessage is deprecated upstream but is what clients offer today"
)]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use rlm_llm::{
    BackendReply, ChatBackend, ChatRequest, Error, ErrorKind, ModelCapabilities, Price, Role,
};
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, InitializeRequestParams, ModelHint,
    ModelPreferences, SamplingMessage, SamplingMessageContentBlock,
};
use rmcp::service::ServiceError;
use rmcp::{Peer, RoleServer};

use rlm_app::settings::ModelBackend;

/// The provider name of the client's model in model strings.
pub const PROVIDER: &str = "mcp";
/// The model name that asks for no particular model: the client chooses (`mcp:client`).
pub const CLIENT_CHOICE: &str = "client";
/// Sampling requests in flight at once: a batched `llm_query` waits for the client (and often
/// a person approving each request) rather than flooding it.
const MAX_CONCURRENCY: usize = 4;
/// `maxTokens` is required by the protocol; rlm's commands always set a cap, this is for
/// a request that does not.
const DEFAULT_MAX_TOKENS: u32 = 8_192;

/// The `mcp` provider for one client, from what it declared at initialize.
pub fn provider(peer: &Peer<RoleServer>) -> ModelBackend {
    let offered = offered(peer.peer_info().as_deref());
    ModelBackend {
        name: PROVIDER.to_owned(),
        backend: Arc::new(Sampling {
            peer: peer.clone(),
            offered,
        }),
        max_concurrency: MAX_CONCURRENCY,
        default_model: offered.then(|| format!("{PROVIDER}:{CLIENT_CHOICE}")),
    }
}

/// Whether the client declared the `sampling` capability.
fn offered(client: Option<&InitializeRequestParams>) -> bool {
    client.is_some_and(|client| client.capabilities.sampling.is_some())
}

/// A tool's `model`/`subcall_model` argument as a model string: `mcp` and `sampling` alone
/// mean the client's choice (`mcp:client`); anything else is kept.
pub fn model_argument(model: String) -> String {
    match model.as_str() {
        "mcp" | "sampling" => format!("{PROVIDER}:{CLIENT_CHOICE}"),
        _ => model,
    }
}

/// Model calls answered by the client through `sampling/createMessage`.
#[derive(Debug)]
struct Sampling {
    peer: Peer<RoleServer>,
    offered: bool,
}

impl Sampling {
    fn refusal(model: &str, message: String, kind: ErrorKind) -> Error {
        Error::Backend {
            provider: PROVIDER.to_owned(),
            model: model.to_owned(),
            message,
            kind,
        }
    }
}

impl ChatBackend for Sampling {
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        model: &'a str,
    ) -> Pin<Box<dyn Future<Output = rlm_llm::Result<BackendReply>> + Send + 'a>> {
        Box::pin(async move {
            self.check(model)?;
            let params = request_params(request, model)
                .map_err(|message| Self::refusal(model, message, ErrorKind::Input))?;
            let result = self
                .peer
                .create_message(params)
                .await
                .map_err(|err| service_error(model, err))?;
            reply(result).map_err(|message| Self::refusal(model, message, ErrorKind::Fatal))
        })
    }

    fn check(&self, model: &str) -> rlm_llm::Result<()> {
        if self.offered {
            return Ok(());
        }
        Err(Self::refusal(
            model,
            "the MCP client did not declare the `sampling` capability, so its model cannot \
             answer; use a client that offers sampling, or name a configured provider \
             (e.g. `openai:gpt-4o-mini`)"
                .to_owned(),
            ErrorKind::Input,
        ))
    }

    /// The client's model is not billed to this process.
    fn price(&self, _model: &str) -> Option<Price> {
        Some(Price {
            input_per_mtok: 0.0,
            output_per_mtok: 0.0,
            cache_read_per_mtok: None,
            cache_write_per_mtok: None,
        })
    }

    /// Text in, text out: tool calling through sampling needs a capability few clients
    /// offer, and rlm's callers ask without tools when told.
    fn capabilities(&self, _model: &str) -> ModelCapabilities {
        ModelCapabilities {
            tools: false,
            ..ModelCapabilities::default()
        }
    }
}

/// The `sampling/createMessage` parameters for `request`, or why it cannot be sent.
fn request_params(
    request: &ChatRequest,
    model: &str,
) -> Result<CreateMessageRequestParams, String> {
    let mut system: Vec<&str> = request.system.as_deref().into_iter().collect();
    let mut messages = Vec::with_capacity(request.messages.len());
    for message in &request.messages {
        if !message.tool_calls.is_empty() || message.tool_call_id.is_some() {
            return Err("tool calls cannot be sent through MCP sampling".to_owned());
        }
        match message.role {
            // As on the Anthropic wire: a system turn joins the system prompt.
            Role::System => system.push(&message.content),
            Role::User => messages.push(SamplingMessage::user_text(message.content.as_str())),
            Role::Assistant => {
                messages.push(SamplingMessage::assistant_text(message.content.as_str()));
            }
            _ => return Err("tool results cannot be sent through MCP sampling".to_owned()),
        }
    }
    if messages.is_empty() {
        return Err("a sampling request needs at least one message".to_owned());
    }
    let mut params =
        CreateMessageRequestParams::new(messages, request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS));
    if !system.is_empty() {
        params = params.with_system_prompt(system.join("\n\n"));
    }
    if !request.stop.is_empty() {
        params = params.with_stop_sequences(request.stop.clone());
    }
    if let Some(temperature) = request.temperature {
        params = params.with_temperature(temperature);
    }
    if model != CLIENT_CHOICE {
        params = params.with_model_preferences(
            ModelPreferences::new().with_hints(vec![ModelHint::new(model)]),
        );
    }
    Ok(params)
}

/// The client's answer as a backend reply: its text blocks joined, the stop reason in the
/// words `rlm_llm::FinishReason` knows, no usage (the protocol reports none).
fn reply(result: CreateMessageResult) -> Result<BackendReply, String> {
    let mut text = String::new();
    let mut other = Vec::new();
    for block in result.message.content.iter() {
        match block {
            SamplingMessageContentBlock::Text(part) => text.push_str(&part.text),
            SamplingMessageContentBlock::Image(_) => other.push("image"),
            SamplingMessageContentBlock::Audio(_) => other.push("audio"),
            SamplingMessageContentBlock::ToolUse(_) => other.push("tool use"),
            SamplingMessageContentBlock::ToolResult(_) => other.push("tool result"),
            _ => other.push("non-text"),
        }
    }
    if text.is_empty() && !other.is_empty() {
        return Err(format!(
            "the client's model answered with {} content and no text",
            other.join(", ")
        ));
    }
    let finish_reason = result.stop_reason.map(|reason| {
        match reason.as_str() {
            CreateMessageResult::STOP_REASON_END_TURN => "end_turn",
            CreateMessageResult::STOP_REASON_END_SEQUENCE => "stop_sequence",
            CreateMessageResult::STOP_REASON_END_MAX_TOKEN => "max_tokens",
            CreateMessageResult::STOP_REASON_TOOL_USE => "tool_use",
            other => other,
        }
        .to_owned()
    });
    Ok(BackendReply {
        text,
        finish_reason,
        usage: None,
        answered_by: Some(result.model),
    })
}

/// A failed request: the client's own error (a person declined, no model available) is for
/// the user to act on; a closed or broken session may work again in another.
fn service_error(model: &str, err: ServiceError) -> Error {
    let (message, kind) = match err {
        ServiceError::McpError(data) => (
            format!(
                "the MCP client refused the sampling request: {}",
                data.message
            ),
            ErrorKind::Input,
        ),
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => (
            "the MCP session closed before the client answered".to_owned(),
            ErrorKind::Transient,
        ),
        other => (
            format!("the sampling request failed: {other}"),
            ErrorKind::Fatal,
        ),
    };
    Sampling::refusal(model, message, kind)
}

#[cfg(test)]
mod tests {
    use rlm_llm::{FinishReason, Message, ToolCall};
    use rmcp::model::{ClientCapabilities, Implementation};

    use super::*;

    fn texts(params: &CreateMessageRequestParams) -> Vec<(rmcp::model::Role, String)> {
        params
            .messages
            .iter()
            .map(|message| {
                let text = message
                    .content
                    .iter()
                    .filter_map(SamplingMessageContentBlock::as_text)
                    .map(|text| text.text.clone())
                    .collect();
                (message.role.clone(), text)
            })
            .collect()
    }

    #[test]
    fn a_request_maps_to_sampling_parameters() {
        let mut request = ChatRequest::new("mcp:claude-sonnet-4-5")
            .system("You are a recursive model.")
            .user("the question")
            .assistant("```repl\nprint(1)")
            .user("output: 1")
            .max_tokens(300)
            .stop("\n```\n")
            .temperature(0.2);
        request.messages.push(Message::system("Answer now."));
        let params = request_params(&request, "claude-sonnet-4-5").unwrap();
        assert_eq!(
            params.system_prompt.as_deref(),
            Some("You are a recursive model.\n\nAnswer now.")
        );
        use rmcp::model::Role::{Assistant, User};
        assert_eq!(
            texts(&params),
            [
                (User, "the question".to_owned()),
                (Assistant, "```repl\nprint(1)".to_owned()),
                (User, "output: 1".to_owned()),
            ]
        );
        assert_eq!(params.max_tokens, 300);
        assert_eq!(params.stop_sequences, Some(vec!["\n```\n".to_owned()]));
        assert_eq!(params.temperature, Some(0.2));
        let hints = params.model_preferences.unwrap().hints.unwrap();
        assert_eq!(hints[0].name.as_deref(), Some("claude-sonnet-4-5"));
        let wire = serde_json::to_value(request_params(&request, "x").unwrap()).unwrap();
        assert_eq!(
            wire["systemPrompt"],
            "You are a recursive model.\n\nAnswer now."
        );
        assert_eq!(wire["maxTokens"], 300);
        assert_eq!(wire["stopSequences"][0], "\n```\n");
        assert_eq!(wire["messages"][0]["content"]["type"], "text");
    }

    #[test]
    fn the_client_choice_sends_no_hint_and_defaults_fill_the_required_fields() {
        let request = ChatRequest::new("mcp:client").user("hi");
        let params = request_params(&request, CLIENT_CHOICE).unwrap();
        assert!(params.model_preferences.is_none());
        assert!(params.system_prompt.is_none() && params.stop_sequences.is_none());
        assert_eq!(params.max_tokens, DEFAULT_MAX_TOKENS);
    }

    #[test]
    fn tool_turns_and_empty_requests_are_refused() {
        let call = ToolCall::new("id", "search", "{}");
        let mut request = ChatRequest::new("mcp:client").user("q");
        request
            .messages
            .push(Message::assistant_tool_calls("", vec![call]));
        let err = request_params(&request, CLIENT_CHOICE).unwrap_err();
        assert!(err.contains("tool calls"), "{err}");
        let empty = ChatRequest::new("mcp:client").system("only a system prompt");
        assert!(request_params(&empty, CLIENT_CHOICE).is_err());
    }

    #[test]
    fn a_result_maps_to_a_reply_with_no_usage() {
        let result = CreateMessageResult::new(
            SamplingMessage::new_multiple(
                rmcp::model::Role::Assistant,
                vec![
                    SamplingMessageContentBlock::text("the answer "),
                    SamplingMessageContentBlock::text("is 42"),
                ],
            ),
            "claude-haiku-4-5".to_owned(),
        )
        .with_stop_reason(CreateMessageResult::STOP_REASON_END_MAX_TOKEN);
        let mapped = reply(result).unwrap();
        assert_eq!(mapped.text, "the answer is 42");
        assert_eq!(mapped.answered_by.as_deref(), Some("claude-haiku-4-5"));
        assert_eq!(mapped.usage, None);
        assert_eq!(
            FinishReason::from_provider(mapped.finish_reason.as_deref()),
            FinishReason::Length
        );
        let stopped = CreateMessageResult::new(SamplingMessage::assistant_text("x"), "m".into())
            .with_stop_reason("stopSequence");
        assert_eq!(
            reply(stopped).unwrap().finish_reason.as_deref(),
            Some("stop_sequence")
        );

        let image = CreateMessageResult::new(
            SamplingMessage::new(
                rmcp::model::Role::Assistant,
                SamplingMessageContentBlock::Image(rmcp::model::ImageContent::new(
                    "AAAA",
                    "image/png",
                )),
            ),
            "m".into(),
        );
        let err = reply(image).unwrap_err();
        assert!(err.contains("image"), "{err}");
    }

    #[test]
    fn the_capability_decides_and_the_tool_arguments_name_the_provider() {
        let client = |capabilities| {
            InitializeRequestParams::new(capabilities, Implementation::new("client", "1"))
        };
        let sampling = ClientCapabilities::builder().enable_sampling().build();
        assert!(offered(Some(&client(sampling))));
        assert!(!offered(Some(&client(ClientCapabilities::default()))));
        assert!(!offered(None));
        assert_eq!(model_argument("mcp".into()), "mcp:client");
        assert_eq!(model_argument("sampling".into()), "mcp:client");
        assert_eq!(model_argument("mcp:gpt-5".into()), "mcp:gpt-5");
        assert_eq!(model_argument("openai:gpt-4o".into()), "openai:gpt-4o");
    }

    #[test]
    fn client_errors_keep_what_the_user_can_do() {
        let declined = service_error(
            "client",
            ServiceError::McpError(rmcp::ErrorData::invalid_request("User declined", None)),
        );
        assert_eq!(declined.kind(), ErrorKind::Input);
        assert!(declined.to_string().contains("User declined"), "{declined}");
        assert_eq!(
            service_error("client", ServiceError::TransportClosed).kind(),
            ErrorKind::Transient
        );
    }
}
