//! Reading an `rlm query` log into what its page shows: the question, the plan and search
//! stages, every model call, and the closing result with the findings and the report.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::load::{LogLine, LogLines};
use crate::error::Error;
use crate::query::{QueryCall, QueryMetadata, QueryOutcome, QueryStage};
use crate::reader::Record;

/// A query as the page shows it.
#[derive(Debug, Clone)]
pub struct QueryView {
    /// The log it was read from.
    pub path: PathBuf,
    /// The first line.
    pub metadata: QueryMetadata,
    /// The `query_stage` records (`plan`, `search`, and any a newer version adds), in order.
    pub stages: Vec<QueryStage>,
    /// The model calls, in the order they finished.
    pub calls: Vec<QueryCall>,
    /// Records this version has no view for (e.g. newer `query_*` types), in order, with their
    /// line numbers: the page lists them by name with their fields.
    pub other_records: Vec<OtherRecord>,
    /// The last line; `None` while the query is going (or after it was stopped).
    pub outcome: Option<QueryOutcome>,
    /// The number of a cut last line that was left out (a query still writing its log).
    pub cut_line: Option<usize>,
}

/// A record shown generically: its type and fields.
#[derive(Debug, Clone)]
pub struct OtherRecord {
    /// 1-based line number in the log.
    pub line: usize,
    /// Its `type`.
    pub kind: String,
    /// Its fields, without `type`, `timestamp` and `version`.
    pub fields: Map<String, Value>,
}

impl QueryView {
    /// Reads a query log. A log without a `query_result` line (a query still going, or
    /// stopped), or whose last line is cut short before it, reads fine; the errors are those of
    /// [`super::RunView::load`].
    pub fn load(path: &Path) -> Result<Self, Error> {
        let mut lines = LogLines::open(path)?;
        let mut metadata: Option<QueryMetadata> = None;
        let mut view = QueryView {
            path: path.to_path_buf(),
            metadata: QueryMetadata {
                run_id: String::new(),
                question: String::new(),
                model: String::new(),
                subcall_model: String::new(),
                store: PathBuf::new(),
                options: Value::Null,
            },
            stages: Vec::new(),
            calls: Vec::new(),
            other_records: Vec::new(),
            outcome: None,
            cut_line: None,
        };
        while let Some(line) = lines.next_line()? {
            let entry = match line {
                LogLine::Entry(entry) => entry,
                LogLine::Cut(line) if view.outcome.is_none() => {
                    view.cut_line = Some(line);
                    break;
                }
                LogLine::Cut(line) => return Err(lines.truncated(line)),
            };
            match entry.record {
                Record::QueryMetadata(first) if metadata.is_none() => metadata = Some(*first),
                _ if metadata.is_none() => {
                    return Err(lines.not_a_log(
                        entry.line,
                        format!(
                            "its first record is `{}`, not `query_metadata`",
                            entry.record.kind()
                        ),
                    ));
                }
                Record::QueryMetadata(_) => {
                    return Err(lines
                        .not_a_log(entry.line, "it has a second `query_metadata` record".into()));
                }
                Record::QueryStage(stage) => view.stages.push(*stage),
                Record::QueryCall(call) => view.calls.push(*call),
                Record::QueryResult(outcome) => view.outcome = Some(*outcome),
                // Any other type (a newer `query_*` record, typed or not) is shown by name
                // with the fields of its line.
                record => {
                    let kind = record.kind().to_owned();
                    let mut fields = match record {
                        Record::Unknown { fields, .. } => fields,
                        _ => serde_json::from_str(lines.text()).unwrap_or_default(),
                    };
                    for common in ["type", "timestamp", "version"] {
                        fields.remove(common);
                    }
                    view.other_records.push(OtherRecord {
                        line: entry.line,
                        kind,
                        fields,
                    });
                }
            }
        }
        match metadata {
            Some(metadata) => {
                view.metadata = metadata;
                Ok(view)
            }
            None => Err(lines.not_a_log(lines.line, "it is empty".into())),
        }
    }

    /// Whether the log has its `query_result` line.
    pub fn is_complete(&self) -> bool {
        self.outcome.is_some()
    }

    /// The `query_stage` record named `name` (`plan`, `search`).
    pub fn stage(&self, name: &str) -> Option<&QueryStage> {
        self.stages.iter().find(|stage| stage.stage == name)
    }

    /// The extractor batches as they ran, by batch (`0`, `1`, …): each with its calls, halves
    /// included, in the order they finished.
    pub fn batches(&self) -> Vec<(String, Vec<&QueryCall>)> {
        let mut batches: Vec<(String, Vec<&QueryCall>)> = Vec::new();
        for call in self.calls.iter().filter(|call| call.stage == "extract") {
            let batch = call.batch.as_deref().unwrap_or("?");
            let top = batch.split('.').next().unwrap_or(batch);
            match batches.iter_mut().find(|(name, _)| name == top) {
                Some((_, calls)) => calls.push(call),
                None => batches.push((top.to_owned(), vec![call])),
            }
        }
        batches.sort_by_key(|(name, _)| batch_order(name));
        batches
    }
}

/// Batches sort by number (`10` after `9`); a name that is not a number goes last.
fn batch_order(name: &str) -> (u64, String) {
    (name.parse().unwrap_or(u64::MAX), name.to_owned())
}
