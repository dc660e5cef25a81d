//! The engine's answers to the host functions model code calls: plain sub-model calls and
//! recursive child runs, each checked against the shared budget and recorded for the trajectory.

use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use futures::future::join_all;
use tokio::sync::Semaphore;

use rlm_llm::{ChatRequest, Estimate, UsageReport};
use rlm_sandbox::Host;
use rlm_trace::{HostCall, Subcall, UsageSummary};

use crate::context::ContextPart;
use crate::events::{Event, Progress, SubcallKind};
use crate::functions::{FunctionError, FunctionSpec, HostFunctions, RaisedKind, call_logged};
use crate::limits::RunAccount;
use crate::prompt::{fence, render, truncate};
use crate::rlm::Shared;
use crate::run::{error_chain, run_loop};
use crate::tools::Toolbox;

/// How much of a sub-call's prompt and response the trajectory keeps (sizes are always logged).
const LOG_PREVIEW_CHARS: usize = 4_000;
/// How much of a delegated prompt a [`Event::ChildRunStarted`] carries.
const CHILD_PREVIEW_CHARS: usize = 80;

/// Why a sub-call gave no answer: refused before it was sent (a spent budget), or failed.
#[derive(Debug)]
enum SubcallError {
    Refused(String),
    Failed(String),
}

impl SubcallError {
    fn into_message(self) -> String {
        match self {
            Self::Refused(message) | Self::Failed(message) => message,
        }
    }
}

impl From<String> for SubcallError {
    fn from(message: String) -> Self {
        Self::Failed(message)
    }
}

/// Everything one run needs; also the sandbox [`Host`] its session calls back into.
#[derive(Debug)]
pub(crate) struct RunScope {
    pub shared: Arc<Shared>,
    pub depth: u32,
    pub run_id: String,
    pub model: String,
    pub account: Arc<RunAccount>,
    pub root: Arc<RunAccount>,
    /// Directory and stem of this run's trajectory file, when logging.
    pub log: Option<(PathBuf, String)>,
    pub in_flight: Arc<AtomicUsize>,
    children: AtomicU32,
    child_permits: Semaphore,
    /// Bounds the sub-calls in flight when the user set `max_concurrent_subcalls`.
    subcall_permits: Option<Semaphore>,
    records: Mutex<Vec<Subcall>>,
    host_calls: Mutex<Vec<HostCall>>,
}

