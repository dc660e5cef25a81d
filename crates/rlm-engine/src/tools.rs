//! Tools the user gives model code besides the sub-calls: functions the embedding program
//! answers (Python callables in `rlm_rs`, commands declared in `rlm.toml` for `rlm run`) and
//! values copied into the REPL. A run's tools are listed, with their descriptions, in its
//! system prompt; the root run has [`crate::RlmBuilder::tools`], its `rlm_query` child runs
//! [`crate::RlmBuilder::sub_tools`].

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;

use crate::error::Error;
use crate::functions::{FunctionSpec, HostFunctions};
use crate::literal;

/// Names model code relies on: a tool may not take them.
pub const RESERVED_TOOL_NAMES: [&str; 12] = [
    "budget",
    "llm_query",
    "llm_query_batched",
    "rlm_query",
    "rlm_query_batched",
    "SHOW_VARS",
    "FINAL",
    "FINAL_VAR",
    "answer",
    "context",
    "contextMeta",
    "history",
];

/// Whether `name` is reserved: one of [`RESERVED_TOOL_NAMES`], or a numbered `context_N` or
/// `history_N` the run binds itself.
pub fn is_reserved_tool_name(name: &str) -> bool {
    RESERVED_TOOL_NAMES.contains(&name) || crate::resume::is_reserved(name)
}

/// What a tool is.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolKind {
    /// A function model code calls; the toolbox's [`HostFunctions`] answers it.
    Function(FunctionSpec),
    /// A value bound as a variable before the first turn (plain data: it is copied).
    Value(Value),
}

/// One tool: its name in the REPL, what it is, and what the prompt says about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// The Python name.
    pub name: String,
    /// The description the system prompt gives (a default one when `None`).
    pub description: Option<String>,
    /// A function or a value.
    pub kind: ToolKind,
}

impl Tool {
    /// A function tool.
    pub fn function(spec: FunctionSpec, description: Option<String>) -> Self {
        Self {
            name: spec.name.clone(),
            description,
            kind: ToolKind::Function(spec),
        }
    }

    /// A value tool.
    pub fn value(name: impl Into<String>, value: Value, description: Option<String>) -> Self {
        Self {
            name: name.into(),
            description,
            kind: ToolKind::Value(value),
        }
    }

    /// The line the system prompt gives this tool.
    fn prompt_line(&self) -> String {
        match &self.kind {
            ToolKind::Function(spec) => {
                let mut parameters: Vec<String> = spec
                    .parameters
                    .iter()
                    .map(|parameter| {
                        if parameter.required {
                            parameter.name.clone()
                        } else {
                            format!(
                                "{}={}",
                                parameter.name,
                                literal::python_literal(&parameter.default)
                            )
                        }
                    })
                    .collect();
                if let Some(rest) = &spec.rest {
                    parameters.push(format!("*{rest}"));
                }
                if let Some(rest) = &spec.rest_keywords {
                    parameters.push(format!("**{rest}"));
                }
                let description = self
                    .description
                    .as_deref()
                    .unwrap_or("a function the user provides");
                format!(
                    "- `{}({})`: {description}",
                    self.name,
                    parameters.join(", ")
                )
            }
            ToolKind::Value(value) => {
                let description = self
                    .description
                    .clone()
                    .unwrap_or_else(|| format!("a {} the user provides", type_name(value)));
                format!("- `{}` (a variable): {description}", self.name)
            }
        }
    }
}

/// The Python type name of a JSON value.
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "None",
        Value::Bool(_) => "bool",
        Value::Number(number) if number.is_i64() || number.is_u64() => "int",
        Value::Number(_) => "float",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// The tools of a run: values to bind, and functions answered by `host`.
#[derive(Debug, Clone, Default)]
pub struct Toolbox {
    tools: Vec<Tool>,
    host: Option<Arc<dyn HostFunctions>>,
}

impl Toolbox {
    /// A toolbox whose function tools `host` answers.
    ///
    /// # Errors
    /// [`Error::Config`] for a name that is not a Python identifier, a reserved name (the
    /// message lists them), a name given twice, or function tools without a `host`.
    pub fn new(tools: Vec<Tool>, host: Option<Arc<dyn HostFunctions>>) -> Result<Self, Error> {
        let mut seen = BTreeSet::new();
        let reserved: Vec<&str> = tools
            .iter()
            .map(|tool| tool.name.as_str())
            .filter(|name| is_reserved_tool_name(name))
            .collect();
        if !reserved.is_empty() {
            return Err(Error::Config(format!(
                "custom tools cannot override reserved REPL names: {}; reserved: {}",
                reserved.join(", "),
                RESERVED_TOOL_NAMES.join(", ")
            )));
        }
        for tool in &tools {
            if !(tool.name.is_ascii() && rlm_sandbox::is_identifier(&tool.name)) {
                return Err(Error::Config(format!(
                    "tool name {:?} is not a Python identifier",
                    tool.name
                )));
            }
            if !seen.insert(tool.name.as_str()) {
                return Err(Error::Config(format!(
                    "tool {:?} is given twice",
                    tool.name
                )));
            }
            if let ToolKind::Value(value) = &tool.kind
                && literal::check(&literal::python_literal(value)).is_err()
            {
                return Err(Error::Config(format!(
                    "tool {:?} cannot be copied into the REPL: it is nested too deeply",
                    tool.name
                )));
            }
        }
        let has_functions = tools
            .iter()
            .any(|tool| matches!(tool.kind, ToolKind::Function(_)));
        if has_functions && host.is_none() {
            return Err(Error::Config(
                "function tools need a host to answer them".into(),
            ));
        }
        Ok(Self { tools, host })
    }

