//! `rlm run --store`: the store as the run's context. Model code gets `buffers()`,
//! `search(query, k=10, mode="bm25")`, `get_chunks(ids)`, `grep(pattern, buffer=None)` and
//! `read(buffer, start_line, end_line)` as host functions ([`rlm_engine::HostFunctions`]) over
//! the same `rlm-store` calls `rlm list`, `rlm search`, `rlm grep` and `rlm peek` use.
//! Every answer is bounded; what was left out is said in the answer.

use std::ops::ControlFlow;
use std::sync::{Mutex, PoisonError};

use rlm_engine::{FunctionError, FunctionParameter, FunctionSpec, HostFunctions, RaisedKind};
use rlm_store::{BufferInfo, GrepLine, GrepOptions, SearchMode, SearchRequest, Store};
use serde_json::{Map, Value, json};

/// Most hits one `search` returns (`k` above it is refused).
pub const MAX_SEARCH_K: i64 = 100;
/// Most chunk ids one `get_chunks` call takes.
pub const MAX_CHUNKS_PER_CALL: usize = 100;
/// Chars of one chunk's text `get_chunks` returns; the rest is left out with a note.
pub const MAX_CHUNK_CHARS: usize = 20_000;
/// Matching lines one `grep` returns.
pub const MAX_GREP_MATCHES: usize = 500;
/// Chars of one matching line `grep` returns.
pub const MAX_GREP_LINE_CHARS: usize = 500;
/// Lines one `read` returns.
pub const MAX_READ_LINES: u64 = 2_000;
/// Chars one `read` returns.
pub const MAX_READ_CHARS: usize = 200_000;
/// Buffers listed by name in the first message (`buffers()` lists them all).
const BUFFERS_DESCRIBED: usize = 50;
/// Bytes of a buffer's start read to name its format.
const FORMAT_PREFIX_BYTES: u64 = 16 * 1024;

/// The store behind the run's host functions.
#[derive(Debug)]
pub struct StoreFunctions {
    /// SQLite connections are not shared between threads: one call at a time.
    store: Mutex<Store>,
    /// For `mode="semantic"`/`"hybrid"`, when the store has vectors and their model is here.
    embedder: Option<Box<dyn rlm_embed::Embedder>>,
    /// What the first message says about the store, computed once.
    description: String,
}

impl StoreFunctions {
    /// Describes the store once (buffers, formats, sizes, chunk counts).
    pub fn new(
        store: Store,
        embedder: Option<Box<dyn rlm_embed::Embedder>>,
    ) -> Result<Self, rlm_store::Error> {
        let buffers = store.list()?;
        let description = describe(&store, &buffers, embedder.is_some());
        Ok(Self {
            store: Mutex::new(store),
            embedder,
            description,
        })
    }

    fn buffers(store: &Store) -> Result<Value, FunctionError> {
        let buffers = store.list().map_err(raised)?;
        Ok(Value::Array(
            buffers
                .iter()
                .map(|buffer| {
                    json!({
                        "name": buffer.name,
                        "path": buffer.path,
                        "format": format_of(store, buffer),
                        "bytes": buffer.bytes,
                        "lines": buffer.lines,
                        "chunks": buffer.chunks,
                        "chunker": buffer.strategy,
                    })
                })
                .collect(),
        ))
    }

