//! The Model Context Protocol server of rlm (`rlm mcp`): over stdio, or over streamable HTTP
//! on loopback (`http.rs`), on rmcp.
//!
//! A thin adapter over `rlm-app`: each tool is an operation whose request is the tool's input
//! (`tools.rs`: the JSON arguments deserialize into the request, its JSON schema is the tool's
//! input schema, the records' schema its output schema), run on a thread of its own with its
//! events as progress notifications and a client's cancellation as its stop (`call.rs`,
//! `progress.rs`). The resources are the store's buffers and chunks (`resources.rs`). Nothing
//! here decides anything the operations do not: settings, errors and messages are theirs.
//!
//! ```no_run
//! let options = rlm_mcp::ServerOptions {
//!     root: ".".into(),
//!     page_size: 100,
//!     http: None,
//!     store: None,
//!     max_reply_bytes: 1 << 20,
//! };
//! let code = rlm_mcp::serve(&options, None)?;
//! # Ok::<(), anyhow::Error>(())
//! ```

mod call;
mod http;
mod options;
mod progress;
#[cfg(test)]
mod property_tests;
mod resources;
mod root;
mod sampling;
mod stdio;
mod tasks;
mod tools;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use rlm_app::error::Shown;
use rlm_app::settings::{Sources, StoreSettings, env};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, GetTaskParams, GetTaskResult,
    Implementation, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig, Tool,
    UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::TaskManager;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt as _};
use root::Root;

pub use options::{ServerOptions, loopback_address, reply_bytes};

