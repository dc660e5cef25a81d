//! Native tool calling, in provider-neutral form: what a tool is ([`ToolDefinition`]), how the
//! model may use tools ([`ToolChoice`]), a call the model asked for ([`ToolCall`]) and what a tool
//! answered ([`ToolOutput`]). `rlm-llm`'s wire encoders turn these into OpenAI
//! `tools`/`tool_calls`/`role: tool` and Anthropic `tools`/`tool_use`/`tool_result`, and its
//! `LlmClient::chat_with_tools` runs the bounded loop model → tools → model.

use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool the model may call: a name, what it does, and a JSON Schema of its arguments (an
/// object schema: both APIs pass arguments as one JSON object).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// The name the model calls it by (letters, digits, `_` and `-`; both APIs limit it to 64).
    pub name: String,
    /// When and how to use it, for the model.
    pub description: String,
    /// JSON Schema of the arguments object (OpenAI `parameters`, Anthropic `input_schema`).
    pub parameters: Value,
}

impl ToolDefinition {
    /// A tool named `name` taking arguments described by the JSON Schema `parameters`.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }
}

/// Whether and which tools the model may call (OpenAI `tool_choice`, Anthropic `tool_choice`).
/// Not `#[non_exhaustive]`, as [`crate::Role`]: every wire encoder matches each choice.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides (the default of both APIs when tools are given).
    Auto,
    /// No tool calls: the model answers in text (OpenAI `none`, Anthropic `{"type":"none"}`).
    None,
    /// At least one tool call (OpenAI `required`, Anthropic `{"type":"any"}`).
    Required,
    /// This tool must be called.
    Tool(String),
}

/// A tool call the model asked for, in an assistant turn.
///
/// `arguments` is the JSON text exactly as the model wrote it: OpenAI sends a string that is
/// not always valid JSON, so nothing is lost or guessed here. [`ToolCall::arguments_value`] and
/// [`ToolCall::arguments_as`] parse it and turn a bad one into an [`InvalidToolArguments`] that
/// can be sent back to the model as a tool error.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call id, which the tool result must quote.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as JSON text (an object when the model got it right).
    pub arguments: String,
}

impl ToolCall {
    /// A call with these fields.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    /// The arguments as a JSON object. Empty text counts as `{}` (some OpenAI-compatible
    /// servers send nothing for a tool without parameters).
    pub fn arguments_value(&self) -> Result<Value, InvalidToolArguments> {
        let text = self.arguments.trim();
        if text.is_empty() {
            return Ok(Value::Object(serde_json::Map::new()));
        }
        match serde_json::from_str::<Value>(text) {
            Ok(value @ Value::Object(_)) => Ok(value),
            Ok(other) => {
                Err(self.invalid(format!("expected a JSON object, got {}", json_kind(&other))))
            }
            Err(err) => Err(self.invalid(format!("not valid JSON ({err})"))),
        }
    }

    /// The arguments deserialized into `T` (e.g. a struct of the tool's parameters).
    pub fn arguments_as<T: DeserializeOwned>(&self) -> Result<T, InvalidToolArguments> {
        let value = self.arguments_value()?;
        serde_json::from_value(value)
            .map_err(|err| self.invalid(format!("they do not fit the tool's parameters ({err})")))
    }

    fn invalid(&self, detail: String) -> InvalidToolArguments {
        InvalidToolArguments {
            tool: self.name.clone(),
            detail,
        }
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The arguments of a tool call could not be used. Its message is written for the model: send
/// it back as the call's result ([`ToolOutput::from`]) so the model can try again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidToolArguments {
    /// The tool that was called.
    pub tool: String,
    /// What is wrong with them.
    pub detail: String,
}

impl fmt::Display for InvalidToolArguments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the arguments of tool `{}` are unusable: {}",
            self.tool, self.detail
        )
    }
}

impl std::error::Error for InvalidToolArguments {}

/// What a tool answered, as sent back to the model.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The result (or, when `is_error`, what went wrong), as text for the model.
    pub content: String,
    /// The call failed. Anthropic carries this as `is_error`; OpenAI has no such field, so
    /// the content is sent there prefixed with `error: `.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
        }
    }

    /// A failed call; `message` tells the model what went wrong.
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            content: message.into(),
            is_error: true,
        }
    }
}

impl From<InvalidToolArguments> for ToolOutput {
    fn from(invalid: InvalidToolArguments) -> Self {
        Self::error(invalid.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Search {
        query: String,
        k: u32,
    }

    #[test]
    fn valid_arguments_parse_into_values_and_structs() {
        let call = ToolCall::new("c1", "search", r#"{"query": "token refresh", "k": 5}"#);
        assert_eq!(call.arguments_value().unwrap()["k"], 5);
        let parsed: Search = call.arguments_as().unwrap();
        assert_eq!(
            parsed,
            Search {
                query: "token refresh".to_owned(),
                k: 5
            }
        );
        let empty = ToolCall::new("c2", "buffers", "  ");
        assert_eq!(empty.arguments_value().unwrap(), serde_json::json!({}));
    }

    #[test]
    fn bad_arguments_become_a_tool_error_for_the_model() {
        let cut = ToolCall::new("c1", "search", r#"{"query": "tok"#);
        let error = cut.arguments_value().unwrap_err();
        assert_eq!(error.tool, "search");
        assert!(error.detail.starts_with("not valid JSON"), "{error}");
        let output = ToolOutput::from(error);
        assert!(output.is_error);
        assert!(
            output
                .content
                .starts_with("the arguments of tool `search` are unusable: not valid JSON"),
            "{}",
            output.content
        );

        let array = ToolCall::new("c2", "search", "[1, 2]");
        assert_eq!(
            array.arguments_value().unwrap_err().detail,
            "expected a JSON object, got an array"
        );
        let missing = ToolCall::new("c3", "search", r#"{"query": "x"}"#);
        let error = missing.arguments_as::<Search>().unwrap_err();
        assert!(error.detail.contains("missing field `k`"), "{error}");
    }
}
