//! Model providers a front end offers besides the configured ones. `rlm mcp` adds the
//! connected client's own model (MCP sampling, provider `mcp`) to the commands it runs; the
//! CLI adds none. They are not settings a user writes: they come with the [`super::Sources`]
//! a command is resolved from, and [`super::LlmSettings`] hands them to the client it builds.

use std::sync::Arc;

use rlm_llm::ChatBackend;

/// One provider that answers itself, under its name in model strings.
#[derive(Debug, Clone)]
pub struct ModelBackend {
    /// The provider name: `mcp` in `mcp:client`.
    pub name: String,
    pub backend: Arc<dyn ChatBackend>,
    /// Calls in flight at once.
    pub max_concurrency: usize,
    /// The model used when none is configured anywhere (flag, environment, files): the
    /// root model and, unless one is configured, the sub-call model.
    pub default_model: Option<String>,
}
