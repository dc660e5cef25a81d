//! Reading a run's log (and its child runs' logs) into what the page shows.
//!
//! A turn's `prompt` is the whole conversation so far, so a log grows with the square of its
//! turns; the page shows each turn's *new* messages only, and the log is read one line at a
//! time so the full prompts are never all in memory.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use crate::VERSION;
use crate::error::Error;
use crate::reader::{Entry, Record, parse_line};
use rlm_types::{Message, Role, error_chain};

use crate::schema::{Iteration, RunMetadata, RunOutcome, SubcallKind};

/// Child runs nested deeper than this are named but not loaded (a guard against odd logs; the
/// engine's own depth limit is far lower).
const MAX_NESTING: usize = 32;

/// A run as the page shows it.
#[derive(Debug, Clone)]
pub struct RunView {
    /// The log it was read from.
    pub path: PathBuf,
    /// The first line.
    pub metadata: RunMetadata,
    /// The turns, in order.
    pub turns: Vec<TurnView>,
    /// The last line; `None` while the run is going (or after it was killed).
    pub outcome: Option<RunOutcome>,
    /// Line types this version does not know, with how many lines of each.
    pub unknown_records: BTreeMap<String, usize>,
    /// The number of a cut last line that was left out (a run still writing its log).
    pub cut_line: Option<usize>,
}

/// One turn as the page shows it.
#[derive(Debug, Clone)]
pub struct TurnView {
    /// The turn's record, with `prompt` emptied (see `new_messages`).
    pub iteration: Iteration,
    /// The messages sent this turn that the previous turn did not send (all of them for the
    /// first turn), without the previous reply, which the page shows in its own turn.
    pub new_messages: Vec<Message>,
    /// How many messages the whole prompt had.
    pub prompt_messages: usize,
    /// Child runs by `(code block index, sub-call index)`.
    pub children: BTreeMap<(usize, usize), ChildRun>,
}

/// A child run named by a sub-call.
#[derive(Debug, Clone)]
pub enum ChildRun {
    /// Its log was read.
    Loaded(Box<RunView>),
    /// Its log could not be read; why (shown in the page instead of the child).
    Missing(String),
}

impl RunView {
    /// Reads the log at `path` and the logs of its child runs.
    ///
    /// A log without a `result` line (a run still going, or killed) reads fine, and so does
    /// one whose last line is cut short before the `result` (a run writing it): that line is
    /// left out and named in `cut_line`. The errors: the file cannot be read, is not an rlm
    /// run log, was written by a newer version, has a line that is not a record, or is cut
    /// after its `result` line.
    pub fn load(path: &Path) -> Result<Self, Error> {
        let mut seen = HashSet::new();
        load(path, 0, &mut seen)
    }

    /// Whether the log has its `result` line.
    pub fn is_complete(&self) -> bool {
        self.outcome.is_some()
    }

    /// This run's turns and those of every loaded child run below it.
    pub fn total_turns(&self) -> usize {
        self.turns.len()
            + self
                .turns
                .iter()
                .flat_map(|turn| turn.children.values())
                .map(|child| match child {
                    ChildRun::Loaded(run) => run.total_turns(),
                    ChildRun::Missing(_) => 0,
                })
                .sum::<usize>()
    }
}

fn load(path: &Path, nesting: usize, seen: &mut HashSet<PathBuf>) -> Result<RunView, Error> {
    seen.insert(path.canonicalize().unwrap_or_else(|_| path.to_path_buf()));
    let mut lines = LogLines::open(path)?;
    let mut metadata: Option<RunMetadata> = None;
    let mut turns = Vec::new();
    let mut outcome = None;
    let mut unknown_records = BTreeMap::new();
    let mut previous: Option<(Vec<Message>, String)> = None;
    let mut cut_line = None;
    while let Some(line) = lines.next_line()? {
        let entry = match line {
            LogLine::Entry(entry) => entry,
            LogLine::Cut(line) if outcome.is_none() => {
                cut_line = Some(line);
                break;
            }
            LogLine::Cut(line) => return Err(lines.truncated(line)),
        };
        match entry.record {
            Record::Metadata(first) if metadata.is_none() => metadata = Some(*first),
            _ if metadata.is_none() => {
                return Err(lines.not_a_log(
                    entry.line,
                    format!(
                        "its first record is `{}`, not `metadata`",
                        entry.record.kind()
                    ),
                ));
            }
            Record::Metadata(_) => {
                return Err(lines.not_a_log(entry.line, "it has a second `metadata` record".into()));
            }
            Record::Iteration(mut iteration) => {
                let prompt = std::mem::take(&mut iteration.prompt);
                let new_messages = new_messages(&prompt, previous.as_ref());
                previous = Some((prompt, iteration.response.clone()));
                let children = children(path, &iteration, nesting, seen);
                turns.push(TurnView {
                    prompt_messages: previous.as_ref().map_or(0, |(prompt, _)| prompt.len()),
                    iteration: *iteration,
                    new_messages,
                    children,
                });
            }
            Record::Result(result) => outcome = Some(*result),
            // What `rlm runs show --vars` lists; the page has no place for it yet.
            Record::Variables(_) => {}
            // A run log holds no query records (a query log starts with `query_metadata` and
            // is read by `QueryView`); any other type is counted and named on the page.
            record => *unknown_records.entry(record.kind().to_owned()).or_insert(0) += 1,
        }
    }
    let Some(metadata) = metadata else {
        return Err(lines.not_a_log(lines.line, "it is empty".into()));
    };
    Ok(RunView {
        path: path.to_path_buf(),
        metadata,
        turns,
        outcome,
        unknown_records,
        cut_line,
    })
}

