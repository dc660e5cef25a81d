//! The RLM engine as the loop's flags describe it ([`LoopSettings`]): model client, sandbox,
//! models, limits, prompts and the trajectory directory. `rlm run` and `rlm bench-quality`
//! build their engines here; what a command adds (events, host functions) it sets on the returned builder.

use std::sync::Arc;

use rlm_engine::{Rlm, RlmBuilder};

use crate::settings::LoopSettings;

/// A builder with everything `settings` says; the caller adds events or functions and builds.
pub fn builder(settings: LoopSettings) -> anyhow::Result<RlmBuilder> {
    let client = settings.llm.build_client()?;
    let root_cap = settings.llm.output_cap(&settings.model);
    let subcall_cap = settings.llm.output_cap(&settings.subcall_model);
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
    Ok(builder)
}
