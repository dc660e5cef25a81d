//! The tools `rlm mcp` offers: each is an operation of `rlm-app` whose request is the tool's
//! input. The JSON arguments deserialize into the request (unknown names refused with the
//! closest known one), the request's JSON schema is the tool's input schema and its records'
//! schema the output schema, so none of them can drift from the operation. Paths in a request
//! are made absolute below the server's root; fields only the operator may set are left out of
//! the schema and refused.

use std::path::{Path, PathBuf};

use rlm_app::requests::{
    CtxAssembleRequest, GrepRequest, InspectRequest, ListRequest, LlmOptions, LoadRequest,
    PeekRequest, QueryRequest, RunRequest, SearchRequest, StoreChoice,
};
use rlm_app::settings::Sources;
use rlm_app::{Context, ExitStatus, Outcome, operations, reply};
use rmcp::model::ToolAnnotations;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::root::Root;
use super::sampling;

/// A tool's structured result: the records its operation returns (what `--json` prints).
#[derive(JsonSchema)]
#[expect(
    dead_code,
    reason = "only its schema is used: results are built as JSON values"
)]
struct Records<T> {
    /// The operation's records (one `--json` line each), in order.
    records: Vec<T>,
    /// When the answer stopped at the server's reply ceiling: pass it back as `cursor` (with
    /// the same other arguments) for the records that follow.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<String>,
}

/// A prepared call: runs the operation over the sources and context the server gives it, and
/// gives its records as JSON values (each serialized from the tool's record type).
pub type Job =
    Box<dyn FnOnce(&Sources, &Context) -> anyhow::Result<Outcome<serde_json::Value>> + Send>;

/// Where a call works: the server's root, and the store it was started with, if any.
pub struct Place<'a> {
    pub root: &'a Root,
    /// `rlm mcp --store DIR` (or `RLM_STORE`): the store every store tool uses, and `run`'s
    /// `store: true`.
    pub store: Option<&'a Path>,
}

/// One tool: its name, what it is for, how it behaves, its argument and result schemas, and
/// its operation.
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub annotations: fn() -> ToolAnnotations,
    pub schema: fn() -> serde_json::Map<String, serde_json::Value>,
    /// The schema of its `structuredContent`: `{"records": [...]}` of its operation's records.
    pub output_schema: fn() -> serde_json::Map<String, serde_json::Value>,
    /// The operation for a call, or why the call is refused.
    pub prepare: fn(serde_json::Value, &Place<'_>) -> Result<Job, String>,
}

/// A request a tool takes: how its paths are confined, what only the operator may set, and the
/// operation it runs.
trait Tool: DeserializeOwned + JsonSchema + Send + 'static {
    /// The records its operation returns (its output schema).
    type Record: JsonSchema;
    /// Fields a client may not set (left out of the schema, refused when given).
    const OPERATOR_ONLY: &'static [&'static str] = &[];

    /// Every path of the request made absolute below the root, or the refusal.
    fn confine(&mut self, place: &Place<'_>) -> Result<(), String>;

    /// Runs the operation; its records as JSON values.
    fn run(
        self,
        sources: &Sources,
        context: &Context,
    ) -> anyhow::Result<Outcome<serde_json::Value>>;
}

/// An operation's outcome with its records as JSON values, within the reply ceiling (what
/// does not fit is counted and said: these operations are not asked again for the rest).
fn values<R: Serialize>(
    outcome: anyhow::Result<Outcome<R>>,
    context: &Context,
) -> anyhow::Result<Outcome<serde_json::Value>> {
    reply::bounded(outcome?, context.reply)
}

/// One page of an operation's outcome, from the request's `cursor` on.
fn page<R: Serialize>(
    outcome: anyhow::Result<Outcome<R>>,
    context: &Context,
    request: &impl Serialize,
    cursor: Option<&str>,
) -> anyhow::Result<Outcome<serde_json::Value>> {
    reply::paged(outcome?, context.reply, cursor, request)
}

/// The hints a client may show or act on (MCP tool annotations).
fn annotations(
    read_only: bool,
    destructive: bool,
    idempotent: bool,
    open_world: bool,
) -> ToolAnnotations {
    let mut annotations = ToolAnnotations::default();
    annotations.read_only_hint = Some(read_only);
    annotations.destructive_hint = Some(destructive);
    annotations.idempotent_hint = Some(idempotent);
    annotations.open_world_hint = Some(open_world);
    annotations
}