/// A line of a log as the viewer reads it.
pub(super) enum LogLine {
    /// A record.
    Entry(Entry),
    /// The last line, without its newline and not a whole record: the writer is still writing
    /// it, or the file was cut (its number).
    Cut(usize),
}

/// Reads a log one line at a time for the viewer: blank lines skipped, a file that does not
/// start with a record is not a log, a line from a newer schema is refused, and a cut last
/// line is told apart from a malformed one.
pub(super) struct LogLines {
    path: PathBuf,
    reader: BufReader<File>,
    text: String,
    /// The number of the last line read.
    pub line: usize,
    records: usize,
}

impl LogLines {
    pub fn open(path: &Path) -> Result<Self, Error> {
        let file = File::open(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Self {
            path: path.to_path_buf(),
            reader: BufReader::new(file),
            text: String::new(),
            line: 0,
            records: 0,
        })
    }

    /// The next line, `None` at the end of the file.
    pub fn next_line(&mut self) -> Result<Option<LogLine>, Error> {
        loop {
            self.text.clear();
            let read =
                self.reader
                    .read_line(&mut self.text)
                    .map_err(|source| match source.kind() {
                        std::io::ErrorKind::InvalidData => {
                            self.not_a_log(self.line + 1, "it is not UTF-8 text".into())
                        }
                        _ => Error::Read {
                            line: self.line + 1,
                            source,
                        },
                    })?;
            if read == 0 {
                return Ok(None);
            }
            self.line += 1;
            if !self.text.trim().is_empty() {
                break;
            }
        }
        let line = self.line;
        let entry = match parse_line(&self.text, line) {
            Ok(entry) => entry,
            Err(err) if self.records == 0 => return Err(self.not_a_log(line, err.to_string())),
            // The writer ends every line with a newline in one write: a last line without one
            // that does not parse is being written, or was cut (a partial copy, a full disk).
            Err(_) if !self.text.ends_with('\n') => return Ok(Some(LogLine::Cut(line))),
            Err(err) => return Err(err),
        };
        if entry.version > VERSION {
            return Err(Error::NewerVersion {
                path: self.path.clone(),
                line,
                version: entry.version,
            });
        }
        self.records += 1;
        Ok(Some(LogLine::Entry(entry)))
    }

    /// The text of the last line read.
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn not_a_log(&self, line: usize, reason: String) -> Error {
        Error::NotATrajectory {
            path: self.path.clone(),
            line,
            reason,
        }
    }

    pub fn truncated(&self, line: usize) -> Error {
        Error::Truncated {
            path: self.path.clone(),
            line,
        }
    }
}

/// The messages of `prompt` past the part it shares with the previous turn's prompt, without
/// the previous turn's reply.
fn new_messages(prompt: &[Message], previous: Option<&(Vec<Message>, String)>) -> Vec<Message> {
    let Some((previous_prompt, previous_reply)) = previous else {
        return prompt.to_vec();
    };
    let shared = prompt
        .iter()
        .zip(previous_prompt)
        .take_while(|(now, before)| now == before)
        .count();
    let mut rest = &prompt[shared..];
    // The engine logs the reply as received but sends it back closed (a code fence cut by the
    // stop sequence gets its closing fence), so the sent message starts with the reply.
    if let Some(first) = rest.first()
        && first.role == Role::Assistant
        && first.content.starts_with(previous_reply.as_str())
    {
        rest = &rest[1..];
    }
    rest.to_vec()
}

/// Loads the child runs a turn's `rlm_query` sub-calls name.
fn children(
    parent: &Path,
    iteration: &Iteration,
    nesting: usize,
    seen: &mut HashSet<PathBuf>,
) -> BTreeMap<(usize, usize), ChildRun> {
    let mut children = BTreeMap::new();
    for (block_index, block) in iteration.code_blocks.iter().enumerate() {
        for (call_index, call) in block.result.subcalls.iter().enumerate() {
            let Some(logged) = &call.child_log else {
                if call.kind == SubcallKind::RlmQuery && call.child_run_id.is_some() {
                    let reason = "the child run was not logged".to_owned();
                    children.insert((block_index, call_index), ChildRun::Missing(reason));
                }
                continue;
            };
            let child = match child_path(parent, logged) {
                None => ChildRun::Missing(format!("{} was not found", logged.display())),
                Some(_) if nesting + 1 >= MAX_NESTING => {
                    ChildRun::Missing(format!("nested deeper than {MAX_NESTING} runs"))
                }
                Some(path) if seen.contains(&path.canonicalize().unwrap_or(path.clone())) => {
                    ChildRun::Missing(format!("{} is already shown above", path.display()))
                }
                Some(path) => match load(&path, nesting + 1, seen) {
                    Ok(run) => ChildRun::Loaded(Box::new(run)),
                    Err(err) => ChildRun::Missing(error_chain(&err)),
                },
            };
            children.insert((block_index, call_index), child);
        }
    }
    children
}

/// Where a child's log is: as logged when that path exists, else beside the parent's log (the
/// logged path is relative to where the run was started, and logs get moved).
fn child_path(parent: &Path, logged: &Path) -> Option<PathBuf> {
    if logged.is_file() {
        return Some(logged.to_path_buf());
    }
    let beside = parent.parent()?.join(logged.file_name()?);
    beside.is_file().then_some(beside)
}