    fn search(
        &self,
        store: &Store,
        arguments: &Map<String, Value>,
    ) -> Result<Value, FunctionError> {
        let query = string(arguments, "search", "query")?;
        let k = integer(arguments, "search", "k")?;
        if !(1..=MAX_SEARCH_K).contains(&k) {
            return Err(value_error(format!(
                "search(): k must be between 1 and {MAX_SEARCH_K}, not {k}"
            )));
        }
        let mode = match string(arguments, "search", "mode")?.as_str() {
            "bm25" => SearchMode::Bm25,
            "semantic" => SearchMode::Semantic,
            "hybrid" => SearchMode::Hybrid,
            other => {
                return Err(value_error(format!(
                    "search(): mode must be \"bm25\", \"semantic\" or \"hybrid\", not {other:?}"
                )));
            }
        };
        let mut request = SearchRequest::new(query);
        request.mode = mode;
        request.limit = usize::try_from(k).unwrap_or(1);
        let outcome = store
            .search_with(&request, self.embedder.as_deref())
            .map_err(raised)?;
        // Each hit says which ranking served it: semantic falls back to bm25 without vectors.
        let mode = serde_json::to_value(outcome.mode).unwrap_or(Value::Null);
        Ok(Value::Array(
            outcome
                .hits
                .iter()
                .map(|hit| {
                    json!({
                        "chunk_id": hit.chunk_id,
                        "buffer": hit.buffer,
                        "start_line": hit.start_line,
                        "end_line": hit.end_line,
                        "score": hit.score,
                        "snippet": hit.snippet,
                        "mode": mode,
                    })
                })
                .collect(),
        ))
    }

    fn get_chunks(store: &Store, arguments: &Map<String, Value>) -> Result<Value, FunctionError> {
        let ids = match arguments.get("ids") {
            Some(Value::Number(id)) => vec![Value::Number(id.clone())],
            Some(Value::Array(ids)) => ids.clone(),
            _ => {
                return Err(type_error(
                    "get_chunks(): ids must be a list of chunk ids (ints)".to_owned(),
                ));
            }
        };
        if ids.len() > MAX_CHUNKS_PER_CALL {
            return Err(value_error(format!(
                "get_chunks(): at most {MAX_CHUNKS_PER_CALL} ids per call ({} given); ask in \
                 slices",
                ids.len()
            )));
        }
        let mut chunks = Vec::with_capacity(ids.len());
        for id in ids {
            let Some(id) = id.as_i64() else {
                return Err(type_error(format!(
                    "get_chunks(): chunk ids are ints, not {id}"
                )));
            };
            let chunk = store.chunk(id).map_err(raised)?;
            let text = store.chunk_text(id).map_err(raised)?;
            let chars = text.chars().count();
            let (text, truncated) = cut(
                text,
                MAX_CHUNK_CHARS,
                &format!(
                    "read({:?}, {}, {}) returns the chunk's lines",
                    chunk.buffer, chunk.start_line, chunk.end_line
                ),
            );
            chunks.push(json!({
                "chunk_id": chunk.id,
                "buffer": chunk.buffer,
                "start_line": chunk.start_line,
                "end_line": chunk.end_line,
                "chars": chars,
                "truncated": truncated,
                "text": text,
            }));
        }
        Ok(Value::Array(chunks))
    }

