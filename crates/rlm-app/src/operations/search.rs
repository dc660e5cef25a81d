//! `search`: ranked chunks for a query.

use rlm_store::{SearchHit, SearchMode};

use crate::error::store_error;
use crate::requests::SearchRequest;
use crate::settings::{SearchSettings, Sources};
use crate::{Context, Outcome};

/// What `rlm search --json` prints: one record per hit, best first.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
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
pub fn search(
    sources: &Sources,
    args: &SearchRequest,
    _context: &Context,
) -> anyhow::Result<Outcome<SearchRecord>> {
    let settings = SearchSettings::resolve(args, sources)?;
    let store = settings.store.open_existing()?;
    let request = settings.request;
    // Loading a model costs up to a second or two; only do it when vectors exist to search.
    let vectors = store.embedding_status().map_err(store_error)?;
    let embedder = if request.mode != SearchMode::Bm25 && vectors.embedded_chunks > 0 {
        super::embed::stored_model_embedder(
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
        let why = empty_filter_note(&store, request.path_glob.as_deref())?;
        result
            .notes
            .push(why.unwrap_or_else(|| "note: no chunk matches the query".to_owned()));
    }
    let notice = outcome.notice.map(|notice| format!("note: {notice}"));
    result.notes.splice(0..0, notice);
    Ok(result)
}

/// When a `--path` glob matches no stored buffer at all, a note that says so and shows what the
/// stored names and paths look like (a relative glob never matches an absolute path); `None`
/// when the glob matches some buffer (the query found nothing there) or there is none.
pub fn empty_filter_note(
    store: &rlm_store::Store,
    path_glob: Option<&str>,
) -> anyhow::Result<Option<String>> {
    let Some(glob) = path_glob else {
        return Ok(None);
    };
    match store.filter_buffers(&[], Some(glob)) {
        Ok(buffers) if !buffers.is_empty() => return Ok(None),
        Ok(_) | Err(rlm_store::Error::UnknownBuffer(_)) => {}
        Err(err) => return Err(store_error(err)),
    }
    let buffers = store.list().map_err(store_error)?;
    let Some(example) = buffers.first() else {
        return Ok(None);
    };
    let mut note = format!(
        "note: the --path filter `{glob}` matches no stored buffer; names look like `{}`",
        example.name
    );
    if let Some(path) = &example.path {
        note.push_str(&format!(" and paths like `{path}`"));
        if path.starts_with('/') && !glob.starts_with(['/', '*']) {
            note.push_str(" (a path is absolute: start the glob with `**/` or `/`)");
        }
    }
    Ok(Some(note))
}
