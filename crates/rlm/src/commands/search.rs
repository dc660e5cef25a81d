//! `rlm search`: ranked chunks for a query.

use std::io::Write as _;
use std::process::ExitCode;

use rlm_store::{SearchMode, SearchRequest};

use super::store_common::{open_existing_store, resolve_embedder, store_error};
use crate::cli::{GlobalArgs, SearchArgs, SearchModeChoice};
use crate::error::input_error;
use crate::output;

pub fn run(global: &GlobalArgs, args: SearchArgs) -> anyhow::Result<ExitCode> {
    if !(args.rrf_k.is_finite() && args.rrf_k >= 0.0) {
        return Err(input_error("--rrf-k must be a finite number ≥ 0").into());
    }
    let store = open_existing_store(&args.location)?;
    let request = SearchRequest {
        query: args.query.clone(),
        mode: match args.mode {
            SearchModeChoice::Bm25 => SearchMode::Bm25,
            SearchModeChoice::Semantic => SearchMode::Semantic,
            SearchModeChoice::Hybrid => SearchMode::Hybrid,
        },
        limit: args.top as usize,
        buffers: args.buffers,
        path_glob: args.path_glob,
        rrf_k: args.rrf_k,
    };
    // Loading a model costs up to a second or two; only do it when vectors exist to search.
    let embedder = if request.mode != SearchMode::Bm25
        && store
            .embedding_status()
            .map_err(store_error)?
            .embedded_chunks
            > 0
    {
        resolve_embedder(global, args.model.as_deref())?
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
        let _ = writeln!(stderr, "note: {notice}");
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
            hit.buffer,
            hit.start_line,
            hit.end_line,
            hit.chunk_id,
            hit.score
        )?;
        writeln!(out, "     {}", hit.snippet)?;
    }
    Ok(ExitCode::SUCCESS)
}