impl RunScope {
    #[expect(
        clippy::too_many_arguments,
        reason = "internal constructor, named at each call"
    )]
    pub fn new(
        shared: Arc<Shared>,
        depth: u32,
        run_id: String,
        model: String,
        account: Arc<RunAccount>,
        root: Arc<RunAccount>,
        log: Option<(PathBuf, String)>,
        in_flight: Arc<AtomicUsize>,
    ) -> Self {
        let permits = shared.settings.max_concurrent_children.max(1);
        let subcall_permits = shared
            .settings
            .max_concurrent_subcalls
            .map(|permits| Semaphore::new(permits.max(1)));
        Self {
            shared,
            depth,
            run_id,
            model,
            account,
            root,
            log,
            in_flight,
            children: AtomicU32::new(0),
            child_permits: Semaphore::new(permits),
            subcall_permits,
            records: Mutex::new(Vec::new()),
            host_calls: Mutex::new(Vec::new()),
        }
    }

    /// Tree totals for progress events.
    pub fn progress(&self) -> Progress {
        let total = self.root.spend().total();
        Progress {
            tokens: total.usage.total(),
            cost_usd: total.cost_usd,
            unpriced_calls: total.unpriced_calls,
            subcalls_in_flight: self.in_flight.load(Ordering::Relaxed),
        }
    }

    /// Takes the sub-call records made since the last call.
    pub fn take_records(&self) -> Vec<Subcall> {
        std::mem::take(&mut *self.records.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Takes the host-function records made since the last call.
    pub fn take_host_calls(&self) -> Vec<HostCall> {
        std::mem::take(
            &mut *self
                .host_calls
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// The host functions of this run: the root run's, which its `rlm_query` child runs
    /// inherit (a child over a store can search it too).
    pub fn host_functions(&self) -> Option<&Arc<dyn HostFunctions>> {
        self.shared.functions.as_ref()
    }

    /// The custom tools of this run: the root's, or the child runs' own.
    pub fn toolbox(&self) -> &Toolbox {
        if self.depth == 0 {
            &self.shared.settings.tools
        } else {
            &self.shared.settings.sub_tools
        }
    }

    fn emit(&self, event: &Event<'_>) {
        if let Some(sink) = &self.shared.events {
            sink.event(event);
        }
    }

    fn push(&self, record: Subcall) {
        self.records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(record);
    }

    /// The model a sub-call uses: the user's sub-call model unless the code names another
    /// one the user allowed (`--allow-model`, or the root model itself).
    fn pick_model(&self, kind: SubcallKind, requested: Option<String>) -> Result<String, String> {
        let settings = &self.shared.settings;
        let Some(requested) = requested else {
            return Ok(settings.subcall_model.clone());
        };
        let allowed = requested == settings.subcall_model
            || requested == settings.root_model
            || settings.allowed_models.contains(&requested);
        if allowed {
            Ok(requested)
        } else {
            Err(format!(
                "{} refused: model {requested:?} is not allowed; leave out `model=` to use \
                 {:?}, or the user can allow it with `rlm run --allow-model {requested}`",
                kind.name(),
                settings.subcall_model,
            ))
        }
    }

    /// Refuses a prompt over [`RunLimits::max_prompt_bytes`](crate::RunLimits), before
    /// anything is spent.
    fn check_size(&self, kind: SubcallKind, prompt: &str) -> Result<(), SubcallError> {
        let limit = self.account.limits().max_prompt_bytes;
        if prompt.len() <= limit {
            return Ok(());
        }
        Err(SubcallError::Failed(format!(
            "{} prompt is {}; the limit is {} — pass a slice or summarize first",
            kind.name(),
            rlm_sandbox::format_size(prompt.len()),
            rlm_sandbox::format_size(limit),
        )))
    }

    /// Reserves one sub-call in the budget, or says which budget is spent.
    fn admit(&self, kind: SubcallKind) -> Result<(), SubcallError> {
        self.account.subcall_allowed().map_err(|reason| {
            SubcallError::Refused(format!(
                "{} refused: the run's {reason} budget is exhausted",
                kind.name(),
            ))
        })?;
        self.account.record_subcall();
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        self.emit(&Event::SubcallStarted {
            depth: self.depth,
            kind,
            progress: self.progress(),
        });
        Ok(())
    }

    /// Takes back [`Self::admit`] for a sub-call refused before it was sent (its budget ran
    /// out while it waited for a slot): not counted, as one refused at admission is not.
    fn withdraw(&self, kind: SubcallKind) {
        self.account.unrecord_subcall();
        self.finish(kind, true);
    }

    fn finish(&self, kind: SubcallKind, failed: bool) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.emit(&Event::SubcallFinished {
            depth: self.depth,
            kind,
            failed,
            progress: self.progress(),
        });
    }

    /// One `llm_query`. Everything up to the send runs before the first `.await`, so the
    /// items of a batch are admitted in order; the client asks the reservation again before
    /// it sends (a batch's later items wait for slots, and the budget may run out meanwhile)
    /// and settles it; it is released if the future is dropped.
    async fn plain_call(
        &self,
        prompt: String,
        model: Option<String>,
    ) -> Result<String, SubcallError> {
        // Held until the call ends: at most `max_concurrent_subcalls` in flight.
        let _permit = match &self.subcall_permits {
            Some(permits) => Some(
                permits
                    .acquire()
                    .await
                    .map_err(|_| "llm_query refused: the run is shutting down".to_owned())?,
            ),
            None => None,
        };
        let model = self.pick_model(SubcallKind::LlmQuery, model)?;
        self.check_size(SubcallKind::LlmQuery, &prompt)?;
        // The log keeps a preview; the prompt itself moves into the request (no second copy).
        let logged = PromptPreview::of(&prompt);
        let mut request = ChatRequest::new(model.as_str()).user(prompt);
        request.max_tokens = self.shared.settings.subcall_max_output_tokens;
        request.temperature = self.shared.settings.subcall_temperature;
        if let Err(too_long) = self.shared.settings.context_windows.check(&request) {
            return Err(SubcallError::Failed(format!(
                "llm_query refused: the prompt is about {} tokens; {model} reads at most {} — \
                 pass a slice or summarize first",
                rlm_context::thousands(too_long.estimated_tokens),
                rlm_context::thousands(too_long.window),
            )));
        }
        let price = self.shared.client.price(&model);
        let reservation = self
            .account
            .spend()
            .reserve(Estimate::of(&request, price.as_ref()))
            .map_err(|err| SubcallError::Refused(format!("llm_query refused: {err}")))?;
        self.admit(SubcallKind::LlmQuery)?;
        let started = Instant::now();
        let reply = crate::run::until(
            self.account.deadline(),
            self.shared.client.complete(&request, reservation),
        )
        .await;
        let mut totals = UsageReport::default();
        let result = match reply {
            None => Err("timed out: the run's time budget is spent".to_owned()),
            Some(Err(refused @ rlm_llm::Error::BudgetExhausted { .. })) => {
                // Admitted, then refused before it was sent: nothing to log.
                self.withdraw(SubcallKind::LlmQuery);
                return Err(SubcallError::Refused(format!(
                    "llm_query refused: {refused}"
                )));
            }
            Some(Err(err)) => Err(error_chain(&err)),
            Some(Ok(reply)) => {
                totals.add(&model, &reply);
                Ok(reply.text)
            }
        };
        self.push(record(
            SubcallKind::LlmQuery,
            &model,
            logged,
            &result,
            &totals,
            started,
            None,
        ));
        self.finish(SubcallKind::LlmQuery, result.is_err());
        result.map_err(SubcallError::Failed)
    }

    async fn child_run(
        &self,
        prompt: String,
        model: Option<String>,
    ) -> Result<String, SubcallError> {
        if self.depth + 1 >= self.shared.settings.max_depth {
            return self.plain_call(prompt, model).await;
        }
        let model = self.pick_model(SubcallKind::RlmQuery, model)?;
        self.check_size(SubcallKind::RlmQuery, &prompt)?;
        // Bounds how many child sessions (worker processes) one run opens at once.
        let _permit = self
            .child_permits
            .acquire()
            .await
            .map_err(|_| "rlm_query refused: the run is shutting down".to_owned())?;
        self.admit(SubcallKind::RlmQuery)?;
        let started = Instant::now();
        let number = self.children.fetch_add(1, Ordering::Relaxed) + 1;
        let run_id = format!("{}.{number}", self.run_id);
        let account = RunAccount::child(&self.account, self.shared.settings.child_limits.clone());
        let log = self
            .log
            .as_ref()
            .map(|(dir, stem)| (dir.clone(), format!("{stem}.{number}")));
        let scope = Arc::new(RunScope::new(
            Arc::clone(&self.shared),
            self.depth + 1,
            run_id.clone(),
            model.clone(),
            account,
            Arc::clone(&self.root),
            log,
            Arc::clone(&self.in_flight),
        ));
        let prompt_preview: String = prompt.chars().take(CHILD_PREVIEW_CHARS).collect();
        self.emit(&Event::ChildRunStarted {
            depth: self.depth + 1,
            model: &model,
            prompt_preview: &prompt_preview,
        });
        // The delegated text is another model's words: fenced, it cannot pose as ours.
        let preview = fence(&truncate(&prompt, 1_000));
        let chars = prompt.chars().count().to_string();
        let query = render(
            &self.shared.settings.prompts.child_task,
            &[("chars", chars.as_str()), ("preview", preview.as_str())],
        );
        let contexts = vec![ContextPart::new(prompt.as_str()).with_name("delegated request")];
        let outcome = run_loop(
            Arc::clone(&scope),
            &query,
            contexts,
            Some(&self.run_id),
            None,
        )
        .await;
        let (result, usage, log_path): (Result<String, String>, UsageReport, Option<PathBuf>) =
            match outcome {
                Err(err) => (
                    Err(format!("child run failed: {}", error_chain(&err))),
                    scope.account.spend().report(),
                    None,
                ),
                Ok(result) => {
                    let outcome = result.outcome;
                    let answer = match (outcome.answer, outcome.error) {
                        (Some(answer), _) => Ok(answer),
                        (None, Some(error)) => Err(format!(
                            "child run ended without an answer ({}: {error})",
                            outcome.status
                        )),
                        (None, None) => Err(format!(
                            "child run ended without an answer ({})",
                            outcome.status
                        )),
                    };
                    (answer, outcome.usage, result.trajectory)
                }
            };
        let mut entry = record(
            SubcallKind::RlmQuery,
            &model,
            PromptPreview::of(&prompt),
            &result,
            &usage,
            started,
            Some(run_id),
        );
        entry.child_log = log_path;
        self.push(entry);
        self.emit(&Event::ChildRunFinished {
            depth: self.depth + 1,
            model: &model,
            seconds: started.elapsed().as_secs_f64(),
            error: result.as_ref().err().map(String::as_str),
        });
        self.finish(SubcallKind::RlmQuery, result.is_err());
        result.map_err(SubcallError::Failed)
    }
}

/// The sandbox calls back into the run that opened the session: `Arc<RunScope>` is the
/// session's `Arc<dyn Host>` itself, with no forwarding layer in between.
#[async_trait::async_trait]
impl Host for RunScope {
    async fn llm_query(&self, prompt: String, model: Option<String>) -> Result<String, String> {
        self.plain_call(prompt, model)
            .await
            .map_err(SubcallError::into_message)
    }

    async fn llm_query_batched(
        &self,
        prompts: Vec<String>,
        model: Option<String>,
    ) -> Vec<Result<String, String>> {
        fan_out(self, prompts, model, RunScope::plain_call).await
    }

    async fn rlm_query(&self, prompt: String, model: Option<String>) -> Result<String, String> {
        self.child_run(prompt, model)
            .await
            .map_err(SubcallError::into_message)
    }

    async fn rlm_query_batched(
        &self,
        prompts: Vec<String>,
        model: Option<String>,
    ) -> Vec<Result<String, String>> {
        fan_out(self, prompts, model, RunScope::child_run).await
    }

    /// The run's own `budget()`, then the embedding program's functions (one of those named
    /// `budget` is left out).
    fn functions(&self) -> Vec<FunctionSpec> {
        let mut functions = vec![crate::budget_function::spec()];
        if let Some(host) = self.host_functions() {
            functions.extend(
                host.functions()
                    .into_iter()
                    .filter(|function| function.name != crate::budget_function::NAME),
            );
        }
        functions.extend(self.toolbox().specs());
        functions
    }

    async fn call_function(
        &self,
        name: String,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<serde_json::Value, FunctionError> {
        if name == crate::budget_function::NAME {
            let started = Instant::now();
            let answer = crate::budget_function::answer(&self.account);
            self.host_calls
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(HostCall {
                    name,
                    arguments: "{}".to_owned(),
                    result_bytes: answer.to_string().len() as u64,
                    result_items: 1,
                    result: Some(answer.to_string()),
                    seconds: started.elapsed().as_secs_f64(),
                    error: None,
                });
            return Ok(answer);
        }
        let toolbox = self.toolbox();
        let functions = if toolbox.has_function(&name) {
            toolbox.host().cloned()
        } else {
            self.host_functions().cloned()
        };
        let Some(functions) = functions else {
            return Err(FunctionError::new(
                RaisedKind::NameError,
                format!("name '{name}' is not defined"),
            ));
        };
        let (result, record) = call_logged(functions, name, arguments).await;
        self.host_calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(record);
        result
    }
}

/// Runs one call per prompt concurrently; each item keeps its own result, in prompt order.
/// Items refused before sending (a spent budget) say how many of the batch were not sent.
async fn fan_out<'scope, F, Fut>(
    scope: &'scope RunScope,
    prompts: Vec<String>,
    model: Option<String>,
    call: F,
) -> Vec<Result<String, String>>
where
    F: Fn(&'scope RunScope, String, Option<String>) -> Fut,
    Fut: Future<Output = Result<String, SubcallError>>,
{
    let total = prompts.len();
    let calls: Vec<_> = prompts
        .into_iter()
        .map(|prompt| call(scope, prompt, model.clone()))
        .collect();
    let results = join_all(calls).await;
    let refused = results
        .iter()
        .filter(|result| matches!(result, Err(SubcallError::Refused(_))))
        .count();
    results
        .into_iter()
        .map(|result| {
            result.map_err(|err| match err {
                SubcallError::Refused(reason) => {
                    format!("budget exhausted: {refused} of {total} prompts not sent ({reason})")
                }
                SubcallError::Failed(message) => message,
            })
        })
        .collect()
}

/// What the log keeps of a sub-call's prompt: a preview and its length.
struct PromptPreview {
    text: String,
    chars: u64,
}

impl PromptPreview {
    fn of(prompt: &str) -> Self {
        Self {
            text: truncate(prompt, LOG_PREVIEW_CHARS),
            chars: prompt.chars().count() as u64,
        }
    }
}

fn record(
    kind: SubcallKind,
    model: &str,
    prompt: PromptPreview,
    result: &Result<String, String>,
    usage: &UsageReport,
    started: Instant,
    child_run_id: Option<String>,
) -> Subcall {
    let (response, error) = match result {
        Ok(text) => (text.as_str(), None),
        Err(err) => (err.as_str(), Some(err.clone())),
    };
    Subcall {
        kind,
        model: model.to_owned(),
        prompt: prompt.text,
        prompt_chars: prompt.chars,
        response: truncate(response, LOG_PREVIEW_CHARS),
        response_chars: response.chars().count() as u64,
        usage_summary: UsageSummary::of(usage),
        cost_usd: usage.total.cost_usd,
        seconds: started.elapsed().as_secs_f64(),
        error,
        child_run_id,
        child_log: None,
    }
}
