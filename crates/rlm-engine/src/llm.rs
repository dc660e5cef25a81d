//! [`ModelClient`] over the `rlm-llm` provider layer: retries, the per-provider limiter, prices
//! and record/replay all come from [`rlm_llm::LlmClient`].

use futures::FutureExt as _;
use futures::future::BoxFuture;

use crate::model::{
    CallUsage, ChatMessage, FinishReason, ModelClient, ModelError, ModelReply, ModelRequest, Role,
};

impl ModelClient for rlm_llm::LlmClient {
    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        let chat = to_chat_request(&request);
        async move {
            let response = self.chat(&chat).await.map_err(|err| model_error(&err))?;
            Ok(ModelReply {
                finish: finish_reason(response.finish_reason.as_deref()),
                usage: CallUsage {
                    input_tokens: response.usage.input_tokens,
                    output_tokens: response.usage.output_tokens,
                    cache_read_tokens: response.usage.cache_read_tokens,
                    cache_write_tokens: response.usage.cache_write_tokens,
                    cost_usd: response.cost_usd,
                },
                text: response.text,
            })
        }
        .boxed()
    }
}

/// The provider-neutral request: system messages become the system prompt (joined when there
/// are several), the rest keep their order.
pub(crate) fn to_chat_request(request: &ModelRequest<'_>) -> rlm_llm::ChatRequest {
    let mut chat = rlm_llm::ChatRequest::new(request.model);
    let system: Vec<&str> = request
        .messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.content.as_str())
        .collect();
    if !system.is_empty() {
        chat.system = Some(system.join("\n\n"));
    }
    chat.messages = request
        .messages
        .iter()
        .filter_map(|message: &ChatMessage| match message.role {
            Role::System => None,
            Role::User => Some(rlm_llm::Message::user(message.content.as_str())),
            Role::Assistant => Some(rlm_llm::Message::assistant(message.content.as_str())),
        })
        .collect();
    chat.stop = request.stop.to_vec();
    chat.max_tokens = request.max_output_tokens;
    chat
}

/// The error and its causes on one line (rlm-llm errors never carry credentials).
fn model_error(err: &rlm_llm::Error) -> ModelError {
    let mut message = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    ModelError::new(message)
}

fn finish_reason(reason: Option<&str>) -> FinishReason {
    match reason {
        Some("stop" | "end_turn") => FinishReason::EndTurn,
        Some("stop_sequence") => FinishReason::StopSequence,
        Some("length" | "max_tokens") => FinishReason::Length,
        _ => FinishReason::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_messages_become_the_system_prompt() {
        let messages = [
            ChatMessage::system("rules"),
            ChatMessage::user("q"),
            ChatMessage::assistant("a"),
        ];
        let stop = ["\n```\n".to_owned()];
        let chat = to_chat_request(&ModelRequest {
            model: "fake:root",
            messages: &messages,
            stop: &stop,
            max_output_tokens: Some(100),
        });
        assert_eq!(chat.system.as_deref(), Some("rules"));
        assert_eq!(chat.messages.len(), 2);
        assert_eq!(chat.messages[1].role, rlm_llm::Role::Assistant);
        assert_eq!(chat.stop, stop);
        assert_eq!(chat.max_tokens, Some(100));
    }
}