fn spec<T: Tool>(
    name: &'static str,
    description: &'static str,
    annotations: fn() -> ToolAnnotations,
) -> ToolSpec {
    ToolSpec {
        name,
        description,
        annotations,
        schema: input_schema::<T>,
        output_schema: output_schema_of::<Records<T::Record>>,
        prepare: |arguments, place| {
            let mut request: T = parse(arguments)?;
            request.confine(place)?;
            Ok(Box::new(move |sources, context| {
                request.run(sources, context)
            }))
        },
    }
}

/// The request's schema without the fields only the operator may set.
fn input_schema<T: Tool>() -> serde_json::Map<String, serde_json::Value> {
    let mut schema = schema_of::<T>();
    if let Some(serde_json::Value::Object(properties)) = schema.get_mut("properties") {
        for name in T::OPERATOR_ONLY {
            properties.remove(*name);
        }
    }
    if let Some(serde_json::Value::Array(required)) = schema.get_mut("required") {
        required.retain(|name| !T::OPERATOR_ONLY.iter().any(|field| name == *field));
    }
    schema
}

/// The request the arguments give: refused when an argument is not the tool's (naming the
/// closest one it takes) or is set only by the operator. (Serde cannot refuse unknown fields
/// of requests that flatten shared options; `serde_ignored` sees them.)
fn parse<T: Tool>(arguments: serde_json::Value) -> Result<T, String> {
    let Some(given) = arguments.as_object() else {
        return Err("error: the arguments must be a JSON object".to_owned());
    };
    if let Some(name) = given
        .keys()
        .find(|name| T::OPERATOR_ONLY.contains(&name.as_str()))
    {
        return Err(format!(
            "error: `{name}` is set by whoever starts the server, not by a tool call"
        ));
    }
    let mut ignored = Vec::new();
    let request: T = serde_ignored::deserialize(arguments, |path| ignored.push(path.to_string()))
        .map_err(|err| format!("error: invalid arguments: {err}"))?;
    let Some(name) = ignored.first() else {
        return Ok(request);
    };
    let schema = input_schema::<T>();
    let offered: Vec<&str> = schema
        .get("properties")
        .and_then(serde_json::Value::as_object)
        .map(|properties| properties.keys().map(String::as_str).collect())
        .unwrap_or_default();
    Err(match rlm_app::text::closest(name, &offered) {
        Some(near) => format!("error: unknown argument `{name}`; did you mean `{near}`?"),
        None => format!(
            "error: unknown argument `{name}`; this tool takes {}",
            offered.join(", ")
        ),
    })
}

/// Confines each path of `paths` below the root.
fn confine_all(paths: &mut [PathBuf], root: &Root) -> Result<(), String> {
    for path in paths {
        confine(path, root)?;
    }
    Ok(())
}

fn confine(path: &mut PathBuf, root: &Root) -> Result<(), String> {
    *path = root.inside(&path.to_string_lossy())?;
    Ok(())
}

fn confine_option(path: &mut Option<PathBuf>, root: &Root) -> Result<(), String> {
    match path {
        Some(path) => confine(path, root),
        None => Ok(()),
    }
}

/// The model options' files (recordings) below the root, and `mcp`/`sampling` as the client's
/// own model.
fn confine_llm(llm: &mut LlmOptions, root: &Root) -> Result<(), String> {
    confine_option(&mut llm.record, root)?;
    confine_option(&mut llm.replay, root)?;
    llm.model = llm.model.take().map(sampling::model_argument);
    llm.subcall_model = llm.subcall_model.take().map(sampling::model_argument);
    Ok(())
}

impl Tool for InspectRequest {
    type Record = operations::inspect::InspectRecord;

    fn confine(&mut self, place: &Place<'_>) -> Result<(), String> {
        confine_all(&mut self.paths, place.root)
    }

    fn run(
        self,
        sources: &Sources,
        context: &Context,
    ) -> anyhow::Result<Outcome<serde_json::Value>> {
        values(
            operations::inspect::inspect_within(&self, context, sources.root()),
            context,
        )
    }
}

impl Tool for LoadRequest {
    type Record = operations::load::LoadRecord;

