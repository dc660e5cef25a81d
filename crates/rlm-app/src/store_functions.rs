//! `rlm run --store`: the store as the run's context. Model code gets `buffers()`,
//! `search(query, k=10, mode="bm25")`, `get_chunks(ids)`, `grep(pattern, buffer=None, offset=0)` and
//! `read(buffer, start_line, end_line)` as host functions ([`rlm_engine::HostFunctions`]) over
//! `rlm-store`'s store-tools core ([`rlm_store::tools`]), the one `rlm query`'s report tools use
//! too. Every answer is bounded, what was left out is said in the answer, and document text
//! comes back neutralized against our prompt tags.

use std::sync::{Mutex, PoisonError};

use rlm_engine::{FunctionError, FunctionParameter, FunctionSpec, HostFunctions, RaisedKind};
use rlm_store::tools::{StoreTools, ToolError, ToolErrorKind, ToolLimits, declarations};
use rlm_store::{BufferInfo, Store};
use serde_json::{Map, Value, json};

/// The limits of the REPL functions: answers go into Python variables, so they can be
/// larger than a report writer's.
const LIMITS: ToolLimits = ToolLimits::CODE;
/// Bytes of document text one `get_chunks` returns: the ids past it are named, not read.
const ANSWER_BYTES: usize = 1 << 20;
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

    fn buffers(store: &Store, tools: &StoreTools<'_>) -> Result<Value, ToolError> {
        Ok(Value::Array(
            tools
                .buffers()?
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

    fn search(tools: &StoreTools<'_>, arguments: &Map<String, Value>) -> Result<Value, ToolError> {
        let found = tools.search(arguments)?;
        // Each hit says which ranking served it: semantic falls back to bm25 without vectors.
        Ok(Value::Array(
            found
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
                        "mode": found.mode.as_str(),
                    })
                })
                .collect(),
        ))
    }

    fn get_chunks(
        tools: &StoreTools<'_>,
        arguments: &Map<String, Value>,
    ) -> Result<Value, ToolError> {
        let mut chunks = Vec::new();
        let ids = tools.chunk_ids(arguments)?;
        let mut bytes = 0;
        for (index, &id) in ids.iter().enumerate() {
            if bytes >= ANSWER_BYTES {
                // The rest are named, not read: the answer stays within its ceiling.
                let rest = &ids[index..];
                chunks.extend(rest.iter().map(|id| {
                    json!({
                        "chunk_id": id,
                        "truncated": true,
                        "text": format!(
                            "[not read: this answer holds {} of text; get_chunks({rest:?}) \
                             reads the ids not read]",
                            crate::text::human_bytes(ANSWER_BYTES as u64)
                        ),
                    })
                }));
                break;
            }
            let read = tools.chunk(id)?;
            bytes += read.text.len();
            let chunk = &read.chunk;
            let mut text = read.text;
            if read.left_out > 0 {
                text.push_str(&format!(
                    "… [{} more chars; read({:?}, {}, {}) returns the chunk's lines]",
                    read.left_out, chunk.buffer, chunk.start_line, chunk.end_line
                ));
            }
            chunks.push(json!({
                "chunk_id": chunk.id,
                "buffer": chunk.buffer,
                "start_line": chunk.start_line,
                "end_line": chunk.end_line,
                "chars": read.chars,
                "truncated": read.left_out > 0,
                "text": text,
            }));
        }
        Ok(Value::Array(chunks))
    }

    fn grep(tools: &StoreTools<'_>, arguments: &Map<String, Value>) -> Result<Value, ToolError> {
        let grepped = tools.grep(arguments)?;
        let matches: Vec<Value> = grepped
            .matches
            .into_iter()
            .map(|found| {
                let mut text = found.text;
                if found.left_out > 0 {
                    text.push_str(&format!(
                        "… [{} more chars; read() shows it whole]",
                        found.left_out
                    ));
                }
                json!({
                    "buffer": found.buffer,
                    "line": found.line,
                    "chunk_id": found.chunk_id,
                    "text": text,
                })
            })
            .collect();
        let note = grepped.next_offset.map(|next| {
            format!(
                "stopped after {} matching lines; grep(pattern, offset={next}) continues, or \
                 narrow the pattern or pass buffer=",
                LIMITS.max_grep_matches
            )
        });
        Ok(json!({"matches": matches, "truncated": grepped.truncated, "note": note}))
    }

    fn read(tools: &StoreTools<'_>, arguments: &Map<String, Value>) -> Result<Value, ToolError> {
        let read = tools.read(arguments)?;
        let mut text = read.text;
        if let Some(cut_at) = read.cut_after {
            text.push_str(&format!(
                "… [cut after line {cut_at}: read returns at most {} lines and {} chars; \
                 continue with read({:?}, {}, {})]\n",
                LIMITS.max_read_lines,
                LIMITS.max_read_chars,
                read.buffer.name,
                cut_at + 1,
                read.end
            ));
        }
        Ok(Value::String(text))
    }
}

