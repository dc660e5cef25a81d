//! The trajectory viewer: a run's log (and its child runs' logs), or an `rlm query` log, as one
//! self-contained HTML page, for `rlm view`.
//!
//! The page has its style and script inline and loads nothing, so it opens from disk and can be
//! attached to a bug report. It shows the question, models, status and answer, a timeline of the
//! turns, and per turn the new prompt messages, the reply (Markdown, code highlighted), each
//! code block with its output, error, host calls (a store's `search`, `grep`, …) and
//! sub-calls, and child runs folded inside the sub-call that started them. A query's page ([`QueryView`]) shows its plan, search hits, extractor
//! batches, findings, report and usage per stage.
//!
//! Pages are maud templates (`html!` escapes every value it splices); replies and reports are
//! Markdown by pulldown-cmark, with the HTML they hold shown as text and links and images
//! pointing nowhere. Control and bidi characters are shown as escapes (`\u{202e}`), not obeyed.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! # let log = dir.path().join("run.jsonl");
//! # std::fs::write(&log, concat!(
//! #   r#"{"type":"metadata","version":1,"run_id":"a1","parent_run_id":null,"depth":0,"#,
//! #   r#""root_model":"m","subcall_model":"m","max_depth":1,"max_iterations":5,"backend":"rlm","#,
//! #   r#""backend_kwargs":{"model_name":"m"},"environment_type":"monty","other_backends":[],"#,
//! #   r#""query":"<b>hi</b>","contexts":{"count":0,"parts":[]},"budget":{"max_tokens":null,"#,
//! #   r#""max_cost_usd":null,"timeout_seconds":null,"max_subcalls":null,"max_consecutive_errors":3}}"#,
//! #   "\n"))?;
//! use rlm_trace::view::LogView;
//!
//! let log = LogView::load(&log)?;
//! assert!(!log.is_complete()); // no `result` line yet
//! let html = rlm_trace::view::render(&log);
//! assert!(html.contains("&lt;b&gt;hi&lt;/b&gt;"));
//! # Ok(())
//! # }
//! ```

mod format;
mod highlight;
mod host_calls;
mod html;
mod load;
mod markdown;
mod parts;
mod query;
mod query_page;

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;

pub use load::{ChildRun, RunView, TurnView};
pub use query::{OtherRecord, QueryView};

use crate::error::Error;
use crate::reader::{Record, parse_line};

/// A log of either kind, as its page shows it.
#[derive(Debug, Clone)]
pub enum LogView {
    /// An `rlm run` log (first record `metadata`).
    Run(Box<RunView>),
    /// An `rlm query` log (first record `query_metadata`).
    Query(Box<QueryView>),
}

impl LogView {
    /// Reads a log, as a run or a query by its first record. The errors are those of
    /// [`RunView::load`].
    pub fn load(path: &Path) -> Result<Self, Error> {
        if starts_as_query(path) {
            QueryView::load(path).map(|query| Self::Query(Box::new(query)))
        } else {
            RunView::load(path).map(|run| Self::Run(Box::new(run)))
        }
    }

    /// The run or query id.
    pub fn run_id(&self) -> &str {
        match self {
            Self::Run(run) => &run.metadata.run_id,
            Self::Query(query) => &query.metadata.run_id,
        }
    }

    /// Whether the log has its closing record.
    pub fn is_complete(&self) -> bool {
        match self {
            Self::Run(run) => run.is_complete(),
            Self::Query(query) => query.is_complete(),
        }
    }

    /// The number of a cut last line the page leaves out.
    pub fn cut_line(&self) -> Option<usize> {
        match self {
            Self::Run(run) => run.cut_line,
            Self::Query(query) => query.cut_line,
        }
    }
}

impl From<RunView> for LogView {
    fn from(run: RunView) -> Self {
        Self::Run(Box::new(run))
    }
}

impl From<QueryView> for LogView {
    fn from(query: QueryView) -> Self {
        Self::Query(Box::new(query))
    }
}

/// Whether the first non-blank line of `path` is a `query_metadata` record (any failure reads
/// as "no": the run loader that runs next reports it).
fn starts_as_query(path: &Path) -> bool {
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let first = BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .find(|line| !line.trim().is_empty());
    first
        .and_then(|text| parse_line(&text, 1).ok())
        .is_some_and(|entry| matches!(entry.record, Record::QueryMetadata(_)))
}

/// The page for a log, as one HTML document, with the API keys this process knows masked
/// ([`rlm_types::secrets::mask_with`]; a log written before keys were masked may hold one).
pub fn render(log: &LogView) -> String {
    // A fresh nonce per page: the one script the page's policy lets run.
    let nonce = format!("{}{}", crate::new_run_id(), crate::new_run_id());
    let page = match log {
        LogView::Run(run) => html::page(run, &nonce),
        LogView::Query(query) => query_page::page(query, &nonce),
    };
    // After escaping: what shows a control character, and the mask, are text, not markup.
    let page = parts::show_controls(page);
    match rlm_types::secrets::mask_with(&page, "&lt;redacted&gt;") {
        std::borrow::Cow::Borrowed(_) => page,
        std::borrow::Cow::Owned(masked) => masked,
    }
}

/// Renders the page and writes it to `path` through a temporary file in the same directory, so
/// a failed write leaves no half page behind.
pub fn write_page(log: &LogView, path: &Path) -> Result<(), Error> {
    let io_error = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let html = render(log);
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map_or_else(|| "page".into(), |name| name.to_string_lossy().into_owned());
    let temporary = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let written = std::fs::File::create(&temporary)
        .and_then(|mut file| {
            file.write_all(html.as_bytes())?;
            file.sync_all()
        })
        .and_then(|()| std::fs::rename(&temporary, path));
    if let Err(source) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(io_error(source));
    }
    Ok(())
}

#[cfg(test)]
mod property_tests;
#[cfg(test)]
mod query_tests;
#[cfg(test)]
mod tests;