    fn confine(&mut self, place: &Place<'_>) -> Result<(), String> {
        if self.paths.is_empty() {
            return Err("error: `paths` needs at least one file or directory".to_owned());
        }
        confine_all(&mut self.paths, place.root)
    }

    fn run(
        self,
        sources: &Sources,
        context: &Context,
    ) -> anyhow::Result<Outcome<serde_json::Value>> {
        values(operations::load(sources, &self, context), context)
    }
}

impl Tool for ListRequest {
    type Record = operations::list::BufferRecord;

    fn confine(&mut self, _place: &Place<'_>) -> Result<(), String> {
        Ok(())
    }

    fn run(
        self,
        sources: &Sources,
        context: &Context,
    ) -> anyhow::Result<Outcome<serde_json::Value>> {
        let cursor = self.cursor.clone();
        page(
            operations::list(sources, &self, context),
            context,
            &self,
            cursor.as_deref(),
        )
    }
}

impl Tool for SearchRequest {
    type Record = operations::search::SearchRecord;

    fn confine(&mut self, _place: &Place<'_>) -> Result<(), String> {
        Ok(())
    }

    fn run(
        self,
        sources: &Sources,
        context: &Context,
    ) -> anyhow::Result<Outcome<serde_json::Value>> {
        let cursor = self.cursor.clone();
        page(
            operations::search(sources, &self, context),
            context,
            &self,
            cursor.as_deref(),
        )
    }
}

impl Tool for GrepRequest {
    /// Its records are serialized from `GrepLine`s as they are found.
    type Record = operations::grep::GrepRecord;

    fn confine(&mut self, _place: &Place<'_>) -> Result<(), String> {
        Ok(())
    }

    fn run(
        self,
        sources: &Sources,
        context: &Context,
    ) -> anyhow::Result<Outcome<serde_json::Value>> {
        let mut outcome = operations::grep::page(sources, &self, context)?;
        // Nothing matched: the command line's exit 1, but an answer, not a failed call.
        if outcome.status == ExitStatus::Failed && outcome.records.is_empty() {
            outcome.status = ExitStatus::Success;
            outcome.notes.insert(0, no_match_note(&self));
        }
        Ok(outcome)
    }
}

/// What a grep that found nothing says (without echoing the pattern: an answer never repeats
/// more than the client sent, and a 1 MB pattern would be most of it).
fn no_match_note(request: &GrepRequest) -> String {
    if request.max_count == Some(0) {
        return "no lines: `max_count` is 0".to_owned();
    }
    let kind = if request.fixed_strings {
        "text"
    } else {
        "pattern"
    };
    format!(
        "no line matched the {kind} ({} chars)",
        rlm_context::thousands(request.pattern.chars().count() as u64)
    )
}

impl Tool for PeekRequest {
    type Record = operations::peek::PeekRecord;

    fn confine(&mut self, _place: &Place<'_>) -> Result<(), String> {
        Ok(())
    }

    fn run(
        self,
        sources: &Sources,
        context: &Context,
    ) -> anyhow::Result<Outcome<serde_json::Value>> {
        values(operations::peek(sources, &self, context), context)
    }
}

impl Tool for RunRequest {
    type Record = operations::run::RunRecord;
    const OPERATOR_ONLY: &'static [&'static str] = &["allow_reduced_protection"];

    fn confine(&mut self, place: &Place<'_>) -> Result<(), String> {
        confine_all(&mut self.context_files, place.root)?;
        self.store = match self.store.take() {
            // `true`: the server's store, or the one the store tools find.
            Some(StoreChoice::Default(true)) => match place.store {
                Some(store) => Some(StoreChoice::Directory(store.to_path_buf())),
                None => Some(StoreChoice::Default(true)),
            },
            Some(StoreChoice::Directory(dir)) => Some(StoreChoice::Directory(
                place.root.inside(&dir.to_string_lossy())?,
            )),
            other => other,
        };
        let run_loop = &mut self.run_loop;
        confine_option(&mut run_loop.log, place.root)?;
        confine_llm(&mut run_loop.llm, place.root)
    }

    fn run(
        self,
        sources: &Sources,
        context: &Context,
    ) -> anyhow::Result<Outcome<serde_json::Value>> {
        values(operations::run(sources, &self, context), context)
    }
}

