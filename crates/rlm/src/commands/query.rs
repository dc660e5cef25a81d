//! `rlm query`: the report on stdout, how the query went on stderr (or the JSON result), and
//! the exit code: 0 with a report, 1 without one.

use std::io::Write as _;
use std::process::ExitCode;

use rlm_app::error::AppError;
use rlm_app::operations::query::QueryRecord;
use rlm_app::requests::QueryRequest;
use rlm_query::{QueryResult, QueryStatus};

use super::Run;
use crate::cli::GlobalArgs;
use crate::output::count;

pub fn run(run: &Run<'_>, request: QueryRequest) -> anyhow::Result<ExitCode> {
    let outcome = rlm_app::operations::query(&run.sources, &request, &run.context)?;
    let Some(QueryRecord::Result(result)) = outcome.records.first() else {
        return run.exit(outcome);
    };
    run.finish();
    let code = report(run.global, result);
    if run.global.json {
        run.print_json(&outcome)?;
        return run.exit(outcome);
    }
    code
}

/// Prints the report (or the JSON result) and picks the exit code.
fn report(global: &GlobalArgs, result: &QueryResult) -> anyhow::Result<ExitCode> {
    if !global.json {
        let mut out = crate::output::raw_stdout();
        writeln!(
            out,
            "{}",
            crate::output::for_stdout(result.report.trim_end())
        )?;
        out.flush()?;
    }
    if !global.quiet {
        let total = &result.usage.total.total;
        let cost = crate::output::totals_cost(total);
        let mut failed = if result.chunk_failures.is_empty() {
            String::new()
        } else {
            format!(
                " · {} not analysed",
                count(result.chunk_failures.len() as u64, "chunk")
            )
        };
        if !result.chunks_skipped.is_empty() {
            failed.push_str(&format!(
                " · {} skipped to keep the budget for the report",
                count(result.chunks_skipped.len() as u64, "chunk")
            ));
        }
        if result.usage.tools.calls > 0 {
            failed.push_str(&format!(
                " · {} by the report",
                count(result.usage.tools.calls as u64, "tool call")
            ));
        }
        // Every call that ran counts, failed ones (cut at the time limit, refused) included.
        let calls = if total.failures > 0 {
            let cut_off = if total.cut_off_calls > 0 {
                format!(", {} cut off", total.cut_off_calls)
            } else {
                String::new()
            };
            format!(
                "{} ({} failed{cut_off})",
                count(total.calls + total.failures, "model call"),
                total.failures
            )
        } else {
            count(total.calls, "model call")
        };
        if let Some(reason) = &result.stopped_early {
            failed.push_str(&format!(" · stopped early: {reason}"));
        }
        eprintln!(
            "{} · {} analysed of {}{failed} · {calls} · {} tokens · {cost} · {:.1}s",
            result.status.name(),
            count(result.chunks_analyzed as u64, "chunk"),
            result.chunks_selected,
            rlm_context::thousands(total.usage.total()),
            result.timings.total
        );
        if let Some(path) = &result.log {
            eprintln!(
                "trajectory: {}",
                crate::output::neutralize(&path.display().to_string())
            );
        }
    }
    let hint = match result.status {
        QueryStatus::Answered => return Ok(ExitCode::SUCCESS),
        QueryStatus::NoEvidence => "try other words, --mode bm25, a wider --path, or --scan all",
        QueryStatus::ExtractionFailed => {
            "every extractor batch failed; see the reasons above (or in --json) and the trajectory"
        }
        _ => "the report call failed; the findings were printed instead",
    };
    Err(
        AppError::failed(anyhow::anyhow!("no report: {}", result.status.name()))
            .with_hint(hint)
            .into(),
    )
}
