//! Inspecting runs without reading whole logs: a summary of each root run and query in a log
//! directory (`rlm runs list`), and a turn as `rlm runs show` prints it.
//!
//! A log repeats the whole conversation every turn, so a summary reads only the first line
//! (`metadata`) and the last (`result`, when the run ended); a large answer in it is already a
//! preview ([`crate::LargeValues`]).

use std::fs::File;
use std::io::{BufRead as _, BufReader, Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};

use rlm_types::ModelTotals;
use serde::Serialize;

use crate::error::Error;
use crate::query::{QueryMetadata, QueryOutcome};
use crate::reader::{Record, parse_line};
use crate::schema::{CodeBlock, Iteration, RunMetadata, RunOutcome};

/// Bytes read from a log's end to find its last line.
const TAIL_BYTES: u64 = 1 << 20;

/// One root run or query, from its log's first and last lines.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    /// `run` (`rlm run`) or `query` (`rlm query`).
    pub kind: &'static str,
    /// The run id.
    pub run_id: String,
    /// The log file.
    pub log: PathBuf,
    /// When the run started (the metadata line's timestamp).
    pub started: Option<String>,
    /// The question.
    pub question: String,
    /// The root model.
    pub model: String,
    /// How it ended (`answered`, `forced_answer`, … for a run; `answered`, `no_evidence`,
    /// `failed`, … for a query); `None` while it runs or when it was killed without a result
    /// line.
    pub status: Option<String>,
    /// Turns taken, when a run ended (queries have none).
    pub turns: Option<u32>,
    /// Dollars over priced calls, when it ended.
    pub cost_usd: Option<f64>,
    /// Answered calls without a known price (a local model), when it ended: `cost_usd` is
    /// then a lower bound, or unknown when it is 0.
    pub unpriced_calls: Option<u64>,
    /// Tokens in and out, when it ended.
    pub tokens: Option<u64>,
}

impl RunSummary {
    /// Reads the summary of the run logged at `path`.
    pub fn read(path: &Path) -> Result<Self, Error> {
        let io_error = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut file = File::open(path).map_err(io_error)?;
        let mut first = String::new();
        BufReader::new(&mut file)
            .read_line(&mut first)
            .map_err(io_error)?;
        let head = parse_line(first.trim_end(), 1)?;
        let last = last_record(&mut file).map_err(io_error)?;
        match (&head.record, last) {
            (Record::Metadata(metadata), last) => {
                let outcome = match last {
                    Some(Record::Result(outcome)) => Some(*outcome),
                    _ => None,
                };
                Ok(Self::of_run(
                    path,
                    head.timestamp.clone(),
                    metadata,
                    outcome.as_ref(),
                ))
            }
            (Record::QueryMetadata(metadata), last) => {
                let outcome = match last {
                    Some(Record::QueryResult(outcome)) => Some(*outcome),
                    _ => None,
                };
                Ok(Self::of_query(
                    path,
                    head.timestamp.clone(),
                    metadata,
                    outcome.as_ref(),
                ))
            }
            (other, _) => Err(Error::NotATrajectory {
                path: path.to_path_buf(),
                line: 1,
                reason: format!("its first record is `{}`", other.kind()),
            }),
        }
    }

    fn of_run(
        path: &Path,
        started: Option<String>,
        metadata: &RunMetadata,
        outcome: Option<&RunOutcome>,
    ) -> Self {
        Self {
            kind: "run",
            run_id: metadata.run_id.clone(),
            log: path.to_path_buf(),
            started,
            question: metadata.query.clone(),
            model: metadata.root_model.clone(),
            status: outcome.map(|outcome| status_name(outcome.status)),
            turns: outcome.map(|outcome| outcome.iterations),
            cost_usd: outcome.map(|outcome| outcome.usage.total.cost_usd),
            unpriced_calls: outcome.map(|outcome| outcome.usage.total.unpriced_calls),
            tokens: outcome.map(|outcome| outcome.usage.total.usage.total()),
        }
    }