impl Tool for CtxAssembleRequest {
    type Record = operations::ctx::PlanRecord;

    fn confine(&mut self, place: &Place<'_>) -> Result<(), String> {
        let dir = self.dir.take().unwrap_or_else(|| PathBuf::from("ctx"));
        self.dir = Some(place.root.inside(&dir.to_string_lossy())?);
        Ok(())
    }

    fn run(
        self,
        sources: &Sources,
        context: &Context,
    ) -> anyhow::Result<Outcome<serde_json::Value>> {
        let dir = self.dir.unwrap_or_else(|| PathBuf::from("ctx"));
        values(
            operations::ctx::assemble(sources, &dir, &self.build, context),
            context,
        )
    }
}

impl Tool for QueryRequest {
    type Record = operations::query::QueryRecord;

    fn confine(&mut self, place: &Place<'_>) -> Result<(), String> {
        confine_option(&mut self.log, place.root)?;
        confine_llm(&mut self.llm, place.root)
    }

    fn run(
        self,
        sources: &Sources,
        context: &Context,
    ) -> anyhow::Result<Outcome<serde_json::Value>> {
        values(operations::query(sources, &self, context), context)
    }
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
        spec::<InspectRequest>(
            "inspect",
            "Describe files or a text without storing them: format, size, lines, records, \
             fields and a sample (rlm inspect).",
            || annotations(true, false, true, false),
        ),
        spec::<LoadRequest>(
            "load",
            "Load files or directories into the store: chunked and indexed for search, grep and \
             peek (rlm load). Loading a directory again replaces changed files and drops the \
             buffers of files that are gone. Waits while another process writes the store.",
            || annotations(false, true, true, false),
        ),
        spec::<ListRequest>(
            "list_buffers",
            "The stored buffers with sizes and chunk counts (rlm list).",
            || annotations(true, false, true, false),
        ),
        spec::<SearchRequest>(
            "search",
            "Ranked chunks for a query: BM25, semantic or hybrid, filtered by buffer or path \
             glob (rlm search).",
            || annotations(true, false, true, false),
        ),
        spec::<GrepRequest>(
            "grep",
            "Regex search over stored buffers, ripgrep-style (rlm grep).",
            || annotations(true, false, true, false),
        ),
        spec::<PeekRequest>(
            "peek",
            "Part of a stored buffer: a line range, a byte range or one chunk (rlm peek).",
            || annotations(true, false, true, false),
        ),
        spec::<RunRequest>(
            "run",
            "Answer a question over files or the store with a recursive language model: the \
             model writes code in a sandbox, calls sub-models and iterates until it answers, \
             within the budgets given (rlm run). Uses rlm's configured providers and keys, or \
             the client's own model through MCP sampling (model \"mcp\"; the default when no \
             model is configured and the client offers sampling). Sends a progress \
             notification per turn when the call carries a progress token; cancelling the \
             request stops the run. The result links to the run's trajectory.",
            || annotations(false, false, false, true),
        ),
        spec::<CtxAssembleRequest>(
            "ctx_assemble",
            "Build the prompt of a ctx directory within its token budget: writes \
             build/prompt.mdctx and build/ctxplan.json and returns the plan (rlm ctx assemble).",
            || annotations(false, false, true, false),
        ),
        spec::<QueryRequest>(
            "query",
            "Answer an analytic question over the whole store: plan, search, extract findings \
             from chunks in parallel and write a report citing chunk ids (rlm query). Sends a \
             progress notification per batch when the call carries a progress token; \
             cancelling the request stops the query.",
            || annotations(false, false, false, true),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> (tempfile::TempDir, Root) {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path()).unwrap();
        (dir, root)
    }

    fn request<T: Tool>(arguments: serde_json::Value, place: &Place<'_>) -> Result<T, String> {
        let mut request: T = parse(arguments)?;
        request.confine(place)?;
        Ok(request)
    }

