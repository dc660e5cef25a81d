//! `rlm search`: ranked chunks for a query.

use std::io::Write as _;
use std::process::ExitCode;

use rlm_store::SearchMode;

use super::embed::stored_model_embedder;
use crate::cli::{GlobalArgs, SearchArgs};
use crate::error::store_error;
use crate::output;
use crate::settings::{SearchSettings, Sources};

/// Matched query terms in a snippet, as ripgrep colours matches.
const MATCH: anstyle::Style = anstyle::Style::new()
    .bold()
    .fg_color(Some(anstyle::Color::Ansi(anstyle::AnsiColor::Red)));

pub fn run(global: &GlobalArgs, sources: &Sources, args: SearchArgs) -> anyhow::Result<ExitCode> {
    let settings = SearchSettings::resolve(&args, sources)?;
    let store = settings.store.open_existing()?;
    let request = settings.request;
    // Loading a model costs up to a second or two; only do it when vectors exist to search.
    let vectors = store.embedding_status().map_err(store_error)?;
    let embedder = if request.mode != SearchMode::Bm25 && vectors.embedded_chunks > 0 {
        stored_model_embedder(
            settings.embedding_model.as_deref(),
            vectors.model.as_deref(),
            sources,
        )?
    } else {
        None
    };
    let outcome = store
        .search_with(&request, embedder.as_deref())
        .map_err(store_error)?;
    if let Some(notice) = &outcome.notice
        && !global.quiet
    {
        let mut stderr = anstream::stderr();
        let _ = writeln!(stderr, "note: {}", output::neutralize(&notice.to_string()));
    }
    if outcome.hits.is_empty() && !global.quiet {
        // Stdout stays an empty stream; say why on stderr, for people and scripts alike.
        let mut stderr = anstream::stderr();
        let _ = writeln!(stderr, "note: no chunk matches the query");
    }
    let mut out = output::stdout();
    if global.json {
        for (rank, hit) in outcome.hits.iter().enumerate() {
            let mut value = serde_json::to_value(hit)?;
            if let Some(object) = value.as_object_mut() {
                object.insert("type".into(), "hit".into());
                object.insert("rank".into(), (rank + 1).into());
                object.insert("mode".into(), serde_json::to_value(outcome.mode)?);
            }
            serde_json::to_writer(&mut out, &value)?;
            writeln!(out)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let bold = anstyle::Style::new().bold();
    for (rank, hit) in outcome.hits.iter().enumerate() {
        writeln!(
            out,
            "{:>3}. {bold}{}{bold:#}:{}-{}  chunk {}  score {:.3}",
            rank + 1,
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
    Ok(ExitCode::SUCCESS)
}