    fn of_query(
        path: &Path,
        started: Option<String>,
        metadata: &QueryMetadata,
        outcome: Option<&QueryOutcome>,
    ) -> Self {
        let total = outcome.and_then(|outcome| outcome.usage.get("total"));
        Self {
            kind: "query",
            run_id: metadata.run_id.clone(),
            log: path.to_path_buf(),
            started,
            question: metadata.question.clone(),
            model: metadata.model.clone(),
            status: outcome.map(|outcome| outcome.status.clone()),
            turns: None,
            cost_usd: total.map(|usage| usage.total.cost_usd),
            unpriced_calls: total.map(|usage| usage.total.unpriced_calls),
            tokens: total.map(|usage| usage.total.usage.total()),
        }
    }
}

/// A run status as logs and `--json` write it (`forced_answer`).
fn status_name(status: crate::Status) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_else(|| status.to_string())
}

/// The record on the file's last line, if it reads as one.
fn last_record(file: &mut File) -> std::io::Result<Option<Record>> {
    let length = file.metadata()?.len();
    let start = length.saturating_sub(TAIL_BYTES);
    file.seek(SeekFrom::Start(start))?;
    let mut tail = Vec::new();
    file.read_to_end(&mut tail)?;
    let text = String::from_utf8_lossy(&tail);
    let Some(last) = text.trim_end().rsplit('\n').next() else {
        return Ok(None);
    };
    Ok(parse_line(last, 0).ok().map(|entry| entry.record))
}

/// The root runs and queries logged in `dir` (`rlm_*.jsonl` and `query_*.jsonl`, not a child's
/// `<stem>.<n>.jsonl`), newest first; a file that is not a readable log is left out.
pub fn list_runs(dir: &Path) -> Result<Vec<RunSummary>, Error> {
    let entries = std::fs::read_dir(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut logs: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let stem = name.strip_suffix(".jsonl")?;
            // After its prefix, the stem starts with the UTC start time: it sorts by time.
            let timed = stem
                .strip_prefix("rlm_")
                .or_else(|| stem.strip_prefix("query_"))?;
            (!stem.contains('.')).then(|| (timed.to_owned(), entry.path()))
        })
        .collect();
    logs.sort_by(|a, b| b.0.cmp(&a.0));
    Ok(logs
        .into_iter()
        .filter_map(|(_, path)| RunSummary::read(&path).ok())
        .collect())
}

/// One turn as `rlm runs show` prints it: the reply, the code and what it did, the usage —
/// without the conversation, which every turn of a log repeats.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnSummary {
    /// 1-based turn number.
    pub turn: u32,
    /// The model's reply.
    pub response: String,
    /// The code blocks with their output, errors and sub-calls.
    pub code_blocks: Vec<CodeBlock>,
    /// Sub-calls made by the turn's code.
    pub subcalls: usize,
    /// The answer the turn gave, if any.
    pub final_answer: Option<String>,
    /// Notes the engine added.
    pub notes: Vec<String>,
    /// The root-model calls of the turn.
    pub usage: ModelTotals,
    /// Wall time in seconds.
    pub seconds: f64,
    /// Messages in the conversation sent for the turn.
    pub prompt_messages: usize,
}

impl TurnSummary {
    /// The summary of a logged turn.
    pub fn of(iteration: &Iteration) -> Self {
        Self {
            turn: iteration.iteration,
            response: iteration.response.clone(),
            subcalls: iteration
                .code_blocks
                .iter()
                .map(|block| block.result.subcalls.len())
                .sum(),
            code_blocks: iteration.code_blocks.clone(),
            final_answer: iteration.final_answer.clone(),
            notes: iteration.notes.clone(),
            usage: iteration.usage.clone(),
            seconds: iteration.seconds,
            prompt_messages: iteration.prompt.len(),
        }
    }
}
