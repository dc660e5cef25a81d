//! Running a reply's code blocks in the session, in order, until one answers or the run's time
//! is up.

use rlm_trace::{CodeBlock, CodeResult};

use super::{emit, until};
use crate::events::Event;
use crate::host::RunScope;
use crate::repl::{ExecOutcome, ReplSession};

/// What a turn's code did.
#[derive(Debug, Default)]
pub(super) struct BlockRun {
    /// The blocks that ran, with their output and sub-calls.
    pub blocks: Vec<CodeBlock>,
    /// The answer given by `FINAL(...)`/`FINAL_VAR(...)` inside the code.
    pub final_answer: Option<String>,
    /// The run's time budget ran out during a block.
    pub timed_out: bool,
    /// The block whose code answered (its record's `final_answer` is filled in when logged).
    pub answered_block: Option<usize>,
}

impl BlockRun {
    /// Whether any block raised an error.
    pub fn errored(&self) -> bool {
        self.blocks.iter().any(|b| b.result.error.is_some())
    }
}

/// Runs `code_blocks` in order; stops after the block that answers or runs out of time.
pub(super) async fn run(
    scope: &RunScope,
    session: &mut dyn ReplSession,
    code_blocks: &[String],
) -> BlockRun {
    let mut run = BlockRun::default();
    for code in code_blocks {
        emit(
            scope,
            &Event::CodeStarted {
                depth: scope.depth,
                code,
            },
        );
        let outcome = match until(scope.account.deadline(), session.execute(code)).await {
            None => {
                run.timed_out = true;
                ExecOutcome {
                    error: Some("the run's time budget ran out during this block".into()),
                    ..ExecOutcome::default()
                }
            }
            Some(Ok(outcome)) => outcome,
            Some(Err(err)) => ExecOutcome {
                error: Some(format!("the REPL failed: {err}")),
                ..ExecOutcome::default()
            },
        };
        emit(
            scope,
            &Event::CodeFinished {
                depth: scope.depth,
                outcome: &outcome,
            },
        );
        let mut outcome = outcome;
        // The answer moves to the run; the block's record keeps whether it answered.
        let answered = outcome.final_answer.take();
        run.blocks.push(block_record(code, outcome, scope));
        if answered.is_some() {
            run.answered_block = Some(run.blocks.len() - 1);
        }
        run.final_answer = run.final_answer.or(answered);
        if run.final_answer.is_some() || run.timed_out {
            break;
        }
    }
    run
}

fn block_record(code: &str, outcome: ExecOutcome, scope: &RunScope) -> CodeBlock {
    CodeBlock {
        code: code.to_owned(),
        result: CodeResult {
            stdout: outcome.stdout,
            stderr: outcome.stderr,
            error: outcome.error,
            final_answer: outcome.final_answer,
            seconds: outcome.seconds,
            subcalls: scope.take_records(),
            host_calls: scope.take_host_calls(),
        },
    }
}
