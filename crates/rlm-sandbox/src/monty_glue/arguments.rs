//! Reading the arguments of a host-function call made from Python.

use monty_types::{ExcType, MontyException, MontyObject};

/// Parameter names of every function answered outside Python, in positional order, besides the
/// native helpers (whose parameters are in [`crate::HELPERS`]). A call with more positional
/// arguments or another keyword is refused, as Python would refuse it.
const SIGNATURES: &[(&str, &[&str])] = &[
    ("llm_query", &["prompt", "model"]),
    ("llm_query_batched", &["prompts", "model"]),
    ("rlm_query", &["prompt", "model"]),
    ("rlm_query_batched", &["prompts", "model"]),
    ("FINAL_VAR", &["name"]),
    ("FINAL", &["answer"]),
    ("SHOW_VARS", &[]),
];

/// Positional and keyword arguments of one host-function call.
#[derive(Debug)]
pub(crate) struct Arguments<'a> {
    pub function: &'a str,
    pub args: &'a [MontyObject],
    pub kwargs: &'a [(MontyObject, MontyObject)],
}

impl Arguments<'_> {
    /// Refuses arguments the function does not take: too many positional ones, an unknown
    /// keyword, or one parameter given twice. Functions without a signature are not checked.
    pub(crate) fn check_signature(&self) -> Result<(), MontyException> {
        let parameters = SIGNATURES
            .iter()
            .find(|(function, _)| *function == self.function)
            .map(|&(_, parameters)| parameters)
            .or_else(|| crate::helpers::helper(self.function).map(|helper| helper.parameters));
        let Some(parameters) = parameters else {
            return Ok(());
        };
        let function = self.function;
        if self.args.len() > parameters.len() {
            return Err(type_error(format!(
                "{function}() takes at most {} positional argument{} ({} given); its parameters are: {}",
                parameters.len(),
                if parameters.len() == 1 { "" } else { "s" },
                self.args.len(),
                parameter_list(parameters),
            )));
        }
        for (key, _) in self.kwargs {
            let key = match key {
                MontyObject::String(key) => key.as_str(),
                other => {
                    return Err(type_error(format!(
                        "{function}() keywords must be strings, not {}",
                        type_name(other)
                    )));
                }
            };
            match parameters.iter().position(|parameter| *parameter == key) {
                None => {
                    return Err(type_error(format!(
                        "{function}() got an unexpected keyword argument '{key}'; its parameters are: {}",
                        parameter_list(parameters)
                    )));
                }
                Some(index) if index < self.args.len() => {
                    return Err(type_error(format!(
                        "{function}() got multiple values for argument '{key}'"
                    )));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// The argument at `index` or named `name` as given (an explicit `None` included).
    fn given(&self, index: usize, name: &str) -> Option<&MontyObject> {
        let keyword = self.kwargs.iter().find_map(|(key, value)| match key {
            MontyObject::String(key) if key == name => Some(value),
            _ => None,
        });
        keyword.or_else(|| self.args.get(index))
    }

    /// The argument at `index` or named `name`, if given and not `None` (optional parameters).
    pub(crate) fn get(&self, index: usize, name: &str) -> Option<&MontyObject> {
        self.given(index, name)
            .filter(|value| !matches!(value, MontyObject::None))
    }

    /// A required argument of any type but `None`, which is refused as a wrong type.
    pub(crate) fn required(
        &self,
        index: usize,
        name: &str,
        expected: &str,
    ) -> Result<&MontyObject, MontyException> {
        match self.given(index, name) {
            None => Err(self.missing(name, expected)),
            Some(MontyObject::None) => Err(self.wrong_type(name, expected, &MontyObject::None)),
            Some(value) => Ok(value),
        }
    }

    pub(crate) fn string(&self, index: usize, name: &str) -> Result<String, MontyException> {
        match self.required(index, name, "str")? {
            MontyObject::String(text) => Ok(text.clone()),
            other => Err(self.wrong_type(name, "str", other)),
        }
    }

    pub(crate) fn optional_string(
        &self,
        index: usize,
        name: &str,
    ) -> Result<Option<String>, MontyException> {
        match self.get(index, name) {
            None => Ok(None),
            Some(MontyObject::String(text)) => Ok(Some(text.clone())),
            Some(other) => Err(self.wrong_type(name, "str or None", other)),
        }
    }

    pub(crate) fn string_list(
        &self,
        index: usize,
        name: &str,
    ) -> Result<Vec<String>, MontyException> {
        match self.required(index, name, "a list of str")? {
            MontyObject::List(items) | MontyObject::Tuple(items) => items
                .iter()
                .map(|item| match item {
                    MontyObject::String(text) => Ok(text.clone()),
                    other => Err(self.wrong_type(name, "a list of str", other)),
                })
                .collect(),
            other => Err(self.wrong_type(name, "a list of str", other)),
        }
    }

    /// An int argument; with a `default`, `None` or no argument means the default.
    pub(crate) fn integer(
        &self,
        index: usize,
        name: &str,
        default: Option<i64>,
    ) -> Result<i64, MontyException> {
        let value = match default {
            Some(default) => match self.get(index, name) {
                None => return Ok(default),
                Some(value) => value,
            },
            None => self.required(index, name, "int")?,
        };
        match value {
            MontyObject::Int(value) => Ok(*value),
            MontyObject::Bool(value) => Ok(i64::from(*value)),
            other => Err(self.wrong_type(name, "int", other)),
        }
    }

    fn missing(&self, name: &str, expected: &str) -> MontyException {
        type_error(format!(
            "{}() missing required argument '{name}' ({expected})",
            self.function
        ))
    }

    fn wrong_type(&self, name: &str, expected: &str, got: &MontyObject) -> MontyException {
        type_error(format!(
            "{}(): '{name}' must be {expected}, not {}",
            self.function,
            type_name(got)
        ))
    }
}

fn parameter_list(parameters: &[&str]) -> String {
    if parameters.is_empty() {
        "(none)".to_owned()
    } else {
        parameters.join(", ")
    }
}

/// Python's name for the type of `value`, for messages. Values Monty cannot hand to the host
/// (functions, lambdas, ...) arrive as their `repr()`, `<function '<lambda>' at 0x..>`, so the
/// type is read from that text.
pub(super) fn type_name(value: &MontyObject) -> &str {
    match value {
        MontyObject::Repr(text) => match text
            .strip_prefix('<')
            .and_then(|rest| rest.split([' ', '>']).next())
        {
            Some("built-in") => "builtin_function_or_method",
            Some(name) if !name.is_empty() => name,
            _ => "object",
        },
        MontyObject::Cycle(_, placeholder) if placeholder.starts_with('[') => "list",
        MontyObject::Cycle(_, placeholder) if placeholder.starts_with('{') => "dict",
        other => other.type_name(),
    }
}

pub(super) fn type_error(message: String) -> MontyException {
    MontyException::new(ExcType::TypeError, Some(message))
}

pub(super) fn value_error(message: String) -> MontyException {
    MontyException::new(ExcType::ValueError, Some(message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_host_function_has_a_signature() {
        for name in super::super::HOST_FUNCTIONS {
            assert!(
                SIGNATURES.iter().any(|(function, _)| function == name),
                "{name} has no signature"
            );
        }
    }

    #[test]
    fn values_passed_as_their_repr_get_their_python_type_name() {
        let lambda = MontyObject::Repr("<function '<lambda>' at 0xc>".to_owned());
        assert_eq!(type_name(&lambda), "function");
        assert_eq!(
            type_name(&MontyObject::Repr("<built-in function len>".to_owned())),
            "builtin_function_or_method"
        );
        assert_eq!(type_name(&MontyObject::Repr("odd".to_owned())), "object");
        assert_eq!(type_name(&MontyObject::Int(1)), "int");
    }
}
