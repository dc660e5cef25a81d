//! `rlm doctor`: every check of the store, each with its fix; exit 1 when something is wrong.

use std::io::Write as _;
use std::process::ExitCode;

use rlm_app::operations::doctor::DoctorRecord;
use rlm_app::requests::DoctorRequest;

use super::Run;
use crate::output;

pub fn run(run: &Run<'_>, request: DoctorRequest) -> anyhow::Result<ExitCode> {
    let outcome = rlm_app::operations::doctor(&run.sources, &request, &run.context)?;
    if run.global.json {
        run.print_json(&outcome)?;
    }
    let problems = match outcome.records.last() {
        Some(DoctorRecord::Summary { problems, .. }) => *problems,
        _ => 0,
    };
    if !run.global.json {
        let mut out = output::stdout();
        // The store first: the checks are about it.
        if let Some(DoctorRecord::Summary { store, .. }) = outcome.records.last() {
            writeln!(out, "store: {store}")?;
        }
        for record in &outcome.records {
            let DoctorRecord::Check(check) = record else {
                continue;
            };
            let state = if check.ok { "ok" } else { "problem" };
            // Details quote file names from the store directory: no control characters.
            writeln!(
                out,
                "{state:<8} {:<16} {}",
                check.name,
                output::neutralize(&check.detail)
            )?;
            if let Some(fix) = &check.fix {
                // A healthy state with a next step (an embedding to finish) is no fix.
                let label = if check.ok { "next" } else { "fix" };
                writeln!(out, "{:<8} {:<16} {label}: {fix}", "", "")?;
            }
        }
    }
    if !run.global.quiet {
        if problems == 0 {
            eprintln!("no problems found");
        } else {
            eprintln!("{}", output::count(problems as u64, "problem"));
        }
    }
    run.exit(outcome)
}
