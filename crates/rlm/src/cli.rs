//! Argument definitions only; behaviour lives in `commands/`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "rlm",
    version,
    about = "Recursive language models over contexts far larger than a model's window",
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Flags every subcommand accepts.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// More logging on stderr (-v debug, -vv trace); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// Only errors on stderr; no progress.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Machine-readable output on stdout (JSON, or JSON Lines for streams).
    #[arg(long, global = true)]
    pub json: bool,
    /// When to use colour (NO_COLOR is honoured by `auto`).
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, global = true)]
    pub color: ColorChoice,
    /// Configuration file to use instead of ./rlm.toml and the user file.
    #[arg(long, global = true, env = "RLM_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Describe a context: format, size, fields, records, sample.
    Inspect(InspectArgs),
    /// Show the merged configuration and where each file came from.
    Config(ConfigArgs),
    /// Print a shell completion script.
    Completions(CompletionsArgs),
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// Files to inspect; `-` reads stdin.
    #[arg(value_name = "PATH", required_unless_present = "text")]
    pub paths: Vec<PathBuf>,
    /// Inspect this inline text instead of files.
    #[arg(long, conflicts_with = "paths")]
    pub text: Option<String>,
    /// Name to show for stdin or inline text (also used as an extension hint).
    #[arg(long)]
    pub name: Option<String>,
    /// Maximum characters of the sample.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub sample_chars: u32,
}

#[derive(Debug, Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    pub action: Option<ConfigAction>,
}

#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// Print the merged configuration (secrets redacted).
    Show,
    /// Print the configuration files that were looked for, in precedence order.
    Paths,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// Shell to generate completions for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}
