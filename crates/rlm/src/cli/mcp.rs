//! `rlm mcp` arguments.

use std::path::PathBuf;

use clap::Args;

use super::StoreLocation;

#[derive(Debug, Args)]
pub struct McpArgs {
    /// The only directory tools may read or write below (paths outside it are refused);
    /// relative paths in tool arguments start here.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub root: PathBuf,
    /// Entries per page of `resources/list` (buffers and chunks as rlm:// URIs).
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub page_size: u32,
    #[command(flatten)]
    pub location: StoreLocation,
}
