//! Reading the arguments of a host-function call made from Python.

use monty_types::{ExcType, MontyException, MontyObject};

/// Positional and keyword arguments of one host-function call.
#[derive(Debug)]
pub(crate) struct Arguments<'a> {
    pub function: &'a str,
    pub args: &'a [MontyObject],
    pub kwargs: &'a [(MontyObject, MontyObject)],
}

impl Arguments<'_> {
    /// The argument at `index` or named `name`, if given and not `None`.
    pub(crate) fn get(&self, index: usize, name: &str) -> Option<&MontyObject> {
        let keyword = self.kwargs.iter().find_map(|(key, value)| match key {
            MontyObject::String(key) if key == name => Some(value),
            _ => None,
        });
        keyword
            .or_else(|| self.args.get(index))
            .filter(|value| !matches!(value, MontyObject::None))
    }

    pub(crate) fn required(
        &self,
        index: usize,
        name: &str,
    ) -> Result<&MontyObject, MontyException> {
        self.get(index, name).ok_or_else(|| {
            type_error(format!(
                "{}() missing required argument '{name}'",
                self.function
            ))
        })
    }

    pub(crate) fn string(&self, index: usize, name: &str) -> Result<String, MontyException> {
        match self.required(index, name)? {
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
        match self.required(index, name)? {
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

    pub(crate) fn integer(
        &self,
        index: usize,
        name: &str,
        default: Option<i64>,
    ) -> Result<i64, MontyException> {
        match (self.get(index, name), default) {
            (Some(MontyObject::Int(value)), _) => Ok(*value),
            (Some(MontyObject::Bool(value)), _) => Ok(i64::from(*value)),
            (Some(other), _) => Err(self.wrong_type(name, "int", other)),
            (None, Some(default)) => Ok(default),
            (None, None) => Err(type_error(format!(
                "{}() missing required argument '{name}'",
                self.function
            ))),
        }
    }

    fn wrong_type(&self, name: &str, expected: &str, got: &MontyObject) -> MontyException {
        type_error(format!(
            "{}(): '{name}' must be {expected}, not {}",
            self.function,
            got.type_name()
        ))
    }
}

pub(super) fn type_error(message: String) -> MontyException {
    MontyException::new(ExcType::TypeError, Some(message))
}

pub(super) fn value_error(message: String) -> MontyException {
    MontyException::new(ExcType::ValueError, Some(message))
}
