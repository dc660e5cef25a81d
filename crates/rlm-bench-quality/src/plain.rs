//! The baseline an RLM is measured against (`--mode plain`): one call of the same model with the
//! whole context in its prompt and the question after it, as a program without the loop would
//! ask. Same model, output cap, temperature, time limit and spend limits as the loop's runs; a
//! context over the model's known window is not sent (it cannot be read whole) and fails.

use std::time::{Duration, Instant};

use rlm_app::settings::LoopSettings;
use rlm_engine::Status;
use rlm_llm::{Budget, ChatRequest, ContextWindows, Ledger, LlmClient, ModelTotals};

use crate::report::Outcome;
use crate::tasks::Task;

/// The system prompt of a plain call: the context comes whole in the user's message.
const SYSTEM: &str = "The user's message holds a context, then a question about it. Read the \
                      context and reply with the answer alone: no working, no explanation.";

/// What a plain call needs of the loop's settings.
#[derive(Debug, Clone)]
pub struct Plain {
    client: LlmClient,
    model: String,
    windows: ContextWindows,
    max_tokens: u32,
    temperature: Option<f32>,
    timeout: Option<Duration>,
    spend: Budget,
}

impl Plain {
    /// The plain call as `settings` would run the loop: its root model and limits, on `client`.
    pub fn new(settings: &LoopSettings, client: LlmClient) -> Self {
        let window = settings.context_windows.get(&settings.model);
        let max_tokens = settings
            .embedding
            .root_max_output_tokens
            .unwrap_or_else(|| settings.llm.output_cap(&settings.model, window));
        Self {
            client,
            model: settings.model.clone(),
            windows: settings.context_windows.clone(),
            max_tokens,
            temperature: settings.embedding.root_temperature,
            timeout: settings.limits.timeout,
            spend: settings.limits.spend,
        }
    }

    /// The request a task's plain call sends.
    pub fn request(&self, task: &Task) -> ChatRequest {
        let mut request = ChatRequest::new(self.model.clone())
            .system(SYSTEM)
            .user(format!(
                "Context:\n\n{}\n\nQuestion: {}",
                task.context, task.question
            ))
            .max_tokens(self.max_tokens);
        if let Some(temperature) = self.temperature {
            request = request.temperature(temperature);
        }
        request
    }

    /// Asks `task` in one call and says how it ended.
    pub async fn answer(&self, task: &Task) -> Outcome {
        let started = Instant::now();
        let request = self.request(task);
        if let Err(too_long) = self.windows.check(&request) {
            let error = format!(
                "not sent: the prompt (~{} tokens) is over the model's window of {} tokens, so \
                 one call cannot read the context whole",
                rlm_context::thousands(too_long.estimated_tokens),
                rlm_context::thousands(too_long.window)
            );
            return plain_outcome(None, Some(error), ModelTotals::default(), started.elapsed());
        }
        let mut client = self.client.with_ledger(Ledger::with_budget(self.spend));
        if let Some(timeout) = self.timeout {
            client = client.with_deadline(started + timeout);
        }
        let reply = client.chat(&request).await;
        // The client's ledger counts the call: answered, failed, or cut off with what it streamed.
        let usage = client.ledger().total();
        let (answer, error) = match reply {
            Ok(response) if response.text.trim().is_empty() => {
                (None, Some("the reply was empty".to_owned()))
            }
            Ok(response) => (Some(response.text.trim().to_owned()), None),
            Err(error) => (None, Some(format!("{:#}", anyhow::Error::new(error)))),
        };
        plain_outcome(answer, error, usage, started.elapsed())
    }
}

fn plain_outcome(
    answer: Option<String>,
    error: Option<String>,
    usage: ModelTotals,
    elapsed: Duration,
) -> Outcome {
    Outcome {
        status: answer.as_ref().map(|_| Status::Answered),
        answer,
        error,
        usage,
        iterations: 1,
        run_id: None,
        log: None,
        seconds: elapsed.as_secs_f64(),
    }
}
