//! The tools `rlm mcp` offers: each one's arguments (deserialized and described as a JSON
//! schema) and the `rlm` command line they stand for. The command itself runs unchanged
//! (`call.rs`), so a tool answers exactly as the CLI would, with its `--json` records.

use std::ffi::OsString;

use schemars::JsonSchema;
use serde::Deserialize;

use super::outputs::{self, Records};
use super::root::Root;
use super::sampling;

/// One tool: its name, what it is for, its argument and result schemas, and its command line.
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub schema: fn() -> serde_json::Map<String, serde_json::Value>,
    /// The schema of its `structuredContent`: `{"records": [...]}` of its command's records.
    pub output_schema: fn() -> serde_json::Map<String, serde_json::Value>,
    /// The `rlm` arguments (after the global ones) for a call, or why the call is refused.
    pub command_line: fn(serde_json::Value, &Root) -> Result<Vec<OsString>, String>,
}

/// A tool's arguments: how they turn into an `rlm` command line.
trait Arguments: for<'de> Deserialize<'de> + JsonSchema {
    /// The records its command prints with `--json` (see `outputs.rs`).
    type Record: JsonSchema;

    fn command_line(self, root: &Root) -> Result<Command, String>;
}

fn spec<A: Arguments>(name: &'static str, description: &'static str) -> ToolSpec {
    ToolSpec {
        name,
        description,
        schema: schema_of::<A>,
        output_schema: schema_of::<Records<A::Record>>,
        command_line: |arguments, root| {
            let arguments: A = serde_json::from_value(arguments)
                .map_err(|err| format!("error: invalid arguments: {err}"))?;
            Ok(arguments.command_line(root)?.0)
        },
    }
}

/// The JSON schema schemars derives for `T`, in standard JSON Schema only.
fn schema_of<T: JsonSchema>() -> serde_json::Map<String, serde_json::Value> {
    let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
    match serde_json::to_value(schema) {
        Ok(serde_json::Value::Object(mut object)) => {
            drop_rust_formats(&mut object);
            object
        }
        // A derived schema is always an object; an empty one accepts anything.
        _ => serde_json::Map::new(),
    }
}

/// The `format` values JSON Schema (2020-12) defines; clients validate these and warn about
/// any other (schemars writes Rust's integer and float widths: `uint64`, `int32`, `double`).
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Removes every non-standard `format` keyword from a schema, at any depth. The widths stay
/// expressed where they matter: unsigned integers keep their `minimum: 0`. A *property* named
/// `format` is a schema (an object), never a string, so it is kept.
fn drop_rust_formats(schema: &mut serde_json::Map<String, serde_json::Value>) {
    if schema
        .get("format")
        .and_then(serde_json::Value::as_str)
        .is_some_and(|format| !STANDARD_FORMATS.contains(&format))
    {
        schema.remove("format");
    }
    for value in schema.values_mut() {
        drop_rust_formats_in(value);
    }
}

fn drop_rust_formats_in(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(object) => drop_rust_formats(object),
        serde_json::Value::Array(items) => items.iter_mut().for_each(drop_rust_formats_in),
        _ => {}
    }
}

