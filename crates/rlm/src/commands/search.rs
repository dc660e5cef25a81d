//! `rlm search`: ranked chunks for a query.

use std::io::Write as _;
use std::process::ExitCode;

use rlm_app::operations::search::SearchRecord;
use rlm_app::requests::SearchRequest;

use super::Run;
use crate::output;

/// Matched query terms in a snippet, as ripgrep colours matches.
const MATCH: anstyle::Style = anstyle::Style::new()
    .bold()
    .fg_color(Some(anstyle::Color::Ansi(anstyle::AnsiColor::Red)));

pub fn run(run: &Run<'_>, request: SearchRequest) -> anyhow::Result<ExitCode> {
    let outcome = rlm_app::operations::search(&run.sources, &request, &run.context)?;
    // With no hits stdout stays an empty stream; a note says why, for people and scripts.
    run.print_notes(&outcome);
    if run.global.json {
        run.print_json(&outcome)?;
        return run.exit(outcome);
    }
    let mut out = output::stdout();
    let bold = anstyle::Style::new().bold();
    for SearchRecord::Hit { rank, hit, .. } in &outcome.records {
        writeln!(
            out,
            "{:>3}. {bold}{}{bold:#}:{}-{}  chunk {}  score {:.3}",
            rank,
            output::for_stdout(&hit.buffer),
            hit.start_line,
            hit.end_line,
            hit.chunk_id,
            hit.score
        )?;
        // Each piece is neutralised on its own: the match ranges are offsets into the snippet.
        write!(out, "     ")?;
        let mut at = 0;
        for range in &hit.highlights {
            let (Some(before), Some(matched)) = (
                hit.snippet.get(at..range.start),
                hit.snippet.get(range.clone()),
            ) else {
                continue;
            };
            let (before, matched) = (output::for_stdout(before), output::for_stdout(matched));
            write!(out, "{before}{MATCH}{matched}{MATCH:#}")?;
            at = range.end;
        }
        let rest = hit.snippet.get(at..).unwrap_or_default();
        writeln!(out, "{}", output::for_stdout(rest))?;
    }
    run.exit(outcome)
}
