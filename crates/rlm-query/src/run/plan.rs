//! Stage 1: the plan — one JSON-mode call to the primary model, or the default plan.

use std::time::Instant;

use rlm_llm::{ChatRequest, ErrorKind};

use super::QueryRun;
use crate::error::{Error, Result};
use crate::events::QueryEvent;
use crate::options::QueryOptions;
use crate::plan::{Plan, PlanSource, describe_store, parse_plan};
use crate::trace::error_chain;

/// Output tokens the planner may use: a plan (a few queries, numbers, buffer names) needs a
/// few hundred.
const PLAN_MAX_TOKENS: u32 = 1_024;

/// The plan that runs, where it came from, and the fields the caller's options replaced.
pub(super) struct Planned {
    pub(super) plan: Plan,
    pub(super) source: PlanSource,
    pub(super) fixed: Vec<&'static str>,
    /// Whether the plan reply was constrained to its schema by the server.
    pub(super) constrained: bool,
}

impl QueryRun {
    /// The planner's request, unless the plan is skipped.
    pub(super) fn plan_request(&self) -> Option<ChatRequest> {
        (!self.options.skip_plan).then(|| {
            plan_request(
                &self.prompts.plan,
                &self.options,
                &self.question,
                &describe_store(&self.all_buffers, self.semantic),
            )
        })
    }

    /// Asks for the plan (within the deadline); an unusable reply or a failed call falls back
    /// to the default plan and says why. The caller's options then win over the plan.
    pub(super) async fn plan(&mut self) -> Result<Planned> {
        let stage_started = Instant::now();
        let fallback = Plan::default_for(&self.question, self.semantic);
        let (mut plan, source) = match self.plan_request() {
            Some(request) => self.ask_for_plan(&request, fallback, stage_started).await?,
            None => (fallback, PlanSource::Skipped),
        };
        let fixed = plan.apply_options(&self.options);
        self.timings.plan = stage_started.elapsed().as_secs_f64();
        self.emit(&QueryEvent::Planned {
            plan: &plan,
            source: &source,
            fixed: &fixed,
        });

        self.log.write(&rlm_trace::QueryStage {
            run_id: self.log.run_id().to_owned(),
            stage: "plan".to_owned(),
            seconds: self.timings.plan,
            detail: serde_json::json!({ "plan": plan, "source": source, "fixed_by_caller": fixed }),
        });
        // After the call, which teaches the client when the model refuses schemas.
        let constrained =
            !self.options.skip_plan && self.client.constrains_output(&self.options.model);
        Ok(Planned {
            plan,
            source,
            fixed,
            constrained,
        })
    }

    async fn ask_for_plan(
        &self,
        request: &ChatRequest,
        fallback: Plan,
        stage_started: Instant,
    ) -> Result<(Plan, PlanSource)> {
        let deadline = self.plan_deadline();
        let client = self
            .client
            .with_ledger(std::sync::Arc::clone(&self.ledgers.plan))
            .with_deadline(deadline.into_std());
        let call = client.chat(request);
        let result = tokio::time::timeout_at(deadline, call)
            .await
            .unwrap_or_else(|_| {
                Err(rlm_llm::Error::DeadlineExceeded {
                    model: self.options.model.clone(),
                })
            });
        self.log.call(
            "plan",
            None,
            1,
            &[],
            request,
            &result,
            stage_started.elapsed(),
        );
        Ok(match result {
            Ok(response) => match parse_plan(&response.text, &self.all_buffers, &fallback) {
                Ok((plan, notes)) => (plan, PlanSource::Model { notes }),
                Err(reason) => (fallback, PlanSource::Fallback { reason }),
            },
            Err(err) if err.kind() == ErrorKind::Input => {
                return Err(Error::Model {
                    stage: "plan",
                    source: err,
                });
            }
            Err(err) => (
                fallback,
                PlanSource::Fallback {
                    reason: format!("the plan call failed: {}", error_chain(&err)),
                },
            ),
        })
    }
}

/// The planner's request: the question, the store, and what the caller already fixed.
fn plan_request(system: &str, options: &QueryOptions, question: &str, store: &str) -> ChatRequest {
    let mut fixed = Vec::new();
    if let Some(mode) = options.mode {
        fixed.push(format!("mode {mode}"));
    }
    if let Some(top_k) = options.top_k {
        fixed.push(format!("top_k {top_k}"));
    }
    if let Some(batch_size) = options.batch_size {
        fixed.push(format!("batch_size {batch_size}"));
    }
    if !options.buffers.is_empty() {
        let names: Vec<String> = options
            .buffers
            .iter()
            .map(|name| crate::fence::name(name))
            .collect();
        fixed.push(format!("buffers {}", names.join(", ")));
    }
    let mut user = format!(
        "<question>\n{}\n</question>\n\nThe store:\n{store}",
        crate::fence::neutralize(question)
    );
    if !fixed.is_empty() {
        user.push_str(&format!(
            "\nThe user already fixed: {} (these override your choice).\n",
            fixed.join("; ")
        ));
    }
    ChatRequest::new(options.model.clone())
        .system(system)
        .user(user)
        .json_schema("query_plan", crate::schema::plan())
        .temperature(0.0)
        .max_tokens(options.output_cap(PLAN_MAX_TOKENS))
}