    fn grep(store: &Store, arguments: &Map<String, Value>) -> Result<Value, FunctionError> {
        let pattern = string(arguments, "grep", "pattern")?;
        let buffers = match arguments.get("buffer") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(name)) => {
                // An unknown name is an error here as in `rlm grep --buffer`.
                vec![store.buffer(name).map_err(raised)?.name]
            }
            Some(_) => {
                return Err(type_error(
                    "grep(): buffer must be a buffer name (str) or None".to_owned(),
                ));
            }
        };
        let options = GrepOptions {
            buffers,
            ..GrepOptions::default()
        };
        let mut matches = Vec::new();
        let mut truncated = false;
        store
            .grep(&pattern, &options, &mut |line| {
                let GrepLine::Match {
                    buffer, line, text, ..
                } = line
                else {
                    return ControlFlow::Continue(());
                };
                if matches.len() == MAX_GREP_MATCHES {
                    truncated = true;
                    return ControlFlow::Break(());
                }
                let (text, _) = cut(
                    text.to_owned(),
                    MAX_GREP_LINE_CHARS,
                    "read() shows it whole",
                );
                matches.push(json!({"buffer": buffer, "line": line, "text": text}));
                ControlFlow::Continue(())
            })
            .map_err(raised)?;
        let note = truncated.then(|| {
            format!(
                "stopped after {MAX_GREP_MATCHES} matching lines; narrow the pattern or pass \
                 buffer="
            )
        });
        Ok(json!({"matches": matches, "truncated": truncated, "note": note}))
    }

    fn read(store: &Store, arguments: &Map<String, Value>) -> Result<Value, FunctionError> {
        let name = string(arguments, "read", "buffer")?;
        let first = integer(arguments, "read", "start_line")?;
        let last = integer(arguments, "read", "end_line")?;
        let buffer = store.buffer(&name).map_err(raised)?;
        if first < 1 || last < first {
            return Err(value_error(format!(
                "read(): line range {first}:{last} is empty or starts below 1 (lines count from 1, \
                 both ends included)"
            )));
        }
        let (first, last) = (first.unsigned_abs(), last.unsigned_abs());
        // Past the end is clamped, as `rlm peek --lines` does.
        let end = last.min(buffer.lines.max(1));
        let capped = end.min(first.saturating_add(MAX_READ_LINES - 1));
        let text = store.read_lines(&buffer, first, capped).map_err(raised)?;
        let mut cut_at = (capped < end).then_some(capped);
        let (mut text, chars_cut) = cut(text, MAX_READ_CHARS, "");
        if chars_cut {
            // Whole lines are kept, so the note says where to continue; a single line longer
            // than the cap is shown in part.
            match text.rfind('\n') {
                Some(at) => {
                    text.truncate(at + 1);
                    let kept = text.matches('\n').count() as u64;
                    cut_at = Some(first + kept - 1);
                }
                None => {
                    text.push('\n');
                    cut_at = Some(first);
                }
            }
        }
        if let Some(cut_at) = cut_at {
            text.push_str(&format!(
                "… [cut after line {cut_at}: read returns at most {MAX_READ_LINES} lines and \
                 {MAX_READ_CHARS} chars; continue with read({:?}, {}, {end})]\n",
                buffer.name,
                cut_at + 1
            ));
        }
        Ok(Value::String(text))
    }
}

impl HostFunctions for StoreFunctions {
    fn functions(&self) -> Vec<FunctionSpec> {
        let required = FunctionParameter::required;
        vec![
            FunctionSpec::new("buffers", Vec::new()),
            FunctionSpec::new(
                "search",
                vec![
                    required("query"),
                    FunctionParameter::optional("k", json!(10)),
                    FunctionParameter::optional("mode", json!("bm25")),
                ],
            ),
            FunctionSpec::new("get_chunks", vec![required("ids")]),
            FunctionSpec::new(
                "grep",
                vec![
                    required("pattern"),
                    FunctionParameter::optional("buffer", Value::Null),
                ],
            ),
            FunctionSpec::new(
                "read",
                vec![
                    required("buffer"),
                    required("start_line"),
                    required("end_line"),
                ],
            ),
        ]
    }

    fn call(&self, name: &str, arguments: &Map<String, Value>) -> Result<Value, FunctionError> {
        let store = self.store.lock().unwrap_or_else(PoisonError::into_inner);
        match name {
            "buffers" => Self::buffers(&store),
            "search" => self.search(&store, arguments),
            "get_chunks" => Self::get_chunks(&store, arguments),
            "grep" => Self::grep(&store, arguments),
            "read" => Self::read(&store, arguments),
            other => Err(FunctionError::new(
                RaisedKind::NameError,
                format!("name '{other}' is not defined"),
            )),
        }
    }

    fn describe(&self) -> String {
        self.description.clone()
    }
}

