//! `rlm mcp`: the Model Context Protocol server (the `rlm-mcp` crate).

use std::process::ExitCode;

use crate::cli::GlobalArgs;

pub fn run(global: &GlobalArgs, options: rlm_mcp::ServerOptions) -> anyhow::Result<ExitCode> {
    rlm_mcp::serve(&options, global.config.clone())
}