    /// Whether there is no tool.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The tools, in the order given.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// The function tools' specifications.
    pub(crate) fn specs(&self) -> Vec<FunctionSpec> {
        self.tools
            .iter()
            .filter_map(|tool| match &tool.kind {
                ToolKind::Function(spec) => Some(spec.clone()),
                ToolKind::Value(_) => None,
            })
            .collect()
    }

    /// Whether `name` is one of the function tools.
    pub(crate) fn has_function(&self, name: &str) -> bool {
        self.tools
            .iter()
            .any(|tool| tool.name == name && matches!(tool.kind, ToolKind::Function(_)))
    }

    /// What answers the function tools.
    pub(crate) fn host(&self) -> Option<&Arc<dyn HostFunctions>> {
        self.host.as_ref()
    }

    /// The code binding the value tools, one assignment per tool.
    pub(crate) fn value_bindings(&self) -> Vec<(String, String)> {
        self.tools
            .iter()
            .filter_map(|tool| match &tool.kind {
                ToolKind::Value(value) => Some((
                    tool.name.clone(),
                    format!("{} = {}", tool.name, literal::python_literal(value)),
                )),
                ToolKind::Function(_) => None,
            })
            .collect()
    }

    /// The system prompt's list of the tools.
    pub(crate) fn prompt_list(&self) -> String {
        self.tools
            .iter()
            .map(Tool::prompt_line)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::functions::{FunctionError, FunctionParameter};
    use serde_json::{Map, json};

    #[derive(Debug)]
    struct Echo;

    impl HostFunctions for Echo {
        fn functions(&self) -> Vec<FunctionSpec> {
            Vec::new()
        }

        fn call(&self, _: &str, arguments: &Map<String, Value>) -> Result<Value, FunctionError> {
            Ok(Value::Object(arguments.clone()))
        }
    }

    fn double() -> Tool {
        Tool::function(
            FunctionSpec::new(
                "double",
                vec![
                    FunctionParameter::required("x"),
                    FunctionParameter::optional("times", json!(2)),
                ],
            ),
            Some("Doubles the input".into()),
        )
    }

    #[test]
    fn reserved_names_are_refused_and_listed() {
        for name in [
            "llm_query",
            "answer",
            "context",
            "context_3",
            "history",
            "FINAL_VAR",
        ] {
            let tool = Tool::value(name, json!(1), None);
            let err = Toolbox::new(vec![tool], None).unwrap_err().to_string();
            assert!(err.contains(name), "{err}");
            assert!(err.contains("reserved"), "{err}");
        }
    }

    #[test]
    fn bad_names_twice_given_names_and_hostless_functions_are_refused() {
        let bad = Toolbox::new(vec![Tool::value("not a name", json!(1), None)], None);
        assert!(bad.unwrap_err().to_string().contains("identifier"));
        let twice = Toolbox::new(
            vec![
                Tool::value("x", json!(1), None),
                Tool::value("x", json!(2), None),
            ],
            None,
        );
        assert!(twice.unwrap_err().to_string().contains("twice"));
        let hostless = Toolbox::new(vec![double()], None);
        assert!(hostless.unwrap_err().to_string().contains("host"));
    }

    #[test]
    fn the_prompt_lists_functions_with_their_parameters_and_values_with_their_type() {
        let toolbox = Toolbox::new(
            vec![
                double(),
                Tool::value("CONFIG", json!({"key": "value"}), None),
                Tool::value("LIMIT", json!(3), Some("The most to fetch".into())),
            ],
            Some(Arc::new(Echo)),
        )
        .unwrap();
        let list = toolbox.prompt_list();
        assert!(
            list.contains("- `double(x, times=2)`: Doubles the input"),
            "{list}"
        );
        assert!(
            list.contains("- `CONFIG` (a variable): a dict the user provides"),
            "{list}"
        );
        assert!(
            list.contains("- `LIMIT` (a variable): The most to fetch"),
            "{list}"
        );
        assert_eq!(
            toolbox.value_bindings(),
            vec![
                ("CONFIG".to_owned(), "CONFIG = {'key': 'value'}".to_owned()),
                ("LIMIT".to_owned(), "LIMIT = 3".to_owned()),
            ]
        );
        assert!(toolbox.has_function("double"));
        assert!(!toolbox.has_function("CONFIG"));
    }
}
