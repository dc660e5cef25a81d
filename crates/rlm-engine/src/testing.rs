//! In-memory fakes of the model and the REPL, for tests of the loop (feature `test-support`).
//!
//! [`FakeRepl`] understands a tiny line language, just enough to drive the loop:
//! `name = <json>`, `name = llm_query("p")` (optionally `, model="m"`), `name = llm_query_batched(["a", "b"])`,
//! `name = rlm_query("p")`, `name = f({"arg": <json>})` for a host function `f` of the
//! session ([`crate::HostFunctions`]), `print(name)` / `print("text")`, `raise Kind("message")`,
//! `FINAL_VAR("name")`. Values are JSON (`True`/`False`/`None` are accepted).

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use std::time::Duration;

use futures::FutureExt as _;
use futures::future::BoxFuture;
use rlm_llm::{ChatRequest, ChatResponse, Message, Price, Reservation, Usage};
use serde_json::Value;

use crate::model::ModelClient;
use crate::repl::{ExecOutcome, ReplError, ReplFactory, ReplSession, SessionSpec};

type Responder = dyn Fn(&str, &[Message]) -> Option<String> + Send + Sync;

/// A model that answers from per-model queues, then from an optional responder closure.
/// Requests are seen as transcripts: the system prompt first, as a [`rlm_llm::Role::System`]
/// message.
pub struct ScriptedModel {
    queues: Mutex<BTreeMap<String, VecDeque<String>>>,
    responder: Option<Box<Responder>>,
    calls: Mutex<Vec<(String, Vec<Message>)>>,
    usage: Usage,
    cost_usd: Option<f64>,
    price: Option<Price>,
}

impl std::fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedModel").finish_non_exhaustive()
    }
}

impl Default for ScriptedModel {
    fn default() -> Self {
        Self {
            queues: Mutex::default(),
            responder: None,
            calls: Mutex::default(),
            usage: Usage {
                input_tokens: 10,
                output_tokens: 5,
                ..Usage::default()
            },
            cost_usd: Some(0.001),
            // What makes the default usage cost $0.001.
            price: Some(Price {
                input_per_mtok: 50.0,
                output_per_mtok: 100.0,
                cache_read_per_mtok: None,
                cache_write_per_mtok: None,
            }),
        }
    }
}

impl ScriptedModel {
    /// Queues replies for `model`, answered in order.
    #[must_use]
    pub fn replies(self, model: &str, replies: &[&str]) -> Self {
        self.queues
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(model.to_owned())
            .or_default()
            .extend(replies.iter().map(|r| (*r).to_owned()));
        self
    }

    /// Answers requests the queues cannot: `(model, messages) -> reply`.
    #[must_use]
    pub fn responder(
        mut self,
        responder: impl Fn(&str, &[Message]) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.responder = Some(Box::new(responder));
        self
    }

    /// The usage and cost (`None`: unknown price) every call reports.
    #[must_use]
    pub fn usage(mut self, usage: Usage, cost_usd: Option<f64>) -> Self {
        self.usage = usage;
        self.cost_usd = cost_usd;
        self
    }

    /// The price the engine sees for every model (`None`: unknown), used to reserve budget.
    #[must_use]
    pub fn price(mut self, price: Option<Price>) -> Self {
        self.price = price;
        self
    }

    /// Every request so far: (model, transcript).
    pub fn calls(&self) -> Vec<(String, Vec<Message>)> {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl ModelClient for ScriptedModel {
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        reservation: Reservation,
    ) -> BoxFuture<'a, Result<ChatResponse, rlm_llm::Error>> {
        // As the real client: asked before the send, settled with the reply.
        if let Err(refused) = reservation.check_send() {
            return async move { Err(refused) }.boxed();
        }
        let transcript = request.transcript();
        let queued = self
            .queues
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_mut(&request.model)
            .and_then(VecDeque::pop_front);
        let text = queued.or_else(|| {
            self.responder
                .as_ref()
                .and_then(|r| r(&request.model, &transcript))
        });
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((request.model.clone(), transcript));
        let reply = match text {
            Some(text) => {
                let reply = self.reply(request, text);
                reservation.settle(&request.model, &reply);
                Ok(reply)
            }
            None => {
                reservation.fail(&request.model, Duration::ZERO, 0);
                Err(rlm_llm::Error::Status {
                    provider: "scripted".to_owned(),
                    model: request.model.clone(),
                    status: 404,
                    message: "no scripted reply".to_owned(),
                })
            }
        };
        async move { reply }.boxed()
    }

    fn price(&self, _model: &str) -> Option<Price> {
        self.price
    }
}

impl ScriptedModel {
    /// As providers do: the reply ends before the first stop sequence, which is dropped.
    fn reply(&self, request: &ChatRequest, mut text: String) -> ChatResponse {
        let cut = request
            .stop
            .iter()
            .filter_map(|s| text.find(s.as_str()))
            .min();
        let finish_reason = match cut {
            Some(at) => {
                text.truncate(at);
                "stop_sequence"
            }
            None => "end_turn",
        };
        ChatResponse {
            text,
            tool_calls: Vec::new(),
            model: request.model.clone(),
            finish_reason: Some(finish_reason.to_owned()),
            usage: self.usage,
            usage_estimated: false,
            cost_usd: self.cost_usd,
            latency: Duration::ZERO,
            retries: 0,
            replayed: false,
        }
    }
}

/// Opens [`FakeSession`]s.
#[derive(Debug, Default)]
pub struct FakeRepl;

