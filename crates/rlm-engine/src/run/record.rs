//! The run as trajectory records: the metadata line and a turn's line (the result line is the
//! run's [`RunResult::outcome`](super::RunResult::outcome), its large text stored once).

use std::time::Instant;

use rlm_llm::{ChatRequest, ChatResponse, ModelTotals};
use rlm_trace::{
    BackendArguments, Budget, Iteration, RunMetadata, RunOutcome, VariableInfo, VariablesSnapshot,
};
use serde_json::Map;

use crate::context::{self, ContextPart};
use crate::host::RunScope;
use crate::trace::{self, RunLog};

/// The first line: models, limits, the query and what the model is told about the contexts.
pub(super) fn metadata(
    log: &RunLog,
    scope: &RunScope,
    query: &str,
    parent_run_id: Option<&str>,
    contexts: &[ContextPart],
) -> RunMetadata {
    let settings = &scope.shared.settings;
    let limits = scope.account.limits();
    RunMetadata {
        run_id: scope.run_id.clone(),
        parent_run_id: parent_run_id.map(str::to_owned),
        depth: scope.depth,
        root_model: scope.model.clone(),
        subcall_model: settings.subcall_model.clone(),
        max_depth: settings.max_depth,
        max_iterations: limits.max_iterations,
        backend: "rlm".to_owned(),
        backend_kwargs: BackendArguments {
            model_name: scope.model.clone(),
        },
        environment_type: settings.environment_name.clone(),
        environment_kwargs: Map::new(),
        other_backends: vec![settings.subcall_model.clone()],
        query: log.text(query),
        contexts: context::contexts_info(contexts),
        budget: Budget {
            max_tokens: limits.spend.max_tokens,
            max_cost_usd: limits.spend.max_cost_usd,
            max_calls: limits.spend.max_calls,
            timeout_seconds: limits.timeout.map(|t| t.as_secs_f64()),
            max_subcalls: limits.max_subcalls,
            max_consecutive_errors: limits.max_consecutive_errors,
        },
    }
}

/// A turn's line without code blocks, answer or notes (the caller adds what it has), timed
/// from `started` to now.
pub(super) fn iteration(
    log: &RunLog,
    scope: &RunScope,
    number: u32,
    conversation: &ChatRequest,
    reply: &ChatResponse,
    usage: &ModelTotals,
    started: Instant,
) -> Iteration {
    Iteration {
        iteration: number,
        run_id: scope.run_id.clone(),
        prompt: trace::transcript(log, conversation),
        response: log.text(&reply.text),
        code_blocks: Vec::new(),
        final_answer: None,
        seconds: started.elapsed().as_secs_f64(),
        usage: usage.clone(),
        notes: Vec::new(),
    }
}

/// The line before the last: the REPL's variables, their literals as the log stores text (a
/// large one once, as a preview with its size and hash: the whole value is for sessions).
pub(super) fn variables(log: &RunLog, snapshot: &VariablesSnapshot) -> VariablesSnapshot {
    VariablesSnapshot {
        run_id: snapshot.run_id.clone(),
        variables: snapshot
            .variables
            .iter()
            .map(|variable| VariableInfo {
                literal: log.optional(variable.literal.as_deref()),
                ..variable.clone()
            })
            .collect(),
    }
}

/// The last line: the run's outcome with its answers as the log stores text (a large answer
/// once, as a preview with its size and hash).
pub(super) fn outcome(log: &RunLog, outcome: &RunOutcome) -> RunOutcome {
    RunOutcome {
        run_id: outcome.run_id.clone(),
        status: outcome.status,
        answer: log.optional(outcome.answer.as_deref()),
        partial_answer: log.optional(outcome.partial_answer.as_deref()),
        iterations: outcome.iterations,
        usage: outcome.usage.clone(),
        subcalls: outcome.subcalls,
        usage_summary: outcome.usage_summary.clone(),
        seconds: outcome.seconds,
        error: outcome.error.clone(),
    }
}