    #[test]
    fn run_over_the_store_names_the_default_store_or_a_directory_inside_the_root() {
        let (dir, root) = root();
        let place = Place {
            root: &root,
            store: None,
        };
        let store = |store: serde_json::Value, place: &Place<'_>| {
            request::<RunRequest>(serde_json::json!({ "query": "q", "store": store }), place)
                .unwrap()
                .store
        };
        assert_eq!(store(true.into(), &place), Some(StoreChoice::Default(true)));
        assert_eq!(
            store(false.into(), &place),
            Some(StoreChoice::Default(false))
        );
        let named = root.dir().join("stores/a");
        assert_eq!(
            store("stores/a".into(), &place),
            Some(StoreChoice::Directory(named))
        );
        // `true` on a server started with a store is that store.
        let server_store = dir.path().join("kept");
        let on_server_store = Place {
            root: &root,
            store: Some(&server_store),
        };
        assert_eq!(
            store(true.into(), &on_server_store),
            Some(StoreChoice::Directory(server_store.clone()))
        );

        let outside = serde_json::json!({ "query": "q", "store": "../elsewhere" });
        let refusal = request::<RunRequest>(outside, &place).unwrap_err();
        assert!(refusal.contains("outside the server's root"), "{refusal}");
    }

    #[test]
    fn a_call_gets_the_requests_defaults_and_the_values_it_gives() {
        let (_dir, root) = root();
        let place = Place {
            root: &root,
            store: None,
        };
        let run: RunRequest = request(serde_json::json!({ "query": "why?" }), &place).unwrap();
        assert_eq!(run.query, "why?");
        assert_eq!(run.run_loop.max_iterations, 30);
        assert_eq!(run.run_loop.max_depth, 1);
        assert_eq!(run.run_loop.max_time, None);
        // The names the earlier tools took still work.
        let given =
            serde_json::json!({ "query": "q", "max_iterations": 4, "timeout_seconds": 2.5 });
        let run: RunRequest = request(given, &place).unwrap();
        assert_eq!(run.run_loop.max_iterations, 4);
        assert_eq!(run.run_loop.max_time, Some(2.5));

        let search: SearchRequest =
            request(serde_json::json!({ "query": "-x y" }), &place).unwrap();
        assert_eq!(search.query, ["-x y"]);
        assert_eq!(search.k, 10);
        assert_eq!(search.mode, rlm_store::SearchMode::Bm25);
        let search: SearchRequest = request(
            serde_json::json!({ "query": "q", "top": 3, "path": "src/*" }),
            &place,
        )
        .unwrap();
        assert_eq!(search.k, 3);
        assert_eq!(search.path_glob.as_deref(), Some("src/*"));
    }

    #[test]
    fn unknown_and_operator_only_arguments_are_refused_by_name() {
        let (_dir, root) = root();
        let place = Place {
            root: &root,
            store: None,
        };
        let typo =
            request::<SearchRequest>(serde_json::json!({ "query": "q", "mdoe": "bm25" }), &place)
                .unwrap_err();
        assert!(
            typo.contains("unknown argument `mdoe`; did you mean `mode`?"),
            "{typo}"
        );
        let far = request::<PeekRequest>(serde_json::json!({ "zzzzzz": 1 }), &place).unwrap_err();
        assert!(far.contains("this tool takes"), "{far}");
        let weakened = request::<RunRequest>(
            serde_json::json!({ "query": "q", "allow_reduced_protection": true }),
            &place,
        )
        .unwrap_err();
        assert!(
            weakened.contains("set by whoever starts the server"),
            "{weakened}"
        );
        let schema = input_schema::<RunRequest>();
        assert!(
            !schema["properties"]
                .as_object()
                .unwrap()
                .contains_key("allow_reduced_protection")
        );
        // Paths a request names are made absolute below the root; outside ones are refused.
        let load: LoadRequest = request(serde_json::json!({ "paths": ["docs"] }), &place).unwrap();
        assert_eq!(load.paths, [root.dir().join("docs")]);
        let out = request::<QueryRequest>(
            serde_json::json!({ "question": "q", "replay": "/etc/passwd" }),
            &place,
        )
        .unwrap_err();
        assert!(out.contains("outside the server's root"), "{out}");
    }

    #[test]
    fn every_tool_declares_its_records_as_the_output_schema_and_its_hints() {
        for spec in all() {
            let schema = (spec.output_schema)();
            assert_eq!(schema["type"], "object", "{}", spec.name);
            assert_eq!(schema["required"], serde_json::json!(["records"]));
            assert_eq!(schema["properties"]["records"]["type"], "array");
            let hints = (spec.annotations)();
            assert!(hints.read_only_hint.is_some(), "{}", spec.name);
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
    }
}