/// Serves MCP as `options` say until the client closes stdio (or, over HTTP, until Ctrl-C or
/// SIGTERM). `config` is the configuration file to read instead of `./rlm.toml` and the user
/// file (`--config`).
pub fn serve(options: &ServerOptions, config: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let mut root = Root::new(&options.root)?;
    // Relative paths in the operations (the store, ./rlm.toml, log directories) start at the
    // root, as they would for `rlm` started there.
    std::env::set_current_dir(root.dir())
        .with_context(|| format!("cannot enter {}", root.dir().display()))?;
    let sources = Sources::from_process(config.clone());
    // The store the operator named, by flag or environment, is allowed wherever it lies.
    let store = options
        .store
        .clone()
        .or_else(|| sources.env().path(env::RLM_STORE));
    if let Some(store) = &store {
        root = root.with_store(store);
    }
    // Tool errors and logs are masked with the configured keys from the first call on.
    rlm_app::settings::LlmSettings::register_keys(&sources);
    let page_size = options.page_size as usize;
    // A result carries its records twice: as structured content and as text.
    let reply = rlm_app::ReplyLimit::bytes(options.max_reply_bytes)?.with_text_copy();
    // One server per session: the stdio process has one, each HTTP session its own.
    let new_server = move || Server {
        root: root.clone(),
        config: config.clone(),
        store: store.clone(),
        page_size,
        reply,
        tools: tools::all(),
        tasks: TaskManager::new(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let outcome = match options.http {
        None => runtime.block_on(serve_stdio(new_server())),
        Some(address) => runtime.block_on(http::serve(address, new_server)),
    };
    // A store read still running on a blocking thread must not hold up the exit.
    runtime.shutdown_background();
    outcome
}

/// One session over the process's stdin and stdout, until the client closes it.
async fn serve_stdio(server: Server) -> anyhow::Result<ExitCode> {
    let service = server
        .serve(stdio::transport())
        .await
        .context("the MCP client did not complete the handshake")?;
    service
        .waiting()
        .await
        .context("the MCP session ended abnormally")?;
    Ok(ExitCode::SUCCESS)
}

struct Server {
    root: Root,
    config: Option<PathBuf>,
    store: Option<PathBuf>,
    page_size: usize,
    /// The most one tool result or resource read carries.
    reply: rlm_app::ReplyLimit,
    tools: Vec<tools::ToolSpec>,
    /// The session's long calls run as tasks (`tasks.rs`).
    tasks: TaskManager,
}

impl Server {
    /// Runs `f` over the server's store on a blocking thread, or gives `without` when there is
    /// no store yet (or the CLI's error when that is `None`); errors are the CLI's messages.
    async fn with_store<T: Send + 'static>(
        &self,
        without: Option<T>,
        f: impl FnOnce(&rlm_store::Store) -> anyhow::Result<T> + Send + 'static,
    ) -> Result<T, ErrorData> {
        let store = self.store.clone();
        let config = self.config.clone();
        let fence = self.root.fence().clone();
        let outcome = tokio::task::spawn_blocking(move || {
            let sources = Sources::from_process(config).with_root(fence);
            let settings = StoreSettings::at(store, &sources)?;
            if let (Err(_), Some(without)) = (settings.require_existing(), without) {
                return Ok(without);
            }
            f(&settings.open_existing()?)
        })
        .await;
        match outcome {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(err)) => Err(ErrorData::invalid_params(Shown::of(&err).plain(), None)),
            Err(_) => Err(ErrorData::internal_error(
                "the request failed inside rlm (a bug: it panicked)",
                None,
            )),
        }
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_tasks()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("rlm", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "rlm: load files into a store and search, grep and peek them (infrastructure \
                 tools: you reason, rlm does the heavy lifting); or let rlm answer with its own \
                 models (run, query). Buffers and chunks are resources as rlm://buffer/ID and \
                 rlm://chunk/ID.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self
            .tools
            .iter()
            .map(|spec| {
                Tool::new(spec.name, spec.description, Arc::new((spec.schema)()))
                    .with_raw_output_schema(Arc::new((spec.output_schema)()))
                    .with_annotations((spec.annotations)())
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(spec) = self.tools.iter().find(|spec| spec.name == request.name) else {
            let names: Vec<&str> = self.tools.iter().map(|spec| spec.name).collect();
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool {:?}; rlm offers {}",
                    request.name,
                    names.join(", ")
                ),
                None,
            ));
        };
        let arguments = serde_json::Value::Object(request.arguments.unwrap_or_default());
        let place = tools::Place {
            root: &self.root,
            store: self.store.as_deref(),
        };
        let result = match (spec.prepare)(arguments, &place) {
            Ok(job) => {
                // `run` may be answered by the client's own model (`sampling.rs`).
                let backends = match spec.name {
                    "run" => vec![sampling::provider(&context.peer)],
                    _ => Vec::new(),
                };
                let call = call::Call {
                    job,
                    config: self.config.clone(),
                    root: self.root.fence().clone(),
                    store: self.store.clone(),
                    reply: self.reply,
                };
                let client_has_tasks = context
                    .client_capabilities()
                    .is_some_and(|capabilities| capabilities.supports_tasks());
                if client_has_tasks && tasks::LONG_TOOLS.contains(&spec.name) {
                    let task = tasks::start(&self.tasks, call, backends, spec.name);
                    return Ok(CallToolResponse::Task(task));
                }
                let reporter = progress::Reporter::for_request(&context);
                call::command(call, reporter, backends, context.ct.clone()).await
            }
            Err(message) => call::refusal(&message),
        };
        Ok(result.into())
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        Ok(GetTaskResult::new(self.tasks.get_task(&request.task_id)?))
    }

    /// rlm's tasks never ask the client for input; responses for keys it did not ask are
    /// ignored, as the extension says.
    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.cancel_task(&request.task_id)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let cursor = request.and_then(|request| request.cursor);
        let page_size = self.page_size;
        // Before anything is loaded there are no resources (rather than an error).
        let none = ListResourcesResult::with_all_items(Vec::new());
        self.with_store(Some(none), move |store| {
            resources::list(store, cursor.as_deref(), page_size)
        })
        .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri;
        let limit = self.reply;
        let result = self
            .with_store(None, move |store| resources::read(store, &uri, limit))
            .await?;
        Ok(result.into())
    }
}
