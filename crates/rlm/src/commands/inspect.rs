//! `rlm inspect`: context metadata for files, stdin or inline text.

use std::process::ExitCode;

use crate::cli::{GlobalArgs, InspectArgs};

pub fn run(_global: &GlobalArgs, _args: InspectArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("inspect is being built")
}
