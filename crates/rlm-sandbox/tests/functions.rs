//! The host's further functions: bound by name, answered with plain Python data, failing as
//! the Python exception the host names, shadowing a native helper of the same name.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use common::sandbox;
use rlm_sandbox::{
    Backend, ContextInput, FunctionError, FunctionParameter, FunctionSpec, Host, Isolation,
    RaisedKind, Sandbox, Session,
};
use serde_json::{Map, Value, json};

/// Offers `lookup(key, default=None)` over a small table, and its own `grep(pattern)`.
#[derive(Debug)]
struct TableHost;

#[async_trait::async_trait]
impl Host for TableHost {
    async fn llm_query(&self, prompt: String, _model: Option<String>) -> Result<String, String> {
        Ok(prompt)
    }

    async fn rlm_query(&self, prompt: String, _model: Option<String>) -> Result<String, String> {
        Ok(prompt)
    }

    fn functions(&self) -> Vec<FunctionSpec> {
        vec![
            FunctionSpec::new(
                "lookup",
                vec![
                    FunctionParameter::required("key"),
                    FunctionParameter::optional("default", Value::Null),
                ],
            ),
            FunctionSpec::new("grep", vec![FunctionParameter::required("pattern")]),
        ]
    }

    async fn call_function(
        &self,
        name: String,
        arguments: Map<String, Value>,
    ) -> Result<Value, FunctionError> {
        match (name.as_str(), arguments.get("key").and_then(Value::as_str)) {
            ("grep", _) => Ok(json!({"host_grep": arguments["pattern"]})),
            (_, Some("rows")) => Ok(json!([{"id": 1, "tags": ["a", "b"]}, {"id": 2.5}])),
            (_, Some(key)) => Err(FunctionError::new(
                RaisedKind::LookupError,
                format!("no entry {key:?}"),
            )),
            (_, None) => Ok(arguments["default"].clone()),
        }
    }
}

async fn session(sandbox: &Sandbox) -> Session {
    Session::start(
        sandbox,
        vec![ContextInput::from("x")],
        None,
        Arc::new(TableHost),
    )
    .await
    .unwrap()
}

/// Monty in a worker process and in-process, and CPython when this machine has `python3`.
fn sandboxes() -> Vec<Sandbox> {
    let mut sandboxes = vec![sandbox(Isolation::Process), sandbox(Isolation::InProcess)];
    match Sandbox::builder()
        .backend(Backend::Python)
        .limits(common::small_limits())
        .build()
    {
        Ok(python) => sandboxes.push(python),
        Err(rlm_sandbox::Error::Spawn { .. }) => eprintln!("python3 not found; Monty only"),
        Err(error) => panic!("python backend unavailable: {error}"),
    }
    sandboxes
}

#[tokio::test]
async fn functions_answer_with_python_data_and_raise_the_named_exception() {
    for sandbox in sandboxes() {
        let mut session = session(&sandbox).await;
        let code = "\
rows = lookup('rows')
print(rows[0]['tags'][1], rows[1]['id'] * 2, lookup(key=None, default=7))
try:
    lookup('missing')
except LookupError as error:
    print('caught', error)
print(grep('x.y'))
";
        let result = session.execute(code).await.unwrap();
        assert!(result.is_ok(), "{result:?}");
        assert_eq!(
            result.stdout,
            "b 5.0 7\ncaught no entry \"missing\"\n{'host_grep': 'x.y'}\n"
        );
        let wrong = session.execute("lookup('a', 1, 2)").await.unwrap();
        assert_eq!(wrong.exception.unwrap().kind, "TypeError");
        let uncaught = session.execute("lookup('gone')").await.unwrap();
        let exception = uncaught.exception.unwrap();
        assert_eq!(
            (exception.kind.as_str(), exception.message.as_str()),
            ("LookupError", "no entry \"gone\"")
        );
    }
}
