//! The tools `rlm mcp` offers: each one's arguments (deserialized and described as a JSON
//! schema) and the command it runs. A tool builds its command's own arguments as typed
//! values and calls the command's entry point (`commands::x::execute`), which returns the
//! records `--json` prints; its output schema is derived from those same record types, so
//! the two cannot drift.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::root::Root;
use super::sampling;
use crate::cli::{
    CtxBuildOptions, DEFAULT_SAMPLE_CHARS, GlobalArgs, GrepRequest, InspectRequest, ListRequest, LoadRequest,
    PeekRequest, QueryRequest, RunRequest, SearchRequest, StoreLocation,
};
use crate::commands::{self, Outcome};
use crate::settings::Sources;

/// A tool's structured result: the records its command printed with `--json`, in order.
#[derive(JsonSchema)]
#[expect(
    dead_code,
    reason = "only its schema is used: results are built as JSON values"
)]
struct Records<T> {
    /// The records the command printed with `--json` (one JSON Lines record each), in order.
    records: Vec<T>,
}

/// A prepared call: runs the command with the call's global flags and sources, and gives its
/// records as JSON values (each serialized from the tool's record type).
pub type Job =
    Box<dyn FnOnce(&GlobalArgs, &Sources) -> anyhow::Result<Outcome<serde_json::Value>> + Send>;

/// Where a call works: the server's root, and the store it was started with, if any.
pub struct Place<'a> {
    pub root: &'a Root,
    /// `rlm mcp --store DIR`: the store every store command uses, and `run`'s `store: true`.
    pub store: Option<&'a Path>,
}

impl Place<'_> {
    /// The store location a store command gets: the server's store, else what the command
    /// finds by itself (`RLM_STORE`, else `.rlm` in the root).
    fn location(&self) -> StoreLocation {
        StoreLocation {
            store: self.store.map(Path::to_path_buf),
        }
    }
}

/// One tool: its name, what it is for, its argument and result schemas, and its command.
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub schema: fn() -> serde_json::Map<String, serde_json::Value>,
    /// The schema of its `structuredContent`: `{"records": [...]}` of its command's records.
    pub output_schema: fn() -> serde_json::Map<String, serde_json::Value>,
    /// The command for a call, or why the call is refused.
    pub prepare: fn(serde_json::Value, &Place<'_>) -> Result<Job, String>,
}

/// A tool's arguments: the command they stand for.
trait Arguments: for<'de> Deserialize<'de> + JsonSchema {
    /// The records its command returns (and prints with `--json`).
    type Record: JsonSchema;

    /// The command with its arguments (paths checked against the root), ready to run.
    fn prepare(self, place: &Place<'_>) -> Result<Job, String>;
}

/// A job that runs `execute` and serializes its records, of the tool's record type.
fn job<R: Serialize + 'static>(
    execute: impl FnOnce(&GlobalArgs, &Sources) -> anyhow::Result<Outcome<R>> + Send + 'static,
) -> Job {
    Box::new(move |global, sources| {
        let Outcome {
            records,
            notes,
            code,
        } = execute(global, sources)?;
        let records = records
            .iter()
            .map(serde_json::to_value)
            .collect::<Result<_, _>>()?;
        Ok(Outcome {
            records,
            notes,
            code,
        })
    })
}

fn spec<A: Arguments>(name: &'static str, description: &'static str) -> ToolSpec {
    ToolSpec {
        name,
        description,
        schema: schema_of::<A>,
        output_schema: output_schema_of::<Records<A::Record>>,
        prepare: |arguments, place| {
            let arguments: A = serde_json::from_value(arguments)
                .map_err(|err| format!("error: invalid arguments: {err}"))?;
            arguments.prepare(place)
        },
    }
}

