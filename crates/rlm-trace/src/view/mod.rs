//! The trajectory viewer: a run's log (and its child runs' logs) as one self-contained HTML
//! page, for `rlm view`.
//!
//! The page has its style and script inline and loads nothing, so it opens from disk and can be
//! attached to a bug report. It shows the question, models, status and answer, a timeline of the
//! turns, and per turn the new prompt messages, the reply (Markdown, code highlighted), each
//! code block with its output, error and sub-calls, and child runs folded inside the sub-call
//! that started them. Every text from the log is escaped.
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
//! use rlm_trace::view::RunView;
//!
//! let run = RunView::load(&log)?;
//! assert!(!run.is_complete()); // no `result` line yet
//! let html = rlm_trace::view::render(&run);
//! assert!(html.contains("&lt;b&gt;hi&lt;/b&gt;"));
//! # Ok(())
//! # }
//! ```

mod format;
mod html;
mod load;
mod markdown;

use std::io::Write as _;
use std::path::Path;

pub use load::{ChildRun, RunView, TurnView};
pub use markdown::escape;

use crate::error::Error;

/// The page for a run, as one HTML document.
pub fn render(run: &RunView) -> String {
    // A fresh nonce per page: the one script the page's policy lets run.
    let nonce = format!("{}{}", crate::new_run_id(), crate::new_run_id());
    html::page(run, &nonce)
}

/// Renders the page and writes it to `path` through a temporary file in the same directory, so
/// a failed write leaves no half page behind.
pub fn write_page(run: &RunView, path: &Path) -> Result<(), Error> {
    let io_error = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let html = render(run);
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
mod tests;
