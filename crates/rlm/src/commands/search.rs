//! `rlm search`: ranked chunks for a query.

use std::io::Write as _;
use std::process::ExitCode;

use rlm_store::{SearchHit, SearchMode};

use super::Outcome;

use super::embed::stored_model_embedder;
use crate::cli::{GlobalArgs, SearchRequest};
use crate::error::store_error;
use crate::output;
use crate::settings::{SearchSettings, Sources};

/// Matched query terms in a snippet, as ripgrep colours matches.
const MATCH: anstyle::Style = anstyle::Style::new()
    .bold()
    .fg_color(Some(anstyle::Color::Ansi(anstyle::AnsiColor::Red)));

/// What `rlm search --json` prints: one record per hit, best first.
#[derive(Debug, serde::Serialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SearchRecord {
    /// A ranked chunk.
    Hit {
        /// 1 for the best hit.
        rank: u32,
        /// The ranking that ran (BM25 when semantic was asked for without vectors).
        mode: SearchMode,
        #[serde(flatten)]
        hit: SearchHit,
    },
}

/// The hits for a search, and the store's notice when it ranked otherwise than asked.
pub fn execute(sources: &Sources, args: &SearchRequest) -> anyhow::Result<Outcome<SearchRecord>> {
    let settings = SearchSettings::resolve(args, sources)?;
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
    let mode = outcome.mode;
    let records = (1..)
        .zip(outcome.hits)
        .map(|(rank, hit)| SearchRecord::Hit { rank, mode, hit })
        .collect();
    let mut result = Outcome::success(records);
    if result.records.is_empty() {
        result
            .notes
            .push("note: no chunk matches the query".to_owned());
    }
    let notice = outcome.notice.map(|notice| format!("note: {notice}"));
    result.notes.splice(0..0, notice);
    Ok(result)
}

pub fn run(global: &GlobalArgs, sources: &Sources, args: SearchRequest) -> anyhow::Result<ExitCode> {
    let outcome = execute(sources, &args)?;
    // With no hits stdout stays an empty stream; a note says why, for people and scripts.
    outcome.print_notes(global.quiet);
    let mut out = output::stdout();
    if global.json {
        for record in &outcome.records {
            output::write_json(&mut out, record)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
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
    Ok(ExitCode::SUCCESS)
}
