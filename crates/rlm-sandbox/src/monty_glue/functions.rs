//! Calls of the host's further functions ([`FunctionSpec`]): arguments bound by name as Python
//! binds them, Python values to JSON and back, host errors raised as Python exceptions.

use monty_types::{ExcType, MontyException, MontyObject};
use serde_json::{Map, Value};

use super::arguments::{Arguments, type_error, type_name};
use crate::host::{FunctionError, FunctionSpec, RaisedKind};

/// Binds a call's arguments to `spec`'s parameters: positional ones in order, keywords by
/// name, defaults for the rest. Refuses what Python would refuse.
pub(super) fn bind(
    spec: &FunctionSpec,
    call: &Arguments<'_>,
) -> Result<Map<String, Value>, MontyException> {
    let function = &spec.name;
    let names = || {
        spec.parameters
            .iter()
            .map(|parameter| parameter.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if call.args.len() > spec.parameters.len() && spec.rest.is_none() {
        return Err(type_error(format!(
            "{function}() takes at most {} positional arguments ({} given); its parameters are: {}",
            spec.parameters.len(),
            call.args.len(),
            names()
        )));
    }
    let mut bound = Map::new();
    for (parameter, value) in spec.parameters.iter().zip(call.args) {
        bound.insert(
            parameter.name.clone(),
            to_json(function, &parameter.name, value)?,
        );
    }
    if let Some(rest) = &spec.rest {
        let extra = call
            .args
            .iter()
            .skip(spec.parameters.len())
            .map(|value| to_json(function, rest, value))
            .collect::<Result<Vec<_>, _>>()?;
        bound.insert(rest.clone(), Value::Array(extra));
    }
    let mut extra_keywords = Map::new();
    for (key, value) in call.kwargs {
        let MontyObject::String(key) = key else {
            return Err(type_error(format!(
                "{function}() keywords must be strings, not {}",
                type_name(key)
            )));
        };
        if !spec
            .parameters
            .iter()
            .any(|parameter| parameter.name == *key)
        {
            if spec.rest_keywords.is_some() {
                extra_keywords.insert(key.clone(), to_json(function, key, value)?);
                continue;
            }
            return Err(type_error(format!(
                "{function}() got an unexpected keyword argument '{key}'; its parameters are: {}",
                names()
            )));
        }
        if bound.contains_key(key) {
            return Err(type_error(format!(
                "{function}() got multiple values for argument '{key}'"
            )));
        }
        bound.insert(key.clone(), to_json(function, key, value)?);
    }
    if let Some(rest_keywords) = &spec.rest_keywords {
        bound.insert(rest_keywords.clone(), Value::Object(extra_keywords));
    }
    for parameter in &spec.parameters {
        if bound.contains_key(&parameter.name) {
            continue;
        }
        if parameter.required {
            return Err(type_error(format!(
                "{function}() missing required argument '{}'",
                parameter.name
            )));
        }
        bound.insert(parameter.name.clone(), parameter.default.clone());
    }
    Ok(bound)
}

/// A Python value as JSON: `None`, bools, ints, floats, strings, lists, tuples and dicts with
/// string keys. Anything else is refused with a `TypeError` naming the parameter.
fn to_json(function: &str, parameter: &str, value: &MontyObject) -> Result<Value, MontyException> {
    let refuse = |got: &MontyObject| {
        type_error(format!(
            "{function}(): '{parameter}' cannot be {}; pass str, int, float, bool, None, or \
             lists and dicts of them",
            type_name(got)
        ))
    };
    Ok(match value {
        MontyObject::None => Value::Null,
        MontyObject::Bool(flag) => Value::Bool(*flag),
        MontyObject::Int(number) => Value::from(*number),
        MontyObject::Float(number) => {
            serde_json::Number::from_f64(*number).map_or(Value::Null, Value::Number)
        }
        MontyObject::String(text) => Value::String(text.clone()),
        MontyObject::List(items) | MontyObject::Tuple(items) => Value::Array(
            items
                .iter()
                .map(|item| to_json(function, parameter, item))
                .collect::<Result<_, _>>()?,
        ),
        MontyObject::Dict(pairs) => {
            let mut object = Map::new();
            for (key, item) in pairs {
                let MontyObject::String(key) = key else {
                    return Err(refuse(value));
                };
                object.insert(key.clone(), to_json(function, parameter, item)?);
            }
            Value::Object(object)
        }
        other => return Err(refuse(other)),
    })
}

/// The exception model code sees for a host function's error.
pub(super) fn raised(error: FunctionError) -> MontyException {
    let kind = match error.kind {
        RaisedKind::ValueError => ExcType::ValueError,
        RaisedKind::TypeError => ExcType::TypeError,
        RaisedKind::LookupError => ExcType::LookupError,
        RaisedKind::NameError => ExcType::NameError,
        RaisedKind::KeyError => ExcType::KeyError,
        RaisedKind::IndexError => ExcType::IndexError,
        RaisedKind::TimeoutError => ExcType::TimeoutError,
        RaisedKind::ZeroDivisionError => ExcType::ZeroDivisionError,
        RaisedKind::AttributeError => ExcType::AttributeError,
        RaisedKind::AssertionError => ExcType::AssertionError,
        RaisedKind::NotImplementedError => ExcType::NotImplementedError,
        RaisedKind::OSError => ExcType::OSError,
        RaisedKind::FileNotFoundError => ExcType::FileNotFoundError,
        RaisedKind::PermissionError => ExcType::PermissionError,
        RaisedKind::Exception => ExcType::Exception,
        _ => ExcType::RuntimeError,
    };
    MontyException::new(kind, Some(error.message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::FunctionParameter;

    fn spec() -> FunctionSpec {
        FunctionSpec::new(
            "search",
            vec![
                FunctionParameter::required("query"),
                FunctionParameter::optional("k", Value::from(10)),
            ],
        )
    }

    fn call<'a>(
        args: &'a [MontyObject],
        kwargs: &'a [(MontyObject, MontyObject)],
    ) -> Arguments<'a> {
        Arguments {
            function: "search",
            args,
            kwargs,
        }
    }

    #[test]
    fn binds_positional_keyword_and_default_arguments() {
        let args = [MontyObject::String("disk".into())];
        let bound = bind(&spec(), &call(&args, &[])).unwrap();
        assert_eq!(
            Value::Object(bound),
            serde_json::json!({"query": "disk", "k": 10})
        );
        let kwargs = [(MontyObject::String("k".into()), MontyObject::Int(3))];
        let bound = bind(&spec(), &call(&args, &kwargs)).unwrap();
        assert_eq!(bound["k"], 3);
    }

    #[test]
    fn gathers_further_arguments_when_the_function_takes_them() {
        let spec = spec().with_rest("args").with_rest_keywords("kwargs");
        let args = [
            MontyObject::String("disk".into()),
            MontyObject::Int(3),
            MontyObject::Int(4),
        ];
        let kwargs = [(MontyObject::String("mode".into()), MontyObject::Bool(true))];
        let bound = bind(&spec, &call(&args, &kwargs)).unwrap();
        assert_eq!(
            Value::Object(bound),
            serde_json::json!({"query": "disk", "k": 3, "args": [4], "kwargs": {"mode": true}})
        );
        let bound = bind(&spec, &call(&args[..1], &[])).unwrap();
        assert_eq!(bound["args"], serde_json::json!([]));
        assert_eq!(bound["kwargs"], serde_json::json!({}));
    }

    #[test]
    fn refuses_what_python_refuses() {
        let missing = bind(&spec(), &call(&[], &[])).unwrap_err();
        assert!(
            missing
                .to_string()
                .contains("missing required argument 'query'")
        );
        let args = [MontyObject::String("a".into())];
        let twice = [(MontyObject::String("query".into()), MontyObject::None)];
        assert!(
            bind(&spec(), &call(&args, &twice))
                .unwrap_err()
                .to_string()
                .contains("multiple values")
        );
        let unknown = [(MontyObject::String("mode".into()), MontyObject::None)];
        assert!(
            bind(&spec(), &call(&args, &unknown))
                .unwrap_err()
                .to_string()
                .contains("unexpected keyword argument 'mode'")
        );
        let bytes = [MontyObject::Bytes(vec![1])];
        assert!(
            bind(&spec(), &call(&bytes, &[]))
                .unwrap_err()
                .to_string()
                .contains("'query' cannot be bytes")
        );
    }
}