/// Every tool, in the order `tools/list` shows them.
pub fn all() -> Vec<ToolSpec> {
    vec![
        spec::<InspectArguments>(
            "inspect",
            "Describe files or a text without storing them: format, size, lines, records, \
             fields and a sample (rlm inspect).",
        ),
        spec::<LoadArguments>(
            "load",
            "Load files or directories into the store: chunked and indexed for search, grep and \
             peek (rlm load). Waits while another process writes the store.",
        ),
        spec::<ListArguments>(
            "list_buffers",
            "The stored buffers with sizes and chunk counts (rlm list).",
        ),
        spec::<SearchArguments>(
            "search",
            "Ranked chunks for a query: BM25, semantic or hybrid, filtered by buffer or path \
             glob (rlm search).",
        ),
        spec::<GrepArguments>(
            "grep",
            "Regex search over stored buffers, ripgrep-style (rlm grep).",
        ),
        spec::<PeekArguments>(
            "peek",
            "Part of a stored buffer: a line range, a byte range or one chunk (rlm peek).",
        ),
        spec::<RunArguments>(
            "run",
            "Answer a question over files or the store with a recursive language model: the \
             model writes code in a sandbox, calls sub-models and iterates until it answers, \
             within the budgets given (rlm run). Uses rlm's configured providers and keys, or \
             the client's own model through MCP sampling (model \"mcp\"; the default when no \
             model is configured and the client offers sampling). Sends a progress \
             notification per turn when the call carries a progress token.",
        ),
        spec::<CtxArguments>(
            "ctx_assemble",
            "Build the prompt of a ctx directory within its token budget: writes \
             build/prompt.mdctx and build/ctxplan.json and returns the plan (rlm ctx assemble).",
        ),
        spec::<QueryArguments>(
            "query",
            "Answer an analytic question over the whole store: plan, search, extract findings \
             from chunks in parallel and write a report citing chunk ids (rlm query). Sends a \
             progress notification per batch when the call carries a progress token.",
        ),
    ]
}

/// An `rlm` command line under construction.
struct Command(Vec<OsString>);

impl Command {
    fn new(words: &[&str]) -> Self {
        Self(words.iter().map(OsString::from).collect())
    }

    fn arg(mut self, value: impl Into<OsString>) -> Self {
        self.0.push(value.into());
        self
    }

    fn flag(self, name: &str, on: bool) -> Self {
        if on { self.arg(name) } else { self }
    }

    fn option(self, name: &str, value: Option<impl ToString>) -> Self {
        match value {
            Some(value) => self.arg(name).arg(value.to_string()),
            None => self,
        }
    }

    fn each(mut self, name: &str, values: &[String]) -> Self {
        for value in values {
            self = self.arg(name).arg(value);
        }
        self
    }