impl HostFunctions for StoreFunctions {
    /// The store's tools as Python functions, from their declarations
    /// (`rlm_store::tools::declarations`): arguments in order, defaults bound when omitted.
    fn functions(&self) -> Vec<FunctionSpec> {
        declarations::ALL
            .iter()
            .map(|tool| {
                let parameters = tool
                    .parameters
                    .iter()
                    .map(|parameter| match parameter.default.value() {
                        None => FunctionParameter::required(parameter.name),
                        Some(default) => FunctionParameter::optional(parameter.name, default),
                    })
                    .collect();
                FunctionSpec::new(tool.name, parameters)
            })
            .collect()
    }

    fn call(&self, name: &str, arguments: &Map<String, Value>) -> Result<Value, FunctionError> {
        let store = self.store.lock().unwrap_or_else(PoisonError::into_inner);
        let tools = StoreTools::new(&store, &LIMITS).embedder(self.embedder.as_deref());
        match name {
            "buffers" => Self::buffers(&store, &tools),
            "search" => Self::search(&tools, arguments),
            "get_chunks" => Self::get_chunks(&tools, arguments),
            "grep" => Self::grep(&tools, arguments),
            "read" => Self::read(&tools, arguments),
            other => {
                return Err(FunctionError::new(
                    RaisedKind::NameError,
                    format!("name '{other}' is not defined"),
                ));
            }
        }
        .map_err(raised)
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
        rlm_context::thousands(bytes),
        rlm_context::thousands(chunks),
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
            rlm_context::thousands(buffer.bytes),
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

/// A refused call as model code sees it: the message `rlm` prints, as the matching exception.
fn raised(error: ToolError) -> FunctionError {
    let kind = match error.kind {
        ToolErrorKind::Lookup => RaisedKind::LookupError,
        ToolErrorKind::Value => RaisedKind::ValueError,
        ToolErrorKind::Type => RaisedKind::TypeError,
        _ => RaisedKind::RuntimeError,
    };
    FunctionError::new(kind, error.message)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The prompt that tells model code about the store shows each function with the
    /// signature it is bound with: a default changed in the declarations fails here until the
    /// prompt says it too.
    #[test]
    fn the_prompt_shows_each_function_as_it_is_bound() {
        let prompt = rlm_engine::Prompts::default().functions;
        for tool in declarations::ALL {
            let shown = format!("`{}`", tool.signature());
            assert!(prompt.contains(&shown), "functions.md lacks {shown}");
        }
    }

    /// Issue 45: `get_chunks` of 60 chunks of 20,000 chars (a store loaded with
    /// `--chunk-size 20000`) answered 1.2 MB at once; it reads up to 1 MiB of text and names
    /// the ids it did not read.
    #[test]
    fn get_chunks_reads_at_most_its_ceiling_and_names_the_ids_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        let sources = (0..60)
            .map(|n| rlm_store::Source::Text {
                name: format!("part{n:02}.txt"),
                text: format!("{}\n", "x".repeat(19_999)),
            })
            .collect();
        let chunking = rlm_context::chunk::ChunkOptions {
            size: 20_000,
            ..Default::default()
        };
        store
            .load(sources, &chunking, &mut |_| {
                std::ops::ControlFlow::Continue(())
            })
            .unwrap();
        let ids: Vec<i64> = store
            .chunks_of_each(&store.list().unwrap())
            .unwrap()
            .iter()
            .map(|chunk| chunk.id)
            .collect();
        assert_eq!(ids.len(), 60);
        let functions = StoreFunctions::new(store, None).unwrap();
        let answer = functions
            .call(
                "get_chunks",
                &json!({ "ids": ids }).as_object().unwrap().clone(),
            )
            .unwrap();
        let chunks = answer.as_array().unwrap();
        assert_eq!(chunks.len(), 60);
        let read: usize = chunks
            .iter()
            .filter(|chunk| chunk.get("buffer").is_some())
            .map(|chunk| chunk["text"].as_str().unwrap().len())
            .sum();
        // Whole chunks up to the first past 1 MiB: 53 of 20,000 bytes.
        assert_eq!(read, 53 * 20_000);
        let not_read: Vec<i64> = chunks[53..]
            .iter()
            .map(|chunk| chunk["chunk_id"].as_i64().unwrap())
            .collect();
        assert_eq!(not_read, ids[53..]);
        let note = chunks[53]["text"].as_str().unwrap();
        assert!(note.starts_with("[not read: this answer holds"), "{note}");
        assert!(note.contains(&format!("{:?}", &ids[53..])), "{note}");
    }
}
