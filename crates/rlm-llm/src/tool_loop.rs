//! Bounded tool rounds: ask the model, run the tools it calls, send the results back, until it
//! answers without calling tools or the rounds run out.

use std::future::Future;

use crate::client::LlmClient;
use crate::error::Result;
use crate::{ChatRequest, ChatResponse, Message, ToolCall, ToolChoice, ToolOutput, Usage};

/// Sent as a user message when the rounds are used up, before the last call (which may not
/// call tools).
pub const TOOL_ROUNDS_USED_UP: &str =
    "No more tool calls are possible. Answer now, using only what you have gathered so far.";

/// One tool call the loop answered.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutedToolCall {
    /// The call as the model made it.
    pub call: ToolCall,
    /// What was sent back for it.
    pub output: ToolOutput,
}

/// The outcome of [`LlmClient::chat_with_tools`].
#[derive(Debug, Clone, PartialEq)]
pub struct ToolRun {
    /// The last answer. Its `tool_calls` are empty unless the model called tools in the final
    /// call despite being told not to; those were not run.
    pub response: ChatResponse,
    /// The whole conversation after the request's own messages: every assistant turn (tool
    /// calls included), every tool result, the note sent when the rounds ran out, and the
    /// final answer last.
    pub messages: Vec<Message>,
    /// Every tool call answered, in order.
    pub executed: Vec<ExecutedToolCall>,
    /// Rounds of tool calls that were run.
    pub rounds: u32,
    /// Model calls made (rounds + 1).
    pub model_calls: u32,
    /// Whether the last call was made with tools disallowed because `max_rounds` rounds had
    /// run (always so with `max_rounds == 0`).
    pub rounds_exhausted: bool,
    /// Token counts summed over every model call.
    pub usage: Usage,
    /// Cost summed over every model call; `None` when any of them had no known price.
    pub cost_usd: Option<f64>,
}

impl LlmClient {
    /// Runs tool rounds: sends `request`; while the answer calls tools and fewer than
    /// `max_rounds` rounds have run, answers each call (in order) and sends the conversation
    /// again. When the rounds are used up the model is asked once more with
    /// [`ToolChoice::None`] and [`TOOL_ROUNDS_USED_UP`], for an answer without tools.
    ///
    /// Calls of a tool the request does not offer, and calls whose arguments are not a JSON
    /// object, are answered with a tool error by the loop itself; `execute` sees only calls of
    /// offered tools with object arguments (read them with [`ToolCall::arguments_as`]). A
    /// synchronous executor is `|call| std::future::ready(run(call))`.
    ///
    /// Every model call goes through [`LlmClient::chat`]: the limiter, retries, the budget and
    /// the ledger apply to each, and recordings hold each. An error of any call ends the loop
    /// with that error (what was spent stays on the ledger).
    ///
    /// Cancel safety: dropping the future cancels the model call or tool in progress; tools
    /// already run are not undone.
    pub async fn chat_with_tools<F, Fut>(
        &self,
        request: &ChatRequest,
        max_rounds: u32,
        execute: F,
    ) -> Result<ToolRun>
    where
        F: FnMut(ToolCall) -> Fut,
        Fut: Future<Output = ToolOutput>,
    {
        self.tool_rounds(request, max_rounds, None, execute).await
    }

    /// As [`Self::chat_with_tools`], with every model call streamed: `on_text` gets the text
    /// of each answer as it arrives (text written beside tool calls included), tool calls are
    /// gathered from the stream. Retries follow [`Self::chat_streaming`].
    pub async fn chat_with_tools_streaming<F, Fut>(
        &self,
        request: &ChatRequest,
        max_rounds: u32,
        on_text: &mut (dyn FnMut(&str) + Send),
        execute: F,
    ) -> Result<ToolRun>
    where
        F: FnMut(ToolCall) -> Fut,
        Fut: Future<Output = ToolOutput>,
    {
        self.tool_rounds(request, max_rounds, Some(on_text), execute)
            .await
    }

    async fn tool_rounds<F, Fut>(
        &self,
        request: &ChatRequest,
        max_rounds: u32,
        mut on_text: Option<&mut (dyn FnMut(&str) + Send)>,
        mut execute: F,
    ) -> Result<ToolRun>
    where
        F: FnMut(ToolCall) -> Fut,
        Fut: Future<Output = ToolOutput>,
    {
        let mut conversation = request.clone();
        let first_new_message = conversation.messages.len();
        let mut executed = Vec::new();
        let mut usage = Usage::default();
        let mut cost_usd = Some(0.0);
        let mut rounds = 0;
        let mut model_calls = 0;
        let mut rounds_exhausted = false;
        loop {
            if rounds == max_rounds {
                rounds_exhausted = true;
                // OpenAI refuses a `tool_choice` without `tools`.
                if !request.tools.is_empty() {
                    conversation.tool_choice = Some(ToolChoice::None);
                }
                if rounds > 0 {
                    conversation
                        .messages
                        .push(Message::user(TOOL_ROUNDS_USED_UP));
                }
            }
            let response = match on_text.as_deref_mut() {
                Some(sink) => self.chat_streaming(&conversation, sink).await?,
                None => self.chat(&conversation).await?,
            };
            model_calls += 1;
            usage.add(&response.usage);
            cost_usd = cost_usd
                .zip(response.cost_usd)
                .map(|(sum, cost)| sum + cost);
            conversation.messages.push(response.to_message());
            if response.tool_calls.is_empty() || rounds_exhausted {
                return Ok(ToolRun {
                    messages: conversation.messages.split_off(first_new_message),
                    response,
                    executed,
                    rounds,
                    model_calls,
                    rounds_exhausted,
                    usage,
                    cost_usd,
                });
            }
            for call in response.tool_calls {
                let output = match checked(request, &call) {
                    Ok(()) => execute(call.clone()).await,
                    Err(refusal) => refusal,
                };
                conversation
                    .messages
                    .push(Message::tool_result(call.id.clone(), output.clone()));
                executed.push(ExecutedToolCall { call, output });
            }
            rounds += 1;
        }
    }
}

/// Whether the call may go to the executor; otherwise the error the model gets instead.
fn checked(request: &ChatRequest, call: &ToolCall) -> std::result::Result<(), ToolOutput> {
    if !request.tools.iter().any(|tool| tool.name == call.name) {
        let offered: Vec<&str> = request
            .tools
            .iter()
            .map(|tool| tool.name.as_str())
            .collect();
        return Err(ToolOutput::error(format!(
            "there is no tool named `{}`; the tools are: {}",
            call.name,
            offered.join(", ")
        )));
    }
    call.arguments_value().map(drop).map_err(ToolOutput::from)
}
