//! `budget()`: what model code can ask about its run's limits before it fans out, instead of
//! finding them by a refused call. The engine answers it itself, in every run's session.

use std::time::Instant;

use serde_json::{Value, json};

use crate::functions::FunctionSpec;
use crate::limits::RunAccount;

/// The Python name.
pub(crate) const NAME: &str = "budget";

/// What the system prompt says of it, when the run has a limit to ask about.
pub(crate) const PROMPT_NOTE: &str = "- `budget()`: what is left of this run's limits, as a dict: \
`cost_usd_left`, `tokens_left`, `calls_left` (model calls), `subcalls_left`, `seconds_left` \
(`None` where there is no limit), what this run and its sub-calls used so far (`cost_usd_spent`, \
`tokens_spent`, `calls_made`, `subcalls_made`, `seconds_elapsed`), and `stopped`, the reason \
nothing more can be sent, if any. Check it before a large `llm_query_batched` and size the \
batch to what is left.\n";

/// The function's signature: no parameters.
pub(crate) fn spec() -> FunctionSpec {
    FunctionSpec::new(NAME, Vec::new())
}

/// The answer for the run of `account`: each limit's room, the smallest along the path to the
/// root (an ancestor's budget bounds its children), and what this run and everything below it
/// used.
pub(crate) fn answer(account: &RunAccount) -> Value {
    let remaining = account.spend().remaining();
    let spent = account.spend().total();
    let now = Instant::now();
    let seconds_left = account
        .deadline()
        .map(|deadline| deadline.saturating_duration_since(now).as_secs_f64());
    json!({
        "cost_usd_left": remaining.cost_usd,
        "tokens_left": remaining.tokens,
        "calls_left": remaining.calls,
        "subcalls_left": account.subcalls_left(),
        "seconds_left": seconds_left,
        "cost_usd_spent": spent.cost_usd,
        "tokens_spent": spent.usage.total(),
        "calls_made": spent.calls + spent.failures,
        "subcalls_made": account.subcalls(),
        "seconds_elapsed": now.duration_since(account.started()).as_secs_f64(),
        "stopped": remaining.stopped,
    })
}