impl ReplFactory for FakeRepl {
    fn open(&self, spec: SessionSpec) -> BoxFuture<'_, Result<Box<dyn ReplSession>, ReplError>> {
        let mut variables = BTreeMap::new();
        for (index, part) in spec.contexts.iter().enumerate() {
            // An in-process REPL holds the text, so a file part is read here.
            let text = match part.read_text() {
                Ok(text) => text,
                Err(err) => {
                    let message = format!("cannot read context {index}: {err}");
                    return async move { Err(ReplError::new(message)) }.boxed();
                }
            };
            if index == 0 {
                variables.insert("context".to_owned(), Value::String(text.to_string()));
            }
            variables.insert(format!("context_{index}"), Value::String(text.to_string()));
        }
        variables.insert("contextMeta".to_owned(), spec.context_meta);
        let session: Box<dyn ReplSession> = Box::new(FakeSession {
            variables,
            host: spec.host,
        });
        async move { Ok(session) }.boxed()
    }
}

/// A session of the fake line language.
pub struct FakeSession {
    variables: BTreeMap<String, Value>,
    host: Arc<dyn rlm_sandbox::Host>,
}

impl fmt::Debug for FakeSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeSession")
            .field("variables", &self.variables)
            .finish_non_exhaustive()
    }
}

impl FakeSession {
    async fn run_line(&mut self, line: &str, out: &mut ExecOutcome) -> Result<(), String> {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return Ok(());
        }
        if let Some(rest) = line.strip_prefix("raise ") {
            return Err(rest.to_owned());
        }
        if let Some(arg) = call_argument(line, "print") {
            let text = match self.variables.get(arg) {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => match literal(arg)? {
                    Value::String(s) => s,
                    other => other.to_string(),
                },
            };
            out.stdout.push_str(&text);
            out.stdout.push('\n');
            return Ok(());
        }
        if let Some(arg) = call_argument(line, "FINAL_VAR") {
            let name = arg.trim_matches('"');
            let value = self
                .variables
                .get(name)
                .ok_or_else(|| format!("NameError: name '{name}' is not defined"))?;
            out.final_answer = Some(match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            });
            return Ok(());
        }
        let (name, rhs) = line
            .split_once('=')
            .ok_or_else(|| format!("SyntaxError: cannot run {line:?}"))?;
        let value = self.evaluate(rhs.trim()).await?;
        self.variables.insert(name.trim().to_owned(), value);
        Ok(())
    }

    async fn evaluate(&self, rhs: &str) -> Result<Value, String> {
        let text = |r: Result<String, String>| r.map(Value::String);
        let items = |results: Vec<Result<String, String>>| {
            Value::Array(
                results
                    .into_iter()
                    .map(|r| Value::String(r.unwrap_or_else(|e| format!("Error: {e}"))))
                    .collect(),
            )
        };
        if let Some(arg) = call_argument(rhs, "llm_query") {
            let (arg, model) = model_argument(arg)?;
            return text(self.host.llm_query(string_arg(arg)?, model).await);
        }
        if let Some(arg) = call_argument(rhs, "rlm_query") {
            return text(self.host.rlm_query(string_arg(arg)?, None).await);
        }
        if let Some(arg) = call_argument(rhs, "llm_query_batched") {
            return Ok(items(
                self.host.llm_query_batched(string_list(arg)?, None).await,
            ));
        }
        if let Some(arg) = call_argument(rhs, "rlm_query_batched") {
            return Ok(items(
                self.host.rlm_query_batched(string_list(arg)?, None).await,
            ));
        }
        for function in self.host.functions() {
            if let Some(arg) = call_argument(rhs, &function.name) {
                let arguments = match literal(arg)? {
                    Value::Object(arguments) => arguments,
                    other => return Err(format!("TypeError: expected a dict, got {other}")),
                };
                return self
                    .host
                    .call_function(function.name, arguments)
                    .await
                    .map_err(|error| format!("{:?}: {}", error.kind, error.message));
            }
        }
        literal(rhs)
    }
}

impl ReplSession for FakeSession {
    fn execute<'a>(&'a mut self, code: &'a str) -> BoxFuture<'a, Result<ExecOutcome, ReplError>> {
        async move {
            let mut outcome = ExecOutcome::default();
            for (number, line) in code.lines().enumerate() {
                if let Err(error) = self.run_line(line, &mut outcome).await {
                    outcome.error = Some(format!("{error} (line {})", number + 1));
                    break;
                }
            }
            Ok(outcome)
        }
        .boxed()
    }

    fn variable<'a>(
        &'a mut self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<Value>, ReplError>> {
        let value = self.variables.get(name).cloned();
        async move { Ok(value) }.boxed()
    }
}

fn call_argument<'a>(text: &'a str, function: &str) -> Option<&'a str> {
    text.strip_prefix(function)?
        .strip_prefix('(')?
        .strip_suffix(')')
        .map(str::trim)
}

/// Splits `"p", model="m"` into the prompt and the model.
fn model_argument(text: &str) -> Result<(&str, Option<String>), String> {
    match text.split_once(", model=") {
        Some((prompt, model)) => Ok((prompt.trim(), Some(string_arg(model.trim())?))),
        None => Ok((text, None)),
    }
}

fn literal(text: &str) -> Result<Value, String> {
    let json = text
        .replace("True", "true")
        .replace("False", "false")
        .replace("None", "null");
    serde_json::from_str(&json).map_err(|e| format!("SyntaxError: {e}"))
}

fn string_arg(text: &str) -> Result<String, String> {
    match literal(text)? {
        Value::String(s) => Ok(s),
        other => Err(format!("TypeError: expected a str, got {other}")),
    }
}

fn string_list(text: &str) -> Result<Vec<String>, String> {
    match literal(text)? {
        Value::Array(items) => items
            .into_iter()
            .map(|v| match v {
                Value::String(s) => Ok(s),
                other => Err(format!("TypeError: expected a str, got {other}")),
            })
            .collect(),
        other => Err(format!("TypeError: expected a list, got {other}")),
    }
}