/// The first message's description: totals, then one line per buffer (names escaped so a file
/// name cannot add prompt lines).
fn describe(store: &Store, buffers: &[BufferInfo], semantic: bool) -> String {
    let chunks: u64 = buffers.iter().map(|buffer| buffer.chunks).sum();
    let bytes: u64 = buffers.iter().map(|buffer| buffer.bytes).sum();
    let mut out = format!(
        "The data is a store of {} buffers ({} bytes, {} chunks). Search modes: {}.\n\
         Buffers (name · format · bytes · lines · chunks):\n",
        buffers.len(),
        rlm_engine::group_digits(bytes as usize),
        rlm_engine::group_digits(chunks as usize),
        if semantic {
            "bm25, semantic, hybrid"
        } else {
            "bm25 (no vectors: semantic and hybrid fall back to bm25)"
        },
    );
    for buffer in buffers.iter().take(BUFFERS_DESCRIBED) {
        out.push_str(&format!(
            "- {} · {} · {} · {} · {}\n",
            rlm_context::one_line(&buffer.name),
            format_of(store, buffer),
            rlm_engine::group_digits(buffer.bytes as usize),
            buffer.lines,
            buffer.chunks,
        ));
    }
    if buffers.len() > BUFFERS_DESCRIBED {
        out.push_str(&format!(
            "- … and {} more: `buffers()` lists them all\n",
            buffers.len() - BUFFERS_DESCRIBED
        ));
    }
    out
}

/// The format `rlm inspect` would name, from the buffer's name and first bytes.
fn format_of(store: &Store, buffer: &BufferInfo) -> &'static str {
    let end = buffer.bytes.min(FORMAT_PREFIX_BYTES);
    let prefix = store.read_bytes(buffer, 0..end).unwrap_or_default();
    let options = rlm_context::AnalyzeOptions::default();
    rlm_context::analyze_bytes(prefix.as_bytes(), Some(&buffer.name), &options)
        .format
        .name()
}

/// `text` cut to `limit` chars with a note saying how much was left out.
fn cut(mut text: String, limit: usize, how_to_see_it: &str) -> (String, bool) {
    let Some((at, _)) = text.char_indices().nth(limit) else {
        return (text, false);
    };
    let left_out = text[at..].chars().count();
    text.truncate(at);
    if !how_to_see_it.is_empty() {
        text.push_str(&format!("… [{left_out} more chars; {how_to_see_it}]"));
    }
    (text, true)
}

/// A store error as model code sees it: the message `rlm` prints, as the matching exception.
fn raised(error: rlm_store::Error) -> FunctionError {
    use rlm_store::Error as E;
    let kind = match &error {
        E::UnknownBuffer(_) | E::AmbiguousBuffer { .. } | E::UnknownChunk(_) => {
            RaisedKind::LookupError
        }
        E::Range(_) | E::Glob { .. } | E::Regex(_) => RaisedKind::ValueError,
        _ => RaisedKind::RuntimeError,
    };
    let mut message = rlm_llm::error_chain(&error);
    if matches!(error, E::UnknownBuffer(_)) {
        message.push_str("; buffers() lists the stored buffers");
    }
    FunctionError::new(kind, message)
}

fn string(
    arguments: &Map<String, Value>,
    function: &str,
    name: &str,
) -> Result<String, FunctionError> {
    match arguments.get(name) {
        Some(Value::String(text)) => Ok(text.clone()),
        other => Err(type_error(format!(
            "{function}(): {name} must be str, not {}",
            python_type(other)
        ))),
    }
}

fn integer(
    arguments: &Map<String, Value>,
    function: &str,
    name: &str,
) -> Result<i64, FunctionError> {
    match arguments.get(name).and_then(Value::as_i64) {
        Some(number) => Ok(number),
        None => Err(type_error(format!(
            "{function}(): {name} must be int, not {}",
            python_type(arguments.get(name))
        ))),
    }
}

fn python_type(value: Option<&Value>) -> &'static str {
    match value {
        None | Some(Value::Null) => "None",
        Some(Value::Bool(_)) => "bool",
        Some(Value::Number(number)) if number.is_i64() => "int",
        Some(Value::Number(_)) => "float",
        Some(Value::String(_)) => "str",
        Some(Value::Array(_)) => "list",
        Some(Value::Object(_)) => "dict",
    }
}

fn value_error(message: String) -> FunctionError {
    FunctionError::new(RaisedKind::ValueError, message)
}

fn type_error(message: String) -> FunctionError {
    FunctionError::new(RaisedKind::TypeError, message)
}
