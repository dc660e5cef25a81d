//! `rlm chat`: one question to one model, the answer streamed to stdout.

use std::io::Write as _;
use std::process::ExitCode;

use rlm_app::operations::chat::ChatRecord;
use rlm_app::requests::ChatRequest;

use super::Run;

pub fn run(run: &Run<'_>, mut request: ChatRequest) -> anyhow::Result<ExitCode> {
    // Streamed to stdout piece by piece (the printer writes each `Delta`), or whole in JSON.
    request.stream = !run.global.json;
    let outcome = rlm_app::operations::chat(&run.sources, &request, &run.context)?;
    if run.global.json {
        run.print_json(&outcome)?;
        return run.exit(outcome);
    }
    writeln!(crate::output::raw_stdout())?;
    for ChatRecord::Answer {
        usage_line,
        cut_warning,
        ..
    } in &outcome.records
    {
        // A warning, printed even with `--quiet`: the answer on stdout is not all of it.
        if let Some(warning) = cut_warning {
            eprintln!("warning: {warning}");
        }
        if !run.global.quiet {
            // The model name comes from the provider's reply.
            eprintln!("{}", crate::output::neutralize(usage_line));
        }
    }
    run.exit(outcome)
}
