//! `rlm doctor`: every check of the store, each with its fix; exit 1 when something is wrong.

use std::io::Write as _;
use std::process::ExitCode;

use serde::Serialize;

use crate::cli::{DoctorArgs, GlobalArgs};
use crate::error::EXIT_FAILED;
use crate::output;
use crate::settings::{Sources, StoreSettings};

pub fn run(global: &GlobalArgs, sources: &Sources, args: DoctorArgs) -> anyhow::Result<ExitCode> {
    let settings = StoreSettings::resolve(&args.location, sources)?;
    // Read-only: a damaged store is looked at, never opened for writing or created.
    let checks = rlm_store::diagnose_at(&settings.location);
    let problems = checks.iter().filter(|check| !check.ok).count();
    if global.json {
        for check in &checks {
            output::print_json(&DoctorRecord::Check(check))?;
        }
        output::print_json(&DoctorRecord::Summary {
            store: settings.location.to_string(),
            problems,
        })?;
    } else {
        let mut out = output::stdout();
        writeln!(out, "store: {}", settings.location)?;
        for check in &checks {
            let state = if check.ok { "ok" } else { "problem" };
            // Details quote file names from the store directory: no control characters.
            writeln!(
                out,
                "{state:<8} {:<16} {}",
                check.name,
                output::neutralize(&check.detail)
            )?;
            if let Some(fix) = &check.fix {
                writeln!(out, "{:<8} {:<16} fix: {fix}", "", "")?;
            }
        }
    }
    if problems == 0 {
        if !global.quiet {
            eprintln!("no problems found");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if !global.quiet {
        eprintln!("{}", output::count(problems as u64, "problem"));
    }
    Ok(ExitCode::from(EXIT_FAILED))
}

/// What `rlm doctor --json` prints: each check, then a summary.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum DoctorRecord<'a> {
    /// One check, with its fix when it found a problem.
    Check(&'a rlm_store::Check),
    /// The store looked at and how many checks found a problem.
    Summary { store: String, problems: usize },
}
