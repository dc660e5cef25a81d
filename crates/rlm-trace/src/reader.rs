//! Reading a log back into typed records.

use std::fs::File;
use std::io::{BufRead, BufReader, Lines};
use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::Error;
use crate::query::{QueryCall, QueryMetadata, QueryOutcome, QueryStage, QueryTool};
use crate::schema::{Iteration, RecordType, RunMetadata, RunOutcome};
use crate::variables::VariablesSnapshot;

/// One line of a log.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// 1-based line number in the log.
    pub line: usize,
    /// When it was written (RFC 3339, UTC, milliseconds), if the line says.
    pub timestamp: Option<String>,
    /// The schema version it was written with; 0 for logs written before lines carried one.
    pub version: u32,
    /// The record.
    pub record: Record,
}

/// A record of any line type.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Record {
    /// `metadata`: the first line of a run.
    Metadata(Box<RunMetadata>),
    /// `iteration`: one turn.
    Iteration(Box<Iteration>),
    /// `result`: how the run ended.
    Result(Box<RunOutcome>),
    /// `variables`: the REPL's variables when a root run ended (just before `result`).
    Variables(Box<VariablesSnapshot>),
    /// `query_metadata`: the first line of an `rlm query` log.
    QueryMetadata(Box<QueryMetadata>),
    /// `query_stage`: a planning or search step of a query.
    QueryStage(Box<QueryStage>),
    /// `query_call`: one model call of a query.
    QueryCall(Box<QueryCall>),
    /// `query_tool`: one tool call of a query's synthesizer.
    QueryTool(Box<QueryTool>),
    /// `query_result`: how a query ended.
    QueryResult(Box<QueryOutcome>),
    /// A line type this version does not know (written by a newer one), kept as it was read so
    /// a reader can skip or show it.
    Unknown {
        /// Its `type`.
        kind: String,
        /// Every field of the line, `type` included.
        fields: Map<String, Value>,
    },
}

impl Record {
    /// The line type (`metadata`, `iteration`, `result`, or an unknown type's name).
    pub fn kind(&self) -> &str {
        match self {
            Self::Metadata(_) => RunMetadata::TYPE,
            Self::Iteration(_) => Iteration::TYPE,
            Self::Result(_) => RunOutcome::TYPE,
            Self::Variables(_) => VariablesSnapshot::TYPE,
            Self::QueryMetadata(_) => QueryMetadata::TYPE,
            Self::QueryStage(_) => QueryStage::TYPE,
            Self::QueryCall(_) => QueryCall::TYPE,
            Self::QueryTool(_) => QueryTool::TYPE,
            Self::QueryResult(_) => QueryOutcome::TYPE,
            Self::Unknown { kind, .. } => kind,
        }
    }
}

/// Reads a log one line at a time: an iterator of entries, an error for each line that is not
/// a record (reading can go on past it, e.g. past a line cut short by a crash).
#[derive(Debug)]
pub struct TrajectoryReader<R> {
    lines: Lines<R>,
    line: usize,
}

impl<R: BufRead> TrajectoryReader<R> {
    /// Reads from any buffered reader.
    pub fn new(reader: R) -> Self {
        Self {
            lines: reader.lines(),
            line: 0,
        }
    }
}

impl TrajectoryReader<BufReader<File>> {
    /// Opens a log file.
    pub fn open(path: &Path) -> Result<Self, Error> {
        let file = File::open(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Self::new(BufReader::new(file)))
    }
}

impl<R: BufRead> Iterator for TrajectoryReader<R> {
    type Item = Result<Entry, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            self.line += 1;
            let text = match self.lines.next()? {
                Ok(text) => text,
                Err(source) => {
                    return Some(Err(Error::Read {
                        line: self.line,
                        source,
                    }));
                }
            };
            if !text.trim().is_empty() {
                return Some(parse_line(&text, self.line));
            }
        }
    }
}

/// A whole log, read back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trajectory {
    /// Every line, in order.
    pub entries: Vec<Entry>,
}