/// `A` with every field at the default its command line declares (clap's attributes, the one
/// place defaults are written), given `required`, the words its required arguments need. A
/// tool then sets the fields its call gives, as typed values.
fn defaults<A: clap::Args + clap::FromArgMatches>(required: &[&str]) -> Result<A, String> {
    let command = A::augment_args(clap::Command::new("rlm").no_binary_name(true));
    command
        .try_get_matches_from(required)
        .and_then(|matches| A::from_arg_matches(&matches))
        .map_err(|err| format!("error: {}", err.kind()))
}

/// A number of seconds, checked as the command line checks `--timeout`.
fn seconds(value: Option<f64>, name: &str) -> Result<Option<f64>, String> {
    value
        .map(|value| {
            crate::cli::parse_seconds(&value.to_string())
                .map_err(|err| format!("error: invalid `{name}`: {err}"))
        })
        .transpose()
}

/// The JSON schema of `T` as arguments are read, in standard JSON Schema only.
fn schema_of<T: JsonSchema>() -> serde_json::Map<String, serde_json::Value> {
    schema_with::<T>(schemars::generate::SchemaSettings::default())
}

/// The JSON schema of `T` as it is written (a field left out when empty is not required), in
/// standard JSON Schema only.
fn output_schema_of<T: JsonSchema>() -> serde_json::Map<String, serde_json::Value> {
    schema_with::<T>(schemars::generate::SchemaSettings::default().for_serialize())
}