    /// A value that must not be read as a flag (a query or pattern starting with `-`).
    fn positional(self, value: &str) -> Self {
        self.arg("--").arg(value)
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct InspectArguments {
    /// Files to describe, relative to the server's root.
    #[serde(default)]
    paths: Vec<String>,
    /// Inline text to describe instead of files.
    text: Option<String>,
    /// Name to use for the inline text (its extension guides format detection).
    name: Option<String>,
    /// Characters of sample to include (default 200).
    sample_chars: Option<u32>,
}

impl Arguments for InspectArguments {
    type Record = outputs::InspectRecord;

    fn command_line(self, root: &Root) -> Result<Command, String> {
        let mut command = Command::new(&["inspect"])
            .option("--text", self.text)
            .option("--name", self.name)
            .option("--sample-chars", self.sample_chars);
        for path in &self.paths {
            command = command.arg(root.inside(path)?);
        }
        Ok(command)
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct LoadArguments {
    /// Files or directories to load, relative to the server's root.
    paths: Vec<String>,
    /// Buffer name (only with exactly one file).
    name: Option<String>,
    /// Only files matching these globs.
    #[serde(default)]
    include: Vec<String>,
    /// Skip files matching these globs.
    #[serde(default)]
    exclude: Vec<String>,
    /// Chunk size (characters by default).
    chunk_size: Option<usize>,
}

impl Arguments for LoadArguments {
    type Record = outputs::LoadRecord;

    fn command_line(self, root: &Root) -> Result<Command, String> {
        let mut command = Command::new(&["load"])
            .option("--name", self.name)
            .each("--include", &self.include)
            .each("--exclude", &self.exclude)
            .option("--chunk-size", self.chunk_size)
            .arg("--");
        if self.paths.is_empty() {
            return Err("error: `paths` needs at least one file or directory".to_owned());
        }
        for path in &self.paths {
            command = command.arg(root.inside(path)?);
        }
        Ok(command)
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListArguments {}

impl Arguments for ListArguments {
    type Record = outputs::BufferRecord;

    fn command_line(self, _root: &Root) -> Result<Command, String> {
        Ok(Command::new(&["list"]))
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SearchArguments {
    /// The query.
    query: String,
    /// Ranking: bm25 (default), semantic or hybrid (semantic needs embedded chunks).
    mode: Option<rlm_store::SearchMode>,
    /// How many chunks to return (default 10, at most 10,000).
    k: Option<u32>,
    /// Only these buffers (names or ids).
    #[serde(default)]
    buffers: Vec<String>,
    /// Only buffers whose path matches this glob.
    path: Option<String>,
}

impl Arguments for SearchArguments {
    type Record = outputs::SearchRecord;

    fn command_line(self, _root: &Root) -> Result<Command, String> {
        Ok(Command::new(&["search"])
            .option("--mode", self.mode.map(rlm_store::SearchMode::as_str))
            .option("--top", self.k)
            .each("--buffer", &self.buffers)
            .option("--path", self.path)
            .positional(&self.query))
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GrepArguments {
    /// A regular expression (Rust syntax), or a literal with `fixed_strings`.
    pattern: String,
    /// Only these buffers (names or ids).
    #[serde(default)]
    buffers: Vec<String>,
    /// Only buffers whose path matches this glob.
    path: Option<String>,
    /// Lines of context around each match.
    context: Option<usize>,
    #[serde(default)]
    ignore_case: bool,
    #[serde(default)]
    fixed_strings: bool,
    #[serde(default)]
    word_regexp: bool,
    /// Only the buffers that match.
    #[serde(default)]
    files_with_matches: bool,
    /// Only the count of matching lines per buffer.
    #[serde(default)]
    count: bool,
    /// At most this many matching lines per buffer.
    max_count: Option<u64>,
}

impl Arguments for GrepArguments {
    type Record = outputs::GrepRecord;

    fn command_line(self, _root: &Root) -> Result<Command, String> {
        Ok(Command::new(&["grep"])
            .each("--buffer", &self.buffers)
            .option("--path", self.path)
            .option("--context", self.context)
            .flag("--ignore-case", self.ignore_case)
            .flag("--fixed-strings", self.fixed_strings)
            .flag("--word-regexp", self.word_regexp)
            .flag("--files-with-matches", self.files_with_matches)
            .flag("--count", self.count)
            .option("--max-count", self.max_count)
            .positional(&self.pattern))
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PeekArguments {
    /// The buffer (name or id); not with `chunk`.
    buffer: Option<String>,
    /// Lines `A:B` (1-based, inclusive; `A:` or `:B` leave an end open).
    lines: Option<String>,
    /// Bytes `A:B` (0-based, end exclusive).
    bytes: Option<String>,
    /// One chunk by id (from `search` or `grep`).
    chunk: Option<i64>,
}

impl Arguments for PeekArguments {
    type Record = outputs::PeekRecord;

    fn command_line(self, _root: &Root) -> Result<Command, String> {
        let command = Command::new(&["peek"])
            .option("--lines", self.lines)
            .option("--bytes", self.bytes)
            .option("--chunk", self.chunk);
        Ok(match self.buffer {
            Some(buffer) => command.positional(&buffer),
            None => command,
        })
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RunArguments {
    /// The question.
    query: String,
    /// Files to answer over, relative to the server's root.
    #[serde(default)]
    context_files: Vec<String>,
    /// Inline context text.
    context: Option<String>,
    /// Answer over a store instead of files: `true` for the store the other tools use, or a
    /// store directory relative to the server's root. The model's code then gets
    /// `buffers()`, `search()`, `get_chunks()`, `grep()` and `read()` (rlm run --store).
    store: Option<StoreChoice>,
    /// Root model as `provider:model` (default from rlm's configuration). `mcp` (or
    /// `sampling`) asks the client's own model through MCP sampling, `mcp:NAME` with NAME as
    /// a model hint; when nothing is configured and the client offers sampling, that is the
    /// default.
    model: Option<String>,
    /// Model for sub-calls (`llm_query`; default: the root model); `mcp` as for `model`.
    subcall_model: Option<String>,
    /// Most turns of the root model (default 30).
    max_iterations: Option<u32>,
    /// Most levels of recursive runs (default 1).
    max_depth: Option<u32>,
    /// Spending limit in US dollars over the whole run.
    max_cost: Option<f64>,
    /// Token limit over the whole run.
    max_tokens: Option<u64>,
    /// Wall-clock limit in seconds.
    timeout_seconds: Option<f64>,
    /// Most sub-model calls.
    max_subcalls: Option<u64>,
}

/// `run`'s `store`: the server's store, or one named by its directory.
#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
enum StoreChoice {
    /// `true`: the store the other tools use; `false`: none.
    Default(bool),
    /// A store directory, relative to the server's root.
    Directory(String),
}

impl Arguments for RunArguments {
    type Record = outputs::RunRecord;

    fn command_line(self, root: &Root) -> Result<Command, String> {
        let store = match self.store {
            None | Some(StoreChoice::Default(false)) => None,
            Some(StoreChoice::Default(true)) => Some(OsString::from("--store")),
            Some(StoreChoice::Directory(dir)) => {
                let mut flag = OsString::from("--store=");
                flag.push(root.inside(&dir)?);
                Some(flag)
            }
        };
        let mut command = Command::new(&["run"])
            .option("--context", self.context)
            .option("--model", self.model.map(sampling::model_argument))
            .option(
                "--subcall-model",
                self.subcall_model.map(sampling::model_argument),
            )
            .option("--max-iterations", self.max_iterations)
            .option("--max-depth", self.max_depth)
            .option("--max-cost", self.max_cost)
            .option("--max-tokens", self.max_tokens)
            .option("--timeout", self.timeout_seconds)
            .option("--max-subcalls", self.max_subcalls);
        if let Some(store) = store {
            command = command.arg(store);
        }
        for path in &self.context_files {
            command = command.arg("--context-file").arg(root.inside(path)?);
        }
        Ok(command.positional(&self.query))
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CtxArguments {
    /// The ctx directory, relative to the server's root (default `ctx`).
    dir: Option<String>,
    /// Token budget (default: the one in ctx.json).
    budget: Option<u64>,
    /// Tokenizer: o200k or cl100k (default: the one in ctx.json).
    tokenizer: Option<String>,
}

impl Arguments for CtxArguments {
    type Record = outputs::CtxRecord;

    fn command_line(self, root: &Root) -> Result<Command, String> {
        let dir = root.inside(self.dir.as_deref().unwrap_or("ctx"))?;
        Ok(Command::new(&["ctx", "--dir"])
            .arg(dir)
            .arg("assemble")
            .option("--budget", self.budget)
            .option("--tokenizer", self.tokenizer))
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct QueryArguments {
    /// The question.
    question: String,
    /// Only these buffers (names or ids).
    #[serde(default)]
    buffers: Vec<String>,
    /// Only buffers whose path matches this glob.
    path: Option<String>,
    /// Model as `provider:model` (default from rlm's configuration).
    model: Option<String>,
    /// `search` (ranked chunks, default) or `all` (every chunk of the selected buffers).
    scan: Option<String>,
    /// Chunks to read per search.
    top_k: Option<usize>,
    /// Spending limit in US dollars.
    max_cost: Option<f64>,
    /// Token limit.
    max_tokens: Option<i64>,
    /// Wall-clock limit in seconds.
    timeout_seconds: Option<f64>,
}

impl Arguments for QueryArguments {
    type Record = outputs::QueryRecord;

    fn command_line(self, _root: &Root) -> Result<Command, String> {
        Ok(Command::new(&["query"])
            .each("--buffer", &self.buffers)
            .option("--path", self.path)
            .option("--model", self.model)
            .option("--scan", self.scan)
            .option("--top-k", self.top_k)
            .option("--max-cost", self.max_cost)
            .option("--max-tokens", self.max_tokens)
            .option("--timeout", self.timeout_seconds)
            .positional(&self.question))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command_line(tool: &str, arguments: serde_json::Value, root: &Root) -> Vec<String> {
        let spec = all().into_iter().find(|spec| spec.name == tool).unwrap();
        let words = (spec.command_line)(arguments, root).unwrap();
        words
            .into_iter()
            .map(|word| word.into_string().unwrap())
            .collect()
    }

    #[test]
    fn run_over_the_store_names_the_default_store_or_a_directory_inside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path()).unwrap();
        let run = |store: serde_json::Value| {
            command_line(
                "run",
                serde_json::json!({ "query": "q", "store": store }),
                &root,
            )
        };
        assert_eq!(run(true.into()), ["run", "--store", "--", "q"]);
        assert_eq!(run(false.into()), ["run", "--", "q"]);
        let named = format!("--store={}", root.dir().join("stores/a").display());
        assert_eq!(run("stores/a".into()), ["run", named.as_str(), "--", "q"]);

        let spec = all().into_iter().find(|spec| spec.name == "run").unwrap();
        let outside = serde_json::json!({ "query": "q", "store": "../elsewhere" });
        let refusal = (spec.command_line)(outside, &root).unwrap_err();
        assert!(refusal.contains("outside the server's root"), "{refusal}");
    }

    #[test]
    fn every_tool_declares_its_records_as_the_output_schema() {
        for spec in all() {
            let schema = (spec.output_schema)();
            assert_eq!(schema["type"], "object", "{}", spec.name);
            assert_eq!(schema["required"], serde_json::json!(["records"]));
            assert_eq!(schema["properties"]["records"]["type"], "array");
        }
    }

    /// Every `format` left in a schema, with where it is.
    fn formats(value: &serde_json::Value, at: &str, found: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(object) => {
                if let Some(serde_json::Value::String(format)) = object.get("format") {
                    found.push(format!("{at}: {format}"));
                }
                for (key, inner) in object {
                    formats(inner, &format!("{at}/{key}"), found);
                }
            }
            serde_json::Value::Array(items) => {
                for (index, inner) in items.iter().enumerate() {
                    formats(inner, &format!("{at}/{index}"), found);
                }
            }
            _ => {}
        }
    }

    #[test]
    fn schemas_use_only_standard_json_schema_formats() {
        let mut found = Vec::new();
        for spec in all() {
            let input = serde_json::Value::Object((spec.schema)());
            let output = serde_json::Value::Object((spec.output_schema)());
            formats(&input, &format!("{} input", spec.name), &mut found);
            formats(&output, &format!("{} output", spec.name), &mut found);
        }
        assert!(found.is_empty(), "non-standard formats: {found:#?}");
        // Unsigned widths still say so, and a property named `format` is kept.
        let inspect = (all()[0].output_schema)();
        let text = serde_json::to_string(&inspect).unwrap();
        assert!(text.contains(r#""minimum":0"#), "{text}");
        assert!(text.contains(r#""format":{"#), "{text}");
    }

    #[test]
    fn search_modes_come_from_the_store() {
        let spec = all()
            .into_iter()
            .find(|spec| spec.name == "search")
            .unwrap();
        let schema = serde_json::Value::Object((spec.schema)());
        let text = schema.to_string();
        for mode in rlm_store::SearchMode::ALL {
            assert!(
                text.contains(&format!(r#""const":"{mode}""#)),
                "{mode}: {text}"
            );
        }
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path()).unwrap();
        let words = command_line(
            "search",
            serde_json::json!({ "query": "q", "mode": "hybrid" }),
            &root,
        );
        assert!(
            words.windows(2).any(|pair| pair == ["--mode", "hybrid"]),
            "{words:?}"
        );
    }
}
