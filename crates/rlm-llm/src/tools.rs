//! Native tool calling: the tool types are the shared vocabulary's ([`rlm_types`]: a
//! [`crate::ToolDefinition`], a [`crate::ToolCall`], a [`crate::ToolOutput`]); the wire encoders
//! (`wire/openai_tools.rs`, `wire/anthropic_tools.rs`) turn them into OpenAI
//! `tools`/`tool_calls`/`role: tool` and Anthropic `tools`/`tool_use`/`tool_result`, and
//! [`crate::LlmClient::chat_with_tools`] runs the bounded loop model → tools → model.

/// Bytes of tool definitions and tool calls in a request, for the pre-call token estimate.
pub(crate) fn request_tool_bytes(request: &crate::ChatRequest) -> usize {
    let definitions: usize = request
        .tools
        .iter()
        .map(|tool| tool.name.len() + tool.description.len() + tool.parameters.to_string().len())
        .sum();
    let calls: usize = request
        .messages
        .iter()
        .flat_map(|message| &message.tool_calls)
        .map(|call| call.name.len() + call.arguments.len())
        .sum();
    definitions + calls
}
