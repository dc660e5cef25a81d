//! Helpers shared by the store commands: opening the store, error kinds, chunk options.

use std::path::PathBuf;

use rlm_context::chunk::{ChunkOptions, SizeUnit, Strategy};
use rlm_store::Store;

use crate::cli::{ChunkerChoice, ChunkingArgs, SizeUnitChoice, StoreLocation};
use crate::error::CliError;

/// Default store directory, relative to the current directory.
pub const DEFAULT_STORE_DIR: &str = ".rlm";

pub fn store_dir(location: &StoreLocation) -> PathBuf {
    location
        .store
        .clone()
        .unwrap_or_else(|| PathBuf::from(DEFAULT_STORE_DIR))
}

pub fn open_store(location: &StoreLocation) -> anyhow::Result<Store> {
    let dir = store_dir(location);
    Store::open(&dir).map_err(|err| {
        anyhow::Error::new(err).context(format!("cannot open the store at {}", dir.display()))
    })
}

/// Opens a store that must already exist (read-only commands should not create one).
pub fn open_existing_store(location: &StoreLocation) -> anyhow::Result<Store> {
    let dir = store_dir(location);
    if !dir.join("store.sqlite").is_file() {
        return Err(
            CliError::input(anyhow::anyhow!("no store at {}", dir.display()))
                .with_hint("load something first with `rlm load PATH`, or pass --store DIR")
                .into(),
        );
    }
    open_store(location)
}

/// Maps a store error to an exit code: bad names, ranges and patterns are input errors.
pub fn store_error(err: rlm_store::Error) -> anyhow::Error {
    use rlm_store::Error as E;
    match err {
        E::UnknownBuffer(_) => CliError::input(err)
            .with_hint("`rlm list` shows the stored buffers")
            .into(),
        E::UnknownChunk(_) | E::Range(_) | E::Glob { .. } | E::Regex(_) | E::Chunk(_) => {
            CliError::input(err).into()
        }
        E::Interrupted => CliError::interrupted().into(),
        E::Embed(inner) => crate::embedding::embed_error(inner),
        E::ModelMismatch { .. } => CliError::input(err)
            .with_hint("re-embed everything with `rlm embed --reset`, or pass the stored model with --model")
            .into(),
        other => anyhow::Error::new(other),
    }
}

pub fn chunk_options(args: &ChunkingArgs) -> anyhow::Result<ChunkOptions> {
    let options = ChunkOptions {
        strategy: match args.chunker {
            ChunkerChoice::Auto => Strategy::Auto,
            ChunkerChoice::Fixed => Strategy::Fixed,
            ChunkerChoice::Structure => Strategy::Structure,
            ChunkerChoice::Records => Strategy::Records,
            ChunkerChoice::Code => Strategy::Code,
        },
        size: args.chunk_size,
        overlap: args.overlap,
        unit: match args.unit {
            SizeUnitChoice::Chars => SizeUnit::Chars,
            SizeUnitChoice::Tokens => SizeUnit::Tokens,
        },
    };
    options.validate().map_err(|err| {
        CliError::input(err).with_hint("use --chunk-size N with --overlap below N")
    })?;
    Ok(options)
}

/// Human-readable byte count.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: &[&str] = &["B", "KB", "MB", "GB", "TB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// Parses `A:B`, `A:` or `:B` into optional ends.
pub fn parse_range(text: &str, what: &str) -> anyhow::Result<(Option<u64>, Option<u64>)> {
    let invalid = || {
        CliError::input(anyhow::anyhow!("invalid {what} range {text:?}"))
            .with_hint(format!("write --{what} A:B, A: or :B with whole numbers"))
    };
    let (start, end) = text.split_once(':').ok_or_else(invalid)?;
    let parse = |part: &str| -> anyhow::Result<Option<u64>> {
        if part.is_empty() {
            Ok(None)
        } else {
            part.trim().parse().map(Some).map_err(|_| invalid().into())
        }
    };
    Ok((parse(start)?, parse(end)?))
}

/// The embedding model to use, loaded, or `None` when no model is imported. `name` (a flag)
/// wins over `RLM_EMBED_MODEL` and the `[embed]` configuration.
pub fn resolve_embedder(
    global: &crate::cli::GlobalArgs,
    name: Option<&str>,
) -> anyhow::Result<Option<Box<dyn rlm_embed::Embedder>>> {
    let config = crate::config::LoadedConfig::load(global.config.as_deref())?;
    crate::embedding::open_embedder(&config, name)
}