fn schema_with<T: JsonSchema>(
    settings: schemars::generate::SchemaSettings,
) -> serde_json::Map<String, serde_json::Value> {
    let schema = settings.into_generator().into_root_schema_for::<T>();
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
    type Record = commands::inspect::InspectRecord;

    fn prepare(self, place: &Place<'_>) -> Result<Job, String> {
        let paths = self
            .paths
            .iter()
            .map(|path| place.root.inside(path))
            .collect::<Result<Vec<PathBuf>, String>>()?;
        let args = InspectRequest {
            paths,
            text: self.text,
            name: self.name,
            sample_chars: self.sample_chars.unwrap_or(DEFAULT_SAMPLE_CHARS),
        };
        Ok(job(move |_, _| commands::inspect::execute(args)))
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
    type Record = commands::load::LoadRecord;

    fn prepare(self, place: &Place<'_>) -> Result<Job, String> {
        if self.paths.is_empty() {
            return Err("error: `paths` needs at least one file or directory".to_owned());
        }
        let mut args: LoadRequest = defaults(&["."])?;
        args.paths = self
            .paths
            .iter()
            .map(|path| place.root.inside(path))
            .collect::<Result<_, _>>()?;
        args.name = self.name;
        args.include = self.include;
        args.exclude = self.exclude;
        if let Some(size) = self.chunk_size {
            args.chunking.chunk_size = size;
        }
        args.location = place.location();
        Ok(job(move |global, sources| {
            commands::load::execute(global, sources, &args)
        }))
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListArguments {}

impl Arguments for ListArguments {
    type Record = commands::list::BufferRecord;

    fn prepare(self, place: &Place<'_>) -> Result<Job, String> {
        let args = ListRequest {
            location: place.location(),
        };
        Ok(job(move |_, sources| {
            commands::list::execute(sources, &args)
        }))
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
    type Record = commands::search::SearchRecord;

    fn prepare(self, place: &Place<'_>) -> Result<Job, String> {
        let args = self.search_args(place)?;
        Ok(job(move |_, sources| {
            commands::search::execute(sources, &args)
        }))
    }
}

impl SearchArguments {
    fn search_args(self, place: &Place<'_>) -> Result<SearchRequest, String> {
        let mut args: SearchRequest = defaults(&["query"])?;
        args.query = vec![self.query];
        if let Some(mode) = self.mode {
            args.mode = mode;
        }
        if let Some(top) = self.k {
            args.top = top;
        }
        args.buffers = self.buffers;
        args.path_glob = self.path;
        args.location = place.location();
        Ok(args)
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
    /// Its records are serialized from `GrepLine`s as they are found.
    type Record = rlm_store::GrepLine<'static>;

    fn prepare(self, place: &Place<'_>) -> Result<Job, String> {
        let mut args: GrepRequest = defaults(&["pattern"])?;
        args.pattern = self.pattern;
        args.buffers = self.buffers;
        args.path_glob = self.path;
        args.context = self.context.unwrap_or(0);
        args.ignore_case = self.ignore_case;
        args.fixed_strings = self.fixed_strings;
        args.word_regexp = self.word_regexp;
        args.files_with_matches = self.files_with_matches;
        args.count = self.count;
        args.max_count = self.max_count;
        args.location = place.location();
        if args.files_with_matches && args.count {
            return Err("error: `files_with_matches` and `count` cannot be used together".into());
        }
        Ok(Box::new(move |_, sources| {
            let mut records = Vec::new();
            let code = commands::grep::execute(sources, &args, true, &mut |line| {
                records.push(serde_json::to_value(line)?);
                Ok(())
            })?;
            Ok(Outcome {
                code,
                ..Outcome::success(records)
            })
        }))
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
    type Record = commands::peek::PeekRecord;

    fn prepare(self, place: &Place<'_>) -> Result<Job, String> {
        let args = PeekRequest {
            buffer: self.buffer,
            lines: self.lines,
            bytes: self.bytes,
            chunk: self.chunk,
            location: place.location(),
        };
        Ok(job(move |_, sources| {
            commands::peek::execute(sources, &args)
        }))
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
    type Record = commands::run::RunRecord;

    fn prepare(self, place: &Place<'_>) -> Result<Job, String> {
        let args = self.run_args(place)?;
        Ok(job(move |global, sources| {
            commands::run::execute(global, sources, &args)
        }))
    }
}

impl RunArguments {
    fn run_args(self, place: &Place<'_>) -> Result<RunRequest, String> {
        let mut args: RunRequest = defaults(&["question"])?;
        args.query = self.query;
        args.context = self.context;
        args.context_files = self
            .context_files
            .iter()
            .map(|path| place.root.inside(path))
            .collect::<Result<_, _>>()?;
        args.store = match self.store {
            None | Some(StoreChoice::Default(false)) => None,
            // `true`: the server's store, or the one the store commands find.
            Some(StoreChoice::Default(true)) => Some(place.store.map(Path::to_path_buf)),
            Some(StoreChoice::Directory(dir)) => Some(Some(place.root.inside(&dir)?)),
        };
        let run_loop = &mut args.run_loop;
        run_loop.llm.model = self.model.map(sampling::model_argument);
        run_loop.llm.subcall_model = self.subcall_model.map(sampling::model_argument);
        if let Some(turns) = self.max_iterations {
            run_loop.max_iterations = turns;
        }
        if let Some(depth) = self.max_depth {
            run_loop.max_depth = depth;
        }
        run_loop.budget.max_cost = self.max_cost;
        run_loop.budget.max_tokens = self
            .max_tokens
            .map(|tokens| i64::try_from(tokens).unwrap_or(i64::MAX));
        run_loop.max_time = seconds(self.timeout_seconds, "timeout_seconds")?;
        run_loop.max_subcalls = self.max_subcalls;
        Ok(args)
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
    type Record = commands::ctx::CtxRecord;

    fn prepare(self, place: &Place<'_>) -> Result<Job, String> {
        let dir = place.root.inside(self.dir.as_deref().unwrap_or("ctx"))?;
        let tokenizer = self
            .tokenizer
            .map(|name| crate::cli::parse_tokenizer(&name))
            .transpose()
            .map_err(|err| format!("error: invalid `tokenizer`: {err}"))?;
        let build = CtxBuildOptions {
            budget: self.budget,
            tokenizer,
        };
        Ok(job(move |_, sources| {
            commands::ctx::assemble(sources, &dir, build)
        }))
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
    scan: Option<rlm_query::ScanMode>,
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
    type Record = commands::query::QueryRecord;

    fn prepare(self, place: &Place<'_>) -> Result<Job, String> {
        let mut args: QueryRequest = defaults(&["question"])?;
        args.question = self.question;
        args.buffers = self.buffers;
        args.path = self.path;
        args.llm.model = self.model;
        args.scan = self.scan;
        args.top_k = self.top_k;
        args.budget.max_cost = self.max_cost;
        args.budget.max_tokens = self.max_tokens;
        args.timeout = seconds(self.timeout_seconds, "timeout_seconds")?;
        args.location = place.location();
        Ok(job(move |global, sources| {
            commands::query::execute(global, sources, &args)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_args(arguments: serde_json::Value, place: &Place<'_>) -> Result<RunRequest, String> {
        serde_json::from_value::<RunArguments>(arguments)
            .unwrap()
            .run_args(place)
    }

    #[test]
    fn run_over_the_store_names_the_default_store_or_a_directory_inside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path()).unwrap();
        let place = Place {
            root: &root,
            store: None,
        };
        let store = |store: serde_json::Value, place: &Place<'_>| {
            run_args(serde_json::json!({ "query": "q", "store": store }), place)
                .unwrap()
                .store
        };
        assert_eq!(store(true.into(), &place), Some(None));
        assert_eq!(store(false.into(), &place), None);
        let named = root.dir().join("stores/a");
        assert_eq!(store("stores/a".into(), &place), Some(Some(named)));
        // `true` on a server started with a store is that store.
        let server_store = dir.path().join("kept");
        let on_server_store = Place {
            root: &root,
            store: Some(&server_store),
        };
        assert_eq!(
            store(true.into(), &on_server_store),
            Some(Some(server_store.clone()))
        );

        let outside = serde_json::json!({ "query": "q", "store": "../elsewhere" });
        let refusal = run_args(outside, &place).unwrap_err();
        assert!(refusal.contains("outside the server's root"), "{refusal}");
    }

    #[test]
    fn a_call_gets_the_defaults_the_command_line_declares_and_the_values_it_gives() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path()).unwrap();
        let place = Place {
            root: &root,
            store: None,
        };
        let run = run_args(serde_json::json!({ "query": "why?" }), &place).unwrap();
        assert_eq!(run.query, "why?");
        assert_eq!(run.run_loop.max_iterations, 30);
        assert_eq!(run.run_loop.max_depth, 1);
        assert_eq!(run.run_loop.max_time, None);
        let given =
            serde_json::json!({ "query": "q", "max_iterations": 4, "timeout_seconds": 2.5 });
        let run = run_args(given, &place).unwrap();
        assert_eq!(run.run_loop.max_iterations, 4);
        assert_eq!(run.run_loop.max_time, Some(2.5));
        // Seconds are checked as `--timeout` checks them.
        let negative = serde_json::json!({ "query": "q", "timeout_seconds": -1.0 });
        let refusal = run_args(negative, &place).unwrap_err();
        assert!(refusal.contains("timeout_seconds"), "{refusal}");

        let search = |arguments: serde_json::Value| {
            serde_json::from_value::<SearchArguments>(arguments)
                .unwrap()
                .search_args(&place)
                .unwrap()
        };
        let plain = search(serde_json::json!({ "query": "-x y" }));
        assert_eq!(plain.query, ["-x y"]);
        assert_eq!(plain.top, 10);
        assert_eq!(plain.mode, rlm_store::SearchMode::Bm25);
        let server_store = dir.path().join("kept");
        let on_server_store = Place {
            root: &root,
            store: Some(&server_store),
        };
        let args = serde_json::from_value::<SearchArguments>(serde_json::json!({ "query": "q" }))
            .unwrap()
            .search_args(&on_server_store)
            .unwrap();
        assert_eq!(args.location.store, Some(server_store.clone()));
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
        let place = Place {
            root: &root,
            store: None,
        };
        let arguments = serde_json::json!({ "query": "q", "mode": "hybrid" });
        let args = serde_json::from_value::<SearchArguments>(arguments)
            .unwrap()
            .search_args(&place)
            .unwrap();
        assert_eq!(args.mode, rlm_store::SearchMode::Hybrid);
    }
}
