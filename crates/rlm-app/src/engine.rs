//! The RLM engine as the loop's flags describe it ([`LoopSettings`]): model client, sandbox,
//! models, limits, prompts and the trajectory directory. `rlm run` and `rlm bench-quality`
//! build their engines here; what a command adds (events, host functions) it sets on the returned builder.

use std::sync::Arc;

use rlm_engine::{Rlm, RlmBuilder};
use rlm_llm::{ContextWindows, LlmClient};

use crate::settings::LoopSettings;

/// A builder with everything `settings` says; the caller adds events or functions and builds.
pub fn builder(settings: LoopSettings) -> anyhow::Result<RlmBuilder> {
    let client = settings.llm.build_client()?;
    builder_with(settings, client)
}

/// [`builder`] with a client the caller built from `settings.llm` already (and asked the
/// servers' properties through: a client asks each local server once).
pub fn builder_with(settings: LoopSettings, client: LlmClient) -> anyhow::Result<RlmBuilder> {
    let window = |model: &str| settings.context_windows.get(model);
    let root_cap = settings
        .embedding
        .root_max_output_tokens
        .unwrap_or_else(|| {
            settings
                .llm
                .output_cap(&settings.model, window(&settings.model))
        });
    let subcall_cap = settings
        .embedding
        .subcall_max_output_tokens
        .unwrap_or_else(|| {
            settings
                .llm
                .output_cap(&settings.subcall_model, window(&settings.subcall_model))
        });
    let repl = crate::sandbox::repl(
        settings.allow_reduced_protection,
        settings.block_timeout,
        &settings.limits,
    )?;
    let mut builder = Rlm::builder()
        .client(Arc::new(client))
        .repl(repl.factory)
        .helpers_doc(repl.helpers_doc)
        .environment_name(repl.name)
        .model(settings.model)
        .subcall_model(settings.subcall_model)
        .allowed_models(settings.allowed_models)
        .max_depth(settings.max_depth)
        .limits(settings.limits)
        .context_windows(settings.context_windows)
        .prompts(settings.prompts)
        .root_max_output_tokens(root_cap)
        .subcall_max_output_tokens(subcall_cap);
    if let Some(dir) = settings.log_dir {
        builder = builder.log_dir(dir);
    }
    if let Some(tools) = settings.tools {
        builder = builder.tools(tools);
    }
    if let Some(permits) = settings.max_concurrent_subcalls {
        builder = builder.max_concurrent_subcalls(permits);
    }
    let embedding = settings.embedding;
    if let Some(prompt) = embedding.custom_system_prompt {
        builder = builder.custom_system_prompt(prompt);
    }
    if !embedding.system_sections.is_empty() {
        builder = builder.system_sections(embedding.system_sections);
    }
    if let Some(code) = embedding.setup_code {
        builder = builder.setup_code(code);
    }
    if let Some(temperature) = embedding.root_temperature {
        builder = builder.root_temperature(temperature);
    }
    if let Some(temperature) = embedding.subcall_temperature {
        builder = builder.subcall_temperature(temperature);
    }
    if let Some(share) = embedding.compaction {
        builder = builder.compaction(share);
    }
    if let Some(name) = embedding.log_name {
        builder = builder.log_name(name);
    }
    Ok(builder)
}

/// The loop's client, built from `settings.llm`, with the window each local server reports added
/// to `settings.context_windows` for the root and sub-call models whose window nothing else
/// gives ([`add_reported_windows`]): the server is asked once, here, for the client's limiter too.
pub async fn client_with_reported_windows(
    settings: &mut LoopSettings,
) -> anyhow::Result<LlmClient> {
    let client = settings.llm.build_client()?;
    let models = [settings.model.clone(), settings.subcall_model.clone()];
    let models: Vec<&str> = models.iter().map(String::as_str).collect();
    add_reported_windows(&client, &mut settings.context_windows, &models).await;
    Ok(client)
}

/// Adds to `windows` the window a local server reports (llama.cpp `/props`) for each of
/// `models` whose window is not known yet (not built in, not in `[run.context_windows]`), so
/// a request over an 8k server's window is refused before it is sent. Returns what was added.
///
/// Cancel safety: dropping the future leaves `windows` with the windows added so far.
pub async fn add_reported_windows(
    client: &LlmClient,
    windows: &mut ContextWindows,
    models: &[&str],
) -> Vec<(String, u64)> {
    let mut added = Vec::new();
    for &model in models {
        if windows.get(model).is_some() {
            continue;
        }
        if let Some(window) = client
            .server_props(model)
            .await
            .and_then(|props| props.context_window)
        {
            tracing::debug!(model, window, "context window reported by the server");
            windows.insert(model.to_owned(), window);
            added.push((model.to_owned(), window));
        }
    }
    added
}