impl Trajectory {
    /// Reads a log file; the first line that is not a record is the error.
    pub fn read(path: &Path) -> Result<Self, Error> {
        let entries = TrajectoryReader::open(path)?.collect::<Result<_, _>>()?;
        Ok(Self { entries })
    }

    /// The `metadata` record, if the log has one.
    pub fn metadata(&self) -> Option<&RunMetadata> {
        self.entries.iter().find_map(|entry| match &entry.record {
            Record::Metadata(metadata) => Some(metadata.as_ref()),
            _ => None,
        })
    }

    /// The turns, in order.
    pub fn iterations(&self) -> impl Iterator<Item = &Iteration> {
        self.entries.iter().filter_map(|entry| match &entry.record {
            Record::Iteration(iteration) => Some(iteration.as_ref()),
            _ => None,
        })
    }

    /// The `variables` record; `None` for a log written before runs recorded one, a child
    /// run's, or a run that did not end by itself.
    pub fn variables(&self) -> Option<&VariablesSnapshot> {
        self.entries.iter().find_map(|entry| match &entry.record {
            Record::Variables(variables) => Some(variables.as_ref()),
            _ => None,
        })
    }

    /// The `result` record; `None` for a run that is still going or was killed.
    pub fn outcome(&self) -> Option<&RunOutcome> {
        self.entries.iter().find_map(|entry| match &entry.record {
            Record::Result(outcome) => Some(outcome.as_ref()),
            _ => None,
        })
    }
}

/// Parses one line (`line` is its number, for errors).
pub fn parse_line(text: &str, line: usize) -> Result<Entry, Error> {
    // The line is read twice: once for the three common fields (skipping the rest without
    // building anything), once straight into its record type. Building a `Value` tree first
    // cost twice as much on logs whose every turn repeats the whole conversation.
    let head: Head = serde_json::from_str(text).map_err(|source| Error::MalformedLine {
        line,
        source: (!source.is_data()).then_some(source),
    })?;
    let Some(Value::String(kind)) = head.kind else {
        return Err(Error::MalformedLine { line, source: None });
    };
    let timestamp = match head.timestamp {
        Some(Value::String(timestamp)) => Some(timestamp),
        _ => None,
    };
    let version = head
        .version
        .as_ref()
        .and_then(Value::as_u64)
        .map_or(0, |v| u32::try_from(v).unwrap_or(u32::MAX));
    let record = match kind.as_str() {
        RunMetadata::TYPE => Record::Metadata(typed(text, &kind, line)?),
        Iteration::TYPE => Record::Iteration(typed(text, &kind, line)?),
        RunOutcome::TYPE => Record::Result(typed(text, &kind, line)?),
        VariablesSnapshot::TYPE => Record::Variables(typed(text, &kind, line)?),
        QueryMetadata::TYPE => Record::QueryMetadata(typed(text, &kind, line)?),
        QueryStage::TYPE => Record::QueryStage(typed(text, &kind, line)?),
        QueryCall::TYPE => Record::QueryCall(typed(text, &kind, line)?),
        QueryTool::TYPE => Record::QueryTool(typed(text, &kind, line)?),
        QueryOutcome::TYPE => Record::QueryResult(typed(text, &kind, line)?),
        _ => {
            let fields: Map<String, Value> =
                serde_json::from_str(text).map_err(|source| Error::MalformedLine {
                    line,
                    source: Some(source),
                })?;
            Record::Unknown { kind, fields }
        }
    };
    Ok(Entry {
        line,
        timestamp,
        version,
        record,
    })
}

/// The fields every line has, read leniently (a wrong-typed one is treated as absent); the
/// line must be a JSON object.
#[derive(serde::Deserialize)]
struct Head {
    #[serde(rename = "type")]
    kind: Option<Value>,
    timestamp: Option<Value>,
    version: Option<Value>,
}

fn typed<T: DeserializeOwned>(text: &str, kind: &str, line: usize) -> Result<Box<T>, Error> {
    serde_json::from_str(text)
        .map(Box::new)
        .map_err(|source| Error::InvalidRecord {
            line,
            kind: kind.to_owned(),
            source,
        })
}
